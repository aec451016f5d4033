// Runs one ladder step over a whole tensor, in as many passes as it takes.
//
// Pass 1 reads the input (in_t) and leaves Step::num_partials<in_t>(n)
// partials (acc_t), one per block; the same step then runs on its own
// partials (in_t = acc_t) until one is left, and a one-thread kernel writes
// op.project(that value) as out_t. Scratch comes from PyTorch's caching
// allocator on the input's device; a scratch tensor freed here while a kernel
// still reads it is only reused by later work on the same stream.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "dispatch.h"
#include "ops/sum.h"

namespace torch_reduce {
namespace ladder {

template <typename acc_t, typename out_t, typename Op>
__global__ void write_result_kernel(const acc_t* result, out_t* out, Op op) {
  *out = static_cast<out_t>(op.project(*result));
}

template <typename Step>
void sum_in_passes(const at::Tensor& input, at::Tensor& out) {
  const c10::cuda::CUDAGuard device_guard(input.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = input.numel();
  dispatch_reduction<Sum>(
      input.scalar_type(), out.scalar_type(), n, OpCall{}, [&](auto types, auto op) {
        using scalar_t = typename decltype(types)::scalar_t;
        using acc_t = typename decltype(types)::acc_t;
        using out_t = typename decltype(types)::out_t;
        const auto acc_options = input.options().dtype(c10::CppTypeToScalarType<acc_t>::value);

        int64_t count = Step::template num_partials<scalar_t>(n);
        at::Tensor partials = at::empty({count}, acc_options);
        Step::launch(input.const_data_ptr<scalar_t>(), n, partials.mutable_data_ptr<acc_t>(), op,
                     stream);
        while (count > 1) {
          const int64_t next_count = Step::template num_partials<acc_t>(count);
          at::Tensor next = at::empty({next_count}, acc_options);
          Step::launch(partials.const_data_ptr<acc_t>(), count, next.mutable_data_ptr<acc_t>(), op,
                       stream);
          partials = std::move(next);
          count = next_count;
        }

        write_result_kernel<<<1, 1, 0, stream>>>(partials.const_data_ptr<acc_t>(),
                                                 out.mutable_data_ptr<out_t>(), op);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
      });
}

}  // namespace ladder
}  // namespace torch_reduce
