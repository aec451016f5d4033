// What the stand-alone column probes share: error checks, the plain read
// they compare with, input fill, timing, and host reads of bfloat16.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

constexpr int kProbeThreads = 256;

// A plain read of n 16-byte vectors: four in flight per thread.
__global__ void __launch_bounds__(kProbeThreads) read_all(const uint4* __restrict__ x, int64_t n, unsigned int* sink) {
  unsigned int acc = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kProbeThreads;
  int64_t i = static_cast<int64_t>(blockIdx.x) * kProbeThreads + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = x[i + u * stride];
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < n; i += stride) acc ^= x[i].x;
  if (acc == 0x9e3779b9u) sink[0] = acc;  // keeps the loads
}

// Values in [-0.5, 0.5), a hash of the index.
template <typename T>
__global__ void fill(T* x, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = static_cast<T>(static_cast<float>((i * 2654435761u) % 1000) * 0.001f - 0.5f);
}

// A probe's device buffers: the input (n values of In, filled, plus `pad`
// bytes past them), the output the variants write, a copy of the first
// variant's output to check the others against, and the plain read's sink.
template <typename In, typename Out>
struct ProbeBuffers {
  In* x = nullptr;
  Out* out = nullptr;
  Out* first = nullptr;
  unsigned int* sink = nullptr;
  ProbeBuffers(int64_t n, int64_t outputs, int64_t pad = 0) {
    CHECK(cudaMalloc(&x, n * sizeof(In) + pad));
    CHECK(cudaMalloc(&out, outputs * sizeof(Out)));
    CHECK(cudaMalloc(&first, outputs * sizeof(Out)));
    CHECK(cudaMalloc(&sink, sizeof(unsigned int)));
    fill<<<1024, 256>>>(x, n);
    CHECK(cudaDeviceSynchronize());
  }
  ~ProbeBuffers() {
    cudaFree(x);
    cudaFree(out);
    cudaFree(first);
    cudaFree(sink);
  }
  ProbeBuffers(const ProbeBuffers&) = delete;
  ProbeBuffers& operator=(const ProbeBuffers&) = delete;
};

// Median time of one launch over `samples` samples of 20 back-to-back
// launches, after `warmup` launches.
template <typename Launch>
float time_us(Launch launch, int samples, int warmup) {
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmup; ++i) launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<float> times;
  for (int r = 0; r < samples; ++r) {
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < 20; ++i) launch();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1000.f / 20);
  }
  CHECK(cudaGetLastError());
  std::sort(times.begin(), times.end());
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return times[times.size() / 2];
}

// The fold64 slot tree ((p0 p4)(p2 p6))((p1 p5)(p3 p7)), on the host.
inline float host_slot_tree(const float (&p)[8]) {
  return ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));
}

inline float host_value(const float* x, int64_t i) { return x[i]; }
inline float host_value(const __nv_bfloat16* x, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, x + i, 2);
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}
