// What every step of the ladder shares: the padded load, dynamic shared
// memory typed as acc_t, and launch geometry that fits any input length.
//
// Every step has the same shape (see multi_pass.cuh): a kernel
//   kernel(const in_t* in, int64_t n, acc_t* partials, Op op)
// that writes one acc_t partial per block, and a host-side struct
//   num_partials<in_t>(n)                partials a pass leaves for n in_t inputs
//   launch(in, n, partials, op, stream)  launches that pass
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../device_info.cuh"

namespace torch_reduce {
namespace ladder {

constexpr int kWarpSize = 32;

// Static and dynamic shared memory a block may use without opting in.
constexpr size_t kMaxSharedBytes = 48 * 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Element i as an accumulator, or the identity past the end: the last block
// overhangs the input, and its extra threads must not change the result.
template <typename acc_t, typename in_t, typename Op>
__device__ __forceinline__ acc_t load_or_identity(const in_t* in, int64_t i, int64_t n,
                                                  const Op& op) {
  return i < n ? static_cast<acc_t>(in[i]) : op.identity();
}

// Dynamic shared memory as acc_t*. `extern __shared__ acc_t s[]` would be
// redeclared with another type by every instantiation, which nvcc rejects;
// one untyped byte buffer, cast on use, is declared once.
template <typename acc_t>
__device__ __forceinline__ acc_t* shared_scratch() {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  return reinterpret_cast<acc_t*>(shared_bytes);
}

// gridDim.x is at most 2^31 - 1.
constexpr int64_t kMaxGridX = std::numeric_limits<int32_t>::max();

// Steps 01-06 give each block one tile of `tile` elements. When the tiles
// outnumber gridDim.x's limit they are launched in chunks; each chunk sees its
// own slice of the input and of the partials, so the kernels stay unchanged:
//   launch_chunk(first_element, elements_left, first_tile, blocks)
template <typename LaunchChunk>
void launch_one_block_per_tile(int64_t n, int64_t tile, LaunchChunk launch_chunk) {
  const int64_t tiles = ceil_div(n, tile);
  for (int64_t first_tile = 0; first_tile < tiles; first_tile += kMaxGridX) {
    const int64_t blocks = std::min(tiles - first_tile, kMaxGridX);
    launch_chunk(first_tile * tile, n - first_tile * tile, first_tile,
                 static_cast<unsigned>(blocks));
  }
}

// Steps 07-09 loop over the input (grid-stride), so one wave of resident
// blocks is enough: more would only add partials. `block_step` is the number
// of elements a block consumes per loop iteration.
inline int64_t grid_stride_blocks(int64_t n, int64_t block_step, int block_size) {
  const int64_t resident = static_cast<int64_t>(cuda::sm_count()) * (cuda::max_threads_per_sm() / block_size);
  return std::min(ceil_div(n, block_step), resident);
}

}  // namespace ladder
}  // namespace torch_reduce
