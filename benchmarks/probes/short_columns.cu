// Probe: how fast can columns of 2 to 8 rows and millions of columns be summed?
//
// torch_reduce's column_short_kernel gives a thread one 16-byte item of a
// row (8 bfloat16 or 4 float32 columns) and all of its rows: for a chunk of
// up to 8 rows, slot s holds row s, and the slots meet in the fold64 tree
// ((p0 p4)(p2 p6))((p1 p5)(p3 p7)) (csrc/cuda/column_fold.cuh). It loads all
// eight slots, the empty ones re-reading row 0, and reads each item once,
// in one wave per resident grid. On the H200 bfloat16 3 x 5000000 over dim 0
// ran at 38% of a plain read (results/dims_h200.json). This probe times the
// same fold over the knobs that decide the bytes in flight:
//   loads  slots loaded: 8 (the empty ones re-read row 0, as the kernel does)
//          or only the rows there are (the tree skips empty slots, which
//          changes no bits: a leaf is 0 + value, never -0, and x + 0 = x);
//   units  items a thread loads at once, a grid apart;
//   grid   "all": a thread per `units` items; "wave": one wave of resident
//          blocks that loop over the items.
// Every variant writes the same output; each is checked bit for bit against
// the first, and a few columns against the host.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o short_columns benchmarks/probes/short_columns.cu && ./short_columns
#include "probe_common.cuh"

constexpr int kThreads = kProbeThreads;
constexpr int kSlots = 8;

template <typename T>
struct alignas(16) Item {
  static constexpr int kWidth = 16 / sizeof(T);
  T v[kWidth];
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

// The fold64 tree over slots 0 .. K-1 (the others empty, skipped).
template <int K>
__device__ __forceinline__ float slot_tree(const float (&p)[kSlots]) {
  const float a = K > 4 ? p[0] + p[4] : p[0];
  const float b = K > 6 ? p[2] + p[6] : p[2];
  const float c = K > 5 ? p[1] + p[5] : p[1];
  const float d = K > 7 ? p[3] + p[7] : p[3];
  const float ab = K > 2 ? a + b : a;
  const float cd = K > 3 ? c + d : c;
  return K > 1 ? ab + cd : ab;
}

// out[c] = the fold of x[0 .. rows-1][c], for rows <= kLoads <= 8.
template <typename T, int kLoads, int kUnits>
__global__ void __launch_bounds__(kThreads)
    short_columns(const T* __restrict__ x, int rows, int64_t columns, T* __restrict__ out) {
  const int64_t items = columns / Item<T>::kWidth;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const auto* in = reinterpret_cast<const Item<T>*>(x);
  auto* result = reinterpret_cast<Item<T>*>(out);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; first < items;
       first += stride * kUnits) {
    Item<T> loaded[kUnits][kLoads];
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      const int64_t item = first + u * stride < items ? first + u * stride : items - 1;
#pragma unroll
      for (int k = 0; k < kLoads; ++k) loaded[u][k] = in[(k < rows ? k : 0) * items + item];
    }
#pragma unroll
    for (int u = 0; u < kUnits; ++u) {
      const int64_t item = first + u * stride;
      Item<T> r;
#pragma unroll
      for (int i = 0; i < Item<T>::kWidth; ++i) {
        float p[kSlots] = {};
#pragma unroll
        for (int k = 0; k < kLoads; ++k) p[k] = k < rows ? 0.f + to_float(loaded[u][k].v[i]) : 0.f;
        r.v[i] = from_float<T>(slot_tree<kLoads>(p));
      }
      if (item < items) result[item] = r;
    }
  }
}

uint32_t host_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}
uint32_t host_bits(__nv_bfloat16 v) {
  uint16_t b;
  std::memcpy(&b, &v, 2);
  return b;
}

