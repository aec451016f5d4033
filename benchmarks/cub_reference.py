"""CUB's DeviceReduce as a peer of torch_reduce.sum in the full-reduction benchmark: a reference,
built with the benchmarks at run time (torch.utils.cpp_extension.load_inline, nvcc; about a minute
the first time, cached by torch after that), never shipped in the package.

It sums in torch.sum's accumulator (float for float16 and bfloat16, int64 for integers and bool)
with cub::DeviceReduce::TransformReduce: each element is converted to the accumulator as it is
loaded, so the half and integer inputs are read at their own width, as ours and torch's are. The
result stays in the accumulator's dtype (a float16 sum gives a float32 scalar): the one-element
cast that torch.sum does after it is not part of CUB's work. The temporary storage is allocated
once per input, so that a call launches only CUB's kernels and can be captured in a CUDA graph
like the other contenders.
"""
import os
from typing import Optional

import torch

_SOURCE = r"""
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include <cub/device/device_reduce.cuh>
#include <torch/extension.h>

#include <type_traits>

namespace {

template <typename acc_t>
struct ToAccumulator {
  template <typename T>
  __host__ __device__ acc_t operator()(const T& x) const { return static_cast<acc_t>(x); }
};

template <typename scalar_t>
using accumulator_t = std::conditional_t<std::is_integral_v<scalar_t>, int64_t, at::opmath_type<scalar_t>>;

// CUB's two-call protocol: with no storage it only says how many bytes it needs.
template <typename scalar_t>
size_t transform_reduce(const at::Tensor& x, void* out, void* storage, size_t bytes) {
  using acc_t = accumulator_t<scalar_t>;
  C10_CUDA_CHECK(cub::DeviceReduce::TransformReduce(
      storage, bytes, x.const_data_ptr<scalar_t>(), static_cast<acc_t*>(out), x.numel(),
      ::cuda::std::plus<acc_t>{}, ToAccumulator<acc_t>{}, acc_t(0), c10::cuda::getCurrentCUDAStream()));
  return bytes;
}

}  // namespace

int64_t storage_bytes(const at::Tensor& x) {
  size_t bytes = 0;
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, x.scalar_type(), "cub_sum",
                             [&] { bytes = transform_reduce<scalar_t>(x, nullptr, nullptr, 0); });
  return static_cast<int64_t>(bytes);
}

void sum(const at::Tensor& x, at::Tensor& out, at::Tensor& storage) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "cub_sum: a contiguous CUDA tensor");
  AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, x.scalar_type(), "cub_sum", [&] {
    TORCH_CHECK(out.scalar_type() == c10::CppTypeToScalarType<accumulator_t<scalar_t>>::value &&
                out.numel() == 1, "cub_sum: out must be one element of the accumulator's dtype");
    transform_reduce<scalar_t>(x, out.data_ptr(), storage.data_ptr(), static_cast<size_t>(storage.numel()));
  });
}
"""
_DECLARATIONS = """
int64_t storage_bytes(const at::Tensor& x);
void sum(const at::Tensor& x, at::Tensor& out, at::Tensor& storage);
"""

_module = None


def available(device: torch.device) -> Optional[str]:
    """None if CUB can be built and run on device, else why not."""
    if device.type != "cuda":
        return "CUB: GPU only"
    from torch.utils.cpp_extension import CUDA_HOME
    if CUDA_HOME is None:
        return "CUB: no CUDA toolkit (nvcc) found to build it"
    return None


def _built():
    global _module
    if _module is None:
        from torch.utils.cpp_extension import load_inline
        if "TORCH_CUDA_ARCH_LIST" not in os.environ:  # this GPU's alone: one compile, not four
            os.environ["TORCH_CUDA_ARCH_LIST"] = "{}.{}".format(*torch.cuda.get_device_capability())
        _module = load_inline("torch_reduce_cub_reference", cpp_sources=_DECLARATIONS,
                              cuda_sources=_SOURCE,
                              functions=["storage_bytes", "sum"],
                              extra_cuda_cflags=["-O3"], verbose=False)
    return _module


def accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    """torch.sum's accumulator for an input dtype, which CUB's result keeps."""
    if dtype.is_floating_point:
        return torch.float64 if dtype == torch.float64 else torch.float32
    return torch.int64


def summer(x: torch.Tensor):
    """A call that sums x (contiguous, on the GPU) with CUB into a one-element tensor of the
    accumulator's dtype, which it returns; its storage is allocated here, once."""
    module = _built()
    x = x.contiguous()
    out = torch.empty((), dtype=accumulator_dtype(x.dtype), device=x.device)
    storage = torch.empty(max(1, module.storage_bytes(x)), dtype=torch.uint8, device=x.device)

    def call():
        module.sum(x, out, storage)
        return out
    return call
