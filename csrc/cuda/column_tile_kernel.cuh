// column_tile_kernel, column_wide_kernel and column_chunk_kernel: long
// columns, few of them; the eight slots of a chunk are eight lanes of a warp
// (see column_fold.cuh for the order).
#pragma once

#include "column_fold.cuh"

namespace torch_reduce {
namespace cuda {

// Few columns. A lane group of 8 x row_lanes lanes reads one chunk of 64
// rows of row_lanes adjacent items (an item group) at a time: lane (slot s,
// item c) folds rows s, s + 8, ..., s + 56 of item c, eight loads in flight,
// and the slot tree runs across lanes 4, 2 and 1 slots apart (all lanes of a
// warp take part in the shuffles, so the loops below are warp-uniform).
//  - Two levels (column_tile_kernel): a team of eight lane groups owns a
//    tile (up to 64 consecutive chunks) of an item group; lane group g folds
//    chunks g, g + 8, ..., g + 56 -- slot g of the second level -- in
//    registers, and after a barrier one thread per column combines the
//    team's eight slots.
//  - Two levels, a block a tile (column_wide_kernel): see tile_wide.
//  - One level (column_chunk_kernel): each lane group reads chunks on its
//    own and writes their values out, for the next pass to fold (or, for
//    columns of one chunk, the output).
// In a team, the loads of a lane group's next chunk (the next two for
// narrow items: chunks_per_step) are issued before the current chunk's
// shuffles, so that the lanes keep streaming.
template <int kItems, typename acc_t, typename Op>
__device__ __forceinline__ void slot_tree_across_lanes(acc_t (&acc)[kItems], int row_lanes, const Op& op) {
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
#pragma unroll
    for (int offset = kSlots / 2; offset > 0; offset /= 2)
      acc[i] = op.combine(acc[i], shuffle_xor(acc[i], offset * row_lanes, kWarpSize));
  }
}

// A lane's place in its lane group: item c of the group's row_lanes, slot s.
// row_lanes is a power of two: shifts and masks instead of divisions.
struct GroupLane {
  int row_shift;
  int c;
  int s;
};

__device__ __forceinline__ GroupLane group_lane(int row_lanes) {
  GroupLane me;
  me.row_shift = __ffs(row_lanes) - 1;
  const int lane = threadIdx.x % kWarpSize;
  me.c = lane & (row_lanes - 1);
  me.s = (lane >> me.row_shift) % kSlots;
  return me;
}

// Where a lane group reads: item `item` (of the lane) of chunk `chunk` in
// batch b; `valid` is false past the end of the work.
struct ChunkRef {
  int64_t b;
  int64_t chunk;
  int64_t item;
  bool valid;
};

template <int kItems, typename in_t, typename acc_t, typename out_t>
__device__ __forceinline__ int load_chunk(const ColumnArgs<in_t, acc_t, out_t>& args, const ChunkRef& ref, int s,
                                          Vector<in_t, kItems> (&loaded)[kSlots]) {
  const bool active = ref.valid && ref.item < args.items;
  const int count = active ? slot_rows(args.reduce - ref.chunk * kFoldLength, s) : 0;
  const in_t* base = args.data + (count > 0 ? ref.b * args.batch_stride +
                                                  (ref.chunk * kFoldLength + s) * args.reduce_stride + ref.item * kItems
                                            : 0);
  load_rows(base, kSlots * args.reduce_stride, count, loaded);
  return count;
}

// A lane group's chunk: its value ends in the lanes of slot 0 (item c each).
template <int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void fold_chunk(const ColumnArgs<in_t, acc_t, out_t>& args, const ChunkRef& ref, int s,
                                           const Op& op, acc_t (&acc)[kItems]) {
  Vector<in_t, kItems> loaded[kSlots];
  const int count = load_chunk(args, ref, s, loaded);
#pragma unroll
  for (int i = 0; i < kItems; ++i) acc[i] = op.identity();
  fold_rows(acc, loaded, count, ref.chunk * kFoldLength + s, op);
  slot_tree_across_lanes(acc, args.row_lanes, op);
}

// The units of a two-level pass -- (batch, tile, item group), item groups
// fastest -- and where one of them lies.
struct TilePass {
  int64_t chunks;
  int64_t tiles;
  int64_t item_groups;
  int64_t units;
};

template <typename in_t, typename acc_t, typename out_t>
__device__ __forceinline__ TilePass tile_pass(const ColumnArgs<in_t, acc_t, out_t>& args, int row_shift) {
  TilePass pass;
  pass.chunks = (args.reduce + kFoldLength - 1) / kFoldLength;
  pass.tiles = (pass.chunks + kFoldLength - 1) / kFoldLength;
  pass.item_groups = (args.items + args.row_lanes - 1) >> row_shift;
  pass.units = args.batch * pass.tiles * pass.item_groups;
  return pass;
}

struct TileUnit {
  int64_t b;
  int64_t tile;
  int64_t first_item;  // the item group's first item
  int tile_chunks;     // 64, or fewer in the last tile
};

__device__ __forceinline__ TileUnit tile_unit(const TilePass& pass, int64_t u, int row_shift) {
  TileUnit unit;
  unit.first_item = (u % pass.item_groups) << row_shift;
  unit.tile = (u / pass.item_groups) % pass.tiles;
  unit.b = u / (pass.item_groups * pass.tiles);
  const int64_t chunks_left = pass.chunks - unit.tile * kFoldLength;
  unit.tile_chunks = static_cast<int>(chunks_left < kFoldLength ? chunks_left : kFoldLength);
  return unit;
}

template <int kItems, int kWidth, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void tile_two_levels(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op,
                                                acc_t* team_slots) {
  const int row_lanes = args.row_lanes;
  const GroupLane me = group_lane(row_lanes);
  const int row_shift = me.row_shift, c = me.c, s = me.s;
  const int slot2 = (threadIdx.x >> (row_shift + 3)) % kSlots;
  const int team = threadIdx.x >> (row_shift + 6);
  const int teams = kColumnThreads >> (row_shift + 6);
  // The team's threads, numbered from 0: the first row_lanes x kWidth combine its slots.
  const int member = threadIdx.x & ((kSlots * kSlots << row_shift) - 1);

  const TilePass pass = tile_pass(args, row_shift);
  const bool last_pass = pass.tiles == 1;
  // A lane group reads chunks m * 8 + slot2 of its tile, m = 0, 1, ...: 512 rows apart.
  constexpr int64_t kRoundRows = kSlots * kFoldLength;

  for (int64_t first = static_cast<int64_t>(blockIdx.x) * teams; first < pass.units;
       first += static_cast<int64_t>(gridDim.x) * teams) {
    const int64_t u = first + team;
    const TileUnit unit = tile_unit(pass, u, row_shift);
    const int64_t b = unit.b;
    const int64_t tile = unit.tile;
    const int tile_chunks = unit.tile_chunks;
    const int rounds = u < pass.units ? (tile_chunks + kSlots - 1) / kSlots : 0;  // uniform across the team
    const int64_t first_item = unit.first_item;
    const bool active = u < pass.units && first_item + c < args.items;
    // The lane's addresses are worked out once a tile, from its first row (row
    // s of the lane group's first chunk). Worked out for every chunk, with
    // 64-bit divisions (calls), they took many more registers and time.
    const int64_t first_row = (tile * kFoldLength + slot2) * kFoldLength;
    const int64_t rows_left = args.reduce - first_row;
    const in_t* lane_rows =
        args.data + (active ? b * args.batch_stride + (first_row + s) * args.reduce_stride +
                                  (first_item + c) * kItems
                            : 0);
    auto load_round = [&](int m, Vector<in_t, kItems>(&loaded)[kSlots]) {
      const int count = active ? slot_rows(rows_left - m * kRoundRows, s) : 0;
      load_rows(count > 0 ? lane_rows + m * kRoundRows * args.reduce_stride : args.data, kSlots * args.reduce_stride,
                count, loaded);
      return count;
    };
    // kAhead rounds in flight: round m + kAhead is loaded once round m is
    // folded. Narrow items keep two, which small passes of few columns gain
    // from; four (items of one float32 or bfloat16 column) spilled in the
    // bfloat16 amax kernel (ptxas sm_90). Items of 16 bytes keep one: two
    // spilled in the bfloat16 sum kernel and gained float32 nothing.
    constexpr int kChunks = chunks_per_step<in_t, acc_t, kItems>();
    constexpr int kAhead = kChunks < 2 ? kChunks : 2;
    Vector<in_t, kItems> loaded[kAhead][kSlots];
    int count[kAhead];
#pragma unroll
    for (int r = 0; r < kAhead; ++r) {
      count[r] = kAhead == 1 || r < rounds ? load_round(r, loaded[r]) : 0;
    }
    acc_t level2[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) level2[i] = op.identity();
    for (int m = 0; m < rounds; m += kAhead) {
#pragma unroll
      for (int r = 0; r < kAhead; ++r) {
        if (kAhead > 1 && m + r >= rounds) break;
        acc_t acc[kItems];
#pragma unroll
        for (int i = 0; i < kItems; ++i) acc[i] = op.identity();
        fold_rows(acc, loaded[r], count[r], first_row + s + (m + r) * kRoundRows, op);
        if (m + r + kAhead < rounds) count[r] = load_round(m + r + kAhead, loaded[r]);
        slot_tree_across_lanes(acc, row_lanes, op);
        if ((m + r) * kSlots + slot2 < tile_chunks) {
#pragma unroll
          for (int i = 0; i < kItems; ++i) level2[i] = op.combine(level2[i], acc[i]);
        }
      }
    }
    if (s == 0) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) team_slots[((team * kSlots + slot2) * row_lanes + c) * kWidth + i] = level2[i];
    }
    __syncthreads();
    // Thread (item e_item, column i) of each team combines the team's eight slots.
    const int e_item = member / kWidth;
    const int i = member % kWidth;
    const int64_t item = first_item + e_item;
    if (e_item < row_lanes && i < kItems && u < pass.units && item < args.items) {
      acc_t p[kSlots];
#pragma unroll
      for (int slot = 0; slot < kSlots; ++slot) p[slot] = team_slots[((team * kSlots + slot) * row_lanes + e_item) * kWidth + i];
      const acc_t value[1] = {combine_slots(p, op)};
      store_item(args, last_pass, tile, b * args.columns + item * kItems + i, value, op);
    }
    __syncthreads();  // team_slots is refilled by the next tiles
  }
}

