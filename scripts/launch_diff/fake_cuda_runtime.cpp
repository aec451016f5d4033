// A fake CUDA runtime (run.sh): it records each kernel launch -- the name the
// kernel was registered under, grid, block, shared bytes, whether launched
// early -- instead of making it. The device's SMs and L2 come from FAKE_SMS
// and FAKE_L2; each kernel's residency is made up from its name, the same in
// both builds. Only what the layout kernels and c10's stream and device
// queries call is here.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

static std::map<const void*, std::string>& names() { static std::map<const void*, std::string> m; return m; }
static dim3 g_grid, g_block; static size_t g_shared;

static int env(const char* name, int fallback) { const char* v = getenv(name); return v ? atoi(v) : fallback; }

static void record(const void* func, dim3 grid, dim3 block, size_t shared, int early) {
  auto it = names().find(func);
  printf("  launch %s grid=%u,%u,%u block=%u,%u,%u shared=%zu early=%d\n",
          it == names().end() ? "?" : it->second.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z, shared, early);
}

extern "C" {
void** __cudaRegisterFatBinary(void*) { static void* h[4]; return h; }
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
char __cudaInitModule(void**) { return 1; }
void __cudaRegisterFunction(void**, const char* hostFun, char* deviceFun, const char*, int, uint3*, uint3*, dim3*, dim3*, int*) {
  names()[hostFun] = deviceFun;
}
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st*) {
  g_grid = grid; g_block = block; g_shared = shared; return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void*) {
  *grid = g_grid; *block = g_block; *shared = g_shared; return cudaSuccess;
}
cudaError_t cudaLaunchKernel(const void* func, dim3 grid, dim3 block, void**, size_t shared, cudaStream_t) {
  record(func, grid, block, shared, 0); return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* handle, const void* func) {
  *handle = reinterpret_cast<cudaKernel_t>(const_cast<void*>(func)); return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 grid, dim3 block, void**, size_t shared, cudaStream_t) {
  record(reinterpret_cast<const void*>(k), grid, block, shared, 0); return cudaSuccess;
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* func, void**) {
  record(func, c->gridDim, c->blockDim, c->dynamicSmemBytes, c->numAttrs); return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void* func, int threads, size_t) {
  // A made-up residency per kernel: the same for both trees (same names).
  const std::string& name = names()[func];
  *n = 1 + static_cast<int>(std::hash<std::string>{}(name) % 7) + threads / 1024; return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void* func, int threads, size_t s, unsigned) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, func, threads, s);
}
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) {
  switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = env("FAKE_SMS", 132); break;
    case cudaDevAttrL2CacheSize: *v = env("FAKE_L2", 50 << 20); break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    default: *v = 1;
  }
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
cudaError_t cudaDeviceGetStreamPriorityRange(int* lo, int* hi) { *lo = 0; *hi = -1; return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) { memset(a, 0, sizeof(*a)); return cudaSuccess; }
}
// Tensors start 512-byte aligned, as the CUDA caching allocator's blocks do:
// otherwise the alignment of the CPU allocator's (64 bytes) picks kernels by
// allocation history.
extern "C" int posix_memalign(void** p, size_t, size_t size) {
  *p = aligned_alloc(512, (size + 511) / 512 * 512 + 512);
  return *p ? 0 : 12;
}
