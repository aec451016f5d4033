// Probe: what the cross-block step of a one-launch float32 sum costs on this
// GPU, and which launch geometry reads best, apart from torch_reduce's code.
//
// Each kernel sums float4 loads in registers (T threads, U loads in flight
// per thread, at most `cap` blocks per SM), reduces its block, and then ends
// by one of these (`mode=` in the output):
//   0 no combine: each block only writes its partial -- not a reduction, the
//     floor that any single-launch combine adds to;
//   1 ticket, acquire-release atomic; the last block sums the partials
//     (torch_reduce's split_row_reduce_kernel);
//   2 ticket after __threadfence(), relaxed atomic;
//   3 flags: each block writes {partial, ready} as one 64-bit word, block 0
//     polls them and resets them;
//   4 as 3, the last block polls;
//   5 one thread block cluster of C blocks, combined through distributed
//     shared memory;
//   6 clusters combined through DSMEM, then flags across clusters.
// Time per call: a CUDA graph of 100 launches replayed 7 times, median / 100,
// on the same buffer (sizes up to 16 MiB stay in L2). `ok` checks the sum
// against a double sum on the host (modes 1-6; the combines read at most 8
// partials a thread, so launches with more blocks report WRONG: ignore them).
//
// Build and run (the output is benchmarks/results/full_combine_h100.txt):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/full_combine benchmarks/probes/full_combine.cu
//   /tmp/full_combine > benchmarks/results/full_combine_h100.txt
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

enum Mode { NoCombine = 0, TicketAcqRel = 1, TicketFence = 2, FlagFirst = 3, FlagLast = 4, Cluster = 5, ClusterFlag = 6 };

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <int T>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  if constexpr (T > 32) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) v = warp_sum(lane < T / 32 ? scratch[lane] : 0.f);
    __syncthreads();
  }
  return v;
}

__device__ __forceinline__ unsigned long long ld_relaxed(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

struct Args {
  const float4* x;
  int nvec;
  int splits;
  float* out;
  float* partials;
  unsigned long long* slots;
  unsigned int* ticket;
};

template <int T, int U>
__device__ __forceinline__ float thread_sum(const Args& a, int split) {
  float acc[U];
#pragma unroll
  for (int u = 0; u < U; ++u) acc[u] = 0.f;
  const int step = a.splits * T * U;
  int v = split * T * U + threadIdx.x;
  for (; v + (U - 1) * T < a.nvec; v += step) {
    float4 l[U];
#pragma unroll
    for (int u = 0; u < U; ++u) l[u] = a.x[v + u * T];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] += ((l[u].x + l[u].y) + (l[u].z + l[u].w));
  }
  if (v < a.nvec) {
    float4 l[U];
#pragma unroll
    for (int u = 0; u < U; ++u) l[u] = v + u * T < a.nvec ? a.x[v + u * T] : make_float4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] += ((l[u].x + l[u].y) + (l[u].z + l[u].w));
  }
  float r = acc[0];
#pragma unroll
  for (int u = 1; u < U; ++u) r += acc[u];
  return r;
}

// Sums of per-split values held in slots, polled until every flag is set.
template <int T>
__device__ __forceinline__ float poll_slots(const Args& a) {
  constexpr int kPer = 8;
  unsigned long long w[kPer];
  bool ready;
  do {
    ready = true;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * T;
      if (i < a.splits) {
        w[j] = ld_relaxed(a.slots + i);
        ready &= (w[j] >> 32) == 1u;
      }
    }
  } while (!ready);
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int i = threadIdx.x + j * T;
    if (i < a.splits) {
      s += __uint_as_float(static_cast<unsigned int>(w[j]));
      a.slots[i] = 0ull;
    }
  }
  return s;
}

