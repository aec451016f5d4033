// Per-stream scratch memory for single-launch reductions (split_row_reduce.cuh):
// zeroed ticket counters for the "last block finishes the row" step, and room
// for the blocks' partial results.
//
// The counters come from a pool of device memory that is zero when the module
// loads, and the kernels put every counter they use back to zero: a call needs
// no memset and stays one launch, also inside a captured CUDA graph (a memset
// would become a graph node of its own). Launches on one stream are ordered,
// so they never share a workspace concurrently; each stream has its own. A
// graph keeps the workspace of the stream it was captured on: replaying it
// concurrently with eager reductions issued on that same stream is not
// supported.
#pragma once

#include <c10/cuda/CUDAStream.h>

#include <cstdint>

namespace torch_reduce {
namespace cuda {

struct Workspace {
  unsigned int* tickets;  // `counters` zeroed counters
  void* partials;         // `partial_bytes` bytes, 16-byte aligned
};

// Buffers are never freed: a captured graph may still point at an older one.
Workspace stream_workspace(const c10::cuda::CUDAStream& stream, int64_t counters, int64_t partial_bytes);

}  // namespace cuda
}  // namespace torch_reduce