template <typename T, int R>
void probe(const char* dtype, int64_t columns, int sms) {
  const int64_t n = R * columns;
  const double in_bytes = static_cast<double>(n) * sizeof(T);
  const double bytes = in_bytes + static_cast<double>(columns) * sizeof(T);  // read + written
  const int64_t items = columns / Item<T>::kWidth;
  const ProbeBuffers<T, T> buffers(n, columns);
  T *x = buffers.x, *out = buffers.out, *first = buffers.first;
  unsigned int* sink = buffers.sink;

  int read_blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&read_blocks, read_all, kThreads, 0));
  const float read_us = time_us(
      [&] { read_all<<<read_blocks * sms, kThreads>>>(reinterpret_cast<const uint4*>(x), n * sizeof(T) / 16, sink); },
      7, 5);
  std::printf("%-8s %dx%-9lld %6.1f MB  plain read of the input            %7.2f us %6.0f GB/s\n", dtype, R,
              static_cast<long long>(columns), in_bytes / 1e6, read_us, in_bytes / read_us / 1e3);

  bool have_first = false;
  auto run = [&](auto kernel, int loads, int units) {
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, kernel));
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0));
    const int64_t all_blocks = (items + kThreads * units - 1) / (kThreads * units);
    for (int wave = 0; wave < 2; ++wave) {
      const int64_t blocks = wave ? std::min<int64_t>(all_blocks, static_cast<int64_t>(resident) * sms) : all_blocks;
      CHECK(cudaMemset(out, 0xff, columns * sizeof(T)));
      const float us =
          time_us([&] { kernel<<<static_cast<unsigned int>(blocks), kThreads>>>(x, R, columns, out); }, 7, 5);
      const char* verdict = "ok";
      if (!have_first) {
        CHECK(cudaMemcpy(first, out, columns * sizeof(T), cudaMemcpyDeviceToDevice));
        have_first = true;
      } else {
        std::vector<T> a(columns), b(columns);
        CHECK(cudaMemcpy(a.data(), out, columns * sizeof(T), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), first, columns * sizeof(T), cudaMemcpyDeviceToHost));
        if (std::memcmp(a.data(), b.data(), columns * sizeof(T)) != 0) verdict = "MISMATCH";
      }
      std::printf("%-8s %dx%-9lld %6.1f MB  loads %d units %d %-4s %7.2f us %6.0f GB/s (%3.0f%% of the read)"
                  "  %3d regs %3d B spilled %2d blocks/SM %7lld blocks  %s\n",
                  dtype, R, static_cast<long long>(columns), bytes / 1e6, loads, units, wave ? "wave" : "all", us,
                  bytes / us / 1e3, 100.0 * read_us / us, attributes.numRegs,
                  static_cast<int>(attributes.localSizeBytes), resident, static_cast<long long>(blocks), verdict);
    }
  };
  run(short_columns<T, kSlots, 1>, kSlots, 1);
  run(short_columns<T, kSlots, 2>, kSlots, 2);
  constexpr int kPow2 = R <= 2 ? 2 : R <= 4 ? 4 : 8;
  if constexpr (kPow2 < 4) run(short_columns<T, 4, 1>, 4, 1);
  if constexpr (kPow2 != kSlots) {
    run(short_columns<T, kPow2, 1>, kPow2, 1);
    run(short_columns<T, kPow2, 2>, kPow2, 2);
    run(short_columns<T, kPow2, 4>, kPow2, 4);
  }
  if constexpr (R != kPow2) {
    run(short_columns<T, R, 1>, R, 1);
    run(short_columns<T, R, 2>, R, 2);
  }

  // A few columns on the host, in the fold64 order.
  std::vector<T> head(n);
  std::vector<T> got(columns);
  CHECK(cudaMemcpy(head.data(), x, n * sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(got.data(), first, columns * sizeof(T), cudaMemcpyDeviceToHost));
  for (int64_t c : {int64_t{0}, int64_t{7}, columns / 3, columns - 1}) {
    float p[kSlots] = {};
    for (int s = 0; s < R; ++s) p[s] = 0.f + host_value(head.data(), s * columns + c);
    const float want = host_slot_tree(p);
    T want_t;
    if constexpr (sizeof(T) == 4) {
      want_t = want;
    } else {
      want_t = __float2bfloat16(want);
    }
    if (host_bits(want_t) != host_bits(got[c])) std::printf("host check of column %lld: MISMATCH\n", (long long)c);
  }
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, %d MB L2; median of 7 x 20 back-to-back launches; GB/s of bytes read + written\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  const int sms = prop.multiProcessorCount;
  probe<__nv_bfloat16, 3>("bfloat16", 5000000, sms);
  probe<float, 3>("float32", 5000000, sms);
  probe<__nv_bfloat16, 2>("bfloat16", 5000000, sms);
  probe<__nv_bfloat16, 4>("bfloat16", 5000000, sms);
  probe<__nv_bfloat16, 5>("bfloat16", 5000000, sms);
  probe<float, 5>("float32", 5000000, sms);
  probe<__nv_bfloat16, 8>("bfloat16", 16777216, sms);
  return 0;
}
