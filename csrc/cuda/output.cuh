// Where the kernels write output i (b * inner + c of a ReduceLayout).
//
// Usually out[i]. A transposed or permuted input is reduced in its memory
// order, in which its kept dims are out of the result's order; the front end
// then hands over the result as a permuted view, and output i goes to the
// offset that i's coordinates over that view's dims give. Writing there saves
// the kernel that would otherwise copy a dense output into the result.
#pragma once

#include <cstdint>

#include "strided_index.cuh"

namespace torch_reduce {
namespace cuda {

// Not inlined: the several-rows row kernel, which stores up to eight rows a
// lane from its unrolled loop, spilled with the index arithmetic inlined at
// every store (ptxas sm_90, bfloat16, vectorized). The arguments come by
// value: a pointer to the kernel's parameters would copy them to the stack
// at every thread's start (ptxas).
template <typename T>
__device__ __noinline__ T* permuted_address(T* data, uint32_t i, StridedIndex index) {
  return data + strided_offset(i, index);
}

// An output and where the kernels write it. Kernels that write permuted
// outputs are instantiations of their own (kPermuted): the index arithmetic
// and its call, present but never run, cost the dense kernels registers and
// time (a build that branched on `index.dims` at run time).
template <typename T>
struct Output {
  T* data;
  StridedIndex index;

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
