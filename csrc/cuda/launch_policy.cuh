// The tuned values of the CUDA plans, one row per architecture: which kernel
// reads a layout and with what grid. None of them changes a result's bits:
// the fold orders depend on the layout alone (docs/DESIGN.md), and the
// constants that fix them (kSlots, kFoldLength, kTilesPerSplit,
// kSplitRowBytes) stay with their kernels. What each value trades, and the
// evidence for it: docs/TUNING.md, under the field's name.
#pragma once

#include <c10/cuda/CUDAFunctions.h>

#include <array>
#include <cstdint>

#include "device_info.cuh"

namespace torch_reduce {
namespace cuda {

struct LaunchPolicy {
  int arch;  // compute capability, major * 10 + minor: the row serves it and later ones up to the next row
  // Rows and full reductions (launch_config.cuh).
  int64_t max_blocks_per_sm;      // grid-stride kernels: blocks an SM beyond which a bigger grid buys nothing
  int64_t single_block_tiles;     // a full reduction of up to this many tiles takes one block
  int64_t staged_blocks_per_sm;   // staged_rows_kernel: blocks an SM its rows are spread over
  // Column passes (column_config.cuh).
  int64_t tile_blocks_per_sm;        // tiles an SM that the two-level tile kernels need
  int64_t block_column_min_bytes;    // column_block_kernel: inputs of at least this many bytes
  int64_t short_column_min_threads;  // column_short_kernel: threads enough to stream one chunk
  int64_t short_column_max_steps;    // ... or as few steps (of 8 rows) for a warp's worth of items
  int64_t short_chunks_min_row_bytes;  // column_short_kernel's first level: rows of at least this many bytes
  int64_t narrow_items_min_threads;  // passes of narrow items: items x chunks enough to stream
  int64_t tile_min_lanes;            // column_tile_kernel's teams: lanes enough, else single chunks
  int64_t later_pass_team_chunks;    // a later pass of one tile: more chunks than this go to single chunks
  int64_t few_team_blocks;           // a first pass of one tile: this many team blocks or fewer, too
  int64_t flat_columns_min_bytes;    // column_flat_kernel: inputs of at least this many bytes
  // Outputs (reduce_layout.cuh).
  int64_t permuted_output_max_elements;  // permuted outputs written in place up to this size, else copied
};

// Hopper (sm_90; tuned on the H100 and H200) is the only architecture
// measured, so its row serves every device. A row for another architecture
// goes before it, its values from that GPU's runs (benchmarks/README.md).
inline constexpr LaunchPolicy kLaunchPolicies[] = {
    {/*arch=*/90,
     /*max_blocks_per_sm=*/32,
     /*single_block_tiles=*/2,
     /*staged_blocks_per_sm=*/4,
     /*tile_blocks_per_sm=*/1,
     /*block_column_min_bytes=*/16 << 20,
     /*short_column_min_threads=*/16 * 1024,
     /*short_column_max_steps=*/2,
     /*short_chunks_min_row_bytes=*/256,
     /*narrow_items_min_threads=*/64 * 1024,
     /*tile_min_lanes=*/32 * 1024,
     /*later_pass_team_chunks=*/32,
     /*few_team_blocks=*/32,
     /*flat_columns_min_bytes=*/4 << 20,
     /*permuted_output_max_elements=*/1 << 16},
};

// The current device's row: the last whose arch it reaches, else the first.
// Looked up once a device: plans ask for it several times a call.
inline const LaunchPolicy& launch_policy() {
  constexpr int kMaxDevices = 64;
  static std::array<const LaunchPolicy*, kMaxDevices> cache{};
  const int device = c10::cuda::current_device();
  const LaunchPolicy* chosen = device < kMaxDevices ? cache[device] : nullptr;
  if (chosen == nullptr) {
    const int arch = compute_capability_major() * 10 + compute_capability_minor();
    chosen = &kLaunchPolicies[0];
    for (const LaunchPolicy& row : kLaunchPolicies)
      if (arch >= row.arch) chosen = &row;
    if (device < kMaxDevices) cache[device] = chosen;
  }
  return *chosen;
}

}  // namespace cuda
}  // namespace torch_reduce