template <int T, int U, int M>
__global__ void __launch_bounds__(T) sum_kernel(Args a) {
  __shared__ float scratch[32];
  __shared__ bool last;
  int split = blockIdx.x;
  float r = block_sum<T>(thread_sum<T, U>(a, split), scratch);
  if (a.splits == 1) {
    if (threadIdx.x == 0) *a.out = r;
    return;
  }
  if constexpr (M == NoCombine) {
    if (threadIdx.x == 0) a.partials[split] = r;
  } else if constexpr (M == TicketAcqRel || M == TicketFence) {
    if (threadIdx.x == 0) {
      a.partials[split] = r;
      unsigned int t;
      if constexpr (M == TicketAcqRel) {
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(t) : "l"(a.ticket) : "memory");
      } else {
        __threadfence();
        t = atomicAdd(a.ticket, 1u);
      }
      last = t == static_cast<unsigned int>(a.splits - 1);
    }
    __syncthreads();
    if (!last) return;
    if constexpr (M == TicketFence) __threadfence();
    float s = 0.f;
    constexpr int kPer = 8;
    float p[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int i = threadIdx.x + j * T;
      p[j] = i < a.splits ? __ldcg(a.partials + i) : 0.f;
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) s += p[j];
    s = block_sum<T>(s, scratch);
    if (threadIdx.x == 0) {
      *a.out = s;
      *a.ticket = 0;
    }
  } else if constexpr (M == FlagFirst || M == FlagLast) {
    const int poller = M == FlagFirst ? 0 : a.splits - 1;
    if (split != poller) {
      if (threadIdx.x == 0) st_relaxed(a.slots + split, (1ull << 32) | __float_as_uint(r));
      return;
    }
    if (threadIdx.x == 0) st_relaxed(a.slots + split, (1ull << 32) | __float_as_uint(r));
    float s = block_sum<T>(poll_slots<T>(a), scratch);
    if (threadIdx.x == 0) *a.out = s;
  }
}

// Clusters of C blocks: DSMEM combine inside the cluster; across clusters,
// flag slots polled by the last cluster's rank 0.
template <int T, int U, int M>
__global__ void __launch_bounds__(T) cluster_kernel(Args a) {
  __shared__ float scratch[32];
  __shared__ float ranks[16];
  cg::cluster_group cluster = cg::this_cluster();
  const int split = blockIdx.x;
  float r = block_sum<T>(thread_sum<T, U>(a, split), scratch);
  const unsigned rank = cluster.block_rank();
  float* dst = cluster.map_shared_rank(ranks, 0);
  if (threadIdx.x == 0) dst[rank] = r;
  cluster.sync();
  if (rank != 0) return;
  const int c = cluster.num_blocks();
  const int clusters = a.splits / c;
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int i = 0; i < c; ++i) s += ranks[i];
    if (clusters == 1) {
      *a.out = s;
    } else {
      r = s;
    }
  }
  if constexpr (M == ClusterFlag) {
    if (clusters == 1) return;
    const int ci = split / c;
    if (threadIdx.x == 0) st_relaxed(a.slots + ci, (1ull << 32) | __float_as_uint(r));
    if (ci != clusters - 1) return;
    Args b = a;
    b.splits = clusters;
    float s = block_sum<T>(poll_slots<T>(b), scratch);
    if (threadIdx.x == 0) *a.out = s;
  }
}

__global__ void empty_kernel() {}

struct Config {
  const char* name;
  int mode, threads, unroll, cap, cluster;
};

template <int T, int U, int M>
void launch(const Args& a, int blocks, int cluster, cudaStream_t s) {
  if constexpr (M >= Cluster) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(T);
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    static bool nonportable = [] {
      return cudaFuncSetAttribute(cluster_kernel<T, U, M>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
    }();
    (void)nonportable;
    cudaError_t e = cudaLaunchKernelEx(&cfg, cluster_kernel<T, U, M>, a);
    if (e != cudaSuccess) { cudaGetLastError(); throw e; }
  } else {
    sum_kernel<T, U, M><<<blocks, T, 0, s>>>(a);
  }
}

using Launcher = void (*)(const Args&, int, int, cudaStream_t);

template <int M>
Launcher pick(int t, int u) {
#define P(TT, UU) if (t == TT && u == UU) return launch<TT, UU, M>;
  P(128, 2) P(128, 4) P(128, 8) P(256, 2) P(256, 4) P(256, 8) P(512, 2) P(512, 4) P(1024, 1) P(1024, 2) P(1024, 4)
#undef P
  return nullptr;
}

Launcher pick_mode(int m, int t, int u) {
  switch (m) {
    case 0: return pick<0>(t, u);
    case 1: return pick<1>(t, u);
    case 2: return pick<2>(t, u);
    case 3: return pick<3>(t, u);
    case 4: return pick<4>(t, u);
    case 5: return pick<5>(t, u);
    case 6: return pick<6>(t, u);
  }
  return nullptr;
}

