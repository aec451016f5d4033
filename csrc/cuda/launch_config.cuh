// Launch geometry of rows and full reductions, and what every launch
// shares: host-side heuristics, apart from the kernels (columns':
// column_config.cuh). Everything a dim reduction's order depends on is a
// function of the reduced length alone (batch invariance); only full
// reductions may size the launch to the device. What each tuned constant
// trades, and the evidence for its value: docs/TUNING.md.
#pragma once

#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "device_info.cuh"
#include "kernel_family.cuh"
#include "launch_policy.cuh"
#include "packed_row_reduce.cuh"
#include "row_reduce.cuh"
#include "split_row_reduce.cuh"
#include "staged_rows_kernel.cuh"

namespace torch_reduce {
namespace cuda {

// In a dim reduction, one block of a split row reads this many tiles: a fixed
// amount of work per block, so that the splits depend on the row length
// alone. Fewer tiles a block (more blocks, more loads in flight) were no
// faster: what keeps such rows from a plain read's speed is the combine's
// fixed cost, not the bytes in flight.
constexpr int64_t kTilesPerSplit = 8;
// Grid-stride kernels: blocks per SM beyond which a bigger grid buys nothing.
// (LaunchPolicy: max_blocks_per_sm.)

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }


// A kernel as a type, so that a launcher generic over it can ask
// resident_blocks of it.
template <auto kernel>
struct Kernel : std::integral_constant<decltype(kernel), kernel> {};

// Resident blocks per SM of `kernel`, asked once per kernel. The kernel is
// a template argument, not the type of one: the instantiations of a kernel
// template that differ in a flag share a signature, and a count cached by
// signature went to whichever of them asked first.
template <auto kernel>
int resident_blocks(int threads) {
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
// (LaunchPolicy: single_block_tiles.)

// A full reduction fills the device once: at most one wave of resident blocks.
inline int64_t full_reduction_splits(int64_t n, int element_bytes, int resident_per_sm) {
  const int64_t tiles = split_row_tiles(n, element_bytes);
  if (tiles <= launch_policy().single_block_tiles) return 1;
  return std::min<int64_t>(tiles, static_cast<int64_t>(sm_count()) * resident_per_sm);
}

// A long row of a dim reduction: a fixed amount of work per block.
inline int64_t dim_reduction_splits(int64_t row_length, int element_bytes) {
  return ceil_div(split_row_tiles(row_length, element_bytes), kTilesPerSplit);
}

// Lanes per row: the fewest (a power of two) that leave each lane at most
// kRowSlots items, up to a warp. Fewer items a lane (more lanes a row) lost
// in row_reduce_kernel, although benchmarks/probes/short_rows.cu, a
// stand-alone copy of its fold, ranked two items a lane first; why the two
// disagree is not known.
inline int row_group_size(int64_t items) {
  int group = 1;
  while (group < kWarpSize && group * static_cast<int64_t>(kRowSlots) < items) group *= 2;
  return group;
}

// Rows a lane reads per pass: 1 for rows too long for the several-rows
// kernel; for shorter ones, as many as its loads hold, unless that leaves fewer lanes than a block per SM, in which
// case fewer (down to one), for more lanes. A row's order does not depend on
// how many rows its lane reads, so this may depend on the batch. A small
// batch read several rows a lane runs on a few blocks and leaves most SMs
// idle.
inline int short_rows_per_pass(int64_t rows, int group, int items_per_lane) {
  const int64_t most = row_reduce_rows_per_pass(items_per_lane);
  const int64_t lanes_wanted = static_cast<int64_t>(sm_count()) * kRowThreads;
  return static_cast<int>(std::clamp<int64_t>(rows * group / lanes_wanted, 1, most));
}

// An input larger than the L2, which a kernel reads once, is read
// evict-first (load_vector_evict_first) where what the kernel writes fits in half of
// the L2: the L2 then evicts the input's clean lines rather than the
// output's (or the next pass's partials'), which the next kernel reads.
// Where the output does not fit in half of the L2, evict-first lost, so
// those loads stay plain.
inline bool evict_first_input(int64_t read_bytes, int64_t written_bytes) {
  return read_bytes > l2_bytes() && 2 * written_bytes <= l2_bytes();
}

// Rows a block of staged_rows_kernel takes: enough for staged_blocks_per_sm
// blocks an SM, up to as many whole rows as one round trip of its loads
// stages (kStagedElements), at least one. A row's order does not depend on
// its block's rows (staged_rows_kernel.cuh), so this may depend on the batch
// and the device. Small inputs are latency-bound: spread over more SMs, each
// thread stages fewer elements, each found by a chain of dependent integer
// operations. A block's rows fill at most max(kStagedElements, row_length)
// elements of shared memory, 16 KiB at most (kSmallGatherMaxRowBytes).
// (LaunchPolicy: staged_blocks_per_sm.)
inline int staged_rows_per_block(int64_t row_length, int64_t rows) {
  const int64_t most = std::max<int64_t>(1, kStagedElements / row_length);
  const int64_t blocks = sm_count() * launch_policy().staged_blocks_per_sm;
  return static_cast<int>(std::clamp<int64_t>(ceil_div(rows, blocks), 1, most));
}
static_assert(kSmallGatherMaxRowBytes <= kSplitRowBytes, "staged rows take the order of row_reduce_kernel's rows");

inline int64_t grid_stride_blocks(int64_t work_items, int threads) {
  const int64_t most = static_cast<int64_t>(sm_count()) * launch_policy().max_blocks_per_sm;
  return std::max<int64_t>(1, std::min(ceil_div(work_items, threads), most));
}

}  // namespace cuda
}  // namespace torch_reduce
