// Where element i of a row-major order over strided dims lies: a permuted
// output's element (output.cuh), a gathered row and its elements
// (gathered_rows.cuh, staged_rows_kernel.cuh).
#pragma once

#include <cstdint>

namespace torch_reduce {
namespace cuda {

// Dims of an index, after merging those contiguous in both orders: a
// transpose of the first and last dims needs three.
constexpr int kMaxStridedDims = 4;

// Element i's offset: its row-major coordinates over `sizes`, innermost
// first, times `strides`. No dims: the offset is 0 (an index whose offset
// is i has one dim, of stride 1: reduce_layout.cuh gives dense outputs of
// column_short_kernel's indexed kernels such a one). What these index is
// small (reduce_layout.cuh), so 32 bits index it, and each size divides by a
// multiply and a shift (Granlund and Montgomery) rather than a division.
struct StridedIndex {
  int dims = 0;
  uint32_t sizes[kMaxStridedDims] = {};
  uint32_t strides[kMaxStridedDims] = {};
  uint32_t magic[kMaxStridedDims] = {};
  uint32_t shift[kMaxStridedDims] = {};
};

// n / d for n < 2^31 is (umulhi(n, m) + n) >> s, where s = ceil(log2(d)) and
// m = floor(2^32 (2^s - d) / d) + 1.
inline void set_divisor(StridedIndex& index, int d, uint32_t divisor) {
  uint32_t s = 0;
  while ((uint64_t{1} << s) < divisor) ++s;
  index.sizes[d] = divisor;
  index.shift[d] = s;
  index.magic[d] = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << s) - divisor)) / divisor + 1);
}

// i / index.sizes[d], for i < 2^31.
__device__ __forceinline__ uint32_t divide_by_size(uint32_t i, const StridedIndex& index, int d) {
  return (__umulhi(i, index.magic[d]) + i) >> index.shift[d];
}

// Element i's offset, for an index of one or more dims.
__device__ __forceinline__ uint32_t strided_offset(uint32_t i, const StridedIndex& index) {
  uint32_t at = 0;
#pragma unroll
  for (int d = 0; d < kMaxStridedDims; ++d) {
    if (d < index.dims) {
      const uint32_t quotient = divide_by_size(i, index, d);
      at += (i - quotient * index.sizes[d]) * index.strides[d];
      i = quotient;
    }
  }
  return at;
}

}  // namespace cuda
}  // namespace torch_reduce
