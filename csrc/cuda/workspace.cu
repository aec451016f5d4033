#include "workspace.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_reduce {
namespace cuda {
namespace {

// Streams that get counters from the zero-initialised pool, and counters each:
// one per row split across blocks (rows of at least 128 KiB), enough for
// inputs up to 2 GiB; larger ones get zeroed memory of their own.
constexpr int kPoolStreams = 32;
constexpr int64_t kPoolCounters = 1 << 14;
__device__ unsigned int ticket_pool[kPoolStreams * kPoolCounters];

constexpr int64_t kMinimumPartialBytes = 1 << 20;

struct StreamBuffers {
  unsigned int* tickets = nullptr;
  int64_t counters = 0;
  at::Tensor partials;
};

at::Tensor device_bytes(const c10::cuda::CUDAStream& stream, int64_t bytes, bool zeroed) {
  const auto options = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, stream.device_index());
  return zeroed ? at::zeros({bytes}, options) : at::empty({bytes}, options);
}

}  // namespace

Workspace stream_workspace(const c10::cuda::CUDAStream& stream, int64_t counters, int64_t partial_bytes) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, StreamBuffers> buffers;
  static std::map<int, int> pool_streams_used;  // per device
  static std::vector<at::Tensor> retired;

  std::lock_guard<std::mutex> lock(mutex);
  const int device = stream.device_index();
  StreamBuffers& mine = buffers[std::make_pair(device, stream.stream())];
  c10::cuda::CUDAStreamGuard guard(stream);
  if (mine.counters < counters) {
    int& used = pool_streams_used[device];
    if (mine.tickets == nullptr && used < kPoolStreams && counters <= kPoolCounters) {
      void* pool = nullptr;
      C10_CUDA_CHECK(cudaGetSymbolAddress(&pool, ticket_pool));
      mine.tickets = static_cast<unsigned int*>(pool) + used * kPoolCounters;
      mine.counters = kPoolCounters;
      ++used;
    } else {
      // Past the pool: zeroed memory of our own (inside a graph capture the
      // memset is captured too, which is correct, only slower).
      at::Tensor zeroed = device_bytes(stream, std::max(counters, kPoolCounters) * 4, /*zeroed=*/true);
      retired.push_back(zeroed);
      mine.tickets = reinterpret_cast<unsigned int*>(zeroed.data_ptr());
      mine.counters = zeroed.numel() / 4;
    }
  }
  if (!mine.partials.defined() || mine.partials.numel() < partial_bytes) {
    if (mine.partials.defined()) retired.push_back(mine.partials);
    mine.partials = device_bytes(stream, std::max(partial_bytes, kMinimumPartialBytes), /*zeroed=*/false);
  }
  return {mine.tickets, mine.partials.data_ptr()};
}

}  // namespace cuda
}  // namespace torch_reduce
