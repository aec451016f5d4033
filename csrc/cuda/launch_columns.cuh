// Launches the column reduction of an Outer layout, pass after pass: each
// pass folds one or two levels of the fixed column order (column_fold.cuh)
// with the kernel launch_config.cuh picks, the first pass of dense narrow
// columns with column_flat_kernel, gathered columns with column_short_kernel's
// indexed kernels. Apart from reduce_layout.cuh, which routes to it.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <optional>

#include "gathered_rows.cuh"
#include "column_config.cuh"
#include "output.cuh"
#include "workspace.h"

namespace torch_reduce {
namespace cuda {

// Columns an item of a column pass holds: the widest vector of columns that
// every row and batch start aligned to.
template <typename in_t, typename acc_t>
int column_item_width(const in_t* data, int64_t batch, int64_t columns, int64_t batch_stride, int64_t reduce_stride) {
  int width = column_width<in_t, acc_t>();
  while (width > 1 && !(is_aligned(data, width * sizeof(in_t)) && columns % width == 0 && reduce_stride % width == 0 &&
                        (batch == 1 || batch_stride % width == 0)))
    width /= 2;
  return width;
}

// A column pass's partials for the next pass: `count` accumulators on the
// stream's device, as bytes (an accumulator may be a struct: var's state).
template <typename acc_t>
at::Tensor new_partials(int64_t count, const c10::cuda::CUDAStream& stream) {
  return at::empty({count * static_cast<int64_t>(sizeof(acc_t))},
                   at::TensorOptions().dtype(at::kByte).device(at::kCUDA, stream.device_index()));
}
template <typename acc_t>
acc_t* partials_of(const at::Tensor& partials) {
  return static_cast<acc_t*>(partials.data_ptr());
}

// One pass of the column reduction (one level or two, see column_fold.cuh);
// returns the partials when it was not the last pass (they are the next
// pass's input). later_pass: it reads the partials of the pass before.
// gathered: where each column starts (gathered columns, of at most one
// chunk; no dims: b * batch_stride + c).
template <typename in_t, typename acc_t, typename out_t, typename Op>
at::Tensor launch_column_pass(const in_t* data, int64_t batch, int64_t reduce, int64_t columns, int64_t batch_stride,
                              int64_t reduce_stride, const Output<out_t>& out, const Op& op,
                              const c10::cuda::CUDAStream& stream, bool later_pass,
                              const StridedIndex& gathered = {}) {
  const int64_t chunks = ceil_div(reduce, kFoldLength);
  const int64_t row_bytes = columns * static_cast<int64_t>(sizeof(in_t));
  const int64_t bytes = batch * reduce * row_bytes;
  // A permuted output (of columns of one chunk: output_index) and gathered
  // columns are read by column_short_kernel's indexed kernels, in items of
  // one column.
  const bool indexed = out.index.dims != 0 || gathered.dims != 0;
  TORCH_INTERNAL_ASSERT(!indexed || reduce <= kFoldLength, "indexed columns are of one chunk");
  const int width = indexed ? 1 : column_item_width<in_t, acc_t>(data, batch, columns, batch_stride, reduce_stride);
  ColumnKernel kernel = indexed ? ColumnKernel::Short
                                : column_kernel(reduce, batch, ceil_div(columns, column_width<in_t, acc_t>()), width,
                                                bytes, row_bytes);
  const int64_t item_bytes = width * static_cast<int64_t>(sizeof(in_t));
  ColumnArgs<in_t, acc_t, out_t> args{data, batch, reduce, columns, batch_stride, reduce_stride, width};
  args.items = ceil_div(columns, args.width);
  if (kernel == ColumnKernel::Block && short_chunks_fit(chunks, bytes, row_bytes) &&
      !block_tiles_keep_first_level(
          batch * ceil_div(args.items, kWarpSize) * ceil_div(chunks, kFoldLength),
          sm_count() * resident_blocks<column_block_kernel<in_t, acc_t, out_t, Op>>(kColumnThreads), item_bytes))
    kernel = ColumnKernel::Short;
  if (kernel == ColumnKernel::Tile) kernel = narrow_items_kernel(reduce, batch, args.items, item_bytes, later_pass);
  args.out = out.data;

  int64_t values_left = 1;  // per column, after this pass
  int64_t blocks = 0;
  TileMode tile = TileMode::Teams;
  int spread = 1;  // column_short_kernel's items a thread
  switch (kernel) {
    case ColumnKernel::Short: {
      values_left = chunks;
      const int64_t threads = batch * args.items * chunks;  // at one item a thread
      spread = indexed ? 1 : short_columns_spread(threads, args.items, short_spread<in_t, acc_t>(width));
      blocks = ceil_div(batch * units_per_batch(args.items, spread) * chunks, kColumnThreads);
      break;
    }
    case ColumnKernel::Block:
      values_left = ceil_div(chunks, kFoldLength);
      blocks = batch * ceil_div(args.items, kWarpSize) * values_left;
      break;
    case ColumnKernel::Tile: {
      args.row_lanes = tile_row_lanes(args.items);
      const int64_t item_groups = batch * ceil_div(args.items, args.row_lanes);
      tile = tile_mode(item_groups, args.row_lanes, chunks, later_pass,
                       sm_count() * resident_blocks<column_tile_kernel<in_t, acc_t, out_t, Op>>(kColumnThreads));
      if (tile == TileMode::Teams) {
        values_left = ceil_div(chunks, kFoldLength);
        blocks = ceil_div(item_groups * values_left, tile_teams(args.row_lanes));
      } else if (tile == TileMode::Wide) {
        values_left = ceil_div(chunks, kFoldLength);
        blocks = item_groups * values_left;
      } else {
        values_left = chunks;
        blocks = ceil_div(item_groups * chunks, tile_lane_groups(args.row_lanes));
      }
      break;
    }
  }
  const bool evict_first = evict_first_input(
      bytes, values_left * batch * columns * static_cast<int64_t>(values_left > 1 ? sizeof(acc_t) : sizeof(out_t)));
  at::Tensor partials;
  if (values_left > 1) {
    partials = new_partials<acc_t>(values_left * batch * columns, stream);
    args.partials = partials_of<acc_t>(partials);
  }
  const auto grid = static_cast<unsigned int>(column_pass_grid(kernel, reduce, blocks));
  // Every pass of several launches early (dependent_launch.cuh).
  const bool early = later_pass || values_left > 1;
  auto launch = [&](auto kernel) {
    launch_pass(kernel, grid, kColumnThreads, stream.stream(), early, args, op);
  };
  switch (kernel) {
    case ColumnKernel::Short:
      // Chunk classes are powers of two from 2 to 64, dispatched like an item width.
      with_width<kFoldLength, 2>(short_chunk_rows(reduce), [&](auto chunk_rows) {
        constexpr int kChunkRows = decltype(chunk_rows)::value;
        constexpr int kRowsPerSlot = chunk_rows_per_slot(kChunkRows);
        using Items = ShortItems;
        // Indexed kernels write through an index, a dense one where the output is dense.
        const StridedIndex out_index =
            indexed && out.index.dims == 0 ? strided_index(Runs{1, {batch * columns}, {1}}, 0, 1) : out.index;
        // The kernel comes as a type (Kernel), so that the classes of up to
        // 4 rows can ask its resident blocks for their one wave, and passes
        // of a block a unit for their waves.
        auto launch_short = [&](auto kernel) {
          constexpr auto kKernel = decltype(kernel)::value;
          const int resident = resident_blocks<kKernel>(kColumnThreads);
          const auto short_grid = kChunkRows < kSlots ? short_rows_grid(grid, resident)
                                  : short_block_per_work(reduce)
                                      ? static_cast<unsigned int>(wave_balanced_grid(grid, resident))
                                      : grid;
          launch_pass(kKernel, short_grid, kColumnThreads, stream.stream(), early, args, op, out_index, gathered);
        };
        if (indexed) {
          launch_short(Kernel<column_short_kernel<kChunkRows, false, true, Items::Wide, in_t, acc_t, out_t, Op>>{});
          return;
        }
        // Narrow items take kernels of their own (for types that have
        // narrow items), whose loads are plain ones (load_vector_evict_first:
        // narrower than a vector).
        if constexpr (short_spread<in_t, acc_t>(1) > 1) {
          if (short_spread<in_t, acc_t>(width) > 1) {
            const bool by_rows = narrow_chunk_by_rows(kRowsPerSlot, reduce_stride * static_cast<int64_t>(sizeof(in_t)));
            if (spread > 1) {
              launch_short(Kernel<column_short_kernel<kChunkRows, false, false, Items::Spread, in_t, acc_t, out_t, Op>>{});
            } else if (by_rows) {
              // Only chunks of four or eight rows a slot are read by rows,
              // and those of eight always: the other kernels are not built.
              if constexpr (kRowsPerSlot >= kSlots / 2) {
                launch_short(
                    Kernel<column_short_kernel<kChunkRows, false, false, Items::NarrowByRows, in_t, acc_t, out_t, Op>>{});
              } else {
                TORCH_INTERNAL_ASSERT(false, "narrow_chunk_by_rows: a chunk of ", kRowsPerSlot, " rows a slot");
              }
            } else if constexpr (kRowsPerSlot < kSlots) {
              launch_short(Kernel<column_short_kernel<kChunkRows, false, false, Items::Narrow, in_t, acc_t, out_t, Op>>{});
            } else {
              TORCH_INTERNAL_ASSERT(false, "narrow_chunk_by_rows: a chunk of eight rows a slot in slot order");
            }
            return;
          }
        }
        if (evict_first) {
          launch_short(Kernel<column_short_kernel<kChunkRows, true, false, Items::Wide, in_t, acc_t, out_t, Op>>{});
        } else {
          launch_short(Kernel<column_short_kernel<kChunkRows, false, false, Items::Wide, in_t, acc_t, out_t, Op>>{});
        }
      });
      break;
    case ColumnKernel::Block:
      launch(column_block_kernel<in_t, acc_t, out_t, Op>);
      break;
    case ColumnKernel::Tile:
      if (tile == TileMode::Teams) {
        launch(column_tile_kernel<in_t, acc_t, out_t, Op>);
      } else if (tile == TileMode::Wide) {
        launch(column_wide_kernel<in_t, acc_t, out_t, Op>);
      } else {
        with_width<column_width<in_t, acc_t>()>(args.width, [&](auto width) {
          launch(column_chunk_kernel<in_t, acc_t, out_t, Op, decltype(width)::value>);
        });
      }
      break;
  }
  return partials;
}

// The first pass of dense narrow columns (column_flat_kernel.cuh, where
// flat_first_column finds a frame); returns its partials, or nullopt where
// the columns are not such.
template <typename in_t, typename acc_t, typename out_t, typename Op>
std::optional<at::Tensor> launch_flat_columns(const in_t* data, const ReduceLayout& layout, const Output<out_t>& out,
                                              const Op& op, const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<in_t>();
  // Elements of 8 bytes make no narrow items, and one-byte elements are
  // left to the item kernels: a vector of sixteen int64 accumulators a
  // thread is more than the kernel's registers and shared memory are sized
  // for. So is a vector of struct states (var's).
  if constexpr (sizeof(in_t) == 1 || sizeof(in_t) >= kNarrowItemBytes || kStructAccumulator<acc_t>) {
    return std::nullopt;
  } else {
    if (out.index.dims != 0) return std::nullopt;
    const int item_width = column_item_width<in_t, acc_t>(data, layout.batch, layout.inner, layout.batch_stride,
                                                          layout.reduce_stride);
    const int64_t first = flat_first_column(reinterpret_cast<uintptr_t>(data), sizeof(in_t), item_width, layout.batch,
                                            layout.reduce, layout.inner, layout.batch_stride, layout.reduce_stride);
    if (first < 0) return std::nullopt;
    ColumnArgs<in_t, acc_t, out_t> args{data - first, layout.batch, layout.reduce, layout.inner, layout.batch_stride,
                                        layout.reduce_stride, kWidth};
    // Columns of more than one chunk (flat_first_column): the chunk values
    // go to the partials, which the later passes fold.
    const int64_t chunks = ceil_div(layout.reduce, kFoldLength);
    const int64_t outputs = layout.batch * layout.inner;
    at::Tensor partials = new_partials<acc_t>(chunks * outputs, stream);
    args.partials = partials_of<acc_t>(partials);
    const int units = flat_run_vectors(layout.reduce_stride, kWidth);
    const int per_block = flat_chunks_per_block(units);
    const int threads = static_cast<int>(ceil_div(per_block * units, kWarpSize) * kWarpSize);
    const int64_t bytes = layout.batch * layout.reduce * layout.reduce_stride * static_cast<int64_t>(sizeof(in_t));
    const bool evict_first = evict_first_input(bytes, chunks * outputs * static_cast<int64_t>(sizeof(acc_t)));
    auto kernel = evict_first ? column_flat_kernel<true, in_t, acc_t, out_t, Op>
                              : column_flat_kernel<false, in_t, acc_t, out_t, Op>;
    const int resident = evict_first ? resident_blocks<column_flat_kernel<true, in_t, acc_t, out_t, Op>>(kColumnThreads)
                                     : resident_blocks<column_flat_kernel<false, in_t, acc_t, out_t, Op>>(kColumnThreads);
    // One wave of resident blocks, each taking step after step: a block's
    // loads for the next step are in flight while it combines one (with a
    // block per step, none were). See docs/TUNING.md.
    const auto grid = static_cast<unsigned int>(std::min<int64_t>(
        ceil_div(layout.batch * chunks, per_block),
        static_cast<int64_t>(sm_count()) * resident));
    launch_pass(kernel, grid, threads, stream.stream(), /*early=*/true, args, static_cast<int>(first), op);
    return partials;
  }
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_columns(const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out, const Op& op,
                    const c10::cuda::CUDAStream& stream) {
  const Runs& gathered = layout.column_runs;
  if (gathered.count != 0) {
    launch_column_pass<scalar_t, acc_t, out_t>(data, layout.batch, layout.reduce, layout.inner, 0,
                                               layout.reduce_stride, out, op, stream, /*later_pass=*/false,
                                               strided_index(gathered, 0, gathered.count));
    return;
  }
  std::optional<at::Tensor> flat = launch_flat_columns<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
  at::Tensor partials = flat ? *flat
                             : launch_column_pass<scalar_t, acc_t, out_t>(data, layout.batch, layout.reduce,
                                                                          layout.inner, layout.batch_stride,
                                                                          layout.reduce_stride, out, op, stream,
                                                                          /*later_pass=*/false);
  // Later passes reduce [values, outputs] partials, contiguous.
  const int64_t outputs = layout.batch * layout.inner;
  const Op partials_op = reading_partials(op);
  while (partials.defined()) {
    const int64_t rows = partials.numel() / static_cast<int64_t>(sizeof(acc_t)) / outputs;
    partials = launch_column_pass<acc_t, acc_t, out_t>(partials_of<acc_t>(partials), 1, rows, outputs, 0, outputs, out,
                                                       partials_op, stream, /*later_pass=*/true);
  }
}

}  // namespace cuda
}  // namespace torch_reduce
