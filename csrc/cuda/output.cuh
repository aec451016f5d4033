// Where the kernels write output i (b * inner + c of a ReduceLayout).
//
// Usually out[i]. A transposed or permuted input is reduced in its memory
// order, in which its kept dims are out of the result's order; the front end
// then hands over the result as a permuted view, and output i goes to the
// offset that i's coordinates over that view's dims give. Writing there saves
// the kernel that would otherwise copy a dense output into the result.
#pragma once

#include <cstdint>

namespace torch_reduce {
namespace cuda {

// Dims of a permuted output, after merging those contiguous in both orders:
// a transpose of the first and last dims needs three.
constexpr int kMaxOutputDims = 4;

// Output i's offset: its row-major coordinates over `sizes`, innermost first,
// times `strides`. No dims: the offset is i. Permuted outputs are small
// (reduce_layout.cuh), so 32 bits index them, and each size divides by a
// multiply and a shift (Granlund and Montgomery) rather than a division.
struct OutputIndex {
  int dims = 0;
  uint32_t sizes[kMaxOutputDims] = {};
  uint32_t strides[kMaxOutputDims] = {};
  uint32_t magic[kMaxOutputDims] = {};
  uint32_t shift[kMaxOutputDims] = {};
};

// n / d for n < 2^31 is (umulhi(n, m) + n) >> s, where s = ceil(log2(d)) and
// m = floor(2^32 (2^s - d) / d) + 1.
inline void set_divisor(OutputIndex& index, int d, uint32_t divisor) {
  uint32_t s = 0;
  while ((uint64_t{1} << s) < divisor) ++s;
  index.sizes[d] = divisor;
  index.shift[d] = s;
  index.magic[d] = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - divisor)) / divisor + 1);
}

// Output i's offset, for an index of one or more dims.
__device__ __forceinline__ uint32_t permuted_offset(uint32_t i, const OutputIndex& index) {
  uint32_t at = 0;
#pragma unroll
  for (int d = 0; d < kMaxOutputDims; ++d) {
    if (d < index.dims) {
      const uint32_t quotient = (__umulhi(i, index.magic[d]) + i) >> index.shift[d];
      at += (i - quotient * index.sizes[d]) * index.strides[d];
      i = quotient;
    }
  }
  return at;
}

// Not inlined: the several-rows row kernel, which stores up to eight rows a
// lane from its unrolled loop, spilled 28 bytes with the index arithmetic
// inlined at every store (ptxas sm_90, bfloat16, vectorized). The arguments
// come by value: a pointer to the kernel's parameters would copy them to the
// stack at every thread's start (128 bytes a thread, ptxas).
template <typename T>
__device__ __noinline__ T* permuted_address(T* data, uint32_t i, OutputIndex index) {
  return data + permuted_offset(i, index);
}

// An output and where the kernels write it. Kernels that write permuted
// outputs are instantiations of their own (kPermuted): the index arithmetic
// and its call, present but never run, cost the dense kernels 0.2 us of a
// 3 us row reduction and 15-25% of column passes (H100, the random sweep of
// a build that branched on `index.dims` at run time, not committed).
template <typename T>
struct Output {
  T* data;
  OutputIndex index;

  template <bool kPermuted>
  __device__ __forceinline__ T* at(int64_t i) const {
    if constexpr (kPermuted) {
      return permuted_address(data, static_cast<uint32_t>(i), index);
    } else {
      return data + i;
    }
  }
};

}  // namespace cuda
}  // namespace torch_reduce
