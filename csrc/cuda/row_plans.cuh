// The plans of the row kernels: which kernel reads an Inner or Gather
// layout's rows, its template choices and its grid, decided on the host from
// the layout, the types and the device (launch_config.cuh's heuristics), and
// nothing else. launch_rows.cuh launches them; torch_reduce.explain prints
// them (describe).
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <limits>

#include "capabilities.cuh"
#include "launch_config.cuh"
#include "launch_plan.h"

namespace torch_reduce {
namespace cuda {

// split_row_reduce_kernel: `splits` blocks a row, the last to finish combines.
struct SplitRowsPlan {
  bool gathered = false;
  int64_t splits = 1;
  int64_t grid = 0;
  int64_t workspace_bytes = 0;  // the blocks' partials, where splits > 1
};

// row_reduce_kernel (a lane, a group of lanes, or several rows a lane) or
// packed_row_reduce_kernel (several rows a load, or a row of two vectors
// two lanes).
struct RowsPlan {
  bool packed = false;
  int packed_rows = 1;   // packed: rows a vector (kRows)
  int packed_lanes = 1;  // packed: vectors, and lanes, a row (kLanes)
  bool vectorized = false;
  int loads = kRowSlots;  // items a lane loads a step (kLoads)
  bool several_rows = false;
  bool evict_first = false;
  bool permuted = false;  // writes through the output's index (output.cuh)
  bool gathered = false;  // reads through the layout's strides (gathered_rows.cuh)
  int group = 1;          // lanes a row
  int items_per_lane = 1;
  int rows_per_pass = 1;
  int64_t grid = 0;
};

// staged_rows_kernel: a few whole rows a block, staged in shared memory.
struct StagedRowsPlan {
  int rows_per_block = 1;
  int group = 1;
  bool stage_vectors = false;
  bool permuted = false;
  int64_t grid = 0;
  int64_t shared_bytes = 0;
};

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
SplitRowsPlan plan_split_rows(const ReduceLayout& layout) {
  SplitRowsPlan plan;
  plan.gathered = layout.kind == ReduceLayout::Gather;
  // A full reduction's splits are its copy's (the contiguous kernel's
  // residency, whatever the gathered one's registers), and so is its order.
  plan.splits = layout.full ? full_reduction_splits(layout.reduce, sizeof(scalar_t),
                                                    resident_blocks<split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>>(
                                                        kSplitThreads))
                            : dim_reduction_splits(layout.reduce, sizeof(scalar_t));
  plan.grid = layout.batch * plan.splits;
  TORCH_CHECK(plan.grid <= std::numeric_limits<int32_t>::max(), "torch_reduce: reduction too large for one launch");
  if (plan.splits > 1) plan.workspace_bytes = layout.batch * plan.splits * static_cast<int64_t>(sizeof(acc_t));
  return plan;
}

// data, out: the addresses of the input and of the output.
template <typename scalar_t, typename out_t>
RowsPlan plan_rows(uintptr_t data, const ReduceLayout& layout, const StridedIndex& out_index, uintptr_t out) {
  constexpr int kWidth = vector_width<scalar_t>();
  RowsPlan plan;
  plan.gathered = layout.kind == ReduceLayout::Gather;
  plan.permuted = out_index.dims != 0;
  TORCH_INTERNAL_ASSERT(!(plan.gathered && plan.permuted), "gathered rows are written dense (output_index)");
  const bool back_to_back = !plan.gathered && (layout.batch == 1 || layout.batch_stride == layout.reduce);
  const bool evict_first = evict_first_input(layout.batch * layout.reduce * static_cast<int64_t>(sizeof(scalar_t)),
                                             layout.batch * static_cast<int64_t>(sizeof(out_t)));
  // packed_row_reduce_kernel: rows of at most a vector that divide it, or of
  // exactly kPackedRowVectors vectors.
  const bool short_row = layout.reduce <= kWidth;
  const bool packs = short_row ? kWidth % layout.reduce == 0 : layout.reduce == kPackedRowVectors * kWidth;
  const int64_t rows_per_vector = short_row ? kWidth / layout.reduce : 1;
  if (packs && back_to_back && is_aligned_address(data) && !plan.permuted &&
      is_aligned_address(out, rows_per_vector * sizeof(out_t))) {
    plan.packed = true;
    plan.packed_rows = static_cast<int>(rows_per_vector);
    plan.packed_lanes = short_row ? 1 : kPackedRowVectors;
    plan.evict_first = evict_first;
    const int64_t vectors = short_row ? layout.batch / rows_per_vector : layout.batch * kPackedRowVectors;
    plan.grid = grid_stride_blocks(ceil_div(vectors, kRowSlots), kRowThreads);
    return plan;
  }
  plan.vectorized = !plan.gathered && is_aligned_address(data) && layout.reduce % kWidth == 0 &&
                    (layout.batch_stride * sizeof(scalar_t)) % kVectorBytes == 0;
  const int64_t items = ceil_div(layout.reduce, kWidth);
  plan.group = row_group_size(items);
  // Rows here are shorter than kSplitRowBytes, so this fits an int.
  plan.items_per_lane = static_cast<int>(ceil_div(items, plan.group));
  // 1 for rows too long to read several a lane. Short rows read one a pass
  // (few rows) take the one-row kernels too: the same order
  // (row_reduce_kernel), half the loads a lane.
  plan.rows_per_pass = short_rows_per_pass(layout.batch, plan.group, plan.items_per_lane);
  plan.several_rows = plan.rows_per_pass > 1;
  if (plan.several_rows) {
    plan.loads = kShortRowSlots;
  } else if (plan.items_per_lane > kRowSlots &&
             !row_kernel_shifts_items<scalar_t>(plan.vectorized, false, plan.gathered)) {
    plan.loads = row_kernel_long_row_loads<scalar_t>();
  }
  // Evict-first loads for one row a lane, vectorized, into a dense output
  // (see row_reduce_kernel).
  plan.evict_first = evict_first && plan.vectorized && !plan.several_rows && !plan.permuted;
  const int64_t threads_needed = ceil_div(layout.batch, plan.rows_per_pass) * plan.group;
  plan.grid = grid_stride_blocks(threads_needed, kRowThreads);
  return plan;
}

// Whether staged_rows_kernel may stage a small Gather layout a vector a load:
// its innermost reduced run is contiguous and whole vectors, and every other
// run, and the data, start on a vector's boundary.
template <typename scalar_t>
bool stages_vectors(uintptr_t data, const ReduceLayout& layout) {
  constexpr int64_t kWidth = vector_width<scalar_t>();
  const Runs& reduce = layout.reduce_runs;
  const Runs& batch = layout.batch_runs;
  if (reduce.strides[0] != 1 || reduce.sizes[0] % kWidth != 0) return false;
  for (int d = 1; d < reduce.count; ++d)
    if (reduce.strides[d] % kWidth != 0) return false;
  for (int d = 0; d < batch.count; ++d)
    if (batch.strides[d] % kWidth != 0) return false;
  return is_aligned_address(data);
}

// A small Gather layout (small_gather_elements), staged a few rows a block.
template <typename scalar_t>
StagedRowsPlan plan_staged_rows(uintptr_t data, const ReduceLayout& layout, const StridedIndex& out_index) {
  constexpr int kWidth = vector_width<scalar_t>();
  TORCH_INTERNAL_ASSERT(layout.reduce * static_cast<int64_t>(sizeof(scalar_t)) < kSmallGatherMaxRowBytes);
  StagedRowsPlan plan;
  plan.rows_per_block = staged_rows_per_block(layout.reduce, layout.batch);
  plan.group = row_group_size(ceil_div(layout.reduce, kWidth));
  plan.stage_vectors = stages_vectors<scalar_t>(data, layout);
  plan.permuted = out_index.dims != 0;
  plan.grid = ceil_div(layout.batch, plan.rows_per_block);
  plan.shared_bytes = plan.rows_per_block * layout.reduce * static_cast<int64_t>(sizeof(scalar_t));
  return plan;
}

// What a launch reads and writes, for explain.
inline LaunchStep row_step(const ReduceLayout& layout, int64_t element_bytes, int64_t out_bytes) {
  LaunchStep step;
  step.bytes_read = layout.batch * layout.reduce * element_bytes;
  step.bytes_written = layout.batch * out_bytes;
  return step;
}

inline LaunchStep describe(const SplitRowsPlan& plan, const ReduceLayout& layout, int64_t element_bytes,
                           int64_t out_bytes) {
  LaunchStep step = row_step(layout, element_bytes, out_bytes);
  step.kernel = "split_row_reduce_kernel";
  step.config = ConfigWriter()("splits", plan.splits)("tile_vectors", kSplitTileVectors)
                    .flag("gathered", plan.gathered)
                    .str();
  step.grid = plan.grid;
  step.block = kSplitThreads;
  step.bytes_written += plan.workspace_bytes;
  return step;
}

inline LaunchStep describe(const RowsPlan& plan, const ReduceLayout& layout, int64_t element_bytes, int64_t out_bytes) {
  LaunchStep step = row_step(layout, element_bytes, out_bytes);
  step.grid = plan.grid;
  step.block = kRowThreads;
  step.evict_first = plan.evict_first;
  if (plan.packed) {
    step.kernel = "packed_row_reduce_kernel";
    step.config = ConfigWriter()("rows_a_vector", plan.packed_rows)("lanes_a_row", plan.packed_lanes).str();
    return step;
  }
  step.kernel = "row_reduce_kernel";
  step.config = ConfigWriter()("lanes_a_row", plan.group)("items_a_lane", plan.items_per_lane)(
                    "rows_a_pass", plan.rows_per_pass)("loads", plan.loads)
                    .flag("vectorized", plan.vectorized)
                    .flag("several_rows", plan.several_rows)
                    .flag("permuted_output", plan.permuted)
                    .flag("gathered", plan.gathered)
                    .str();
  return step;
}

inline LaunchStep describe(const StagedRowsPlan& plan, const ReduceLayout& layout, int64_t element_bytes,
                           int64_t out_bytes) {
  LaunchStep step = row_step(layout, element_bytes, out_bytes);
  step.kernel = "staged_rows_kernel";
  step.config = ConfigWriter()("rows_a_block", plan.rows_per_block)("lanes_a_row", plan.group)
                    .flag("stage_vectors", plan.stage_vectors)
                    .flag("permuted_output", plan.permuted)
                    .str();
  step.grid = plan.grid;
  step.block = kRowThreads;
  step.shared_bytes = plan.shared_bytes;
  return step;
}

}  // namespace cuda
}  // namespace torch_reduce
