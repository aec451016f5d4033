// Building blocks shared by the fast kernels: 16-byte vector loads, warp and
// block reductions over any ops object (csrc/ops/op_base.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include <c10/util/BFloat16.h>

#include "ops/op_base.h"

namespace torch_reduce {
namespace cuda {

constexpr int kWarpSize = 32;
constexpr int kVectorBytes = 16;

// Whether an address starts on a `bytes` boundary (a vector's, by default).
// Plans take addresses, not pointers: explain plans for meta tensors.
inline bool is_aligned_address(uintptr_t address, size_t bytes = kVectorBytes) { return address % bytes == 0; }

// Elements of T in one 16-byte load; one for a larger T (var's state of
// doubles), which one load of its own size moves.
template <typename T>
constexpr int vector_width() {
  return sizeof(T) < kVectorBytes ? kVectorBytes / sizeof(T) : 1;
}

// N consecutive elements moved by one load or store; 16 bytes by default.
template <typename T, int N = vector_width<T>()>
struct alignas(sizeof(T) * N) Vector {
  T value[N];
};

// One load of N elements (LDG.E.128 for 16 bytes); `p` must be aligned to
// the vector's size.
template <typename T, int N = vector_width<T>()>
__device__ __forceinline__ Vector<T, N> load_vector(const T* p) {
  return *reinterpret_cast<const Vector<T, N>*>(p);
}

// load_vector whose line the L2 evicts before others (sm_80 and later; a
// 16-byte vector, else a plain load): for an input larger than the L2 that
// a kernel streams once, so that it does not push out what the kernel
// writes (see evict_first_input). Kernels take it as a template flag: as a
// run-time policy, the normal loads' kernels took more registers (ptxas
// sm_90) and time.
template <typename T, int N>
__device__ __forceinline__ Vector<T, N> load_vector_evict_first(const T* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (sizeof(Vector<T, N>) == kVectorBytes) {
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    Vector<T, N> v;
    auto* words = reinterpret_cast<uint32_t*>(&v);
    asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(words[0]), "=r"(words[1]), "=r"(words[2]), "=r"(words[3])
        : "l"(p), "l"(policy));
    return v;
  }
#endif
  return load_vector<T, N>(p);
}

// The load of a kernel that takes evict_first_input as a template flag:
// load_vector_evict_first where kEvictFirst, else load_vector.
template <bool kEvictFirst, typename T, int N = vector_width<T>()>
__device__ __forceinline__ Vector<T, N> load_input(const T* p) {
  if constexpr (kEvictFirst) {
    return load_vector_evict_first<T, N>(p);
  } else {
    return load_vector<T, N>(p);
  }
}

// Marks a scalar as needed where it is computed or loaded (an empty asm that
// takes it, in a register of its width; keep_loaded uses it),
// so that the compiler computes it there rather than under the condition of a
// later select: a fold of a loaded vector kept out of a branch keeps its load
// out of it too. ptxas sees no asm, so the loaded words' keep_loaded alone did
// not stop it moving row_reduce_kernel's second bfloat16 load below the first
// one's fold: a second round trip to memory (sm_90 SASS).
// One-byte values (bool) are left alone; a struct (var's state), word by word.
template <typename T>
__device__ __forceinline__ void keep_computed(T& v) {
  static_assert(sizeof(T) <= 8 ? (sizeof(T) & (sizeof(T) - 1)) == 0 : sizeof(T) % 4 == 0,
                "a scalar of 1, 2, 4 or 8 bytes, or whole 32-bit words");
  if constexpr (sizeof(T) > 8) {
    auto* words = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i) keep_computed(words[i]);
  } else if constexpr (sizeof(T) == 8) {
    asm volatile("" : "+l"(*reinterpret_cast<uint64_t*>(&v)));
  } else if constexpr (sizeof(T) == 4) {
    asm volatile("" : "+r"(*reinterpret_cast<uint32_t*>(&v)));
  } else if constexpr (sizeof(T) == 2) {
    asm volatile("" : "+h"(*reinterpret_cast<uint16_t*>(&v)));
  }
}

