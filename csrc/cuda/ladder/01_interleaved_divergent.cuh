// Step 01: interleaved addressing with a divergent branch (Harris's kernel 1).
//
// Changed from 00: a tree reduction in shared memory. Each block of 256
//   threads loads 256 elements and folds them pairwise in log2(256) rounds,
//   doubling the stride s; thread `tid` is active when tid % (2 * s) == 0.
//   Block b writes partial b, and the pass runs again on the partials.
// Removes: the single thread; thousands of blocks read in parallel.
// Bottleneck: the active threads are spread over every warp (half of them,
//   then a quarter, ...), so each round pays for whole warps that do almost
//   nothing (divergence), and % is a slow instruction.
// Preconditions: blockDim.x a power of two (the launcher uses 256). Any n:
//   threads past the end load the identity.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <typename in_t, typename acc_t, typename Op>
__global__ void interleaved_divergent_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t* sdata = shared_scratch<acc_t>();
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = load_or_identity<acc_t>(in, i, n, op);
  __syncthreads();

  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    if (tid % (2 * s) == 0) sdata[tid] = op.combine(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = sdata[0];
}

struct InterleavedDivergent {
  static constexpr int kThreads = 256;

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return ceil_div(n, kThreads); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    constexpr size_t shared_bytes = kThreads * sizeof(acc_t);
    static_assert(shared_bytes <= kMaxSharedBytes, "one acc_t per thread in shared memory");
    launch_one_block_per_tile(n, kThreads, [&](int64_t first, int64_t left, int64_t first_tile,
                                               unsigned blocks) {
      interleaved_divergent_kernel<in_t, acc_t, Op>
          <<<blocks, kThreads, shared_bytes, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
