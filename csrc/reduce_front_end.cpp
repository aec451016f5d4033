#include "reduce_front_end.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <numeric>

namespace torch_reduce {
namespace {

bool is_kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

void check_dtype(const char* name, at::ScalarType t, const char* what) {
  TORCH_CHECK(is_kernel_dtype(t), "torch_reduce.", name, ": unsupported ", what,
              " dtype ", t,
              " (supported: float32, float64, float16, bfloat16, int8, uint8, "
              "int16, int32, int64, bool)");
}

bool is_reduced_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

bool all_reduced(const std::vector<bool>& reduced) {
  return std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
}

// What the op returns, and what the kernel reads and writes to get there.
struct DtypePlan {
  at::ScalarType input;   // the input is cast to this first (usually a no-op)
  at::ScalarType kernel;  // the kernel's output dtype
  at::ScalarType result;  // the dtype returned to the caller
};

DtypePlan plan_dtypes(ReduceKind kind, const char* name, at::ScalarType self,
                      std::optional<at::ScalarType> requested) {
  check_dtype(name, self, "input");
  if (requested) check_dtype(name, *requested, "output");
  const bool reduced_precision = is_reduced_precision(self);
  switch (kind) {
    case ReduceKind::Max:
    case ReduceKind::Min:
      return {self, self, self};
    case ReduceKind::Mean: {
      const at::ScalarType result = requested.value_or(self);
      TORCH_CHECK(at::isFloatingType(result), name,
                  "(): could not infer output dtype. Input dtype must be either "
                  "a floating point or complex dtype. Got: ",
                  result);
      // The kernels read half/bfloat16 and write float directly; any other
      // requested dtype is reached by casting the input first, like torch.
      if (reduced_precision && result == at::kFloat) return {self, result, result};
      return {result, result, result};
    }
    case ReduceKind::Sum: {
      if (!requested) {
        if (at::isIntegralType(self, /*includeBool=*/true)) return {self, at::kLong, at::kLong};
        return {self, self, self};
      }
      const at::ScalarType result = *requested;
      if (reduced_precision && result == at::kFloat) return {self, result, result};
      // Integers accumulate in int64; a narrower integer result is the int64
      // sum wrapped around, which is what torch returns.
      // A bool result is "any element nonzero": the input becomes bool first.
      if (at::isIntegralType(result, /*includeBool=*/true)) {
        const at::ScalarType input =
            at::isIntegralType(self, /*includeBool=*/true) && result != at::kBool ? self : result;
        return {input, at::kLong, result};
      }
      return {result, result, result};
    }
  }
  TORCH_CHECK(false, "unreachable");
}

int64_t product(at::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Dims and runs live inline, in SmallVectors: as std::vectors, each group's
// dims, each list of groups and each order or shape was a heap allocation,
// and a small reduction plans several. Dev A/B on the 2-core CPU (not
// committed), us, std::vector -> SmallVector (torch): sum of 1024 float64
// 1.20 -> 1.17 (1.06); amax over dim 0 of (128, 16) 1.70 -> 1.57 (5.8); sum
// of a (128, 16) slice 2.56 -> 2.24 (1.52); mean over (0, 1) of a permuted
// (42, 10, 13, 12) 5.61 -> 5.17 (5.17).
using DimList = c10::SmallVector<int64_t, 8>;

struct Group {
  int64_t size;
  int64_t stride;
  bool reduced;
  DimList dims;
};
using Groups = c10::SmallVector<Group, 8>;

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

}  // namespace

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

namespace {

// Small inputs (small_gather_elements) of rows of kSmallGatherMaxRowBytes
// or more are copied rather than gathered (but for full reductions, below),
// and so are reductions over dims of size 1 alone.
//
// Gathered rows are read in one kernel where the copy took two. The row
// kernels' gathered instantiations read large ones (reduce_front_end.h,
// small_gather_elements). H100, against the copy they replace, one build,
// sums, us: from 2^20 to 2^22 elements float32 was faster gathered in all 21
// cases of benchmarks/probes/gathered_rows.py (1.06x-2.9x), bfloat16 in 16 of
// 21 (0.88x-1.32x). On small inputs they lost to the copy: a gathered row
// takes a few integer operations per element to find it, in code unrolled
// over the items a lane loads (2000-6000 instructions, sm_90 SASS), and
// there a few warps do all the work, waiting on those operations' results
// (33-41% of their cycles, ncu) and on instruction fetch (11-23%), almost
// never on memory (a dev build that gathered every size, not committed:
// float32 (16, n, 40) over (0, 2) 4.4 against 3.6 at 3840 elements; bfloat16
// (4, n, 3) over (0, 2) 8.3 against 5.0 at 4092; full reductions of bfloat16
// slices of just under 2^20 elements 0.78x and 0.91x). Small inputs are
// staged instead (staged_rows_kernel.cuh): every element loaded by a thread
// of its own, in short code (benchmarks/probes/gathered_rows.py --small).
//
// A full reduction is one gathered row: split_row_reduce_kernel's gathered
// instantiation reads it in place, in the order of its copy's full
// reduction (the same bits). Copied, a small one took a copy's kernel and a
// split kernel, each about as long as torch's one reduce kernel. H100 A/B,
// one build, the copy forced by a dev hook (not committed), us, copied ->
// gathered (torch): sums of slices x[:, 1:] of (n / 100, 101), bfloat16 n =
// 1000 3.58 -> 2.30 (2.36), float32 n = 10^4 4.37 -> 3.88 (5.16), 10^6 7.28
// -> 4.32 (8.86); amax of x[::2] of 2n, float32 n = 2000 3.11 -> 2.01
// (2.21), 8 x 10^6 24.3 -> 10.4 (12.3), float64 44.1 -> 25.7 (29.0),
// bfloat16 12.0 -> 10.0 (11.8); the sweep's bfloat16 amin of a (19, 96)
// slice 3.57 -> 2.19 (3.06). 33 of 46 cases gained, 7 tied; six of 3500 to
// 20000 elements lost 0.2-0.9 us (bfloat16 amax of 20000 strided 3.85 ->
// 4.65, torch 4.45; bfloat16 sum of a (100, 101) slice 3.94 -> 4.79, 5.11;
// float32 sum of an (18, 194) slice 3.45 -> 3.62, 3.10). Staging a small one
// as one row instead (staged_rows_kernel: one block, one warp's fold) lost
// in all eight cases of under 16 KiB of a first A/B (float32 (18, 194)
// slice 3.45 -> 6.34).
//
// Small full reductions (small_gather_elements) whose innermost run is
// shorter than a vector are copied too: the split kernel steps along such
// runs element by element, and in one block those steps outlast the copy's
// kernel. H100 A/B, one build, the copy forced by a dev hook (not
// committed), us, gathered -> copied (torch): the sweep's bfloat16 mean of a
// (27, 12, 4, 5) slice (runs of 5) 4.77 -> 3.92 (4.02), float16 mean of a
// (7, 148, 10, 3) slice 5.99 -> 5.07 (10.4); float16 sum of a (30, 11, 58, 2)
// slice 4.97 -> 4.88. (Larger ones in memory order are staged, plan_stages.)
bool copies_short_runs(const ReduceLayout& layout, int64_t element_size) {
  return layout.full && layout.reduce_runs.sizes[0] * element_size < kKernelVectorBytes &&
         layout.reduce < small_gather_elements(element_size);
}

// Rows whose copy would be dense rows (the reduced dims innermost), read in
// place through their strides: `input`'s dims are in memory order. nullopt
// where runs_of refuses them, and for the copies above.
std::optional<ReduceLayout> plan_gather(const at::Tensor& input, const std::vector<bool>& reduced) {
  const Groups groups = merge_runs(input, reduced, dims_in_order(input), input);
  const auto batch_runs = runs_of(groups, false), reduce_runs = runs_of(groups, true);
  // No reduced run: dims of size 1 alone are reduced, and each row is one
  // element of the copy, which is then dense (the kernels index no empty run).
  if (!batch_runs || !reduce_runs || reduce_runs->count == 0) return std::nullopt;
  ReduceLayout layout{ReduceLayout::Gather, 1, 1, 1, 0, 0, all_reduced(reduced), *batch_runs, *reduce_runs};
  for (int d = 0; d < batch_runs->count; ++d) layout.batch *= batch_runs->sizes[d];
  for (int d = 0; d < reduce_runs->count; ++d) layout.reduce *= reduce_runs->sizes[d];
  if (copies_short_runs(layout, input.element_size())) return std::nullopt;
  if (is_small_gather(layout, input.element_size()) && layout.reduce * input.element_size() >= kSmallGatherMaxRowBytes)
    return std::nullopt;
  return layout;
}

// Columns whose kept dims merge into neither layout (x[..., :k] of a
// reduction over a middle dim of a 4-D tensor; reduce_front_end.h), read in
// place where a column has at most kGatheredColumnMaxRows rows: one kernel
// where the copy took two, reading the input once where the copy read it
// twice and wrote it once. `dense` is the layout of the copy of `input` (in
// memory order), whose columns these are, in its order. nullopt where the
// reduced dims do not form one run or runs_of refuses the kept ones.
//
// A thread reads a column (column_short_kernel's indexed kernels). Longer
// columns, which it reads eight rows a step, lost to the copy in float32 sums
// of up to a few thousand columns (a bfloat16 amax of 4000 gained up to 64
// rows): H100 A/B of one build (the kernels of 28e3ec4, before kAhead loaded
// short columns ahead), the bound as an environment variable (not
// committed), us, copied -> gathered (torch): float32 sums over dim 1 of
// x[..., :2] of (b, r, c, 3), r = 32: (2, 32, 64) 3.93 -> 2.88 (3.24), (8,
// 32, 250) 4.31 -> 2.95 (3.45); r = 40: 3.98 -> 5.08 (3.61), 4.38 -> 5.18
// (3.82); r = 64: 4.06 -> 6.08 (4.70), 4.68 -> 6.20 (4.97); float32 (20, 64,
// 9, 8)[..., ::2] 3.70 -> 6.25 (4.90). Every case of 8 to 32 rows gained
// (bfloat16 amax of (16, 24, 125, 3)[..., :2] 4.57 -> 2.96, torch 4.23), at
// every size (benchmarks/probes/gathered_columns.py).
constexpr int64_t kGatheredColumnMaxRows = 32;

std::optional<ReduceLayout> plan_gathered_columns(const at::Tensor& input, const std::vector<bool>& reduced,
                                                  const ReduceLayout& dense) {
  if (dense.reduce > kGatheredColumnMaxRows) return std::nullopt;
  const Groups groups = merge_runs(input, reduced, dims_in_order(input), input);
  const auto column_runs = runs_of(groups, false), reduce_runs = runs_of(groups, true);
  if (!column_runs || !reduce_runs || reduce_runs->count != 1) return std::nullopt;
  ReduceLayout layout = dense;
  layout.batch_stride = 0;
  layout.reduce_stride = reduce_runs->strides[0];
  layout.column_runs = *column_runs;
  return layout;
}

// Reduced dims that form several runs (dims (0, 2) of a 3-D tensor,
// batch-norm statistics over (0, 2, 3), a full reduction of x[..., :-1])
// fit neither layout. In a tensor whose dims are in memory order (a
// contiguous tensor or a slice of one), they are reduced in stages rather
// than copied: one run a stage, the largest first (the smallest partial
// result), each into a contiguous tensor of the accumulator dtype. Each
// output's order then depends on the runs' lengths alone, which slicing a
// kept dim leaves as they are (batch invariance).
//
// Where each output has few values, the copy is cheaper than the stages'
// kernels: on the H100 (bench_sweep.py on this code without these bounds,
// not committed, against results/sweep_h100.json at 13702fc, which copied
// every such input), stages lost for dim
// reductions of fewer than 1024 values an output (bfloat16 mean over (1, 3)
// of a (1314, 58, 6, 3) slice 8.8 -> 35.4 us, float64 amin over (0, 2) of
// (101, 2202, 4) 8.3 -> 12.0) and gained from there (float64 amin over (0, 3)
// of (40, 51, 33, 40) 27.1 -> 10.0, int32 amax over (0, 2) of (2992, 84, 36)
// 47.6 -> 9.8), and lost for full reductions of up to some 2^20 elements
// (bfloat16 sum of an (18, 193) slice 3.7 -> 6.1) but for a few gained from
// there (float64 amax of a (10, 216, 4083) slice 79.4 -> 29.5).
//
// On the CPU, where a stage costs a few microseconds more and no launch,
// reductions are staged at every size: their copy wrote and read the whole
// input again (CPU sweep, this code with and without, dev builds not
// committed: float64 sum of a (36, 2337) slice 43.9 -> 8.3 us, int32 amin
// of a (4, 9005) slice 20.6 -> 4.6, torch 8.6 and 5.6). Dim reductions with
// few values an output lost at first where a stage was short rows folded
// one chain at a time (float32 amax over (0, 3) of a transposed
// (61, 2, 41, 16), 17.1 -> 46.8); with rows folded side by side and
// extrema's last elements as a vector, that case took 16.1 -> 17.2, float16
// mean over (0, 2) of a transposed (2, 442, 194) 92.9 -> 14.2 (torch 211)
// and float64 amin over (0, 2) of (35, 385, 4) 48.0 -> 11.2 (torch 79).
constexpr int64_t kMinStagedCount = 1024;
constexpr int64_t kMinStagedFullCount = 1 << 20;
constexpr int64_t kRowStageMinLength = 32;
// A dim reduction's slice on the GPU (plan_stages): rows first where they are
// a 128-byte line or more and the largest run more than one chunk of the
// column kernels (kColumnChunkRows).
constexpr int64_t kRowStageMinBytes = 128;

// Returns the dims each stage reduces, or nullopt where there are fewer than
// two runs, too few values an output, or the dims are not in memory order.
std::optional<std::vector<std::vector<bool>>> plan_stages(const at::Tensor& input,
                                                          const std::vector<bool>& reduced) {
  int64_t count = 1;
  for (int64_t d = 0; d < input.dim(); ++d)
    if (reduced[d]) count *= input.size(d);
  const bool full = all_reduced(reduced);
  const int64_t min_count = !input.is_cuda() ? 0 : full ? kMinStagedFullCount : kMinStagedCount;
  if (count < min_count) return std::nullopt;
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
  // misaligned (H100, a sweep of this code without it, not committed:
  // float32 sum of a (8192, 4097) slice without its last column 55.4 us,
  // bfloat16 63.0 us, torch 62.7 and 63.1).
  //
  // A dim reduction on the GPU does so too where the innermost run is cut
  // from the dim outside it (a slice, x[..., :k]: that dim's stride is not
  // the run's length) into rows of a 128-byte line or more, after a largest
  // run of more than kColumnChunkRows rows: the columns of the slice, taken
  // first, would be read an element at a time. H100 A/B of one build, a dev
  // hook (not committed), us, largest first -> rows first (torch): bfloat16
  // sum over (1, 2) of a (443, 699, 69) slice 57.6 -> 33.7 (45.4), float32
  // of a (1, 4096, 1024) slice 12.8 -> 6.7 (14.3), of (64, 1000, 256) 35.2
  // -> 27.0 (41.2), float64 mean over (0, 1, 3) of a (133, 2273, 5, 41)
  // slice 229.6 -> 194.6 (213.4), float16 amax over (1, 2) of (100, 300, 64)
  // 6.8 -> 6.0 (9.5). It lost where the largest run was one chunk of
  // columns (int32 sum of (2000, 50, 40) 8.0 -> 9.9, float32 amin of
  // (4, 40, 32) 3.3 -> 3.9) and on rows of 64 bytes (bfloat16 sum of
  // (4, 400, 32) 5.0 -> 5.4). The rule reads strides and run lengths alone,
  // which slicing a kept dim leaves as they are (batch invariance). On the
  // CPU, whose column folds run along rows of columns, rows first lost in 7
  // of 12 cases, up to 4x (this machine: bfloat16 sum over (1, 2) of a
  // (40, 699, 69) slice 78 -> 311 us; float32 of (300, 64, 299) over (0, 2)
  // 543 -> 364 gained).
  const int64_t outside_inner = inner.dims.front() - 1;  // dims are in memory order here
  const bool sliced_inner = outside_inner >= 0 && input.stride(outside_inner) != inner.size;
  const bool rows_of_a_slice_first = input.is_cuda() && sliced_inner && runs.front().size > kColumnChunkRows &&
                                     inner.size * input.element_size() >= kRowStageMinBytes;
  if ((full || rows_of_a_slice_first) && inner.stride == 1 && inner.size >= kRowStageMinLength)
    std::stable_partition(runs.begin(), runs.end(), [&](const Group& g) { return g.dims == inner.dims; });
  // A dim reduction's stage marks the runs of the stages before it reduced
  // too (of size 1 by then): as kept dims of size 1 after its run, they would
  // make the last stage of a single output a column of width one
  // (match_layout), where that of more outputs reads rows (batch invariance:
  // the inner of two equal runs of a slice, x[..., :-1] of (k, n, n + 1)
  // over (1, 2), lost it at k = 1). A full reduction's last stage, one
  // output, stays a dim reduction.
  std::vector<std::vector<bool>> stages;
  std::vector<bool> stage(reduced.size(), false);
  for (const Group& run : runs) {
    if (full) std::fill(stage.begin(), stage.end(), false);
    for (const int64_t d : run.dims) stage[d] = true;
    stages.push_back(stage);
  }
  return stages;
}

// A new tensor for the output of reducing `input`, of its dims (`shape`: size
// 1 where reduced). Where `input` is the op's input permuted (`permutation`,
// as given to permute(); empty: not permuted), it is laid out as the result,
// contiguous in the op's input's dims, and this is a permuted view of it.
at::Tensor new_output(at::IntArrayRef shape, const at::TensorOptions& options, at::IntArrayRef permutation) {
  if (permutation.empty()) return at::empty(shape, options);
  DimList result_shape(shape.size());
  for (size_t j = 0; j < shape.size(); ++j) result_shape[permutation[j]] = shape[j];
  return at::empty(result_shape, options).permute(permutation);
}

// Reduces `input`, whose layout is `layout`, into a new tensor of the dims of
// `input` (size 1 where reduced) and dtype `out_dtype` (see new_output): its
// element b * inner + c, in row-major order, is where the kernels write it.
at::Tensor reduce_layout(ReduceKind kind, const at::Tensor& input, at::IntArrayRef shape,
                         const ReduceLayout& layout, at::ScalarType out_dtype, at::IntArrayRef permutation,
                         Algorithm algo, LayoutKernel kernel) {
  at::Tensor out = new_output(shape, input.options().dtype(out_dtype), permutation);
  kernel(kind, input, layout, out, algo);
  return out;
}

// Reduces `input` over `reduced` where the kernels read it in place, in one
// layout or in stages, into a new tensor of the dims of `input` (size 1 where
// reduced) and dtype `out_dtype`, laid out as new_output lays it out. Stages
// before the last write contiguous partials of `stage_dtype`, the accumulator
// dtype that stages pass between them; the last writes `out_dtype` from them.
// Its result was once cast by a kernel of its own: H100 sweep A/B of one
// build (a dev hook, not committed), half and bfloat16 sums and means in
// stages 0.9-1.2 us faster, e.g. float16 sum over (0, 2, 3) of a transposed
// (40, 8, 6, 34) 4.80 -> 3.57 us (torch 4.50), bfloat16 sum of a (57, 180,
// 323) slice 9.03 -> 7.88. nullopt otherwise.
std::optional<at::Tensor> reduce_in_place(ReduceKind kind, const at::Tensor& input, const std::vector<bool>& reduced,
                                          at::ScalarType out_dtype, at::ScalarType stage_dtype,
                                          at::IntArrayRef permutation, Algorithm algo,
                                          LayoutKernel kernel) {
  if (const auto layout = plan_layout(input, reduced))
    return reduce_layout(kind, input, keepdim_shape(input, reduced), *layout, out_dtype, permutation, algo, kernel);
  const auto stages = algo == Algorithm::Default ? plan_stages(input, reduced) : std::nullopt;
  if (!stages) return std::nullopt;
  at::Tensor partial = input;
  for (size_t i = 0; i < stages->size(); ++i) {
    const std::vector<bool>& stage = (*stages)[i];
    auto layout = plan_layout(partial, stage, &input);
    if (!layout && partial.is_same(input)) {
      // A slice whose kept dims do not merge takes the same stages on a
      // contiguous copy; the stages after the first read contiguous
      // partials, which always fit.
      partial = partial.contiguous();
      layout = plan_layout(partial, stage, &input);
    }
    TORCH_INTERNAL_ASSERT(layout.has_value());
    const bool last = i + 1 == stages->size();
    partial = reduce_layout(kind, partial, keepdim_shape(partial, stage), *layout, last ? out_dtype : stage_dtype,
                            last ? permutation : at::IntArrayRef{}, algo, kernel);
  }
  return partial;
}

// Reduces `input` over `reduced` into a new contiguous tensor of the dims of
// `input` (size 1 where reduced) and dtype `out_dtype`; stages pass partials
// of `stage_dtype` (reduce_in_place).
at::Tensor reduce_dims(ReduceKind kind, const at::Tensor& input, const std::vector<bool>& reduced,
                       at::ScalarType out_dtype, at::ScalarType stage_dtype, Algorithm algo, LayoutKernel kernel) {
  if (auto out = reduce_in_place(kind, input, reduced, out_dtype, stage_dtype, {}, algo, kernel)) return *out;

  // The dims in memory order. Where the kept dims are out of order there (a
  // transposed or permuted tensor), it is reduced in that order all the same,
  // into the result's memory through a permuted view (new_output).
  const int64_t ndim = input.dim();
  const DimList memory_order = dims_by_stride(input);
  std::vector<bool> memory_reduced(ndim);
  DimList inverse(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    memory_reduced[d] = reduced[memory_order[d]];
    inverse[memory_order[d]] = d;
  }
  const at::Tensor in_memory_order = input.permute(memory_order);
  // `t` (in_memory_order, or a dense copy of it) reduced in `layout`, into the
  // result through a view permuted into memory order (new_output).
  auto reduce_into_result = [&](const at::Tensor& t, const ReduceLayout& layout) {
    return reduce_layout(kind, t, keepdim_shape(t, memory_reduced), layout, out_dtype, memory_order, algo, kernel)
        .permute(inverse);
  };
  if (algo == Algorithm::Default && !std::is_sorted(memory_order.begin(), memory_order.end())) {
    if (auto out = reduce_in_place(kind, in_memory_order, memory_reduced, out_dtype, stage_dtype, memory_order, algo,
                                   kernel))
      return out->permute(inverse);
  }

  // Anything else would be copied once. Made dense in memory order where that
  // fits a layout (the reduced dims then form one run): a strided innermost
  // dim (x[:, ::3]), or a slice whose kept dims no longer merge (x[..., :k] of
  // a reduction over a middle dim of a 4-D tensor), which then reads as the
  // whole does (batch invariance). Else the kept dims go first and the
  // reduced dims after them, in memory order: rows.
  // The layout is planned on a meta tensor of the copy's shape first, so that
  // the input is copied only once.
  const at::Tensor dense_shape = at::empty(in_memory_order.sizes(), input.options().device(at::kMeta));
  const auto dense_layout = plan_layout(dense_shape, memory_reduced, &in_memory_order);
  // Where the copy would be rows, the CUDA kernels read them in place
  // instead (Gather), in the copy's order: one kernel where the copy took
  // two. Where it would be columns, they are read as columns, so that a slice
  // reads as the whole does: short ones in place (plan_gathered_columns),
  // others from the copy.
  // The CPU has no such kernels: its copy below, kept dims first, writes the
  // result in its own order, where rows copied in memory order would be
  // reduced into a dense output and copied again (CPU sweep cases 53 and 98,
  // a build that did so, not committed: 24 -> 28 and 14.4 -> 16.7 us).
  if (algo == Algorithm::Default && input.is_cuda() &&
      (!dense_layout || dense_layout->kind == ReduceLayout::Inner)) {
    if (const auto gather = plan_gather(in_memory_order, memory_reduced))
      return reduce_into_result(in_memory_order, *gather);
  }
  if (algo == Algorithm::Default && input.is_cuda() && dense_layout && dense_layout->kind == ReduceLayout::Outer) {
    if (const auto gathered = plan_gathered_columns(in_memory_order, memory_reduced, *dense_layout))
      return reduce_into_result(in_memory_order, *gathered);
  }
  if (dense_layout) {
    const at::Tensor dense = in_memory_order.contiguous();
    const auto layout = plan_layout(dense, memory_reduced, &in_memory_order);
    TORCH_INTERNAL_ASSERT(layout.has_value());
    return reduce_into_result(dense, *layout);
  }

  // Else the kept dims go first and the reduced dims after them, in memory
  // order, so that the copy reads along it.
  DimList order;
  for (int64_t d = 0; d < ndim; ++d)
    if (!reduced[d]) order.push_back(d);
  for (const int64_t d : memory_order)
    if (reduced[d]) order.push_back(d);
  const at::Tensor copy = input.permute(order).contiguous();
  std::vector<bool> copy_reduced(ndim);
  for (int64_t d = 0; d < ndim; ++d) copy_reduced[d] = reduced[order[d]];
  const auto layout = plan_layout(copy, copy_reduced);
  TORCH_INTERNAL_ASSERT(layout.has_value() && layout->kind == ReduceLayout::Inner);
  return reduce_layout(kind, copy, keepdim_shape(input, reduced), *layout, out_dtype, {}, algo, kernel);
}

// An input's expanded dims (stride 0, size 2 or more) hold the same values at
// every index. They are cut to width 1 before the reduction: a kept one's
// outputs are reduced once and expanded; a reduced one's repeats change no
// extremum nor the mean, and multiply the sum (reduce_front_end). The input's
// values are then read once rather than once a repeat, and an output takes
// the bits that it takes in a slice of any kept dim (batch invariance: where
// an expanded dim lies innermost in memory, the whole's copy read columns
// where a slice x[:, k:k+1] of it read rows).
struct DistinctValues {
  at::Tensor input;     // the expanded dims cut to width 1
  int64_t repeats = 1;  // of each value along the reduced ones: the product of their sizes
};

DistinctValues cut_expanded_dims(const at::Tensor& input, const std::vector<bool>& reduced) {
  DistinctValues distinct{input};
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (input.stride(d) != 0 || input.size(d) < 2) continue;
    distinct.input = distinct.input.narrow(d, 0, 1);
    if (reduced[d]) distinct.repeats *= input.size(d);
  }
  return distinct;
}

// The dtype that stages pass between them: what the kernels accumulate in
// (float for half and bfloat16 sums and means, int64 for integer sums); amax
// and amin are exact in their own dtype.
at::ScalarType stage_dtype(ReduceKind kind, const DtypePlan& dtypes) {
  if (kind == ReduceKind::Max || kind == ReduceKind::Min) return dtypes.kernel;
  return is_reduced_precision(dtypes.input) ? at::kFloat : dtypes.kernel;
}

}  // namespace

at::Tensor reduce_front_end(ReduceKind kind, const char* name,
                            const at::Tensor& self, at::OptionalIntArrayRef dim,
                            bool keepdim, std::optional<at::ScalarType> dtype,
                            const std::optional<std::string>& algorithm,
                            LayoutKernel kernel) {
  const DtypePlan dtypes = plan_dtypes(kind, name, self.scalar_type(), dtype);
  const int64_t ndim = self.dim();

  // dim=None and dim=[] both reduce every dim, as in torch.
  std::vector<bool> reduced(ndim, true);
  const bool all_dims = !dim.has_value() || dim->empty();
  if (!all_dims) {
    // Raises torch's errors for out-of-range and repeated dims.
    const auto mask = at::dim_list_to_bitset(*dim, ndim);
    for (int64_t d = 0; d < ndim; ++d) reduced[d] = mask[d];
  }

  DimList out_shape;
  int64_t count = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      count *= self.size(d);
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(self.size(d));
    }
  }

  // The algorithm: an explicit request must be honoured or refused; the
  // process-wide default only applies where the ladder runs.
  Algorithm algo = Algorithm::Default;
  const bool full = all_dims || all_reduced(reduced);
  if (algorithm) {
    algo = parse_algorithm(*algorithm);
    if (algo != Algorithm::Default) {
      TORCH_CHECK(kind == ReduceKind::Sum, "torch_reduce.", name, " takes no algorithm");
      TORCH_CHECK(self.is_cuda(), "torch_reduce.", name, ": algorithm '", *algorithm,
                  "' is a CUDA kernel; tensors on ", self.device().type(),
                  " use algorithm='default'");
      TORCH_CHECK(full, "torch_reduce.", name, ": algorithm '", *algorithm,
                  "' reduces all elements; use dim=None or algorithm='default'");
    }
  } else if (kind == ReduceKind::Sum && self.is_cuda() && full) {
    algo = environment_algorithm().value_or(Algorithm::Default);
  }

  // An extremum has no identity: reducing an empty dim raises, as in torch,
  // even where the output is empty too (an empty kept dim), and names the
  // first such dim as the caller wrote it.
  if (count == 0 && (kind == ReduceKind::Max || kind == ReduceKind::Min)) {
    TORCH_CHECK(!all_dims, name,
                "(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.");
    for (const int64_t d : *dim) {
      TORCH_CHECK_INDEX(self.size(at::maybe_wrap_dim(d, ndim)) != 0, name,
                        "(): Expected reduction dim ", d, " to have non-zero size.");
    }
  }
  const auto out_options = self.options().dtype(dtypes.result);
  if (product(out_shape) == 0) return at::empty(out_shape, out_options);
  if (count == 0) {
    return kind == ReduceKind::Sum ? at::zeros(out_shape, out_options)
                                   : at::full(out_shape, std::numeric_limits<double>::quiet_NaN(), out_options);
  }

  // Expanded dims are cut before the cast, which would write the expansion; not for the
  // ladder, which reads what it is given.
  const DistinctValues distinct = algo == Algorithm::Default ? cut_expanded_dims(self, reduced) : DistinctValues{self};
  const at::Tensor input =
      distinct.input.scalar_type() == dtypes.input ? distinct.input : distinct.input.to(dtypes.input);
  const at::ScalarType stage = stage_dtype(kind, dtypes);
  at::Tensor out;
  if (kind == ReduceKind::Sum && distinct.repeats > 1) {
    // The sum of the distinct values times their repeats, in the accumulator dtype: the repeats
    // take one rounding where their fold took one a repeat (integers wrap as the fold does).
    out = reduce_dims(kind, input, reduced, stage, stage, algo, kernel).mul_(distinct.repeats).to(dtypes.kernel);
  } else {
    out = reduce_dims(kind, input, reduced, dtypes.kernel, stage, algo, kernel);
  }
  if (!distinct.input.is_same(self)) out = out.expand(keepdim_shape(self, reduced)).contiguous();
  const at::Tensor result = out.view(out_shape);
  return result.scalar_type() == dtypes.result ? result : result.to(dtypes.result);
}

}  // namespace torch_reduce