// Marks a loaded vector as used where it is loaded (an empty asm that takes
// its words). A load whose value a fold may drop can otherwise be moved by
// the compiler under that fold's condition, and then waits there: a lane of
// row_reduce_kernel's several short rows kept one load in flight at a time
// (sm_90 SASS). Values that are not vectors are left alone.
template <typename T, int N>
__device__ __forceinline__ void keep_loaded(Vector<T, N>& v) {
  if constexpr (sizeof(v) == sizeof(uint16_t)) {
    keep_computed(*reinterpret_cast<uint16_t*>(&v));
  } else {
    static_assert(sizeof(v) % sizeof(uint32_t) == 0, "one 16-bit word or whole 32-bit words");
    auto* words = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(v) / sizeof(uint32_t)); ++i) keep_computed(words[i]);
  }
}
template <typename T>
__device__ __forceinline__ void keep_loaded(T&) {}

template <typename T, int N>
__device__ __forceinline__ void store_vector(T* p, const Vector<T, N>& v) {
  *reinterpret_cast<Vector<T, N>*>(p) = v;
}

// Element i of a loaded vector, in the accumulator type. A bfloat16 element
// becomes a float straight from the 32-bit word that holds it (the low one
// shifted up, the high one masked): the bits of the conversion, which
// otherwise first moves each high half into a 16-bit register of its own (a
// PRMT a word, sm_90 SASS), a good share of the instructions of
// column_tile_kernel's rounds, which ncu finds issue-bound for bfloat16. It
// costs column_short_kernel's chunks of 32 rows a little: with fewer
// registers that kernel runs three blocks an SM rather than two, and why that
// is slower is not known.
template <typename acc_t, typename T, int N>
__device__ __forceinline__ acc_t vector_element(const Vector<T, N>& v, int i) {
  if constexpr (std::is_same_v<T, c10::BFloat16> && std::is_same_v<acc_t, float> && N % 2 == 0) {
    const uint32_t word = reinterpret_cast<const uint32_t*>(v.value)[i / 2];
    return __uint_as_float(i % 2 == 0 ? word << 16 : word & 0xffff0000u);
  } else {
    return static_cast<acc_t>(v.value[i]);
  }
}

// The exact sum of a vector of 1- or 2-byte integers in 32 bits (it cannot
// overflow): four bytes per __dp4a instruction instead of a 64-bit add each.
template <typename T>
__device__ __forceinline__ int32_t narrow_vector_sum(const Vector<T>& v) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 2, "1- or 2-byte integers");
  int32_t sum = 0;
  if constexpr (sizeof(T) == 1) {
    const auto* words = reinterpret_cast<const uint32_t*>(v.value);
#pragma unroll
    for (int w = 0; w < kVectorBytes / 4; ++w) {
      if constexpr (std::is_signed_v<T>) {
        sum = __dp4a(static_cast<int32_t>(words[w]), 0x01010101, sum);
      } else {
        sum = static_cast<int32_t>(__dp4a(words[w], 0x01010101u, static_cast<uint32_t>(sum)));
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < vector_width<T>(); ++i) sum += v.value[i];
  }
  return sum;
}

// Folds the elements of a vector into `acc`, in index order; the first is
// at `position` of its reduction (HasPositions). Integer sums are exact in
// any order, so narrow integers are added up first.
template <typename acc_t, typename T, typename Op>
__device__ __forceinline__ acc_t fold_vector(acc_t acc, const Vector<T>& v, int64_t position, const Op& op) {
  if constexpr (Op::kCombine == Combine::Add && !HasMap<Op>::value && std::is_same_v<acc_t, int64_t> &&
                std::is_integral_v<T> && sizeof(T) <= 2) {
    return op.combine(acc, static_cast<acc_t>(narrow_vector_sum(v)));
  } else {
#pragma unroll
    for (int i = 0; i < vector_width<T>(); ++i) acc = fold_element(op, acc, vector_element<acc_t>(v, i), position + i);
    return acc;
  }
}

