// Probe: how fast can many contiguous rows of 4 to 32 16-byte vectors be
// reduced, and what holds row_reduce_kernel below a plain read there?
//
// row_reduce_kernel (csrc/cuda/row_reduce.cuh) gives a row to a group of
// `group` lanes, each lane four items (16-byte vectors) of it, and launches a
// thread per lane of every row: bfloat16 262144 x 128 (16 vectors a row, 4
// lanes) is 4096 blocks of one step each, and ran at 83% of a plain read on
// the H200 (results/dims_h200.json), where 1048576 x 32 (4 vectors, a lane a
// row; the same threads and loads) ran at 95%. ncu (H200, not committed):
// the SMs were active 89% of the kernel's cycles, warps issued in 55% of
// them. This probe times the same fold over the knobs that decide the bytes
// in flight and the blocks' turnover:
//   group  lanes a row (items a lane: the row's vectors / group);
//   loads  plain, or evict-first in the L2 (as the kernel reads inputs larger
//          than the L2: load_vector_evict_first, csrc/cuda/primitives.cuh);
//   input  one buffer, read by every launch (as benchmarks/timing.py's
//          graphs do: what a launch leaves in the L2 serves the next), or
//          three copies in turn ("rotating"), so that little is left;
//   grid   "all": a thread per lane of every row, one row each;
//          "wave": one wave of resident blocks that loop over the rows;
//          "ahead": that wave, each lane loading its next row's items
//          before it folds the current row's.
// A lane folds its items in order into four slots (item u into slot u % 4),
// combines the slots in order, then the group's butterfly -- the kernel's
// order -- so every variant of a group gives the same bits (checked); each
// group is checked against a float64 sum on the host.
//
// What it found on the H200 (results/short_rows_h200.txt): the wave and ahead
// grids beat "all" only at one item a lane, by at most 2%, and never the best
// variant (block turnover is not what holds these rows back); rotating inputs
// moved no figure by more than 0.6%, so the benchmarks' one input does not
// flatter these 64-134 MB reads through the L2; evict-first loads gained
// 0.1-0.7 us everywhere; and two items a lane was the fastest or
// level for every shape: float32 1048576 x 32 evict-first, 4 items (2 lanes a
// row) 40.1 us, 2 items (4 lanes) 34.5, 1 item (8 lanes) 37.6 against a read
// of 31.9. The product's kernel took 35.2 us there in bench_dims.py, not this
// probe's 40.1 at its group, so the probe ranks the groups but does not
// reproduce the kernel's times -- nor its ranking: the kernel at two items a
// lane lost (row_group_size, csrc/cuda/launch_config.cuh). Part of the gap
// at bfloat16 262144 x 128 (the kernel 19.1-20.1 us, this probe 18.5) was
// the kernel's: ptxas had moved its second load below the first item's fold
// (sm_90 SASS); with all four loads out first (afd5bef) it took 17.6.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o short_rows benchmarks/probes/short_rows.cu && ./short_rows
#include <cmath>

#include "probe_common.cuh"

constexpr int kThreads = kProbeThreads;
constexpr int kSlotsPerLane = 4;

enum Grid { kAll, kWave, kAhead };
const char* grid_name(int g) { return g == kAll ? "all" : g == kWave ? "wave" : "ahead"; }

// Element e of a 16-byte vector, as float.
template <typename T>
__device__ __forceinline__ float element(const uint4& v, int e) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  if constexpr (sizeof(T) == 4) {
    return __uint_as_float(w[e]);
  } else {
    const uint32_t word = w[e / 2];
    return __uint_as_float(e % 2 == 0 ? word << 16 : word & 0xffff0000u);
  }
}

template <typename T>
__device__ __forceinline__ float fold_item(const uint4& v) {
  constexpr int kWidth = 16 / sizeof(T);
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < kWidth; ++e) s += element<T>(v, e);
  return s;
}

template <bool kEvictFirst>
__device__ __forceinline__ uint4 load_vector(const uint4* p) {
  if constexpr (kEvictFirst) {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    uint4 v;
    asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "l"(policy));
    return v;
  } else {
    return *p;
  }
}

template <typename T>
__device__ __forceinline__ void store(T* out, int64_t row, float v) {
  if constexpr (sizeof(T) == 4) {
    out[row] = v;
  } else {
    out[row] = __float2bfloat16(v);
  }
}

