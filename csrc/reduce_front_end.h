// What every backend shares: torch's semantics (dtypes, dims, keepdim, empty
// inputs, errors) and the canonical layout that the kernels consume.
//
// A backend supplies one function, `LayoutKernel`, that reduces a tensor
// described by a ReduceLayout into an output tensor; everything else
// (argument checks, dtype promotion and casts, output shape) happens here,
// once, for CPU and CUDA alike.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "algorithm.h"
#include "ops.h"

namespace torch_reduce {

// The reduction after merging adjacent dims, in one of two shapes:
//
//  Inner (rows): the reduced elements of an output are contiguous.
//    element (b, r) at data + b * batch_stride + r;       out[b]
//    (reduce_stride == 1, inner == 1)
//
//  Outer (columns): the kept innermost dim is contiguous and the reduced dim
//  is strided.
//    element (b, r, c) at data + b * batch_stride + r * reduce_stride + c;
//    out[b * inner + c]
//  Or, where `column_runs` has runs, gathered columns: kept dims that merge
//  into neither, read in place where their copy would be short columns
//  (CUDA; plan_gathered_columns). Column i = b * inner + c then starts at
//  data + offset(i, column_runs) (see Gather; batch_stride unused), and is
//  folded as its copy's column would be.
//
//  Gather (rows read through strides): dims that merge into neither, whose
//  copy would be rows. Output b's element r is at
//    data + offset(b, batch_runs) + offset(r, reduce_runs);     out[b]
//  where offset(i, runs) takes i's row-major coordinates over the runs.
//    (inner == 1; batch_stride and reduce_stride unused)
//  Its elements are folded in the order of a contiguous row of `reduce`
//  elements, so that the result is the one the copy would have given.
//  Planned for CUDA tensors only (the CPU copies such dims).
//
// Strides are in elements; `data` is input.data_ptr() (storage offset
// included). `full` marks a reduction over every element (batch == 1), for
// which the launch may depend on the size: dim reductions must not let the
// launch depend on `batch` or `inner` (batch invariance).
constexpr int kMaxRuns = 4;

// Gather layouts of fewer elements than small_gather_elements are small: the
// CUDA kernels stage a block's rows in shared memory and fold them there
// (staged_rows_kernel.cuh), and their rows are shorter than
// kSmallGatherMaxRowBytes (the row kernels' rows, whose order they take);
// larger ones are read by the row kernels' gathered instantiations. H100,
// sums of seven layouts, a dev build with the bound as an environment
// variable (not committed), staged / gathered time: float32 at 2^16
// elements 0.64-0.96, 2^18 0.75-1.12, 2^19 0.82-1.17 (five of seven above 1);
// bfloat16 at 2^19 0.67-1.00, 2^20 0.59-1.25 (gathered items of eight
// elements take more index arithmetic a load). Float64, with this bound at
// 2^18 in a sweep (not committed), lost: amin over (0, 2) of (101, 2202, 4),
// 889K elements, 6.51 us staged, 7.37 gathered (torch 5.6).
inline int64_t small_gather_elements(int64_t element_size) {
  return element_size == 4 ? int64_t{1} << 18 : int64_t{1} << 20;
}
constexpr int64_t kSmallGatherMaxRowBytes = 16 * 1024;
// Rows of one chunk of the CUDA column kernels (kFoldLength in
// csrc/cuda/column_fold.cuh, which this host-only header does not include;
// reduce_layout.cuh asserts that they agree).
constexpr int64_t kColumnChunkRows = 64;
// A load of the CUDA kernels (kVectorBytes in csrc/cuda/primitives.cuh): a
// gathered item's elements.
constexpr int64_t kKernelVectorBytes = 16;

// Merged dims of a Gather layout, innermost first; offsets of the elements
// they hold fit in 31 bits (plan_gather).
struct Runs {
  int count = 0;
  int64_t sizes[kMaxRuns] = {};
  int64_t strides[kMaxRuns] = {};
};

struct ReduceLayout {
  enum Kind { Inner, Outer, Gather } kind;
  int64_t batch;
  int64_t reduce;
  int64_t inner;
  int64_t batch_stride;
  int64_t reduce_stride;
  bool full;
  Runs batch_runs = {};   // Gather only
  Runs reduce_runs = {};  // Gather only
  Runs column_runs = {};  // Outer, gathered columns only
};

// A Gather layout of a dim reduction of fewer elements than
// small_gather_elements: staged. A full reduction's is one row for the split
// kernel at any size (plan_gather).
inline bool is_small_gather(const ReduceLayout& layout, int64_t element_size) {
  return layout.kind == ReduceLayout::Gather && !layout.full &&
         layout.batch * layout.reduce < small_gather_elements(element_size);
}

// Reduces `input` (already of a dtype that dispatch.h instantiates) as
// described by `layout` into `out`: batch * inner elements of the kernel's
// output dtype, of the dims of `input` (size 1 where reduced), output b * inner
// + c at its row-major index over them. `out` is contiguous, or, for a
// transposed or permuted input reduced in its memory order, a permuted view
// of the contiguous result. `layout.reduce` is at least 1.
using LayoutKernel = void (*)(ReduceKind kind, const at::Tensor& input,
                              const ReduceLayout& layout, at::Tensor& out,
                              Algorithm algorithm);

// For outputs that a backend does not write in place: `reduce_dense` writes a
// new contiguous tensor of out's shape, which is then copied into `out`.
template <typename ReduceDense>
void reduce_through_dense(at::Tensor& out, ReduceDense&& reduce_dense) {
  at::Tensor dense = at::empty(out.sizes(), out.options());
  reduce_dense(dense);
  out.copy_(dense);
}

// Merges adjacent dims of `input` (sizes of 1 dropped, but for a kept dim
// cut to width 1 between two reduced dims: merge_runs) and matches the
// result against the two layouts; std::nullopt when neither fits.
// made_from: the view that `input` was made contiguous from here (a copy,
// or the partial of an earlier stage: the same dims), whose strides tell
// where a kept dim of size 1 lay (match_layout); nullptr: `input` itself.
std::optional<ReduceLayout> plan_layout(const at::Tensor& input, const std::vector<bool>& reduced,
                                        const at::Tensor* made_from = nullptr);

// The ops' bodies. `name` is used in error messages ("sum", "amax", ...).
// `algorithm` is only meaningful for sum (nullopt: the process-wide
// default, which applies to full reductions of CUDA tensors only).
at::Tensor reduce_front_end(ReduceKind kind, const char* name,
                            const at::Tensor& self, at::OptionalIntArrayRef dim,
                            bool keepdim, std::optional<at::ScalarType> dtype,
                            const std::optional<std::string>& algorithm,
                            LayoutKernel kernel);

}  // namespace torch_reduce
