// Step 05: unroll the last warp (Harris's kernel 5, made correct on Volta+).
//
// Changed from 04: the tree loop stops at s = 64; the last six rounds
//   (s = 32 .. 1) run in warp 0 only, written out one by one, with
//   __syncwarp() instead of __syncthreads().
// Removes: the __syncthreads() and loop overhead of the rounds in which only
//   one warp works.
// Correctness: the seeds' version (`volatile`, no barrier) relied on the 32
//   lanes of a warp running in lockstep. Since Volta they are scheduled
//   independently, so in each round every lane must have read
//   sdata[lane + s] before lane + s overwrites it (first __syncwarp), and the
//   writes must be visible before the next round reads them (second
//   __syncwarp, which also orders shared memory, so no volatile is needed).
// Bottleneck: the loop is still over the run-time blockDim.x, so its
//   bounds and trip count are computed on the device.
// Preconditions: blockDim.x a power of two >= 64 (the launcher uses 256).
//   Any n: both loads are bounds-checked and give the identity past the end.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

// One round of the last warp: lane folds in sdata[lane + s].
template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t last_warp_round(acc_t* sdata, unsigned lane, acc_t v, unsigned s,
                                                 const Op& op) {
  v = op.combine(v, sdata[lane + s]);
  __syncwarp();  // every lane has read before any lane writes
  sdata[lane] = v;
  __syncwarp();  // the writes are seen by the next round's reads
  return v;
}

// Folds sdata[0 .. 63] in warp 0 (all 32 lanes call it); the result is
// valid in lane 0.
template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t reduce_last_warp(acc_t* sdata, unsigned lane, const Op& op) {
  acc_t v = sdata[lane];
  v = last_warp_round(sdata, lane, v, 32, op);
  v = last_warp_round(sdata, lane, v, 16, op);
  v = last_warp_round(sdata, lane, v, 8, op);
  v = last_warp_round(sdata, lane, v, 4, op);
  v = last_warp_round(sdata, lane, v, 2, op);
  return op.combine(v, sdata[lane + 1]);
}

template <typename in_t, typename acc_t, typename Op>
__global__ void unroll_last_warp_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t* sdata = shared_scratch<acc_t>();
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * blockDim.x) + tid;
  sdata[tid] = op.combine(load_or_identity<acc_t>(in, i, n, op),
                          load_or_identity<acc_t>(in, i + blockDim.x, n, op));
  __syncthreads();

  for (unsigned s = blockDim.x / 2; s > kWarpSize; s >>= 1) {
    if (tid < s) sdata[tid] = op.combine(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid < kWarpSize) {
    const acc_t result = reduce_last_warp(sdata, tid, op);
    if (tid == 0) partials[blockIdx.x] = result;
  }
}

struct UnrollLastWarp {
  static constexpr int kThreads = 256;
  static constexpr int64_t kTile = 2 * kThreads;
  static_assert(kThreads >= 2 * kWarpSize, "the last warp folds 64 values");

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return ceil_div(n, kTile); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    constexpr size_t shared_bytes = kThreads * sizeof(acc_t);
    static_assert(shared_bytes <= kMaxSharedBytes, "one acc_t per thread in shared memory");
    launch_one_block_per_tile(n, kTile, [&](int64_t first, int64_t left, int64_t first_tile,
                                            unsigned blocks) {
      unroll_last_warp_kernel<in_t, acc_t, Op>
          <<<blocks, kThreads, shared_bytes, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