// Rows of kGroup * kItems vectors; kItems <= 4 (one step a row).
template <typename T, int kGroup, int kItems, int kGrid, bool kEvictFirst>
__global__ void __launch_bounds__(kThreads) short_rows(const uint4* __restrict__ x, int64_t rows, T* __restrict__ out) {
  constexpr int kVectors = kGroup * kItems;
  const int lane = threadIdx.x % kGroup;
  const int64_t groups_per_block = kThreads / kGroup;
  const int64_t step = static_cast<int64_t>(gridDim.x) * groups_per_block;
  const int64_t first = blockIdx.x * groups_per_block + threadIdx.x / kGroup;
  // The warp's first row: the whole warp loops together (the butterfly).
  const int64_t warp_first = blockIdx.x * groups_per_block + (threadIdx.x / 32) * (32 / kGroup);
  auto load = [&](int64_t row, uint4 (&v)[kItems]) {
    const int64_t r = row < rows ? row : rows - 1;
#pragma unroll
    for (int u = 0; u < kItems; ++u) v[u] = load_vector<kEvictFirst>(x + r * kVectors + u * kGroup + lane);
  };
  auto finish = [&](int64_t row, const uint4 (&v)[kItems]) {
    float acc[kSlotsPerLane] = {};
#pragma unroll
    for (int u = 0; u < kItems; ++u) acc[u % kSlotsPerLane] += fold_item<T>(v[u]);
    float total = acc[0];
#pragma unroll
    for (int s = 1; s < kSlotsPerLane; ++s) total += acc[s];
#pragma unroll
    for (int offset = kGroup / 2; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset, kGroup);
    if (lane == 0 && row < rows) store(out, row, total);
  };
  if constexpr (kGrid == kAhead) {
    uint4 next[kItems];
    load(first, next);
    for (int64_t row = first, w = warp_first; w < rows; row += step, w += step) {
      uint4 cur[kItems];
#pragma unroll
      for (int u = 0; u < kItems; ++u) cur[u] = next[u];
      if (w + step < rows) load(row + step, next);
      finish(row, cur);
    }
  } else {
    for (int64_t row = first, w = warp_first; w < rows; row += step, w += step) {
      uint4 v[kItems];
      load(row, v);
      finish(row, v);
    }
  }
}

