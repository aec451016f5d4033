// Probe: how fast can the first level of a narrow column reduction read?
//
// torch_reduce's column order (csrc/cuda/column_fold.cuh) folds each run of
// 64 rows of a column into one value: slot s (0..7) adds rows s, s + 8, ...,
// s + 56, and the slots meet in a fixed tree. For narrow inputs -- a row of
// 2 to 8 columns, 4 to 16 bytes -- column_tile_kernel gives a chunk of 64
// rows to a lane group of 8 lanes (lane s = slot s, one row per load), and
// on the H100 it reads at a fraction of the bandwidth (dims_h100.json:
// 7840000 x 4 bfloat16 over dim 0 at 1.5 TB/s). This probe times that first
// level alone, over the knobs that decide the bytes in flight, against a
// plain read of the same bytes:
//   chunks  chunks a lane group loads at once (8 rows each, all in flight);
//   minb    __launch_bounds__ minimum blocks per SM (caps the registers);
//   grid    "all": a lane group per `chunks` chunks; "wave": one wave of
//           resident blocks whose lane groups loop over the chunks.
// Every variant writes the same chunk values; they are checked bit for bit
// against the first variant and one chunk against the host.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o narrow_columns benchmarks/probes/narrow_columns.cu && ./narrow_columns
#include "probe_common.cuh"

constexpr int kThreads = kProbeThreads;
constexpr int kSlots = 8;
constexpr int kChunkRows = 64;

template <typename T, int C>
struct alignas(sizeof(T) * C) Row {
  T v[C];
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

// Chunk values of an R x C row-major input: out[chunk * C + c].
template <typename T, int C, int kChunks, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    chunk_values(const T* __restrict__ x, int64_t rows, float* __restrict__ out) {
  const int lane = threadIdx.x % 32;
  const int s = lane % kSlots;
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  const int64_t sets = (chunks + kChunks - 1) / kChunks;  // work units of kChunks chunks
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kThreads / 32);
  const auto* in = reinterpret_cast<const Row<T, C>*>(x);
  for (int64_t first = warp * 4; first < sets; first += warps * 4) {  // uniform across the warp
    const int64_t set = first + lane / kSlots;
    Row<T, C> loaded[kChunks][kSlots];
#pragma unroll
    for (int g = 0; g < kChunks; ++g) {
      const int64_t row0 = (set * kChunks + g) * kChunkRows + s;
#pragma unroll
      for (int k = 0; k < kSlots; ++k)
        if (set < sets && row0 + k * kSlots < rows) loaded[g][k] = in[row0 + k * kSlots];
    }
#pragma unroll
    for (int g = 0; g < kChunks; ++g) {
      const int64_t row0 = (set * kChunks + g) * kChunkRows + s;
      float acc[C];
#pragma unroll
      for (int c = 0; c < C; ++c) acc[c] = 0.f;
#pragma unroll
      for (int k = 0; k < kSlots; ++k)
        if (set < sets && row0 + k * kSlots < rows) {
#pragma unroll
          for (int c = 0; c < C; ++c) acc[c] += to_float(loaded[g][k].v[c]);
        }
      // ((p0 p4)(p2 p6))((p1 p5)(p3 p7)) across the group's lanes.
#pragma unroll
      for (int c = 0; c < C; ++c)
        for (int offset = 4; offset > 0; offset /= 2) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset, 32);
      const int64_t chunk = set * kChunks + g;
      if (s == 0 && set < sets && chunk < chunks) {
#pragma unroll
        for (int c = 0; c < C; ++c) out[chunk * C + c] = acc[c];
      }
    }
  }
}

struct Shape {
  int64_t rows;
  int columns;
};

