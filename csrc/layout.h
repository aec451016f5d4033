// The layout algebra: a reduction's dims merged into the one of three shapes
// that the kernels read. Pure functions of sizes and strides, shared by every
// backend.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/SmallVector.h>

#include <optional>
#include <vector>

namespace torch_reduce {

// The reduction after merging adjacent dims, in one of three shapes:
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
//  into neither, read in place. Column i = b * inner + c then starts at
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
//
// Strides are in elements; `data` is input.data_ptr() (storage offset
// included). `full` marks a reduction over every element (batch == 1), for
// which the launch may depend on the size: dim reductions must not let the
// launch depend on `batch` or `inner` (batch invariance).
constexpr int kMaxRuns = 4;

// Merged dims of a Gather layout, innermost first; offsets of the elements
// they hold fit in 31 bits (runs_of).
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

// Dims and runs live inline: a small reduction plans several, and each
// std::vector was a heap allocation.
using DimList = c10::SmallVector<int64_t, 8>;

// A run: adjacent dims of one kind (reduced or kept) whose memory is
// contiguous with respect to each other.
struct Group {
  int64_t size;
  int64_t stride;
  bool reduced;
  DimList dims;
};
using Groups = c10::SmallVector<Group, 8>;

// The dims of `input` visited in `order` merged into runs (sizes of 1
// dropped, but for a kept dim cut to width 1 between two reduced dims, as
// `view`'s strides show it).
Groups merge_runs(const at::Tensor& input, const std::vector<bool>& reduced, at::IntArrayRef order,
                  const at::Tensor& view);

// The runs of one kind, innermost first, or nullopt where there are more
// than kMaxRuns or the offsets of their elements need more than 31 bits.
std::optional<Runs> runs_of(const Groups& groups, bool reduced);

DimList dims_in_order(const at::Tensor& input);
// The dims from the largest stride down (ties in dim order): memory order.
DimList dims_by_stride(const at::Tensor& input);
// The dims of `input`, every one kept (size 1 where reduced).
DimList keepdim_shape(const at::Tensor& input, const std::vector<bool>& reduced);
bool all_reduced(const std::vector<bool>& reduced);

// Merges adjacent dims of `input` and matches the result against the Inner
// and Outer layouts; std::nullopt when neither fits. made_from: the view
// that `input` was made contiguous from (a copy, or the partial of an
// earlier stage: the same dims), whose strides tell where a kept dim of size
// 1 lay (match_layout); nullptr: `input` itself.
std::optional<ReduceLayout> plan_layout(const at::Tensor& input, const std::vector<bool>& reduced,
                                        const at::Tensor* made_from = nullptr);

}  // namespace torch_reduce