// Folds `count` consecutive elements, the first at `position`, into a
// fresh accumulator, in index order: a row or an item read element by element.
template <typename acc_t, typename T, typename Op>
__device__ __forceinline__ acc_t fold_elements(const T* x, int64_t count, int64_t position, const Op& op) {
  acc_t acc = op.identity();
  for (int64_t i = 0; i < count; ++i) acc = fold_element(op, acc, static_cast<acc_t>(x[i]), position + i);
  return acc;
}

// A vector's worth of consecutive elements read one by one, of which the
// first `count` (at least one) are the item's: a row's item that is not
// 16-byte aligned. load_elements issues every load at once (each under its
// predicate, at an offset from one address), and fold_elements folds the
// item later, in index order, as for a vector. Folded in a loop that loads
// as it goes, a lane waited for each load in turn.
template <typename T>
struct Elements {
  T value[vector_width<T>()];
  int count;
};

template <typename T>
__device__ __forceinline__ Elements<T> load_elements(const T* p, int64_t count) {
  constexpr int kWidth = vector_width<T>();
  Elements<T> e;
  e.count = count < kWidth ? static_cast<int>(count) : kWidth;
#pragma unroll
  for (int i = 0; i < kWidth; ++i) e.value[i] = i < e.count ? p[i] : T{};
  return e;
}

template <typename acc_t, typename T, typename Op>
__device__ __forceinline__ acc_t fold_elements(acc_t acc, const Elements<T>& e, int64_t position, const Op& op) {
#pragma unroll
  for (int i = 0; i < vector_width<T>(); ++i)
    if (i < e.count) acc = fold_element(op, acc, static_cast<acc_t>(e.value[i]), position + i);
  return acc;
}

// keep_loaded, element by element in registers of the element's width: as
// 32-bit words, two 16-bit elements would be packed where they are loaded,
// which waits for the loads (sm_90 SASS). One-byte elements are left alone.
template <typename T>
__device__ __forceinline__ void keep_loaded(Elements<T>& e) {
#pragma unroll
  for (int i = 0; i < vector_width<T>(); ++i) keep_computed(e.value[i]);
}

// A vector's worth of consecutive elements that does not start on a 16-byte
// boundary (a row's item in a row of odd length or of a misaligned view),
// read as the one or two aligned vectors that hold it and shifted into place
// when folded: two 16-byte loads where load_elements takes one load an
// element (eight for bfloat16). An aligned 16-byte load that holds one of
// the item's elements cannot fault: device memory is mapped in pages, and
// allocations start 256-byte aligned (the caching allocator's blocks are
// 512-byte multiples). The bytes that are not the item's are never folded.
template <typename T>
struct UnalignedItem {
  Vector<T> first, second;  // the aligned vectors that hold the item
  int offset;               // the item's first byte in `first`
  int count;                // the item's elements, 1 to a vector's width
};

template <typename T>
__device__ __forceinline__ UnalignedItem<T> load_unaligned_item(const T* p, int64_t count) {
  constexpr int kWidth = vector_width<T>();
  const auto address = reinterpret_cast<uintptr_t>(p);
  UnalignedItem<T> item;
  item.offset = static_cast<int>(address % kVectorBytes);
  item.count = count < kWidth ? static_cast<int>(count) : kWidth;
  const T* first = reinterpret_cast<const T*>(address - item.offset);
  item.first = load_vector(first);
  // The second vector holds elements of the item only where the item runs
  // past the first's end (never for an aligned item).
  const bool straddles = item.offset + item.count * static_cast<int>(sizeof(T)) > kVectorBytes;
  item.second = straddles ? load_vector(first + kWidth) : Vector<T>{};
  return item;
}