// Two levels, a block a tile (column_wide_kernel): the block's 256 / (8 x
// row_lanes) lane groups read the tile's chunks side by side -- lane group L
// chunks L, L + groups, ... -- and put each chunk's value in shared memory;
// then a thread per (second-level slot, column) folds its chunks in order,
// and one per column combines the slots. For tiles too few for teams to keep
// the SMs busy: a team's eight lane groups read its tile in eight rounds.
template <int kItems, int kWidth, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void tile_wide(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op,
                                          acc_t* chunk_values) {
  const int row_lanes = args.row_lanes;
  const GroupLane me = group_lane(row_lanes);
  const int row_shift = me.row_shift, c = me.c, s = me.s;
  const int group = threadIdx.x >> (row_shift + 3);
  const int groups = kColumnThreads >> (row_shift + 3);
  // Columns of the tile: row_lanes items of kWidth slots (kItems used).
  const int tile_columns = row_lanes * kWidth;

  const TilePass pass = tile_pass(args, row_shift);
  const bool last_pass = pass.tiles == 1;

  for (int64_t u = blockIdx.x; u < pass.units; u += gridDim.x) {
    const TileUnit unit = tile_unit(pass, u, row_shift);
    const int64_t tile = unit.tile;
    const int tile_chunks = unit.tile_chunks;
    ChunkRef ref;
    ref.b = unit.b;
    ref.item = unit.first_item + c;
    // Rounds are uniform across the block (the shuffles need whole warps): a
    // lane group past the tile's last chunk reads nothing.
    const int rounds = (tile_chunks + groups - 1) / groups;
    for (int r = 0; r < rounds; ++r) {
      const int j = group + r * groups;
      ref.chunk = tile * kFoldLength + j;
      ref.valid = j < tile_chunks;
      acc_t acc[kItems];
      fold_chunk(args, ref, s, op, acc);
      if (s == 0 && ref.valid) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) chunk_values[j * tile_columns + c * kWidth + i] = acc[i];
      }
    }
    __syncthreads();
    // Thread (slot g, column t) folds chunks g, g + 8, ... of the tile, in
    // order, into the second-level slot; the first tile_columns threads then
    // combine the slots (in chunk_values' first rows, which are read by now).
    const int t = threadIdx.x % tile_columns;
    const int g = threadIdx.x / tile_columns;
    const bool slot_thread = g < kSlots && t % kWidth < kItems;  // columns past kItems hold nothing
    acc_t level2 = op.identity();
    if (slot_thread) {
      for (int j = g; j < tile_chunks; j += kSlots) level2 = op.combine(level2, chunk_values[j * tile_columns + t]);
    }
    __syncthreads();
    if (slot_thread) chunk_values[g * tile_columns + t] = level2;
    __syncthreads();
    const int64_t item = unit.first_item + t / kWidth;
    if (slot_thread && g == 0 && item < args.items) {
      acc_t p[kSlots];
#pragma unroll
      for (int slot = 0; slot < kSlots; ++slot) p[slot] = chunk_values[slot * tile_columns + t];
      const acc_t value[1] = {combine_slots(p, op)};
      store_item(args, last_pass, tile, ref.b * args.columns + item * kItems + t % kWidth, value, op);
    }
    __syncthreads();  // chunk_values is refilled by the next tile
  }
}

