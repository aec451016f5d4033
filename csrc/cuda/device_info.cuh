// Properties of the current device that launch shapes depend on, read once
// per device. (ATen/cuda/CUDAContext.h has them too, but pulls in cuSPARSE and
// cuBLAS headers that a minimal CUDA toolkit lacks.)
#pragma once

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>

#include <array>

namespace torch_reduce {
namespace cuda {

template <cudaDeviceAttr attribute>
int device_attribute() {
  constexpr int kMaxDevices = 64;
  static std::array<int, kMaxDevices> cache{};
  const int device = c10::cuda::current_device();
  int value = device < kMaxDevices ? cache[device] : 0;
  if (value == 0) {
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
    if (device < kMaxDevices) cache[device] = value;
  }
  return value;
}

inline int sm_count() { return device_attribute<cudaDevAttrMultiProcessorCount>(); }
inline int max_threads_per_sm() { return device_attribute<cudaDevAttrMaxThreadsPerMultiProcessor>(); }
inline int compute_capability_major() { return device_attribute<cudaDevAttrComputeCapabilityMajor>(); }
inline int compute_capability_minor() { return device_attribute<cudaDevAttrComputeCapabilityMinor>(); }
inline int l2_bytes() { return device_attribute<cudaDevAttrL2CacheSize>(); }

}  // namespace cuda
}  // namespace torch_reduce