template <typename T>
__device__ __forceinline__ void keep_loaded(UnalignedItem<T>& item) {
  keep_loaded(item.first);
  keep_loaded(item.second);
}

// The item's elements, shifted into place, for fold_elements to fold as it
// folds the same elements read one by one. Each 32-bit word of the item is
// a funnel shift of two consecutive words of the pair of vectors; the word
// index is picked by selects, since a run-time index into registers would
// put them in local memory.
template <typename T>
__device__ __forceinline__ Elements<T> shifted_elements(const UnalignedItem<T>& item) {
  constexpr int kWords = kVectorBytes / 4;
  uint32_t words[2 * kWords];
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    words[w] = reinterpret_cast<const uint32_t*>(item.first.value)[w];
    words[kWords + w] = reinterpret_cast<const uint32_t*>(item.second.value)[w];
  }
  const int skip = item.offset / 4;  // whole words before the item
  const uint32_t bits = 8 * (item.offset % 4);
  auto word = [&](int w) {  // words[w + skip], skip in [0, kWords)
    return skip == 0 ? words[w] : skip == 1 ? words[w + 1] : skip == 2 ? words[w + 2] : words[w + 3];
  };
  Elements<T> e;
  e.count = item.count;
#pragma unroll
  for (int w = 0; w < kWords; ++w) reinterpret_cast<uint32_t*>(e.value)[w] = __funnelshift_r(word(w), word(w + 1), bits);
  return e;
}

// Elements before `p` reaches a 16-byte boundary, at most n.
template <typename T>
__device__ __forceinline__ int64_t misaligned_head(const T* p, int64_t n) {
  const int64_t bytes = (kVectorBytes - (reinterpret_cast<uintptr_t>(p) % kVectorBytes)) % kVectorBytes;
  const int64_t head = bytes / static_cast<int64_t>(sizeof(T));
  return head < n ? head : n;
}

// Shuffles have no bool overload; move bools as ints, and a struct
// accumulator (var's state) a 32-bit word at a time.
template <typename T>
__device__ __forceinline__ T shuffle_xor(T v, int lane_mask, int width) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<bool>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), lane_mask, width));
  } else if constexpr (kStructAccumulator<T>) {
    static_assert(sizeof(T) % 4 == 0, "a state of whole 32-bit words");
    auto* words = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
    for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i)
      words[i] = __shfl_xor_sync(0xffffffffu, words[i], lane_mask, width);
    return v;
  } else {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
  }
}

// Butterfly reduction over aligned groups of `width` lanes (a power of two
// <= 32); every lane of a group ends with the group's result. The tree is
// fixed, so the result is deterministic. All 32 lanes must take part.
template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t group_reduce(acc_t v, int width, const Op& op) {
  for (int offset = width / 2; offset > 0; offset /= 2) v = op.combine(v, shuffle_xor(v, offset, width));
  return v;
}

template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t warp_reduce(acc_t v, const Op& op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = op.combine(v, shuffle_xor(v, offset, kWarpSize));
  return v;
}

// Reduces one value per thread of a 1-D block of kThreads threads; the result
// is valid in thread 0. `scratch` holds kThreads / 32 values. Ends with a
// barrier, so scratch can be reused right after.
template <int kThreads, typename acc_t, typename Op>
__device__ __forceinline__ acc_t block_reduce(acc_t v, acc_t* scratch, const Op& op) {
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "block of whole warps");
  constexpr int kWarps = kThreads / kWarpSize;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  v = warp_reduce(v, op);
  if constexpr (kWarps > 1) {
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
      v = lane < kWarps ? scratch[lane] : op.identity();
      v = warp_reduce(v, op);
    }
    __syncthreads();
  }
  return v;
}

}  // namespace cuda
}  // namespace torch_reduce
