// Routes a ReduceLayout to the kernel that reads it at full bandwidth:
//   full reductions and long rows -> split_row_reduce_kernel (one launch)
//   shorter rows                  -> row_reduce_kernel, or
//                                    packed_row_reduce_kernel (rows of at most a vector, or of two)
//   strided columns               -> column_short_kernel, column_block_kernel
//                                    or column_tile_kernel, pass after pass
//   rows read through strides     -> staged_rows_kernel (small inputs), or
//                                    the row kernels' gathered instantiations
//   columns read through strides  -> column_short_kernel's indexed kernels
// Included by one translation unit per op and TypeFamily, generated from the
// op list (build_support/kernel_units.py).
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <optional>

#include "capabilities.cuh"
#include "kernel_family.cuh"
#include "dispatch.h"
#include "gathered_rows.cuh"
#include "launch_config.cuh"
#include "output.cuh"
#include "workspace.h"

namespace torch_reduce {
namespace cuda {

template <typename T>
bool is_aligned(const T* p, size_t bytes = kVectorBytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_split_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out, const Op& op,
                       const c10::cuda::CUDAStream& stream) {
  const bool gathered = layout.kind == ReduceLayout::Gather;
  auto kernel = gathered ? split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, true>
                         : split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>;
  // A full reduction's splits are its copy's (the contiguous kernel's
  // residency, whatever the gathered one's registers), and so is its order.
  const int64_t splits =
      layout.full ? full_reduction_splits(layout.reduce, sizeof(scalar_t),
                                          resident_blocks<split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>>(
                                                          kSplitThreads))
                  : dim_reduction_splits(layout.reduce, sizeof(scalar_t));
  SplitRowArgs<scalar_t, acc_t, out_t> args{data, layout.reduce, layout.batch_stride, splits, out, nullptr, nullptr};
  if (splits > 1) {
    const Workspace workspace = stream_workspace(stream, layout.batch, layout.batch * splits * sizeof(acc_t));
    args.partials = static_cast<acc_t*>(workspace.partials);
    args.tickets = workspace.tickets;
  }
  const int64_t blocks = layout.batch * splits;
  TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), "torch_reduce: reduction too large for one launch");
  kernel<<<static_cast<unsigned int>(blocks), kSplitThreads, 0, stream.stream()>>>(
      args, op, gathered ? row_gather(layout) : RowGather{});
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_rows(const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out, const Op& op,
                 const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<scalar_t>();
  const bool gathered = layout.kind == ReduceLayout::Gather;
  const RowGather gather = gathered ? row_gather(layout) : RowGather{};
  const bool back_to_back = !gathered && (layout.batch == 1 || layout.batch_stride == layout.reduce);
  const bool evict_first = evict_first_input(layout.batch * layout.reduce * static_cast<int64_t>(sizeof(scalar_t)),
                                             layout.batch * static_cast<int64_t>(sizeof(out_t)));
  // packed_row_reduce_kernel: rows of at most a vector that divide it, or of
  // exactly kPackedRowVectors vectors.
  const bool short_row = layout.reduce <= kWidth;
  const bool packs = short_row ? kWidth % layout.reduce == 0 : layout.reduce == kPackedRowVectors * kWidth;
  const int64_t rows_per_vector = short_row ? kWidth / layout.reduce : 1;
  if (packs && back_to_back && is_aligned(data) && out.index.dims == 0 &&
      is_aligned(out.data, rows_per_vector * sizeof(out_t))) {
    PackedRowArgs<scalar_t, out_t> args{data, layout.batch, out.data};
    const int64_t vectors = short_row ? layout.batch / rows_per_vector : layout.batch * kPackedRowVectors;
    const auto blocks = static_cast<unsigned int>(grid_stride_blocks(ceil_div(vectors, kRowSlots), kRowThreads));
    auto launch_packed = [&](auto rows, auto lanes) {
      constexpr int kRows = decltype(rows)::value, kLanes = decltype(lanes)::value;
      auto kernel = evict_first ? packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, true>
                                : packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, false>;
      kernel<<<blocks, kRowThreads, 0, stream.stream()>>>(args, op);
    };
    if (short_row) {
      with_width<kWidth>(static_cast<int>(rows_per_vector),
                         [&](auto rows) { launch_packed(rows, std::integral_constant<int, 1>{}); });
    } else {
      launch_packed(std::integral_constant<int, 1>{}, std::integral_constant<int, kPackedRowVectors>{});
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  const bool vectorized = !gathered && is_aligned(data) && layout.reduce % kWidth == 0 &&
                          (layout.batch_stride * sizeof(scalar_t)) % kVectorBytes == 0;
  const int64_t items = ceil_div(layout.reduce, kWidth);
  const int group = row_group_size(items);
  // Rows here are shorter than kSplitRowBytes, so this fits an int.
  const int items_per_lane = static_cast<int>(ceil_div(items, group));
  // 1 for rows too long to read several a lane. Short rows read one a pass
  // (few rows) take the one-row kernels too: the same order
  // (row_reduce_kernel), half the loads a lane.
  const int rows_per_pass = short_rows_per_pass(layout.batch, group, items_per_lane);
  const bool several_rows = rows_per_pass > 1;
  RowArgs<scalar_t, out_t> args{data, layout.batch, layout.reduce, layout.batch_stride, group, items_per_lane,
                                out.data, rows_per_pass};
  const int64_t threads_needed = ceil_div(layout.batch, rows_per_pass) * group;
  const auto blocks = static_cast<unsigned int>(grid_stride_blocks(threads_needed, kRowThreads));
  const bool permuted = out.index.dims != 0;
  TORCH_INTERNAL_ASSERT(!(gathered && permuted), "gathered rows are written dense (output_index)");
  auto launch = [&](auto vectorized_loads, auto loads, auto several_rows, auto evict_first_loads) {
    constexpr bool kVectorized = decltype(vectorized_loads)::value;
    constexpr int kLoads = decltype(loads)::value;
    constexpr bool kSeveralRows = decltype(several_rows)::value;
    constexpr bool kEvictFirst = decltype(evict_first_loads)::value;
    auto kernel = [&](auto permuted_output, auto gathered_rows) {
      constexpr bool kGathered = decltype(gathered_rows)::value;
      if constexpr (row_kernel_shifts_items<scalar_t>(kVectorized, kSeveralRows, kGathered) && kLoads != kRowSlots) {
        TORCH_INTERNAL_ASSERT(false, "shifted items are read four a step (launch_mode)");
      } else {
        row_reduce_kernel<scalar_t, acc_t, out_t, Op, kVectorized, kLoads, kSeveralRows, kEvictFirst,
                          decltype(permuted_output)::value, kGathered>
            <<<blocks, kRowThreads, 0, stream.stream()>>>(args, op, out.index, gather);
      }
    };
    // Permuted outputs are small (output_index) and gathered rows are read
    // element by element into dense outputs: the evict-first kernels read
    // contiguous rows into dense outputs only.
    if constexpr (!decltype(evict_first_loads)::value) {
      if constexpr (!decltype(vectorized_loads)::value) {
        if (gathered) return kernel(std::false_type{}, std::true_type{});
      }
      if (permuted) return kernel(std::true_type{}, std::false_type{});
    }
    kernel(std::false_type{}, std::false_type{});
  };
  // Evict-first loads for one row a lane, vectorized (see row_reduce_kernel).
  auto launch_one_row = [&](auto vectorized_loads, auto loads) {
    if constexpr (decltype(vectorized_loads)::value) {
      if (evict_first && !permuted) return launch(vectorized_loads, loads, std::false_type{}, std::true_type{});
    }
    launch(vectorized_loads, loads, std::false_type{}, std::false_type{});
  };
  auto launch_mode = [&](auto vectorized_loads) {
    if (several_rows) {
      launch(vectorized_loads, std::integral_constant<int, kShortRowSlots>{}, std::true_type{}, std::false_type{});
    } else if (items_per_lane > kRowSlots && !row_kernel_shifts_items<scalar_t>(vectorized, false, gathered)) {
      launch_one_row(vectorized_loads, std::integral_constant<int, row_kernel_long_row_loads<scalar_t>()>{});
    } else {
      launch_one_row(vectorized_loads, std::integral_constant<int, kRowSlots>{});
    }
  };
  if (vectorized) {
    launch_mode(std::true_type{});
  } else {
    launch_mode(std::false_type{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Whether staged_rows_kernel may stage a small Gather layout a vector a load:
// its innermost reduced run is contiguous and whole vectors, and every other
// run, and the data, start on a vector's boundary.
template <typename scalar_t>
bool stages_vectors(const scalar_t* data, const ReduceLayout& layout) {
  constexpr int64_t kWidth = vector_width<scalar_t>();
  const Runs& reduce = layout.reduce_runs;
  const Runs& batch = layout.batch_runs;
  if (reduce.strides[0] != 1 || reduce.sizes[0] % kWidth != 0) return false;
  for (int d = 1; d < reduce.count; ++d)
    if (reduce.strides[d] % kWidth != 0) return false;
  for (int d = 0; d < batch.count; ++d)
    if (batch.strides[d] % kWidth != 0) return false;
  return is_aligned(data);
}

// A small Gather layout (small_gather_elements), staged a few rows a block.
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_staged_rows(const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out, const Op& op,
                        const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<scalar_t>();
  TORCH_INTERNAL_ASSERT(layout.reduce * static_cast<int64_t>(sizeof(scalar_t)) < kSmallGatherMaxRowBytes);
  StagedRowsArgs<scalar_t, out_t> args{data,
                                       static_cast<int>(layout.batch),
                                       static_cast<int>(layout.reduce),
                                       staged_rows_per_block(layout.reduce, layout.batch),
                                       row_group_size(ceil_div(layout.reduce, kWidth)),
                                       {},
                                       stages_vectors(data, layout),
                                       out.data};
  args.row_length_divisor.dims = 1;
  set_divisor(args.row_length_divisor, 0, static_cast<uint32_t>(layout.reduce));
  const auto blocks = static_cast<unsigned int>(ceil_div(layout.batch, args.rows_per_block));
  const size_t stage_bytes = static_cast<size_t>(args.rows_per_block) * layout.reduce * sizeof(scalar_t);
  auto kernel = out.index.dims != 0 ? staged_rows_kernel<scalar_t, acc_t, out_t, Op, true>
                                    : staged_rows_kernel<scalar_t, acc_t, out_t, Op, false>;
  kernel<<<blocks, kRowThreads, stage_bytes, stream.stream()>>>(args, op, row_gather(layout), out.index);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

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
// stream's device.
template <typename acc_t>
at::Tensor new_partials(int64_t count, const c10::cuda::CUDAStream& stream) {
  return at::empty({count}, at::TensorOptions()
                                .dtype(c10::CppTypeToScalarType<acc_t>::value)
                                .device(at::kCUDA, stream.device_index()));
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
    args.partials = partials.data_ptr<acc_t>();
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
  // for.
  if constexpr (sizeof(in_t) == 1 || sizeof(in_t) >= kNarrowItemBytes) {
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
    args.partials = partials.data_ptr<acc_t>();
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
  while (partials.defined()) {
    const int64_t rows = partials.numel() / outputs;
    partials = launch_column_pass<acc_t, acc_t, out_t>(partials.data_ptr<acc_t>(), 1, rows, outputs, 0, outputs, out,
                                                       op, stream, /*later_pass=*/true);
  }
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_layout_reduction(const at::Tensor& input, const ReduceLayout& layout, const Output<out_t>& out,
                             const Op& op) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto* data = reinterpret_cast<const scalar_t*>(input.data_ptr());
  switch (kernel_family(layout, sizeof(scalar_t))) {
    case KernelFamily::Columns:
      return launch_columns<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
    case KernelFamily::StagedRows:
      return launch_staged_rows<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
    case KernelFamily::SplitRows:
      return launch_split_rows<scalar_t, acc_t, out_t>(data, layout, out.data, op, stream);
    case KernelFamily::Rows:
      return launch_rows<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
  }
}

// Permuted outputs (output.cuh) of up to this many elements are written in
// place; larger ones are written dense and copied. Stores through a
// permutation land a sector each where a dense output's are coalesced, and
// for large outputs that costs more than the copy's kernel saves. See
// docs/TUNING.md.
constexpr int64_t kPermutedOutputMaxElements = 1 << 16;

// Where the kernels write `out` (of the dims of the tensor they reduce, size
// 1 where reduced): no dims where it is dense; nullopt where it is written
// dense and copied. Permuted outputs are written by kernels of their own
// (output.cuh) for rows of a warp or less, staged rows and columns of one
// chunk, the small reductions where the copy's kernel is a good part of the
// time; longer ones are written dense, and so are the other gathered rows
// (inputs of small_gather_elements or more, next to which the copy of the
// output is small).
inline std::optional<StridedIndex> output_index(const at::Tensor& out, const ReduceLayout& layout,
                                               int64_t element_bytes) {
  int64_t sizes[kMaxStridedDims], strides[kMaxStridedDims];
  int dims = 0;
  for (int64_t d = out.dim() - 1; d >= 0; --d) {
    const int64_t size = out.size(d), stride = out.stride(d);
    if (size == 1) continue;
    if (dims > 0 && stride == strides[dims - 1] * sizes[dims - 1]) {
      sizes[dims - 1] *= size;
      continue;
    }
    if (dims == kMaxStridedDims) return std::nullopt;
    sizes[dims] = size;
    strides[dims] = stride;
    ++dims;
  }
  if (dims == 0 || (dims == 1 && strides[0] == 1)) return StridedIndex{};
  const bool permuted_kernels = layout.kind == ReduceLayout::Outer
                                    ? layout.reduce <= kFoldLength
                                    : is_small_gather(layout, element_bytes) ||
                                          (layout.kind == ReduceLayout::Inner && !splits_rows(layout, element_bytes));
  if (out.numel() > kPermutedOutputMaxElements || !permuted_kernels) return std::nullopt;
  StridedIndex index;
  index.dims = dims;
  for (int d = 0; d < dims; ++d) {
    set_divisor(index, d, static_cast<uint32_t>(sizes[d]));
    index.strides[d] = static_cast<uint32_t>(strides[d]);
  }
  return index;
}

// The LayoutKernel body of op `Spec`, for inputs of one TypeFamily; each
// generated unit instantiates its own, so that they compile in parallel.
template <typename Spec, TypeFamily family>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out) {
  const std::optional<StridedIndex> index = output_index(out, layout, input.element_size());
  if (!index)
    return reduce_through_dense(out, [&](at::Tensor& dense) { reduce_layout<Spec, family>(input, layout, dense); });
  dispatch_family_reduction<Spec, family>(input.scalar_type(), out.scalar_type(), layout.reduce, [&](auto types, auto op) {
    using T = decltype(types);
    using out_t = typename T::out_t;
    const Output<out_t> output{reinterpret_cast<out_t*>(out.data_ptr()), *index};
    launch_layout_reduction<typename T::scalar_t, typename T::acc_t, out_t>(input, layout, output, op);
  });
}

}  // namespace cuda
}  // namespace torch_reduce
