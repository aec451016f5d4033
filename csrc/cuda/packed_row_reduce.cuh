// Reduces rows of at most a 16-byte vector, stored back to back, whose
// length divides the vector width (float32 rows of 1, 2 or 4 elements,
// bfloat16 rows of 1, 2, 4 or 8): each lane's load holds kRows whole rows,
// and one store writes their kRows results, so that a warp reads 512
// contiguous bytes with one instruction, where row_reduce_kernel reads a row
// per lane with a load per element.
//
// Rows of exactly one vector (kRows 1) come here too. row_reduce_kernel read
// them eight rows a lane (its several-rows kernel: 80 registers, three blocks
// an SM, and few waves of them for a million rows); here a lane keeps four
// loads in flight at 46 registers. Eight loads a lane were slower.
//
// Rows of exactly two vectors (kLanes 2: float32 rows of 8, bfloat16 of 16)
// take a pair of adjacent lanes each, a vector a lane, for the same reason:
// row_reduce_kernel read them four rows a lane in its several-rows kernel.
// ptxas: 37 to 59 registers, no spills.
//
// A row's order is the one row_reduce_kernel gives it: a row of one item has
// its elements folded in index order, starting from the identity; a row of
// two items has each item folded so, then the second combined into the first.
// So a row gives the same bits packed or not (batch invariance,
// tests/test_ops.py).
#pragma once

#include "row_reduce.cuh"

namespace torch_reduce {
namespace cuda {

// The vectors (kLanes) of the longest rows read here: the longest rows that
// row_reduce_kernel reads several to a lane; it reads longer ones a row a
// lane or a group, in its one-row kernels.
constexpr int kPackedRowVectors = kShortRowItems;

template <typename scalar_t, typename out_t>
struct PackedRowArgs {
  const scalar_t* data;  // 16-byte aligned
  int64_t rows;          // of kWidth / kRows, or kWidth * kLanes, elements each
  out_t* out;            // aligned to kRows outputs
};

// kRows: rows a vector; kLanes: vectors (and lanes) a row; one of them is 1.
// kEvictFirst: the loads read evict-first (evict_first_input).
template <typename scalar_t, typename acc_t, typename out_t, typename Op, int kRows, int kLanes, bool kEvictFirst>
__global__ void __launch_bounds__(kRowThreads) packed_row_reduce_kernel(PackedRowArgs<scalar_t, out_t> args, Op op) {
  static_assert(kRows == 1 || kLanes == 1, "rows of at most a vector, or of whole vectors");
  static_assert(kWarpSize % kLanes == 0, "a row's lanes lie in one warp");
  constexpr int kWidth = vector_width<scalar_t>();
  constexpr int kLength = kWidth / kRows;
  const int64_t vectors = args.rows / kRows * kLanes;
  // Slot s of a warp's pass reads vector warp_first + s * 32 + lane.
  constexpr int64_t kWarpVectors = kRowSlots * kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warp = (blockIdx.x * static_cast<int64_t>(kRowThreads) + threadIdx.x) / kWarpSize;
  const int64_t warp_step = static_cast<int64_t>(gridDim.x) * (kRowThreads / kWarpSize) * kWarpVectors;
  for (int64_t warp_first = warp * kWarpVectors; warp_first < vectors; warp_first += warp_step) {
    Vector<scalar_t> loaded[kRowSlots];
#pragma unroll
    for (int s = 0; s < kRowSlots; ++s) {
      const int64_t v = warp_first + s * kWarpSize + lane;
      if (v < vectors) loaded[s] = load_input<kEvictFirst>(args.data + v * kWidth);
    }
#pragma unroll
    for (int s = 0; s < kRowSlots; ++s) {
      const int64_t v = warp_first + s * kWarpSize + lane;
      if constexpr (kLanes == 1) {
        if (v < vectors) {
          Vector<out_t, kRows> results;
#pragma unroll
          for (int r = 0; r < kRows; ++r)
            results.value[r] =
                static_cast<out_t>(op.project(fold_elements<acc_t>(loaded[s].value + r * kLength, kLength, 0, op)));
          store_vector(args.out + v * kRows, results);
        }
      } else {
        // Every lane shuffles (a row's lanes are all in range or all out).
        // Vector v is item v % kLanes of its row.
        const acc_t item = v < vectors ? fold_vector(op.identity(), loaded[s], v % kLanes * kWidth, op) : op.identity();
        // On the row's first lane, lane ^ i is its item i: folded in order.
        acc_t total = item;
#pragma unroll
        for (int i = 1; i < kLanes; ++i) total = op.combine(total, shuffle_xor(item, i, kLanes));
        if (v < vectors && lane % kLanes == 0) args.out[v / kLanes] = static_cast<out_t>(op.project(total));
      }
    }
  }
  // The rows after the last whole vector (fewer than kRows), a thread each.
  if constexpr (kRows > 1) {
    const int64_t thread = blockIdx.x * static_cast<int64_t>(kRowThreads) + threadIdx.x;
    const int64_t tail_row = vectors * kRows + thread;
    if (thread < kRows && tail_row < args.rows) {
      const acc_t acc = fold_elements<acc_t>(args.data + tail_row * kLength, kLength, 0, op);
      args.out[tail_row] = static_cast<out_t>(op.project(acc));
    }
  }
}

}  // namespace cuda
}  // namespace torch_reduce
