#include "device_code.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>

namespace torch_reduce {
namespace cuda {
namespace {

// Compiled for the same architectures as every kernel of the library, so the
// runtime finds code for it exactly where it finds code for them.
__global__ void probe_kernel() {}

}  // namespace

void check_device_has_code() {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<bool>, kMaxDevices> has_code{};
  const int device = c10::cuda::current_device();
  if (device < kMaxDevices && has_code[device].load(std::memory_order_relaxed)) return;
  cudaFuncAttributes attributes;
  const cudaError_t status = cudaFuncGetAttributes(&attributes, probe_kernel);
  if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
    (void)cudaGetLastError();  // not sticky: clear it, the error is reported below
    cudaDeviceProp properties;
    C10_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    TORCH_CHECK(false, "torch_reduce has no code for this GPU (", properties.name, ", compute capability ",
                properties.major, ".", properties.minor,
                "); torch_reduce.build_info()['cuda_archs'] lists the architectures it was built for. "
                "Rebuild it for this GPU: TORCH_CUDA_ARCH_LIST=\"",
                properties.major, ".", properties.minor, "\" pip install --no-build-isolation <its source>");
  }
  C10_CUDA_CHECK(status);
  if (device < kMaxDevices) has_code[device].store(true, std::memory_order_relaxed);
}

}  // namespace cuda
}  // namespace torch_reduce
