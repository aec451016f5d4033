#include "workspace.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace torch_reduce {
namespace cuda {
namespace {

// Enough for a full reduction's partials and for most dim reductions.
constexpr int64_t kMinimumCounters = 1 << 14;
constexpr int64_t kMinimumPartialBytes = 1 << 20;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

struct Buffer {
  at::Tensor memory;
  int64_t counters = 0;
  int64_t partial_bytes = 0;
};

}  // namespace

Workspace stream_workspace(const c10::cuda::CUDAStream& stream, int64_t counters, int64_t partial_bytes) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, Buffer> current;
  static std::vector<at::Tensor> retired;

  std::lock_guard<std::mutex> lock(mutex);
  Buffer& buffer = current[std::make_pair(static_cast<int>(stream.device_index()), stream.stream())];
  if (buffer.counters < counters || buffer.partial_bytes < partial_bytes) {
    Buffer grown;
    grown.counters = round_up(std::max({kMinimumCounters, counters, buffer.counters}), 4);
    grown.partial_bytes = round_up(std::max({kMinimumPartialBytes, partial_bytes, buffer.partial_bytes}), 16);
    // Zeroed on `stream` itself. Inside a graph capture this is legal too:
    // the memory then comes from the graph's pool and stays alive with us.
    c10::cuda::CUDAStreamGuard guard(stream);
    grown.memory = at::zeros({grown.counters + grown.partial_bytes / 4},
                             at::TensorOptions().dtype(at::kInt).device(at::kCUDA, stream.device_index()));
    if (buffer.memory.defined()) retired.push_back(buffer.memory);
    buffer = grown;
  }
  auto* base = buffer.memory.data_ptr<int>();
  return {reinterpret_cast<unsigned int*>(base), base + buffer.counters};
}

}  // namespace cuda
}  // namespace torch_reduce
