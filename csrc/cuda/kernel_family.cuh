// Which kernels read a layout: the top of launch_layout_reduction's route
// (reduce_layout.cuh), kept apart from the kernels so that the backend's
// registration can name it (torch_reduce.explain) without compiling them.
#pragma once

#include "capabilities.cuh"

namespace torch_reduce {
namespace cuda {

// Rows of at least this many bytes go to split_row_reduce_kernel (a block or
// more each); shorter rows to row_reduce_kernel (a warp or less each). A block
// a row pays a block-wide tree (and, split, a combine) that short rows do not
// amortise; a warp a row keeps too few loads in flight for long rows. Rows of
// 16 KiB and more read faster a block each, rows of 4 and 8 KiB slower.
constexpr int64_t kSplitRowBytes = 16 * 1024;

// Full reductions and rows of kSplitRowBytes or more go to
// split_row_reduce_kernel.
inline bool splits_rows(const ReduceLayout& layout, int64_t element_bytes) {
  return layout.full || layout.reduce * element_bytes >= kSplitRowBytes;
}

// The kernels that read a layout. Gather layouts are rows: staged where
// small, else read by the row kernels' gathered instantiations.
enum class KernelFamily { Columns, StagedRows, SplitRows, Rows };

inline KernelFamily kernel_family(const ReduceLayout& layout, int64_t element_bytes) {
  if (layout.kind == ReduceLayout::Outer) return KernelFamily::Columns;
  if (is_small_gather(layout, element_bytes)) return KernelFamily::StagedRows;
  if (splits_rows(layout, element_bytes)) return KernelFamily::SplitRows;
  return KernelFamily::Rows;
}

// What torch_reduce.explain calls them.
inline const char* kernel_family_name(const ReduceLayout& layout, int64_t element_bytes) {
  switch (kernel_family(layout, element_bytes)) {
    case KernelFamily::Columns:
      return layout.column_runs.count != 0 ? "column_short_kernel (indexed columns)"
                                           : "column passes (column_short, _block, _tile or _flat kernels)";
    case KernelFamily::StagedRows:
      return "staged_rows_kernel";
    case KernelFamily::SplitRows:
      return "split_row_reduce_kernel";
    case KernelFamily::Rows:
      return "row_reduce_kernel or packed_row_reduce_kernel";
  }
  return "?";
}

}  // namespace cuda
}  // namespace torch_reduce
