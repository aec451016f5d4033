// Step 03: sequential addressing (Harris's kernel 3).
//
// Changed from 02: the stride runs backwards, s = blockDim.x / 2 .. 1, and
//   thread tid < s adds sdata[tid + s] into sdata[tid].
// Removes: the bank conflicts. A warp's lanes read and write consecutive
//   words, one per bank.
// Bottleneck: idle threads. Half of the threads are idle from the first
//   round on, and the block's threads only ever load one element each.
// Preconditions: blockDim.x a power of two (the launcher uses 256). Any n:
//   threads past the end load the identity.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <typename in_t, typename acc_t, typename Op>
__global__ void sequential_addressing_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t* sdata = shared_scratch<acc_t>();
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = load_or_identity<acc_t>(in, i, n, op);
  __syncthreads();

  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = op.combine(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = sdata[0];
}

struct SequentialAddressing {
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
      sequential_addressing_kernel<in_t, acc_t, Op>
          <<<blocks, kThreads, shared_bytes, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
