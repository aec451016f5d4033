// column_block_kernel: long columns, many of them; the eight slots of a
// chunk are a block's eight warps (see column_fold.cuh for the order).
#pragma once

#include "column_fold.cuh"

namespace torch_reduce {
namespace cuda {

// Many columns: a block reads 32 adjacent items (one per lane) of a tile of
// 64 chunks, kChunks consecutive chunks at a time ("a step"); warp s folds
// rows s, s + 8, ..., s + 56 of each (8 x kChunks loads in flight), and the
// tree threads -- one per (chunk, column) of the step -- combine the eight
// warps' slots of their chunk through shared memory and fold the chunk's
// value into its second-level slot; at the tile's end one thread per column
// combines those slots: two levels a pass. A step's loads are issued before
// the previous step's trees, so that the block keeps streaming.
// (launch_config.cuh sends a pass here only when its tiles fill the device.)
//
// kChunks (chunks_per_step) is 1 for items of the widest width and grows as
// items narrow, so that a narrow item's warps keep as many bytes in flight:
// a step of one chunk of 2-byte items reads 64 bytes a warp-row, and a tile
// of eight chunks would take eight dependent round trips. Tiles of few
// chunks gain little from it.
struct BlockRun {
  int64_t unit;        // index of the (batch, tile, item block) the block works on
  int64_t b;
  int64_t tile;
  int64_t first_item;
  int64_t first_chunk;
  int length;          // chunks in the tile
};

template <int kItems, int kChunks, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void block_columns(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op,
                                              acc_t* slot_values, acc_t* level2) {
  // slot_values: two buffers (by step parity) of [slot][chunk of the step][column]; level2: [slot][column].
  constexpr int kColumns = kWarpSize * kItems;
  constexpr int kStepColumns = kColumns * kChunks;
  static_assert(kSlots % kChunks == 0, "a step's chunks fall in distinct second-level slots");
  static_assert(kItems * kChunks <= column_width<in_t, acc_t>(), "a step fits the widest item's shared memory");
  static_assert(kStepColumns <= kColumnThreads, "a tree thread per chunk and column of a step");
  const int s = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  // Tree thread t owns column t % kColumns (column t % kItems of item
  // (t % kColumns) / kItems) of the step's chunk t / kColumns.
  const int t = threadIdx.x;
  const int column = t % kColumns;
  const int step_chunk = t / kColumns;
  const bool tree_thread = t < kStepColumns;

  const int64_t chunks = (args.reduce + kFoldLength - 1) / kFoldLength;
  const int64_t tiles = (chunks + kFoldLength - 1) / kFoldLength;
  const int64_t item_blocks = (args.items + kWarpSize - 1) / kWarpSize;
  const int64_t units = args.batch * tiles * item_blocks;
  const bool last_pass = tiles == 1;

  auto tile_of = [&](int64_t unit) {
    BlockRun r;
    r.unit = unit;
    r.first_item = (unit % item_blocks) * kWarpSize;
    r.tile = (unit / item_blocks) % tiles;
    r.b = unit / (item_blocks * tiles);
    r.first_chunk = r.tile * kFoldLength;
    r.length = static_cast<int>(chunks - r.first_chunk < kFoldLength ? chunks - r.first_chunk : kFoldLength);
    return r;
  };
  // The rows this warp reads of chunks j, ..., j + kChunks - 1 of a tile
  // (none past its end).
  auto load_step = [&](const BlockRun& r, int j, Vector<in_t, kItems>(&loaded)[kChunks][kSlots],
                       int (&count)[kChunks]) {
    const bool item_active = r.first_item + lane < args.items;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int64_t chunk = r.first_chunk + j + c;
      const bool in_tile = j + c < r.length;  // always, with steps of one chunk
      count[c] = item_active && in_tile ? slot_rows(args.reduce - chunk * kFoldLength, s) : 0;
      const int64_t offset =
          r.b * args.batch_stride + (chunk * kFoldLength + s) * args.reduce_stride + (r.first_item + lane) * kItems;
      const in_t* base = args.data + (count[c] > 0 ? offset : 0);
      // Steps of one chunk load unconditionally (load_rows: unpredicated loads).
      if (kChunks == 1 || in_tile) load_rows(base, kSlots * args.reduce_stride, count[c], loaded[c]);
    }
  };

