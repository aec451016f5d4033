// column_block_kernel: long columns, many of them; the eight slots of a
// chunk are a block's eight warps (see column_fold.cuh for the order).
#pragma once

#include "column_fold.cuh"

namespace torch_reduce {
namespace cuda {

// Many columns: a block reads 32 adjacent items (one per lane) of a tile of
// 64 chunks, one chunk at a time ("a step"); warp s folds rows s, s + 8,
// ..., s + 56 of it (eight loads in flight), and the tree threads -- one per
// column of the 32 items -- combine the eight warps' slots through shared
// memory and fold the chunk values into their own second-level slots: two
// levels a pass. A step's loads are issued before the previous step's tree,
// so that the block keeps streaming. (launch_config.cuh sends a pass here
// only when its tiles fill the device.)
struct BlockRun {
  int64_t unit;        // index of the (batch, tile, item block) the block works on
  int64_t b;
  int64_t tile;
  int64_t first_item;
  int64_t first_chunk;
  int length;          // chunks in the tile
};

template <int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void block_columns(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op,
                                              acc_t* slot_values, acc_t* level2) {
  // slot_values: two buffers (by step parity) of [slot][column]; level2: [slot][column].
  constexpr int kColumns = kWarpSize * kItems;
  const int s = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  // Tree thread t owns column t % kItems of item t / kItems.
  const int t = threadIdx.x;
  const bool tree_thread = t < kColumns;

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
  // The rows this warp reads of chunk j of a tile.
  auto load_step = [&](const BlockRun& r, int j, Vector<in_t, kItems>(&loaded)[kSlots]) {
    const int64_t chunk = r.first_chunk + j;
    const bool item_active = r.first_item + lane < args.items;
    const int count = item_active ? slot_rows(args.reduce - chunk * kFoldLength, s) : 0;
    const in_t* base = args.data + (count > 0 ? r.b * args.batch_stride + (chunk * kFoldLength + s) * args.reduce_stride +
                                                      (r.first_item + lane) * kItems
                                                : 0);
    load_rows(base, kSlots * args.reduce_stride, count, loaded);
    return count;
  };

  if (static_cast<int64_t>(blockIdx.x) >= units) return;
  BlockRun current = tile_of(blockIdx.x);
  int j = 0;
  Vector<in_t, kItems> loaded[kSlots];
  int count = load_step(current, j, loaded);
  if (tree_thread) {
#pragma unroll
    for (int slot = 0; slot < kSlots; ++slot) level2[slot * kColumns + t] = op.identity();
  }
  for (int parity = 0;; parity ^= 1) {
    acc_t acc[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[i] = op.identity();
    fold_rows(acc, loaded, count, op);
#pragma unroll
    for (int i = 0; i < kItems; ++i) slot_values[(parity * kSlots + s) * kColumns + lane * kItems + i] = acc[i];

    // The next step: the next chunk of the tile, or the first of the next tile.
    const bool tile_ends = j + 1 == current.length;
    const BlockRun next = tile_ends ? tile_of(current.unit + gridDim.x) : current;
    const int next_j = tile_ends ? 0 : j + 1;
    const bool more = next.unit < units;
    if (more) count = load_step(next, next_j, loaded);

    // Also orders the tree's reads of the other buffer, a step ago, before
    // the next step's writes to it.
    __syncthreads();
    if (tree_thread) {
      acc_t p[kSlots];
#pragma unroll
      for (int slot = 0; slot < kSlots; ++slot) p[slot] = slot_values[(parity * kSlots + slot) * kColumns + t];
      const acc_t value = combine_slots(p, op);
      acc_t& level2_slot = level2[(j % kSlots) * kColumns + t];
      level2_slot = op.combine(level2_slot, value);

      const int64_t item = current.first_item + t / kItems;
      if (tile_ends && item < args.items) {
        acc_t result[1];
#pragma unroll
        for (int slot = 0; slot < kSlots; ++slot) p[slot] = level2[slot * kColumns + t];
        result[0] = combine_slots(p, op);
        // A tile's value is row `tile` of the partials.
        store_item(args, last_pass, current.tile, current.b * args.columns + item * kItems + t % kItems, result, op);
      }
      if (tile_ends) {
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
  with_width<kWidth>(args.width, [&](auto width) { block_columns<decltype(width)::value>(args, op, slot_values, level2); });
}

}  // namespace cuda
}  // namespace torch_reduce