template <typename T, int C>
void probe(const char* dtype, int64_t rows, int sms) {
  const int64_t n = rows * C;
  const double bytes = static_cast<double>(n) * sizeof(T);
  const int64_t chunks = (rows + kChunkRows - 1) / kChunkRows;
  const ProbeBuffers<T, float> buffers(n, chunks * C, 16);
  T* x = buffers.x;
  float* out = buffers.out;
  float* first = buffers.first;
  unsigned int* sink = buffers.sink;

  const int64_t vectors = static_cast<int64_t>(bytes) / 16;
  int read_blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&read_blocks, read_all, kThreads, 0));
  const float read_us = time_us([&] { read_all<<<read_blocks * sms, kThreads>>>(reinterpret_cast<const uint4*>(x), vectors, sink); }, 5, 1);
  std::printf("%-8s %8lldx%d %7.1f MB  plain read            %8.2f us %7.0f GB/s\n", dtype,
              static_cast<long long>(rows), C, bytes / 1e6, read_us, bytes / read_us / 1e3);

  bool have_first = false;
  auto run = [&](auto kernel, int chunks_at_once, int min_blocks) {
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, kernel));
    int resident = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0));
    const int64_t sets = (chunks + chunks_at_once - 1) / chunks_at_once;
    const int64_t all_blocks = (sets + kThreads / kSlots - 1) / (kThreads / kSlots);
    for (int wave = 0; wave < 2; ++wave) {
      const int64_t blocks = wave ? std::min<int64_t>(all_blocks, static_cast<int64_t>(resident) * sms) : all_blocks;
      CHECK(cudaMemset(out, 0xff, chunks * C * sizeof(float)));
      const float us = time_us([&] { kernel<<<static_cast<unsigned int>(blocks), kThreads>>>(x, rows, out); }, 5, 1);
      const char* verdict = "ok";
      if (!have_first) {
        CHECK(cudaMemcpy(first, out, chunks * C * sizeof(float), cudaMemcpyDeviceToDevice));
        have_first = true;
      } else {
        std::vector<float> a(chunks * C), b(chunks * C);
        CHECK(cudaMemcpy(a.data(), out, a.size() * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), first, b.size() * 4, cudaMemcpyDeviceToHost));
        if (std::memcmp(a.data(), b.data(), a.size() * 4) != 0) verdict = "MISMATCH";
      }
      std::printf("%-8s %8lldx%d %7.1f MB  chunks %d minb %d %-4s %8.2f us %7.0f GB/s  %3d regs %4d B spilled"
                  " %2d blocks/SM %7lld blocks  %s\n",
                  dtype, static_cast<long long>(rows), C, bytes / 1e6, chunks_at_once, min_blocks, wave ? "wave" : "all",
                  us, bytes / us / 1e3, attributes.numRegs, static_cast<int>(attributes.localSizeBytes), resident,
                  static_cast<long long>(blocks), verdict);
    }
  };
  run(chunk_values<T, C, 1, 2>, 1, 2);
  run(chunk_values<T, C, 1, 4>, 1, 4);
  run(chunk_values<T, C, 2, 2>, 2, 2);
  run(chunk_values<T, C, 2, 4>, 2, 4);
  run(chunk_values<T, C, 4, 1>, 4, 1);
  run(chunk_values<T, C, 4, 2>, 4, 2);

  // Chunk 1 on the host, in the fold64 order.
  std::vector<T> head(2 * kChunkRows * C);
  CHECK(cudaMemcpy(head.data(), x, head.size() * sizeof(T), cudaMemcpyDeviceToHost));
  std::vector<float> got(C);
  CHECK(cudaMemcpy(got.data(), first + C, C * sizeof(float), cudaMemcpyDeviceToHost));
  for (int c = 0; c < C; ++c) {
    float p[kSlots];
    for (int slot = 0; slot < kSlots; ++slot) {
      p[slot] = 0.f;
      for (int k = 0; k < kSlots; ++k) p[slot] += host_value(head.data(), (kChunkRows + slot + k * kSlots) * C + c);
    }
    const float want = host_slot_tree(p);
    if (std::memcmp(&want, &got[c], 4) != 0) std::printf("host check of chunk 1, column %d: MISMATCH\n", c);
  }
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, %d MB L2; median of 5 x 20 back-to-back launches\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  const int sms = prop.multiProcessorCount;
  probe<float, 4>("float32", 7840000, sms);
  probe<__nv_bfloat16, 4>("bfloat16", 7840000, sms);
  probe<__nv_bfloat16, 8>("bfloat16", 1048576, sms);
  probe<float, 2>("float32", 1000000, sms);
  probe<__nv_bfloat16, 2>("bfloat16", 1000000, sms);
  return 0;
}