template <int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void tile_one_level(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op) {
  const int row_lanes = args.row_lanes;
  const GroupLane me = group_lane(row_lanes);
  const int row_shift = me.row_shift, c = me.c, s = me.s;
  const int group_in_warp = (threadIdx.x % kWarpSize) >> (row_shift + 3);
  const uint32_t groups_per_warp = kWarpSize >> (row_shift + 3);
  const uint32_t warp = (blockIdx.x * kColumnThreads + threadIdx.x) / kWarpSize;
  const uint32_t warps = gridDim.x * (kColumnThreads / kWarpSize);

  // Units (batch, chunk, item group), item groups fastest, counted in 32
  // bits (the host sends 2^31 units or more to the teams): a 64-bit division
  // is a call, whose ABI costs registers.
  const auto chunks = static_cast<uint32_t>((args.reduce + kFoldLength - 1) / kFoldLength);
  const auto item_groups = static_cast<uint32_t>((args.items + row_lanes - 1) >> row_shift);
  const auto units = static_cast<uint32_t>(args.batch) * chunks * item_groups;

  // The warp's units are uniform across it. No loads of the next chunk ahead:
  // the registers they would take cost more resident warps than they hide.
  for (uint32_t first = warp * groups_per_warp; first < units; first += warps * groups_per_warp) {
    const uint32_t u = first + group_in_warp;
    const uint32_t q = u / item_groups;
    ChunkRef ref;
    ref.chunk = q % chunks;
    ref.b = q / chunks;
    ref.item = static_cast<int64_t>(((u - q * item_groups) << row_shift) + c);
    ref.valid = u < units;
    acc_t acc[kItems];
    fold_chunk(args, ref, s, op, acc);
    if (s == 0 && ref.valid && ref.item < args.items)
      store_item(args, chunks == 1, ref.chunk, ref.b * args.columns + ref.item * kItems, acc, op);
  }
}