template <typename T>
void probe(const char* dtype, int64_t rows, int64_t length, int sms) {
  constexpr int kWidth = 16 / sizeof(T);
  const int64_t n = rows * length;
  const double in_bytes = static_cast<double>(n) * sizeof(T);
  const ProbeBuffers<T, T> buffers(n, rows);
  T *x = buffers.x, *out = buffers.out, *first = buffers.first;
  unsigned int* sink = buffers.sink;
  std::vector<T> host_x(n);
  CHECK(cudaMemcpy(host_x.data(), x, n * sizeof(T), cudaMemcpyDeviceToHost));
  constexpr int kInputs = 3;
  T* inputs[kInputs] = {x, nullptr, nullptr};
  for (int i = 1; i < kInputs; ++i) {
    CHECK(cudaMalloc(&inputs[i], n * sizeof(T)));
    CHECK(cudaMemcpy(inputs[i], x, n * sizeof(T), cudaMemcpyDeviceToDevice));
  }
  int next_input = 0;
  auto input = [&](bool rotating) {
    const T* p = inputs[rotating ? next_input : 0];
    next_input = (next_input + 1) % kInputs;
    return reinterpret_cast<const uint4*>(p);
  };

  // The plain read: a looping grid of resident blocks, and (as bench_dims.py's fastest here) one
  // pass of a thread per four vectors.
  int read_blocks = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&read_blocks, read_all, kThreads, 0));
  const int64_t vectors = n * static_cast<int64_t>(sizeof(T)) / 16;
  float read_us = 0;
  for (int one_pass = 0; one_pass < 2; ++one_pass) {
    for (int rotating = 0; rotating < 2; ++rotating) {
      const int64_t blocks = one_pass ? (vectors + 4 * kThreads - 1) / (4 * kThreads) : read_blocks * sms;
      const float us = time_us(
          [&] { read_all<<<static_cast<unsigned int>(blocks), kThreads>>>(input(rotating), vectors, sink); }, 7, 5);
      if (one_pass && !rotating) read_us = us;
      std::printf("%-8s %7lldx%-4lld %6.1f MB  plain read, %-8s %-8s %6lld blocks %7.2f us %6.0f GB/s\n", dtype,
                  static_cast<long long>(rows), static_cast<long long>(length), in_bytes / 1e6,
                  one_pass ? "one pass" : "looping", rotating ? "rotating" : "one input",
                  static_cast<long long>(blocks), us, in_bytes / us / 1e3);
    }
  }

  auto run_group = [&](auto group) {
    constexpr int kGroup = decltype(group)::value;
    bool have_first = false;
    auto run = [&](auto kernel, int grid_kind, int items, bool evict_first, bool rotating) {
      cudaFuncAttributes attributes;
      CHECK(cudaFuncGetAttributes(&attributes, kernel));
      int resident = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, kThreads, 0));
      const int64_t all_blocks = (rows * kGroup + kThreads - 1) / kThreads;
      const int64_t blocks =
          grid_kind == kAll ? all_blocks : std::min<int64_t>(all_blocks, static_cast<int64_t>(resident) * sms);
      CHECK(cudaMemset(out, 0xff, rows * sizeof(T)));
      const float us = time_us(
          [&] { kernel<<<static_cast<unsigned int>(blocks), kThreads>>>(input(rotating), rows, out); },
          7, 5);
      const char* verdict = "ok";
      std::vector<T> got(rows);
      CHECK(cudaMemcpy(got.data(), out, rows * sizeof(T), cudaMemcpyDeviceToHost));
      if (!have_first) {
        CHECK(cudaMemcpy(first, out, rows * sizeof(T), cudaMemcpyDeviceToDevice));
        have_first = true;
        for (int64_t r : {int64_t{0}, rows / 3, rows - 1}) {
          double want = 0;
          for (int64_t i = 0; i < length; ++i) want += host_value(host_x.data(), r * length + i);
          const double have = host_value(got.data(), r);
          if (std::fabs(have - want) > 0.02 * std::sqrt(static_cast<double>(length)) + 0.01 * std::fabs(want))
            verdict = "HOST MISMATCH";
        }
      } else {
        std::vector<T> want(rows);
        CHECK(cudaMemcpy(want.data(), first, rows * sizeof(T), cudaMemcpyDeviceToHost));
        if (std::memcmp(got.data(), want.data(), rows * sizeof(T)) != 0) verdict = "MISMATCH";
      }
      std::printf("%-8s %7lldx%-4lld group %2d items %d %-11s %-9s %-5s %7.2f us %6.0f GB/s (%3.0f%% of the read)"
                  "  %3d regs %3d B spilled %2d blocks/SM %6lld blocks  %s\n",
                  dtype, static_cast<long long>(rows), static_cast<long long>(length), kGroup, items,
                  evict_first ? "evict-first" : "plain", rotating ? "rotating" : "one input", grid_name(grid_kind), us, in_bytes / us / 1e3, 100.0 * read_us / us, attributes.numRegs,
                  static_cast<int>(attributes.localSizeBytes), resident, static_cast<long long>(blocks), verdict);
    };
    auto run_items = [&](auto items) {
      constexpr int kItemsPerLane = decltype(items)::value;
      run(short_rows<T, kGroup, kItemsPerLane, kAll, false>, kAll, kItemsPerLane, false, false);
      run(short_rows<T, kGroup, kItemsPerLane, kWave, false>, kWave, kItemsPerLane, false, false);
      run(short_rows<T, kGroup, kItemsPerLane, kAhead, false>, kAhead, kItemsPerLane, false, false);
      run(short_rows<T, kGroup, kItemsPerLane, kAll, true>, kAll, kItemsPerLane, true, false);
      run(short_rows<T, kGroup, kItemsPerLane, kAll, false>, kAll, kItemsPerLane, false, true);
      run(short_rows<T, kGroup, kItemsPerLane, kAll, true>, kAll, kItemsPerLane, true, true);
    };
    const int64_t vectors = length / kWidth;
    if (vectors == kGroup * 4) run_items(std::integral_constant<int, 4>{});
    if (vectors == kGroup * 2) run_items(std::integral_constant<int, 2>{});
    if (vectors == kGroup * 1) run_items(std::integral_constant<int, 1>{});
  };
  run_group(std::integral_constant<int, 1>{});
  run_group(std::integral_constant<int, 2>{});
  run_group(std::integral_constant<int, 4>{});
  run_group(std::integral_constant<int, 8>{});
  run_group(std::integral_constant<int, 16>{});
  run_group(std::integral_constant<int, 32>{});
  for (int i = 1; i < kInputs; ++i) CHECK(cudaFree(inputs[i]));
}

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, %d MB L2; median of 7 x 20 back-to-back launches; GB/s of bytes read; %% of the "
              "one-pass read of one input\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20);
  const int sms = prop.multiProcessorCount;
  probe<__nv_bfloat16>("bfloat16", 262144, 128, sms);
  probe<__nv_bfloat16>("bfloat16", 1048576, 32, sms);
  probe<float>("float32", 262144, 128, sms);
  probe<float>("float32", 1048576, 32, sms);
  return 0;
}
