// The plan of a column reduction (an Outer layout): its passes, each one or
// two levels of the fixed column order (column_fold.cuh), with the kernel
// column_config.cuh's heuristics pick, its template choices and its grid;
// the first pass of dense narrow columns by column_flat_kernel, gathered
// columns by column_short_kernel's indexed kernels. Every pass is planned
// before the first launches: a pass's input is the layout's, or the
// partials of the pass before ([values, outputs], contiguous, fresh and so
// aligned). launch_columns.cuh launches them; explain prints them.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <vector>

#include "column_config.cuh"
#include "launch_plan.h"
#include "row_plans.cuh"

namespace torch_reduce {
namespace cuda {

// Calls f(Kernel<k>{}) for the column_short_kernel k that reads a chunk
// class of `chunk_rows` rows in `items` order: the plan asks its resident
// blocks, the launch launches it. Only the kernels a plan can name are
// built: narrow items' for types that have them (by rows for chunks of four
// or eight rows a slot, in slot order for fewer), evict-first for wide ones.
template <typename in_t, typename acc_t, typename out_t, typename Op, typename F>
void with_short_kernel(int chunk_rows, ShortItems items, bool evict_first, bool indexed, F&& f) {
  // Chunk classes are powers of two from 2 to 64, dispatched like an item width.
  with_width<kFoldLength, 2>(chunk_rows, [&](auto rows) {
    constexpr int kChunkRows = decltype(rows)::value;
    constexpr int kRowsPerSlot = chunk_rows_per_slot(kChunkRows);
    if (indexed) return f(Kernel<column_short_kernel<kChunkRows, false, true, ShortItems::Wide, in_t, acc_t, out_t, Op>>{});
    if constexpr (short_spread<in_t, acc_t>(1) > 1) {
      if (items == ShortItems::Spread)
        return f(Kernel<column_short_kernel<kChunkRows, false, false, ShortItems::Spread, in_t, acc_t, out_t, Op>>{});
      if (items == ShortItems::NarrowByRows) {
        if constexpr (kRowsPerSlot >= kSlots / 2) {
          return f(
              Kernel<column_short_kernel<kChunkRows, false, false, ShortItems::NarrowByRows, in_t, acc_t, out_t, Op>>{});
        }
        TORCH_INTERNAL_ASSERT(false, "narrow_chunk_by_rows: a chunk of ", kRowsPerSlot, " rows a slot");
      }
      if (items == ShortItems::Narrow) {
        if constexpr (kRowsPerSlot < kSlots) {
          return f(Kernel<column_short_kernel<kChunkRows, false, false, ShortItems::Narrow, in_t, acc_t, out_t, Op>>{});
        }
        TORCH_INTERNAL_ASSERT(false, "narrow_chunk_by_rows: a chunk of eight rows a slot in slot order");
      }
    }
    TORCH_INTERNAL_ASSERT(items == ShortItems::Wide, "narrow items of a type without their kernels");
    if (evict_first) return f(Kernel<column_short_kernel<kChunkRows, true, false, ShortItems::Wide, in_t, acc_t, out_t, Op>>{});
    f(Kernel<column_short_kernel<kChunkRows, false, false, ShortItems::Wide, in_t, acc_t, out_t, Op>>{});
  });
}

// Columns an item of a column pass holds: the widest vector of columns that
// every row and batch start aligned to.
template <typename in_t, typename acc_t>
int column_item_width(uintptr_t data, int64_t batch, int64_t columns, int64_t batch_stride, int64_t reduce_stride) {
  int width = column_width<in_t, acc_t>();
  while (width > 1 && !(is_aligned_address(data, width * sizeof(in_t)) && columns % width == 0 &&
                        reduce_stride % width == 0 && (batch == 1 || batch_stride % width == 0)))
    width /= 2;
  return width;
}

struct ColumnPassPlan {
  // What the pass reads: the layout (first pass) or the partials before it.
  int64_t batch = 0, reduce = 0, columns = 0, batch_stride = 0, reduce_stride = 0;
  int64_t element_bytes = 0;
  bool later_pass = false;
  bool indexed = false;  // column_short_kernel's indexed kernels (permuted output or gathered columns)
  int width = 1;         // columns an item
  int64_t items = 0;     // items a row
  ColumnKernel kernel = ColumnKernel::Short;
  TileMode tile = TileMode::Teams;      // kernel Tile: teams, wide blocks or single chunks
  int row_lanes = 0;                    // kernel Tile: items sharing a chunk row
  ShortItems items_read = ShortItems::Wide;  // kernel Short
  int chunk_rows = 0;                   // kernel Short: the chunk class
  int spread = 1;                       // kernel Short: items a thread
  bool evict_first = false;
  bool early = false;
  int64_t values_left = 1;  // values a column after the pass (1: it writes the output)
  int64_t grid = 0;
};

// column_flat_kernel's first pass: `first` is the window's first column in its frame.
struct FlatColumnsPlan {
  int64_t first = -1;  // -1: not flat
  int threads = 0;
  bool evict_first = false;
  int64_t chunks = 0;  // values a column after the pass
  int64_t grid = 0;
};

// Each pass leaves at most a value a chunk (64 rows) of what it reads, so
// columns of 2^63 rows take 11 passes; the flat pass is apart.
constexpr int kMaxColumnPasses = 12;

struct ColumnsPlan {
  FlatColumnsPlan flat;
  int passes = 0;  // after the flat pass, if any
  ColumnPassPlan pass[kMaxColumnPasses];
};

template <typename in_t, typename acc_t, typename out_t, typename Op>
ColumnPassPlan plan_column_pass(uintptr_t data, int64_t batch, int64_t reduce, int64_t columns, int64_t batch_stride,
                                int64_t reduce_stride, bool indexed, bool later_pass) {
  ColumnPassPlan p;
  p.batch = batch, p.reduce = reduce, p.columns = columns, p.batch_stride = batch_stride;
  p.reduce_stride = reduce_stride, p.element_bytes = sizeof(in_t), p.later_pass = later_pass, p.indexed = indexed;
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  const int64_t row_bytes = columns * static_cast<int64_t>(sizeof(in_t));
  const int64_t bytes = batch * reduce * row_bytes;
  TORCH_INTERNAL_ASSERT(!indexed || reduce <= kFoldLength, "indexed columns are of one chunk");
  p.width = indexed ? 1 : column_item_width<in_t, acc_t>(data, batch, columns, batch_stride, reduce_stride);
  p.items = ceil_div(columns, p.width);
  p.kernel = indexed ? ColumnKernel::Short
                     : column_kernel(reduce, batch, ceil_div(columns, column_width<in_t, acc_t>()), p.width, bytes,
                                     row_bytes);
  const int64_t item_bytes = p.width * static_cast<int64_t>(sizeof(in_t));
  if (p.kernel == ColumnKernel::Block && short_chunks_fit(chunks, bytes, row_bytes) &&
      !block_tiles_keep_first_level(
          batch * ceil_div(p.items, kWarpSize) * ceil_div(chunks, kFoldLength),
          sm_count() * resident_blocks<column_block_kernel<in_t, acc_t, out_t, Op>>(kColumnThreads), item_bytes))
    p.kernel = ColumnKernel::Short;
  if (p.kernel == ColumnKernel::Tile) p.kernel = narrow_items_kernel(reduce, batch, p.items, item_bytes, later_pass);

  int64_t blocks = 0;
  switch (p.kernel) {
    case ColumnKernel::Short: {
      p.values_left = chunks;
      const int64_t threads = batch * p.items * chunks;  // at one item a thread
      p.spread = indexed ? 1 : short_columns_spread(threads, p.items, short_spread<in_t, acc_t>(p.width));
      blocks = ceil_div(batch * units_per_batch(p.items, p.spread) * chunks, kColumnThreads);
      break;
    }
    case ColumnKernel::Block:
      p.values_left = ceil_div(chunks, kFoldLength);
      blocks = batch * ceil_div(p.items, kWarpSize) * p.values_left;
      break;
    case ColumnKernel::Tile: {
      p.row_lanes = tile_row_lanes(p.items);
      const int64_t item_groups = batch * ceil_div(p.items, p.row_lanes);
      p.tile = tile_mode(item_groups, p.row_lanes, chunks, later_pass,
                         sm_count() * resident_blocks<column_tile_kernel<in_t, acc_t, out_t, Op>>(kColumnThreads));
      if (p.tile == TileMode::Teams) {
        p.values_left = ceil_div(chunks, kFoldLength);
        blocks = ceil_div(item_groups * p.values_left, tile_teams(p.row_lanes));
      } else if (p.tile == TileMode::Wide) {
        p.values_left = ceil_div(chunks, kFoldLength);
        blocks = item_groups * p.values_left;
      } else {
        p.values_left = chunks;
        blocks = ceil_div(item_groups * chunks, tile_lane_groups(p.row_lanes));
      }
      break;
    }
  }
  const bool evict_first = evict_first_input(
      bytes, p.values_left * batch * columns * static_cast<int64_t>(p.values_left > 1 ? sizeof(acc_t) : sizeof(out_t)));
  p.grid = column_pass_grid(p.kernel, reduce, blocks);
  // Every pass of several launches early (dependent_launch.cuh).
  p.early = later_pass || p.values_left > 1;
  if (p.kernel != ColumnKernel::Short) return p;

  p.chunk_rows = short_chunk_rows(reduce);
  // Narrow items take kernels of their own (for types that have narrow
  // items), whose loads are plain ones (load_vector_evict_first: narrower
  // than a vector).
  if (!indexed && short_spread<in_t, acc_t>(p.width) > 1) {
    const int rows_per_slot = chunk_rows_per_slot(p.chunk_rows);
    p.items_read = p.spread > 1 ? ShortItems::Spread
                   : narrow_chunk_by_rows(rows_per_slot, reduce_stride * static_cast<int64_t>(sizeof(in_t)))
                       ? ShortItems::NarrowByRows
                       : ShortItems::Narrow;
  } else {
    p.evict_first = evict_first && !indexed;
  }
  // Chunk classes of up to 4 rows take one wave of the kernel's resident
  // blocks, passes of a block a unit a grid that fills their waves.
  with_short_kernel<in_t, acc_t, out_t, Op>(p.chunk_rows, p.items_read, p.evict_first, indexed, [&](auto kernel) {
    const int resident = resident_blocks<decltype(kernel)::value>(kColumnThreads);
    const auto grid = static_cast<unsigned int>(p.grid);
    p.grid = p.chunk_rows < kSlots      ? short_rows_grid(grid, resident)
             : short_block_per_work(reduce) ? wave_balanced_grid(grid, resident)
                                            : p.grid;
  });
  return p;
}

// The first pass of dense narrow columns, where flat_first_column finds a frame.
template <typename in_t, typename acc_t, typename out_t, typename Op>
FlatColumnsPlan plan_flat_columns(uintptr_t data, const ReduceLayout& layout, bool permuted_output) {
  FlatColumnsPlan plan;
  // Elements of 8 bytes make no narrow items, and one-byte elements are
  // left to the item kernels: a vector of sixteen int64 accumulators a
  // thread is more than the kernel's registers and shared memory are sized
  // for. So is a vector of struct states (var's).
  if constexpr (sizeof(in_t) == 1 || sizeof(in_t) >= kNarrowItemBytes || kStructAccumulator<acc_t>) {
    return plan;
  } else {
    constexpr int kWidth = vector_width<in_t>();
    if (permuted_output) return plan;
    const int item_width = column_item_width<in_t, acc_t>(data, layout.batch, layout.inner, layout.batch_stride,
                                                          layout.reduce_stride);
    plan.first = flat_first_column(data, sizeof(in_t), item_width, layout.batch, layout.reduce, layout.inner,
                                   layout.batch_stride, layout.reduce_stride);
    if (plan.first < 0) return plan;
    // Columns of more than one chunk (flat_first_column): the chunk values
    // go to the partials, which the later passes fold.
    plan.chunks = ceil_div(layout.reduce, kFoldLength);
    const int64_t outputs = layout.batch * layout.inner;
    const int units = flat_run_vectors(layout.reduce_stride, kWidth);
    const int per_block = flat_chunks_per_block(units);
    plan.threads = static_cast<int>(ceil_div(per_block * units, kWarpSize) * kWarpSize);
    const int64_t bytes = layout.batch * layout.reduce * layout.reduce_stride * static_cast<int64_t>(sizeof(in_t));
    plan.evict_first = evict_first_input(bytes, plan.chunks * outputs * static_cast<int64_t>(sizeof(acc_t)));
    const int resident = plan.evict_first
                             ? resident_blocks<column_flat_kernel<true, in_t, acc_t, out_t, Op>>(kColumnThreads)
                             : resident_blocks<column_flat_kernel<false, in_t, acc_t, out_t, Op>>(kColumnThreads);
    // One wave of resident blocks, each taking step after step: a block's
    // loads for the next step are in flight while it combines one (with a
    // block per step, none were). See docs/TUNING.md.
    plan.grid = std::min<int64_t>(ceil_div(layout.batch * plan.chunks, per_block),
                                  static_cast<int64_t>(sm_count()) * resident);
    return plan;
  }
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
ColumnsPlan plan_columns(uintptr_t data, const ReduceLayout& layout, const StridedIndex& out_index) {
  ColumnsPlan plan;
  const bool permuted = out_index.dims != 0;
  if (layout.column_runs.count != 0) {
    plan.pass[plan.passes++] = plan_column_pass<scalar_t, acc_t, out_t, Op>(
        data, layout.batch, layout.reduce, layout.inner, 0, layout.reduce_stride, /*indexed=*/true,
        /*later_pass=*/false);
    return plan;
  }
  plan.flat = plan_flat_columns<scalar_t, acc_t, out_t, Op>(data, layout, permuted);
  int64_t values = plan.flat.chunks;
  if (plan.flat.first < 0) {
    plan.pass[plan.passes++] = plan_column_pass<scalar_t, acc_t, out_t, Op>(
        data, layout.batch, layout.reduce, layout.inner, layout.batch_stride, layout.reduce_stride, permuted,
        /*later_pass=*/false);
    values = plan.pass[0].values_left;
  }
  // Later passes reduce [values, outputs] partials, contiguous.
  const int64_t outputs = layout.batch * layout.inner;
  while (values > 1) {
    TORCH_INTERNAL_ASSERT(plan.passes < kMaxColumnPasses);
    plan.pass[plan.passes] = plan_column_pass<acc_t, acc_t, out_t, Op>(0, 1, values, outputs, 0, outputs, permuted,
                                                                       /*later_pass=*/true);
    values = plan.pass[plan.passes++].values_left;
  }
  return plan;
}

inline const char* column_kernel_name(const ColumnPassPlan& p) {
  switch (p.kernel) {
    case ColumnKernel::Short:
      return "column_short_kernel";
    case ColumnKernel::Block:
      return "column_block_kernel";
    case ColumnKernel::Tile:
      return p.tile == TileMode::Teams ? "column_tile_kernel"
             : p.tile == TileMode::Wide ? "column_wide_kernel"
                                        : "column_chunk_kernel";
  }
  return "?";
}

inline const char* short_items_name(ShortItems items) {
  switch (items) {
    case ShortItems::Wide:
      return "wide";
    case ShortItems::Narrow:
      return "narrow";
    case ShortItems::NarrowByRows:
      return "narrow_by_rows";
    case ShortItems::Spread:
      return "spread";
  }
  return "?";
}

// One LaunchStep a launch, in order, for explain. partial_bytes: an
// accumulator's.
inline std::vector<LaunchStep> describe(const ColumnsPlan& plan, const ReduceLayout& layout, int64_t element_bytes,
                                        int64_t out_bytes, int64_t partial_bytes) {
  std::vector<LaunchStep> steps;
  const int64_t outputs = layout.batch * layout.inner;
  if (plan.flat.first >= 0) {
    LaunchStep step;
    step.kernel = "column_flat_kernel";
    step.config = ConfigWriter()("first_column", plan.flat.first)("chunks", plan.flat.chunks).str();
    step.grid = plan.flat.grid;
    step.block = plan.flat.threads;
    step.bytes_read = layout.batch * layout.reduce * layout.reduce_stride * element_bytes;
    step.bytes_written = plan.flat.chunks * outputs * partial_bytes;
    step.evict_first = plan.flat.evict_first;
    step.early = true;
    steps.push_back(step);
  }
  for (int i = 0; i < plan.passes; ++i) {
    const ColumnPassPlan& p = plan.pass[i];
    LaunchStep step;
    step.kernel = column_kernel_name(p);
    ConfigWriter config;
    config("rows", p.reduce)("items", p.items)("columns_an_item", p.width);
    if (p.kernel == ColumnKernel::Short) {
      config("chunk_rows", p.chunk_rows)("items_read", short_items_name(p.items_read))("items_a_thread", p.spread);
    }
    if (p.kernel == ColumnKernel::Tile) config("row_lanes", p.row_lanes);
    config("values_left", p.values_left).flag("indexed", p.indexed).flag("later_pass", p.later_pass);
    step.config = config.str();
    step.grid = p.grid;
    step.block = kColumnThreads;
    step.bytes_read = p.batch * p.reduce * p.columns * p.element_bytes;
    step.bytes_written = p.values_left * outputs * (p.values_left > 1 ? partial_bytes : out_bytes);
    step.evict_first = p.evict_first;
    step.early = p.early;
    steps.push_back(step);
  }
  return steps;
}

}  // namespace cuda
}  // namespace torch_reduce
