// Step 08: warp shuffle.
//
// Changed from 07: the block's tree no longer goes through shared memory.
//   Each warp folds its 32 values in registers with __shfl_down_sync
//   (offsets 16 .. 1); lane 0 of each warp writes the warp's total to shared
//   memory (kBlockSize / 32 values); after one barrier, warp 0 folds those
//   totals with the same shuffles.
// Removes: the shared-memory tree. Its eight rounds of shared loads and
//   stores become shuffles, which move registers between lanes directly;
//   one barrier is left, for the warp totals.
// Bottleneck: the loads. Each load instruction moves one element (4 bytes
//   of float, 1 of int8), so the memory system sees many small requests and
//   few bytes in flight per thread.
// Preconditions: kBlockSize a multiple of 32 in [32, 1024]. Any n: the loop
//   is bounded by n and the second element of an iteration is bounds-checked.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

// Folds one value per lane (all 32 lanes call it); the result is valid in
// lane 0. Lanes whose source is past lane 31 get their own value back, which
// only ever reaches lanes other than 0.
template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t warp_reduce(acc_t v, const Op& op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    v = op.combine(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Folds one value per thread (all threads call it); the result is valid in
// thread 0.
template <int kBlockSize, typename acc_t, typename Op>
__device__ __forceinline__ acc_t block_reduce_shuffle(acc_t v, const Op& op) {
  static_assert(kBlockSize % kWarpSize == 0 && kBlockSize <= 1024, "a block of whole warps");
  constexpr int kWarps = kBlockSize / kWarpSize;
  __shared__ acc_t warp_totals[kWarps];
  const unsigned lane = threadIdx.x % kWarpSize;
  const unsigned warp = threadIdx.x / kWarpSize;

  v = warp_reduce(v, op);
  if (lane == 0) warp_totals[warp] = v;
  __syncthreads();
  if (warp == 0) v = warp_reduce(lane < kWarps ? warp_totals[lane] : op.identity(), op);
  return v;
}

template <int kBlockSize, typename in_t, typename acc_t, typename Op>
__global__ void __launch_bounds__(kBlockSize)
    warp_shuffle_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  const unsigned tid = threadIdx.x;
  const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * (2 * kBlockSize);
  acc_t acc = op.identity();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * kBlockSize) + tid; i < n;
       i += grid_stride) {
    acc = op.combine(acc, static_cast<acc_t>(in[i]));
    acc = op.combine(acc, load_or_identity<acc_t>(in, i + kBlockSize, n, op));
  }

  const acc_t result = block_reduce_shuffle<kBlockSize>(acc, op);
  if (tid == 0) partials[blockIdx.x] = result;
}

struct WarpShuffle {
  static constexpr int kBlockSize = 256;
  static constexpr int64_t kBlockStep = 2 * kBlockSize;

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return grid_stride_blocks(n, kBlockStep, kBlockSize); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    const auto blocks = static_cast<unsigned>(num_partials<in_t>(n));
    warp_shuffle_kernel<kBlockSize, in_t, acc_t, Op>
        <<<blocks, kBlockSize, 0, stream>>>(in, n, partials, op);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

}  // namespace ladder
}  // namespace torch_reduce