template <typename F>
float time_graph(F f, cudaStream_t s, int reps = 100) {
  for (int i = 0; i < 20; ++i) f();
  CK(cudaStreamSynchronize(s));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) f();
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  CK(cudaGraphLaunch(ge, s));
  std::vector<float> t;
  for (int r = 0; r < 7; ++r) {
    cudaEventRecord(e0, s);
    CK(cudaGraphLaunch(ge, s));
    cudaEventRecord(e1, s);
    CK(cudaEventSynchronize(e1));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    t.push_back(ms * 1000.f / reps);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return t[3];
}

int main(int argc, char** argv) {
  int sms;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t max_bytes = 256ull << 20;
  float* x;
  CK(cudaMalloc(&x, max_bytes));
  std::vector<float> h(max_bytes / 4);
  srand(1);
  for (auto& v : h) v = (rand() / (float)RAND_MAX) - 0.25f;
  CK(cudaMemcpy(x, h.data(), max_bytes, cudaMemcpyHostToDevice));
  float *out, *partials;
  unsigned long long* slots;
  unsigned int* ticket;
  CK(cudaMalloc(&out, 4));
  CK(cudaMalloc(&partials, 1 << 20));
  CK(cudaMalloc(&slots, 1 << 20));
  CK(cudaMalloc(&ticket, 4));
  CK(cudaMemset(slots, 0, 1 << 20));
  CK(cudaMemset(ticket, 0, 4));

  printf("empty %.3f\n", time_graph([&] { empty_kernel<<<1, 32, 0, s>>>(); }, s));
  const size_t sizes[] = {4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20};
  const int modes[] = {0, 1, 2, 3, 4};
  const int tu[][2] = {{128, 2}, {128, 4}, {128, 8}, {256, 2}, {256, 4}, {256, 8}, {512, 2}, {512, 4}, {1024, 1}, {1024, 2}, {1024, 4}};
  const int caps[] = {1, 2, 4, 8};  // blocks per SM at most
  for (size_t bytes : sizes) {
    const int nvec = bytes / 16;
    double ref = 0;
    for (size_t i = 0; i < bytes / 4; ++i) ref += h[i];
    auto run_one = [&](int m, int t, int u, int cap, int cluster) {
      Launcher L = pick_mode(m, t, u);
      if (!L) return;
      const int tile = t * u;
      int blocks = std::max(1, std::min((nvec + tile - 1) / tile, cap * sms));
      if (cluster > 1) {
        blocks = (blocks + cluster - 1) / cluster * cluster;
        if (m == Cluster && blocks != cluster) return;
      }
      if (m >= FlagFirst && m != Cluster && blocks > 8 * t) return;
      Args a{reinterpret_cast<const float4*>(x), nvec, blocks, out, partials, slots, ticket};
      CK(cudaMemset(out, 0xff, 4));
      try { L(a, blocks, cluster, s); } catch (cudaError_t e) { printf("%zu mode=%d T=%d U=%d C=%d launch failed: %s\n", bytes, m, t, u, cluster, cudaGetErrorString(e)); return; }
      CK(cudaStreamSynchronize(s));
      float got;
      CK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
      const bool ok = m == NoCombine || blocks == 1 || std::fabs(got - ref) <= 1e-4 * std::fabs(ref) + 1e-2;
      const float us = time_graph([&] { L(a, blocks, cluster, s); }, s);
      printf("%zu mode=%d T=%d U=%d cap=%d C=%d blocks=%d us=%.3f %s\n", bytes, m, t, u, cap, cluster, blocks, us,
             ok ? "ok" : "WRONG");
      fflush(stdout);
    };
    for (int m : modes)
      for (auto& p : tu)
        for (int cap : caps) run_one(m, p[0], p[1], cap, 1);
    // Clusters: one cluster of 8 or 16 blocks (<= 1 MiB), or clusters + flags.
    for (int c : {4, 8, 16})
      for (auto& p : tu) {
        run_one(Cluster, p[0], p[1], 64, c);
        for (int cap : caps) run_one(ClusterFlag, p[0], p[1], cap, c);
      }
  }
  return 0;
}
