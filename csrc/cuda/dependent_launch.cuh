// Programmatic dependent launch (sm_90 and later) between the passes of a
// column reduction: a later pass is launched while the pass before it still
// runs, so that its blocks are resident and waiting when that pass's partials
// land, instead of being launched after it (a pass of a small input takes
// about as long as that launch).
//
// Every column kernel first waits for the grid before it -- to completion,
// with its writes visible -- and only then touches memory, so each pass
// still reads and writes in stream order; and it lets the next pass launch
// once all of its own blocks run. Launched the ordinary way, or before
// sm_90, both are no-ops.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>

#include <utility>

#include "device_info.cuh"

namespace torch_reduce {
namespace cuda {

// A column kernel's first statement: waits for the grid before it (before
// any read or write), then lets the next pass launch.
__device__ __forceinline__ void start_pass() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Built with a CUDA runtime older than 12.3, the passes launch the ordinary
// way: graphs express programmatic dependencies (edge data) from 12.3, and
// the passes must stay capturable.
constexpr bool kRuntimeLaunchesEarly = CUDART_VERSION >= 12030;

// Launches kernel<<<grid, threads, 0, stream>>>(args...), early (as above)
// when `after_previous_pass` and the device has programmatic launches.
template <typename... Params, typename... Args>
void launch_pass(void (*kernel)(Params...), unsigned int grid, int threads, cudaStream_t stream,
                 bool after_previous_pass, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.stream = stream;
  cudaLaunchAttribute early[1];
  early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early[0].val.programmaticStreamSerializationAllowed = 1;
  if (kRuntimeLaunchesEarly && after_previous_pass && compute_capability_major() >= 9) {
    config.attrs = early;
    config.numAttrs = 1;
  }
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace cuda
}  // namespace torch_reduce
