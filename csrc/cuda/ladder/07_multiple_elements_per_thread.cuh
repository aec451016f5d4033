// Step 07: multiple elements per thread (Harris's kernel 7; Brent's theorem).
//
// Changed from 06: the grid is one wave of resident blocks (at most
//   SMs x blocks per SM), and each thread walks the input with a grid-stride
//   loop, two elements per iteration, adding them into a register (Harris
//   adds into sdata[tid] inside the loop; nothing else reads it before the
//   barrier, so a register is the same algorithm without the shared-memory
//   traffic); the unrolled tree of 06 then runs once per block. One
//   256-thread instantiation: the loop, not the block size, sets the work
//   per block.
// Removes: most of the per-element tree cost. By Brent's theorem,
//   O(n / log n) threads doing O(log n) sequential adds each cost O(n) work
//   in O(log n) time. The tree, its barriers and the partial write are paid
//   once per block, and a block now covers n / (one wave of blocks) elements
//   instead of one tile. A pass leaves at most one wave of partials (1056 on
//   an H100), so three passes at most finish any input.
// Bottleneck: the tree in shared memory: the block's values go through
//   shared memory and eight rounds of barriers and shared loads and stores.
// Preconditions: kBlockSize a power of two in [64, 1024]. Any n: the loop is
//   bounded by n and the second element of an iteration is bounds-checked.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "06_complete_unroll.cuh"
#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <int kBlockSize, typename in_t, typename acc_t, typename Op>
__global__ void __launch_bounds__(kBlockSize)
    multiple_elements_per_thread_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  __shared__ acc_t sdata[kBlockSize];
  const unsigned tid = threadIdx.x;
  const int64_t grid_stride = static_cast<int64_t>(gridDim.x) * (2 * kBlockSize);
  acc_t acc = op.identity();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * (2 * kBlockSize) + tid; i < n;
       i += grid_stride) {
    acc = op.combine(acc, static_cast<acc_t>(in[i]));
    acc = op.combine(acc, load_or_identity<acc_t>(in, i + kBlockSize, n, op));
  }
  sdata[tid] = acc;
  __syncthreads();

  const acc_t result = block_reduce_unrolled<kBlockSize>(sdata, tid, op);
  if (tid == 0) partials[blockIdx.x] = result;
}

struct MultipleElementsPerThread {
  static constexpr int kBlockSize = 256;
  static constexpr int64_t kBlockStep = 2 * kBlockSize;

  template <typename in_t>
  static int64_t num_partials(int64_t n) { return grid_stride_blocks(n, kBlockStep, kBlockSize); }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    static_assert(kBlockSize * sizeof(acc_t) <= kMaxSharedBytes,
                  "one acc_t per thread in shared memory");
    const auto blocks = static_cast<unsigned>(num_partials<in_t>(n));
    multiple_elements_per_thread_kernel<kBlockSize, in_t, acc_t, Op>
        <<<blocks, kBlockSize, 0, stream>>>(in, n, partials, op);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

}  // namespace ladder
}  // namespace torch_reduce
