// Launch geometry: host-side heuristics, apart from the kernels. Everything a
// dim reduction's order depends on is a function of the reduced length alone
// (batch invariance); only full reductions may size the launch to the device.
#pragma once

#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "column_block_kernel.cuh"
#include "column_short_kernel.cuh"
#include "column_tile_kernel.cuh"
#include "device_info.cuh"
#include "row_reduce.cuh"
#include "split_row_reduce.cuh"

namespace torch_reduce {
namespace cuda {

// Rows of at least this many bytes are shared by several blocks; shorter rows
// go to row_reduce_kernel.
constexpr int64_t kSplitRowBytes = 64 * 1024;
// In a dim reduction, one block of a split row reads this many tiles.
constexpr int64_t kTilesPerSplit = 8;
// Grid-stride kernels: blocks per SM beyond which a bigger grid buys nothing.
constexpr int64_t kMaxBlocksPerSm = 32;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


// Resident blocks per SM of a kernel, asked once per kernel.
template <typename Kernel>
int resident_blocks(Kernel kernel, int threads) {
  static const int blocks = [&] {
    int n = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, 0));
    return std::max(n, 1);
  }();
  return blocks;
}

inline int64_t split_row_tiles(int64_t row_length, int element_bytes) {
  const int64_t vectors = row_length * element_bytes / kVectorBytes;
  return std::max<int64_t>(1, ceil_div(vectors, kSplitTileVectors));
}

// Up to this many tiles, one block reading them in turn beats splitting: the
// combine step costs more (about three L2 round trips) than a second tile.
constexpr int64_t kSingleBlockTiles = 2;

// A full reduction fills the device once: at most one wave of resident blocks.
inline int64_t full_reduction_splits(int64_t n, int element_bytes, int resident_per_sm) {
  const int64_t tiles = split_row_tiles(n, element_bytes);
  if (tiles <= kSingleBlockTiles) return 1;
  return std::min<int64_t>(tiles, static_cast<int64_t>(sm_count()) * resident_per_sm);
}

// A long row of a dim reduction: a fixed amount of work per block.
inline int64_t dim_reduction_splits(int64_t row_length, int element_bytes) {
  return ceil_div(split_row_tiles(row_length, element_bytes), kTilesPerSplit);
}

// Lanes per row: the fewest (a power of two) that leave each lane at most
// kRowSlots items, up to a warp.
inline int row_group_size(int64_t items) {
  int group = 1;
  while (group < kWarpSize && group * static_cast<int64_t>(kRowSlots) < items) group *= 2;
  return group;
}

// Column reductions (column_fold.cuh): which kernel reads a pass best.
// All three compute the same order, so the choice may depend on any size.
enum class ColumnKernel { Short, Block, Tile };

// One chunk: column_short_kernel, whose threads have all the rows to
// themselves. Longer columns: column_block_kernel needs a warp's worth of
// items and enough bytes to stream; the rest go to column_tile_kernel or
// column_chunk_kernel (slots as lanes), which have eight times more threads
// for the same bytes.
constexpr int64_t kBlockColumnMinBytes = 16 << 20;

inline ColumnKernel column_kernel(int64_t reduce, int64_t items, int64_t bytes) {
  if (reduce <= kFoldLength) return ColumnKernel::Short;
  if (items >= kWarpSize && bytes >= kBlockColumnMinBytes) return ColumnKernel::Block;
  return ColumnKernel::Tile;
}

// column_block_kernel blocks and column_tile_kernel teams fold whole tiles
// of 64 chunks (two levels in one pass) when there are tiles enough to give
// each SM one; else they fold single chunks, and the next pass the rest.
constexpr int64_t kTileBlocksPerSm = 1;

inline bool tiles_fill_device(int64_t tile_columns, int64_t chunks) {
  return tile_columns * ceil_div(chunks, kFoldLength) >= kTileBlocksPerSm * sm_count();
}

// A team of column_tile_kernel reads its tile's chunks one after another: its
// 64 x row_lanes lanes keep only eight rows each in flight. With fewer lanes
// than this in all, column_chunk_kernel's single chunks (eight times the
// lanes) stream faster -- unless the input is small enough that the extra
// passes cost more (measured on the H100: 1048576 x 8 bfloat16 15.5 us with
// single chunks, 21 us with tiles; 1000000 x 2 float32 11.5 us with single
// chunks, 9.9 us with tiles). With many lanes, teams are as fast: with
// column_chunk_kernel at 4 blocks per SM, single chunks for every input over
// 12 MiB (results/dims_h100_chunk_everywhere.json, against dims_h100.json)
// took float32 7840000 x 4 52.3 -> 53.0 us, 1048576 x 32 55.2 -> 55.9 us,
// 1048576 x 8 11.1 -> 12.8 us, bfloat16 1048576 x 32 30.2 -> 32.5 us.
constexpr int64_t kTileMinLanes = 32 * 1024;
constexpr int64_t kTileMaxBytesForFewLanes = 12 << 20;

// column_chunk_kernel counts its units (lane groups' chunks) in 32 bits;
// inputs of more units (some 2^36 elements) go to the teams.
constexpr int64_t kChunkKernelMaxUnits = std::numeric_limits<int32_t>::max();

inline bool tile_teams_stream(int64_t item_groups, int row_lanes, int64_t chunks, int64_t bytes) {
  const int64_t lanes = item_groups * ceil_div(chunks, kFoldLength) * kSlots * kSlots * row_lanes;
  if (item_groups * chunks > kChunkKernelMaxUnits) return true;
  return tiles_fill_device(item_groups, chunks) && (lanes >= kTileMinLanes || bytes <= kTileMaxBytesForFewLanes);
}

// Items of one chunk row that column_tile_kernel's lanes share: a power of
// two, up to kMaxRowLanes (then 8 slots x 4 items fill a warp).
inline int tile_row_lanes(int64_t items) {
  int lanes = 1;
  while (lanes < kMaxRowLanes && lanes < items) lanes *= 2;
  return lanes;
}

// Two levels: teams of eight lane groups of 8 x row_lanes lanes, each team a tile.
inline int tile_teams(int row_lanes) { return kColumnThreads / (kSlots * kSlots * row_lanes); }
// One level (column_chunk_kernel): lane groups of 8 x row_lanes lanes, each a chunk at a time.
inline int tile_lane_groups(int row_lanes) { return kColumnThreads / (kSlots * row_lanes); }

inline int64_t grid_stride_blocks(int64_t work_items, int threads) {
  return std::max<int64_t>(1, std::min(ceil_div(work_items, threads), static_cast<int64_t>(sm_count()) * kMaxBlocksPerSm));
}

}  // namespace cuda
}  // namespace torch_reduce
