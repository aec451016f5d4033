// What the CUDA kernels can read in place, as the front end plans with it
// (BackendCapabilities): taken from the kernels' own constants, and the
// bounds between a kernel and the copy it replaces (docs/TUNING.md).
#pragma once

#include "backend.h"
#include "column_fold.cuh"
#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

// Gather layouts of fewer elements than small_gather_elements are small:
// staged a block's rows in shared memory (staged_rows_kernel.cuh), which
// holds rows shorter than kSmallGatherMaxRowBytes; larger ones are read by
// the row kernels' gathered instantiations, whose index arithmetic a small
// input cannot hide.
constexpr int64_t kSmallGatherElements4Byte = int64_t{1} << 18;
constexpr int64_t kSmallGatherElementsOther = int64_t{1} << 20;
constexpr int64_t kSmallGatherMaxRowBytes = 16 * 1024;
// Columns of at most this many rows are read in place by a thread each.
constexpr int64_t kGatheredColumnMaxRows = 32;
// Fewer values an output are copied rather than staged (a stage is a launch).
constexpr int64_t kMinStagedCount = 1024;
constexpr int64_t kMinStagedFullCount = int64_t{1} << 20;
// A slice's rows are staged first from a 128-byte line on.
constexpr int64_t kRowStageMinBytes = 128;

inline const BackendCapabilities& capabilities() {
  static const BackendCapabilities caps = [] {
    BackendCapabilities c;
    c.gathered_rows = true;
    c.small_gather_elements_4_byte = kSmallGatherElements4Byte;
    c.small_gather_elements_other = kSmallGatherElementsOther;
    c.small_gather_max_row_bytes = kSmallGatherMaxRowBytes;
    c.vector_bytes = kVectorBytes;
    c.gathered_column_max_rows = kGatheredColumnMaxRows;
    c.min_staged_count = kMinStagedCount;
    c.min_staged_full_count = kMinStagedFullCount;
    c.slice_rows_first = true;
    c.column_chunk_rows = kFoldLength;
    c.row_stage_min_bytes = kRowStageMinBytes;
    return c;
  }();
  return caps;
}

// A Gather layout of a dim reduction of fewer elements than
// small_gather_elements: staged. (A full reduction's is one row for the
// split kernel at any size.)
inline bool is_small_gather(const ReduceLayout& layout, int64_t element_size) {
  return layout.kind == ReduceLayout::Gather && !layout.full &&
         layout.batch * layout.reduce < small_gather_elements(capabilities(), element_size);
}

}  // namespace cuda
}  // namespace torch_reduce
