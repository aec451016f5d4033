// What a backend (CPU, CUDA) gives the front end: what its kernels can read
// in place, as values, and the kernel entry of each op. The front end plans
// with these and asks nothing else of the device.
#pragma once

#include <ATen/ATen.h>

#include "algorithm.h"
#include "layout.h"
#include "ops/op_base.h"

namespace torch_reduce {

struct BackendCapabilities {
  // Rows read through strides (Gather layouts), for dim reductions whose
  // copy would be rows and for full reductions. Layouts of fewer than
  // small_gather_elements() elements are small (staged in a block), and are
  // gathered only where their rows are shorter than small_gather_max_row_bytes.
  bool gathered_rows = false;
  int64_t small_gather_elements_4_byte = 0;  // for 4-byte elements
  int64_t small_gather_elements_other = 0;   // for others
  int64_t small_gather_max_row_bytes = 0;
  int64_t vector_bytes = 0;  // a load: small full reductions of shorter innermost runs are copied
  // Columns read through strides (Outer layouts with column_runs), where a
  // column has at most this many rows; 0: never.
  int64_t gathered_column_max_rows = 0;
  // Reductions over several runs of dims are staged (a run a stage) from
  // this many values an output on; below, the copy is cheaper.
  int64_t min_staged_count = 0;
  int64_t min_staged_full_count = 0;
  // A dim reduction of a slice takes the stage of its innermost run first
  // where that run is rows of row_stage_min_bytes or more and the largest run
  // more than column_chunk_rows rows (its columns would be read an element
  // at a time).
  bool slice_rows_first = false;
  int64_t column_chunk_rows = 0;
  int64_t row_stage_min_bytes = 0;
};

inline int64_t small_gather_elements(const BackendCapabilities& caps, int64_t element_size) {
  return element_size == 4 ? caps.small_gather_elements_4_byte : caps.small_gather_elements_other;
}

// Reduces `input` (already of a dtype that the op's kernels take) as
// described by `layout` into `out`: batch * inner elements of the kernel's
// output dtype, of the dims of `input` (size 1 where reduced), output b * inner
// + c at its row-major index over them. `out` is contiguous, or, for a
// transposed or permuted input reduced in its memory order, a permuted view
// of the contiguous result. `layout.reduce` is at least 1, and is the count
// the op's ops object is made for (a mean's divisor: stages of a mean take
// means of means, of equal counts), with `call` (op_base.h).
using LayoutKernel = void (*)(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out,
                              const OpCall& call);

// The ladder's sum (CUDA only): every element of `self`, by `step`.
using LadderSum = at::Tensor (*)(const at::Tensor& self, bool keepdim, const DtypePlan& dtypes, Algorithm step);

// One op on one backend: what its registered kernel passes to the front end.
struct Backend {
  const BackendCapabilities* caps;
  LayoutKernel kernel;
  LadderSum ladder_sum;  // nullptr where there is no ladder
};

// For outputs that a backend does not write in place: `reduce_dense` writes a
// new contiguous tensor of out's shape, which is then copied into `out`.
template <typename ReduceDense>
void reduce_through_dense(at::Tensor& out, ReduceDense&& reduce_dense) {
  at::Tensor dense = at::empty(out.sizes(), out.options());
  reduce_dense(dense);
  out.copy_(dense);
}

}  // namespace torch_reduce
