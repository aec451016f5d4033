#include "in_place_plans.h"

#include <algorithm>

namespace torch_reduce {
namespace {

// Full reductions whose innermost run is shorter than a vector are copied
// where they are small: the split kernel steps along such runs element by
// element, and in one block those steps outlast the copy's kernel.
bool copies_short_runs(const ReduceLayout& layout, int64_t element_size, const BackendCapabilities& caps) {
  return layout.full && layout.reduce_runs.sizes[0] * element_size < caps.vector_bytes &&
         layout.reduce < small_gather_elements(caps, element_size);
}

bool is_small(const ReduceLayout& layout, int64_t element_size, const BackendCapabilities& caps) {
  return !layout.full && layout.batch * layout.reduce < small_gather_elements(caps, element_size);
}

// Runs of at least this many elements are rows worth a stage of their own
// in a full reduction (a warp's width).
constexpr int64_t kRowStageMinLength = 32;

}  // namespace

// Gathered rows are read in one kernel where the copy took two. A full
// reduction is one gathered row, read in the order of its copy's full
// reduction (the same bits). Small inputs of long rows are copied (their
// staged kernel holds a row in shared memory), and so are reductions over
// dims of size 1 alone (each row would be one element of a dense copy).
std::optional<ReduceLayout> plan_gather(const at::Tensor& input, const std::vector<bool>& reduced,
                                        const BackendCapabilities& caps) {
  const Groups groups = merge_runs(input, reduced, dims_in_order(input), input);
  const auto batch_runs = runs_of(groups, false), reduce_runs = runs_of(groups, true);
  if (!batch_runs || !reduce_runs || reduce_runs->count == 0) return std::nullopt;
  ReduceLayout layout{ReduceLayout::Gather, 1, 1, 1, 0, 0, all_reduced(reduced), *batch_runs, *reduce_runs};
  for (int d = 0; d < batch_runs->count; ++d) layout.batch *= batch_runs->sizes[d];
  for (int d = 0; d < reduce_runs->count; ++d) layout.reduce *= reduce_runs->sizes[d];
  const int64_t element_size = input.element_size();
  if (copies_short_runs(layout, element_size, caps)) return std::nullopt;
  if (is_small(layout, element_size, caps) && layout.reduce * element_size >= caps.small_gather_max_row_bytes)
    return std::nullopt;
  return layout;
}

// One kernel where the copy took two, reading the input once where the copy
// read it twice and wrote it once. A thread reads a column; longer columns
// lost to the copy (docs/TUNING.md, gathered_column_max_rows).
std::optional<ReduceLayout> plan_gathered_columns(const at::Tensor& input, const std::vector<bool>& reduced,
                                                  const ReduceLayout& dense, const BackendCapabilities& caps) {
  if (dense.reduce > caps.gathered_column_max_rows) return std::nullopt;
  const Groups groups = merge_runs(input, reduced, dims_in_order(input), input);
  const auto column_runs = runs_of(groups, false), reduce_runs = runs_of(groups, true);
  if (!column_runs || !reduce_runs || reduce_runs->count != 1) return std::nullopt;
  ReduceLayout layout = dense;
  layout.batch_stride = 0;
  layout.reduce_stride = reduce_runs->strides[0];
  layout.column_runs = *column_runs;
  return layout;
}

// In a tensor whose dims are in memory order (a contiguous tensor or a
// slice of one), the runs are reduced one a stage, the largest first (the
// smallest partial result), each into a contiguous tensor of the
// accumulator dtype. Each output's order then depends on the runs' lengths
// alone, which slicing a kept dim leaves as they are (batch invariance).
std::optional<std::vector<std::vector<bool>>> plan_stages(const at::Tensor& input, const std::vector<bool>& reduced,
                                                          const BackendCapabilities& caps) {
  int64_t count = 1;
  for (int64_t d = 0; d < input.dim(); ++d)
    if (reduced[d]) count *= input.size(d);
  const bool full = all_reduced(reduced);
  if (count < (full ? caps.min_staged_full_count : caps.min_staged_count)) return std::nullopt;
  int64_t outer = -1;  // the last dim larger than 1 so far
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (input.size(d) == 1) continue;
    if (outer >= 0 && input.stride(outer) < input.stride(d) * input.size(d)) return std::nullopt;
    outer = d;
  }
  Groups runs = merge_runs(input, reduced, dims_in_order(input), input);
  runs.erase(std::remove_if(runs.begin(), runs.end(), [](const Group& g) { return !g.reduced; }), runs.end());
  if (runs.size() < 2) return std::nullopt;
  const Group inner = runs.back();  // runs come in dim order
  // Largest first; of equal ones, the inner first (rows read faster than columns).
  std::stable_sort(runs.begin(), runs.end(), [](const Group& a, const Group& b) {
    return a.size != b.size ? a.size > b.size : a.dims.front() > b.dims.front();
  });
  // A full reduction, whose order is its own to choose, reads rows first
  // where the innermost run makes rows of a warp's width or more: the
  // largest run of a slice, taken first, would be columns whose rows are
  // misaligned. A dim reduction does so too where the backend says so
  // (slice_rows_first): the innermost run cut from the dim outside it (a
  // slice, x[..., :k]) into long rows, after a largest run of more than a
  // chunk of columns. The rule reads strides and run lengths alone, which
  // slicing a kept dim leaves as they are (batch invariance).
  const int64_t outside_inner = inner.dims.front() - 1;  // dims are in memory order here
  const bool sliced_inner = outside_inner >= 0 && input.stride(outside_inner) != inner.size;
  const bool rows_of_a_slice_first = caps.slice_rows_first && sliced_inner &&
                                     runs.front().size > caps.column_chunk_rows &&
                                     inner.size * input.element_size() >= caps.row_stage_min_bytes;
  if ((full || rows_of_a_slice_first) && inner.stride == 1 && inner.size >= kRowStageMinLength)
    std::stable_partition(runs.begin(), runs.end(), [&](const Group& g) { return g.dims == inner.dims; });
  // A dim reduction's stage marks the runs of the stages before it reduced
  // too (of size 1 by then): as kept dims of size 1 after its run, they would
  // make the last stage of a single output a column of width one
  // (match_layout), where that of more outputs reads rows (batch
  // invariance). A full reduction's last stage, one output, stays a dim
  // reduction.
  std::vector<std::vector<bool>> stages;
  std::vector<bool> stage(reduced.size(), false);
  for (const Group& run : runs) {
    if (full) std::fill(stage.begin(), stage.end(), false);
    for (const int64_t d : run.dims) stage[d] = true;
    stages.push_back(stage);
  }
  return stages;
}

}  // namespace torch_reduce
