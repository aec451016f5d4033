#include "layout.h"

#include <algorithm>
#include <numeric>

namespace torch_reduce {

bool all_reduced(const std::vector<bool>& reduced) {
  return std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
}

// Merges the dims, visited in `order`, into runs: adjacent dims of the same
// kind whose memory is contiguous with respect to each other, sizes of 1
// dropped. But a kept dim of size 1 between two reduced dims keeps them
// apart where `view` (the tensor whose strides `input` stands for, see
// plan_layout) shows it cut from a wider dim: it steps over the inner
// reduced dim (or a slice of it), and the outer one over more. The wider
// tensor's reduced dims form two runs there; a dense copy of the cut would
// make them one, and read columns where the whole reads rows (batch
// invariance: (4, 7, 16, 8)[:, 6:7] over (0, 2) on the GPU).
Groups merge_runs(const at::Tensor& input, const std::vector<bool>& reduced, at::IntArrayRef order,
                  const at::Tensor& view) {
  Groups groups;
  int64_t cut_stride = -1;  // the view's stride of a cut kept dim since the last group's last dim
  for (const int64_t d : order) {
    const int64_t size = input.size(d), stride = input.stride(d);
    if (size == 1) {
      if (!reduced[d] && !groups.empty() && groups.back().reduced &&
          view.stride(groups.back().dims.back()) > view.stride(d))
        cut_stride = view.stride(d);
      continue;
    }
    const bool cut_between = reduced[d] && view.stride(d) * size <= cut_stride;
    cut_stride = -1;
    if (!groups.empty() && groups.back().reduced == reduced[d] && !cut_between &&
        groups.back().stride == stride * size) {
      groups.back().size *= size;
      groups.back().stride = stride;
      groups.back().dims.push_back(d);
    } else {
      groups.push_back({size, stride, reduced[d], {d}});
    }
  }
  return groups;
}

namespace {

// Matches the runs of the dims visited in `order` against the two layouts.
// `view`: the tensor whose strides `input` stands for (see plan_layout).
std::optional<ReduceLayout> match_layout(const at::Tensor& input, const std::vector<bool>& reduced,
                                         at::IntArrayRef order, const at::Tensor& view) {
  const Groups groups = merge_runs(input, reduced, order, view);
  const bool full = all_reduced(reduced);
  Groups kept, red;
  for (const auto& g : groups) (g.reduced ? red : kept).push_back(g);
  if (red.size() > 1 || kept.size() > 2) return std::nullopt;
  const Group r = red.empty() ? Group{1, 1, true, {}} : red[0];
  // Columns of width one: a kept dim of size 1 cut from columns, and at most one larger kept dim
  // (the columns' batch), before the run or after it. They must be summed in the order of the
  // wider columns of which they are a slice: x[..., :1] of a reduction over a middle dim or over
  // dim 0, x[:, ::3][:, :1] over dim 0, the last stage of z[:, :, :1] of (b, m, k, n) over
  // (1, 3), a permuted view's kept dim cut to one. Told by the view's strides (s of the size-1
  // dim, t of the run's innermost dim): within a strided run's step (0 < s < t; after the run in
  // `order` also s = 0, an expanded dim cut to one, see cut_expanded_dims); and, where every kept
  // dim has size 1 and none steps past the run's extent (a batch of rows cut to one, (b, l, 1)[:1]
  // over dim 1), anywhere inside that extent after the run, so that a contiguous copy of x[:, :1]
  // reads as x does. Else the whole's kept dim lies outside the run and the whole reads rows: a
  // contiguous (n, l, 1) tensor, a transposed tensor's x.t()[:, :1].
  int64_t first_reduced = -1, last_reduced = -1;  // positions in `order`
  for (size_t i = 0; i < order.size(); ++i) {
    if (!reduced[order[i]] || input.size(order[i]) == 1) continue;
    if (first_reduced < 0) first_reduced = static_cast<int64_t>(i);
    last_reduced = static_cast<int64_t>(i);
  }
  bool cut_from_columns = false;
  if (last_reduced >= 0) {
    const int64_t t = view.stride(r.dims.back()), extent = t * r.size;
    bool batch_of_one = false, inside_extent = false;
    for (int64_t i = 0; i < static_cast<int64_t>(order.size()); ++i) {
      const int64_t d = order[i];
      if (reduced[d] || input.size(d) != 1 || (i > first_reduced && i < last_reduced)) continue;
      const int64_t s = view.stride(d);
      const bool after = i > last_reduced;
      batch_of_one = batch_of_one || s >= extent;
      inside_extent = inside_extent || (after && s > 0 && s < extent);
      cut_from_columns = cut_from_columns || (t > 1 && s < t && (after || s > 0));
    }
    cut_from_columns = cut_from_columns || (kept.empty() && !batch_of_one && inside_extent);
  }
  const bool column_of_one = cut_from_columns && kept.size() <= 1;

  // Inner: the reduced elements of each output are contiguous.
  if (r.stride == 1 && kept.size() <= 1 && !column_of_one) {
    const Group k = kept.empty() ? Group{1, 0, false, {}} : kept[0];
    return ReduceLayout{ReduceLayout::Inner, k.size, r.size, 1, k.stride, 1, full};
  }
  // Outer: the last kept dim is contiguous; the output index is
  // (first kept, last kept) in row-major order.
  if (!kept.empty() && kept.back().stride == 1) {
    const Group b = kept.size() == 2 ? kept[0] : Group{1, 0, false, {}};
    return ReduceLayout{ReduceLayout::Outer, b.size, r.size, kept.back().size,
                        b.stride, r.stride, full};
  }
  if (column_of_one) {
    const Group b = kept.empty() ? Group{1, 0, false, {}} : kept[0];
    return ReduceLayout{ReduceLayout::Outer, b.size, r.size, 1, b.stride, r.stride, full};
  }
  return std::nullopt;
}

}  // namespace

// The runs of one kind, innermost first, or nullopt where there are more
// than kMaxRuns or the offsets of their elements need more than 31 bits (the
// kernels index them in 32).
std::optional<Runs> runs_of(const Groups& groups, bool reduced) {
  Runs runs;
  int64_t count = 1, last_offset = 0;
  for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
    if (g->reduced != reduced) continue;
    if (runs.count == kMaxRuns) return std::nullopt;
    runs.sizes[runs.count] = g->size;
    runs.strides[runs.count] = g->stride;
    ++runs.count;
    count *= g->size;
    last_offset += (g->size - 1) * g->stride;
  }
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (count >= kLimit || last_offset >= kLimit) return std::nullopt;
  return runs;
}

