// Reduces rows shorter than a 16-byte vector, stored back to back, whose
// length divides the vector width (float32 rows of 1 or 2 elements, bfloat16
// rows of 1, 2 or 4): each lane's load holds kRows whole rows, and one store
// writes their kRows results, so that a warp reads 512 contiguous bytes with
// one instruction, where row_reduce_kernel reads a row per lane with a load
// per element.
//
// A row's order is the one row_reduce_kernel gives a row of one item: its
// elements folded in index order, starting from the identity. So a row gives
// the same bits packed or not (batch invariance, tests/test_ops.py).
#pragma once

#include "row_reduce.cuh"

namespace torch_reduce {
namespace cuda {

template <typename scalar_t, typename out_t>
struct PackedRowArgs {
  const scalar_t* data;  // 16-byte aligned
  int64_t rows;          // of kWidth / kRows elements each
  out_t* out;            // aligned to kRows outputs
};

// kEvictFirst: the loads read evict-first (evict_first_input).
template <typename scalar_t, typename acc_t, typename out_t, typename Op, int kRows, bool kEvictFirst>
__global__ void __launch_bounds__(kRowThreads) packed_row_reduce_kernel(PackedRowArgs<scalar_t, out_t> args, Op op) {
  constexpr int kWidth = vector_width<scalar_t>();
  constexpr int kLength = kWidth / kRows;
  const int64_t vectors = args.rows / kRows;
  // Slot s of a warp's pass reads vector warp_first + s * 32 + lane.
  constexpr int64_t kWarpVectors = kRowSlots * kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(kRowThreads) + threadIdx.x) / kWarpSize;
  const int64_t warp_step = static_cast<int64_t>(gridDim.x) * (kRowThreads / kWarpSize) * kWarpVectors;
  for (int64_t warp_first = warp * kWarpVectors; warp_first < vectors; warp_first += warp_step) {
    Vector<scalar_t> loaded[kRowSlots];
#pragma unroll
    for (int s = 0; s < kRowSlots; ++s) {
      const int64_t v = warp_first + s * kWarpSize + lane;
      if (v < vectors) loaded[s] = load_input<kEvictFirst>(args.data + v * kWidth);
    }
#pragma unroll
    for (int s = 0; s < kRowSlots; ++s) {
      const int64_t v = warp_first + s * kWarpSize + lane;
      if (v < vectors) {
        Vector<out_t, kRows> results;
#pragma unroll
        for (int r = 0; r < kRows; ++r)
          results.value[r] = static_cast<out_t>(op.project(fold_elements<acc_t>(loaded[s].value + r * kLength, kLength, op)));
        store_vector(args.out + v * kRows, results);
      }
    }
  }
  // The rows after the last whole vector (fewer than kRows), a thread each.
  const int64_t thread = blockIdx.x * static_cast<int64_t>(kRowThreads) + threadIdx.x;
  const int64_t tail_row = vectors * kRows + thread;
  if (thread < kRows && tail_row < args.rows) {
    const acc_t acc = fold_elements<acc_t>(args.data + tail_row * kLength, kLength, op);
    args.out[tail_row] = static_cast<out_t>(op.project(acc));
  }
}

}  // namespace cuda
}  // namespace torch_reduce
