// Programmatic dependent launch (sm_90 and later) between the passes of a
// column reduction: each pass of a reduction that takes several -- the first
// one too, after whatever the stream ran last -- is launched while the
// kernel before it still runs, so that its blocks are resident and waiting
// when that kernel's writes land, instead of being launched after it (a pass
// of a small input takes about as long as that launch).
//
// Every column kernel first waits for the grid before it -- to completion,
// with its writes visible -- and only then touches memory, so each pass
// still reads and writes in stream order; and it lets the next pass launch
// once all of its own blocks run. A kernel before it that never lets go early
// (any other library's) lets go as its blocks exit. Launched the ordinary
// way, or before sm_90, both are no-ops.
//
// A reduction of one kernel launches the ordinary way: after an ordinary
// kernel (any other library's), its early launch cost time, where the passes
// of reductions of several gained. And a single pass of one wave of blocks
// (teams of one block an SM) lost its balance when launched early behind the
// previous call. See docs/TUNING.md.
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
// when `early` and the device has programmatic launches.
template <typename... Params, typename... Args>
void launch_pass(void (*kernel)(Params...), unsigned int grid, int threads, cudaStream_t stream,
                 bool early, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(threads);
  config.stream = stream;
  cudaLaunchAttribute programmatic[1];
  programmatic[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  programmatic[0].val.programmaticStreamSerializationAllowed = 1;
  if (kRuntimeLaunchesEarly && early && compute_capability_major() >= 9) {
    config.attrs = programmatic;
    config.numAttrs = 1;
  }
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace cuda
}  // namespace torch_reduce
