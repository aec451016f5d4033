// Step 06: completely unrolled, block size as a template parameter
// (Harris's kernel 6).
//
// Changed from 05: the block size is the compile-time constant kBlockSize, so
//   the tree's rounds are written out (`if constexpr`) instead of looped over
//   blockDim.x, and shared memory is a static array. Two instantiations,
//   picked per pass at run time:
//     1024 threads for inputs of at least 2^20 elements: fewer, larger blocks
//       leave 4x fewer partials; 2^20 elements still make 512 blocks, enough
//       for every SM of an H100 (132) at two resident blocks each;
//     256 threads below that, so that small inputs (and the partials of the
//       first pass) still spread over many SMs.
// Removes: the loop's run-time bounds, counter and branches; the compiler
//   sees exactly which rounds exist.
// Bottleneck: each thread still adds only two elements before a whole tree
//   of __syncthreads() rounds, and a block per tile means n / 2048 blocks
//   that each pay for that tree and a partial.
// Preconditions: kBlockSize a power of two in [64, 1024]. Any n: both loads
//   are bounds-checked and give the identity past the end.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "05_unroll_last_warp.cuh"
#include "common.cuh"

namespace torch_reduce {
namespace ladder {

// Folds sdata[0 .. kBlockSize - 1] (all threads call it, after a barrier);
// the result is valid in thread 0.
template <int kBlockSize, typename acc_t, typename Op>
__device__ __forceinline__ acc_t block_reduce_unrolled(acc_t* sdata, unsigned tid, const Op& op) {
  static_assert(kBlockSize >= 64 && kBlockSize <= 1024 && (kBlockSize & (kBlockSize - 1)) == 0,
                "a power of two in [64, 1024]");
  if constexpr (kBlockSize >= 1024) {
    if (tid < 512) sdata[tid] = op.combine(sdata[tid], sdata[tid + 512]);
    __syncthreads();
  }
  if constexpr (kBlockSize >= 512) {
    if (tid < 256) sdata[tid] = op.combine(sdata[tid], sdata[tid + 256]);
    __syncthreads();
  }
  if constexpr (kBlockSize >= 256) {
    if (tid < 128) sdata[tid] = op.combine(sdata[tid], sdata[tid + 128]);
    __syncthreads();
  }
  if constexpr (kBlockSize >= 128) {
    if (tid < 64) sdata[tid] = op.combine(sdata[tid], sdata[tid + 64]);
    __syncthreads();
  }
  return tid < kWarpSize ? reduce_last_warp(sdata, tid, op) : op.identity();
}

template <int kBlockSize, typename in_t, typename acc_t, typename Op>
__global__ void __launch_bounds__(kBlockSize)
    complete_unroll_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  __shared__ acc_t sdata[kBlockSize];
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * kBlockSize) + tid;
  sdata[tid] = op.combine(load_or_identity<acc_t>(in, i, n, op),
                          load_or_identity<acc_t>(in, i + kBlockSize, n, op));
  __syncthreads();

  const acc_t result = block_reduce_unrolled<kBlockSize>(sdata, tid, op);
  if (tid == 0) partials[blockIdx.x] = result;
}

struct CompleteUnroll {
  static constexpr int64_t kLargeInput = int64_t{1} << 20;

  static int block_size_for(int64_t n) { return n >= kLargeInput ? 1024 : 256; }

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return ceil_div(n, 2 * block_size_for(n)); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    if (block_size_for(n) == 1024) {
      launch_with<1024>(in, n, partials, op, stream);
    } else {
      launch_with<256>(in, n, partials, op, stream);
    }
  }

 private:
  template <int kBlockSize, typename in_t, typename acc_t, typename Op>
  static void launch_with(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                          cudaStream_t stream) {
    static_assert(kBlockSize * sizeof(acc_t) <= kMaxSharedBytes,
                  "one acc_t per thread in shared memory");
    launch_one_block_per_tile(n, 2 * kBlockSize, [&](int64_t first, int64_t left,
                                                     int64_t first_tile, unsigned blocks) {
      complete_unroll_kernel<kBlockSize, in_t, acc_t, Op>
          <<<blocks, kBlockSize, 0, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
