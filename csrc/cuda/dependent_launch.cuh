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
// kernel its early launch cost time (H100 A/B, not committed, one build
// with the first kernel's launch switched, sum, median of 5, us, after a
// one-element torch kernel, early - ordinary: float32 1048576 x 8 rows
// +0.21, 32768 x 32 rows +0.19, 3 x 5000000 over dim 0 (one pass) +0.35,
// full sum of 2^20 +0.21), where passes of several gained (float32 1048576
// x 8 over dim 0 -0.29, 32768 x 32 -0.27, 1000000 x 2 -0.25; after a 4 MB
// torch kernel -0.33, -0.50 and -0.39; back to back, as the benchmarks
// time them, -0.52, -0.63 and -0.57). And a single pass of a wave of blocks
// lost its balance when launched early behind the previous call (bfloat16
// 4096 x 4096 over dim 0 back to back, teams of one block an SM: 8.91 ->
// 11.58).
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
