// Step 04: first add during the global load (Harris's kernel 4).
//
// Changed from 03: each block covers a tile of 2 * blockDim.x elements;
//   thread tid loads elements tid and tid + blockDim.x and stores their sum,
//   so the first round of the tree happens on the way in. Half as many blocks.
// Removes: the threads that idled in the first round; every thread now does
//   an add before the tree starts.
// Bottleneck: instruction overhead. The tree's last rounds run one warp or
//   less, yet each round still pays a __syncthreads() and the loop's
//   bookkeeping.
// Preconditions: blockDim.x a power of two (the launcher uses 256). Any n:
//   both loads are bounds-checked and give the identity past the end.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <typename in_t, typename acc_t, typename Op>
__global__ void first_add_during_load_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t* sdata = shared_scratch<acc_t>();
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * blockDim.x) + tid;
  sdata[tid] = op.combine(load_or_identity<acc_t>(in, i, n, op),
                          load_or_identity<acc_t>(in, i + blockDim.x, n, op));
  __syncthreads();

  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = op.combine(sdata[tid], sdata[tid + s]);
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = sdata[0];
}

struct FirstAddDuringLoad {
  static constexpr int kThreads = 256;
  static constexpr int64_t kTile = 2 * kThreads;

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return ceil_div(n, kTile); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    constexpr size_t shared_bytes = kThreads * sizeof(acc_t);
    static_assert(shared_bytes <= kMaxSharedBytes, "one acc_t per thread in shared memory");
    launch_one_block_per_tile(n, kTile, [&](int64_t first, int64_t left, int64_t first_tile,
                                            unsigned blocks) {
      first_add_during_load_kernel<in_t, acc_t, Op>
          <<<blocks, kThreads, shared_bytes, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
