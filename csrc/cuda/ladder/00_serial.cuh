// Step 00: serial. One GPU thread adds every element, in order.
//
// Changed: nothing yet. This is the baseline the other steps are measured
//   against (seed 001's `<<<1, 1>>>` kernel).
// Bottleneck: everything. One thread on one SM keeps few loads in flight, so
//   the read is latency bound; the rest of the GPU idles.
// Preconditions: none; any length and alignment. One pass leaves one partial.
#pragma once

#include <c10/cuda/CUDAException.h>

#include "common.cuh"

namespace torch_reduce {
namespace ladder {

template <typename in_t, typename acc_t, typename Op>
__global__ void serial_kernel(const in_t* in, int64_t n, acc_t* partials, Op op) {
  acc_t acc = op.identity();
  for (int64_t i = 0; i < n; ++i) acc = op.combine(acc, static_cast<acc_t>(in[i]));
  partials[0] = acc;
}

struct Serial {
  template <typename in_t>
  static int64_t num_partials(int64_t) { return 1; }

  template <typename in_t, typename acc_t, typename Op>
  static void launch(const in_t* in, int64_t n, acc_t* partials, const Op& op,
                     cudaStream_t stream) {
    serial_kernel<in_t, acc_t, Op><<<1, 1, 0, stream>>>(in, n, partials, op);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

}  // namespace ladder
}  // namespace torch_reduce