DimList dims_in_order(const at::Tensor& input) {
  DimList order(input.dim());
  std::iota(order.begin(), order.end(), 0);
  return order;
}

// The dims from the largest stride down (ties in dim order): memory order.
DimList dims_by_stride(const at::Tensor& input) {
  DimList order = dims_in_order(input);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return input.stride(a) > input.stride(b); });
  return order;
}

// The dims of `input`, every one kept (size 1 where reduced): the shape of
// what reduce_dims returns.
DimList keepdim_shape(const at::Tensor& input, const std::vector<bool>& reduced) {
  DimList shape(input.sizes().begin(), input.sizes().end());
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) shape[d] = 1;
  return shape;
}

std::optional<ReduceLayout> plan_layout(const at::Tensor& input, const std::vector<bool>& reduced,
                                        const at::Tensor* made_from) {
  const at::Tensor& view = made_from != nullptr ? *made_from : input;
  TORCH_INTERNAL_ASSERT(view.dim() == input.dim());
  if (auto layout = match_layout(input, reduced, dims_in_order(input), view)) return layout;
  // The reduced elements of an output may be taken in any order, but the kept
  // dims' order is the output's. So where the dims in memory order keep the
  // kept dims in theirs, they are tried too: a transposed or permuted tensor
  // whose reduced dims (or all dims) form one dense block is then read in
  // place, in memory order.
  const DimList order = dims_by_stride(input);
  DimList kept_in_memory_order;
  for (const int64_t d : order)
    if (!reduced[d] && input.size(d) != 1) kept_in_memory_order.push_back(d);
  if (!std::is_sorted(kept_in_memory_order.begin(), kept_in_memory_order.end())) return std::nullopt;
  return match_layout(input, reduced, order, view);
}

}  // namespace torch_reduce