  if (static_cast<int64_t>(blockIdx.x) >= units) return;
  BlockRun current = tile_of(blockIdx.x);
  int j = 0;
  Vector<in_t, kItems> loaded[kChunks][kSlots];
  int count[kChunks];
  load_step(current, j, loaded, count);
  if (t < kColumns) {
#pragma unroll
    for (int slot = 0; slot < kSlots; ++slot) level2[slot * kColumns + t] = op.identity();
  }
  for (int parity = 0;; parity ^= 1) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      acc_t acc[kItems];
#pragma unroll
      for (int i = 0; i < kItems; ++i) acc[i] = op.identity();
      fold_rows(acc, loaded[c], count[c], (current.first_chunk + j + c) * kFoldLength + s, op);
#pragma unroll
      for (int i = 0; i < kItems; ++i)
        slot_values[(parity * kSlots + s) * kStepColumns + c * kColumns + lane * kItems + i] = acc[i];
    }

    // The next step: the next chunks of the tile, or the first of the next tile.
    const bool tile_ends = j + kChunks >= current.length;
    const BlockRun next = tile_ends ? tile_of(current.unit + gridDim.x) : current;
    const int next_j = tile_ends ? 0 : j + kChunks;
    const bool more = next.unit < units;
    if (more) load_step(next, next_j, loaded, count);

    // Also orders the trees' reads of the other buffer, a step ago, before
    // the next step's writes to it.
    __syncthreads();
    const int chunk = j + step_chunk;  // in the tile
    if (tree_thread && chunk < current.length) {
      acc_t p[kSlots];
#pragma unroll
      for (int slot = 0; slot < kSlots; ++slot) p[slot] = slot_values[(parity * kSlots + slot) * kStepColumns + t];
      acc_t& level2_slot = level2[(chunk % kSlots) * kColumns + column];
      level2_slot = op.combine(level2_slot, combine_slots(p, op));
    }
    if (tile_ends) {
      // The step's chunks went to other threads' slots (tile_ends is uniform across the block).
      if (kChunks > 1) __syncthreads();
      const int64_t item = current.first_item + t / kItems;
      if (t < kColumns && item < args.items) {
        acc_t p[kSlots];
        acc_t result[1];
#pragma unroll
        for (int slot = 0; slot < kSlots; ++slot) p[slot] = level2[slot * kColumns + t];
        result[0] = combine_slots(p, op);
        // A tile's value is row `tile` of the partials.
        store_item(args, last_pass, current.tile, current.b * args.columns + item * kItems + t % kItems, result, op);
      }
      if (t < kColumns) {
#pragma unroll
        for (int slot = 0; slot < kSlots; ++slot) level2[slot * kColumns + t] = op.identity();
      }
    }
    if (!more) break;
    current = next;
    j = next_j;
  }
}

template <typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads, 2) column_block_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  start_pass();
  constexpr int kWidth = column_width<in_t, acc_t>();
  __shared__ acc_t slot_values[2 * kSlots * kWarpSize * kWidth];
  __shared__ acc_t level2[kSlots * kWarpSize * kWidth];
  with_width<kWidth>(args.width, [&](auto width) {
    constexpr int kItems = decltype(width)::value;
    constexpr int kChunks = chunks_per_step<in_t, acc_t, kItems>();
    // Columns of one chunk take steps of one: the empty chunks' code and the
    // barrier before the tile's end cost a pass of one step more than the wider
    // step saves.
    if (kChunks > 1 && args.reduce > kFoldLength) {
      block_columns<kItems, kChunks>(args, op, slot_values, level2);
    } else {
      block_columns<kItems, 1>(args, op, slot_values, level2);
    }
  });
}

}  // namespace cuda
}  // namespace torch_reduce