// Two levels a pass: teams, each a tile at a time. Two blocks per SM: built
// for three (float32 fits in 72 registers), the float32 passes were slower.
template <typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads, 2) column_tile_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  start_pass();
  constexpr int kWidth = column_width<in_t, acc_t>();
  // Each team's eight second-level slots: teams x 8 x row_lanes = 32 lane groups' worth.
  __shared__ acc_t team_slots[kColumnThreads / kSlots * kWidth];
  with_width<kWidth>(args.width, [&](auto width) { tile_two_levels<decltype(width)::value, kWidth>(args, op, team_slots); });
}

// Two levels a pass, a block a tile: see tile_wide.
template <typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads, 2) column_wide_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  start_pass();
  constexpr int kWidth = column_width<in_t, acc_t>();
  // The tile's chunk values: 64 chunks x row_lanes x kWidth columns, at most 4 x kWidth.
  __shared__ acc_t chunk_values[kFoldLength * kMaxRowLanes * kWidth];
  with_width<kWidth>(args.width, [&](auto width) { tile_wide<decltype(width)::value, kWidth>(args, op, chunk_values); });
}

// One level a pass: lane groups, each a chunk at a time. A kernel for each
// item width, so that each gets the registers it needs rather than those of
// one kernel for every width and both modes. Built for 4 blocks per SM (64
// registers, ptxas sm_90: no spills for 32-bit accumulators), so that as
// many chunks are in flight as in benchmarks/probes/narrow_columns.cu's
// fastest variant; accumulators narrower than 32 bits (amax/amin of 8- and
// 16-bit integers and bool) spill at 64 registers, and at 80 for bool, and
// get 2.
template <typename acc_t>
constexpr int chunk_kernel_min_blocks() {
  return sizeof(acc_t) >= 4 ? 4 : 2;
}

template <typename in_t, typename acc_t, typename out_t, typename Op, int kItems>
__global__ void __launch_bounds__(kColumnThreads, chunk_kernel_min_blocks<acc_t>())
    column_chunk_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  start_pass();
  tile_one_level<kItems>(args, op);
}

}  // namespace cuda
}  // namespace torch_reduce
