// Launch geometry: host-side heuristics, apart from the kernels. Everything a
// dim reduction's order depends on is a function of the reduced length alone
// (batch invariance); only full reductions may size the launch to the device.
#pragma once

#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

#include "column_reduce.cuh"
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

inline int64_t grid_stride_blocks(int64_t work_items, int threads) {
  return std::max<int64_t>(1, std::min(ceil_div(work_items, threads), static_cast<int64_t>(sm_count()) * kMaxBlocksPerSm));
}

}  // namespace cuda
}  // namespace torch_reduce
