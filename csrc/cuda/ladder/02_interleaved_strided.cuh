// Step 02: interleaved addressing with a strided index (Harris's kernel 2).
//
// Changed from 01: thread `tid` works on index = 2 * s * tid instead of
//   testing tid % (2 * s), so the active threads are the first ones of the
//   block: whole warps are active or idle, and the % is gone.
// Removes: the divergent branch inside warps.
// Bottleneck: shared-memory bank conflicts. Neighbouring threads touch
//   words 2 * s apart, so a warp's lanes share banks (for a 4-byte acc_t:
//   2-way at s = 1, 4-way at s = 2, ...) and the accesses to one bank are
//   serialised.
// Preconditions: blockDim.x a power of two (the launcher uses 256). Any n:
//   threads past the end load the identity.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <typename in_t, typename acc_t, typename Op>
__global__ void interleaved_strided_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t* sdata = shared_scratch<acc_t>();
  const unsigned tid = threadIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + tid;
  sdata[tid] = load_or_identity<acc_t>(in, i, n, op);
  __syncthreads();

  for (unsigned s = 1; s < blockDim.x; s *= 2) {
    const unsigned index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] = op.combine(sdata[index], sdata[index + s]);
    __syncthreads();
  }
  if (tid == 0) partials[blockIdx.x] = sdata[0];
}

struct InterleavedStrided {
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
      interleaved_strided_kernel<in_t, acc_t, Op>
          <<<blocks, kThreads, shared_bytes, stream>>>(in + first, left, partials + first_tile, op);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
    });
  }
};

}  // namespace ladder
}  // namespace torch_reduce
