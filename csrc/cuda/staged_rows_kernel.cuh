// Reduces the rows of a small Gather layout (fewer than small_gather_elements,
// rows shorter than kSmallGatherMaxRowBytes) in one launch: each
// block copies a few whole rows into shared memory, reading every element
// through the layout's strides, then folds them there. Small inputs took a
// copy of the input and a row kernel (two launches, where torch takes one),
// and the row kernels' gathered loads lose to that copy there
// (in_place_plans.cpp, plan_gather).
//
// The copy into shared memory is flat: thread t stages elements t, t + 256,
// ... of the block's rows, kStageLoads loads in flight, each element found by
// a few multiply-shifts (strided_index.cuh), so that a small input's loads
// are all in flight at once. Where every run of innermost reduced elements
// is whole aligned vectors (args.stage_vectors), a load stages a vector, so
// that one place is found for kWidth elements: the kernel is issue-bound
// (ncu), and each place takes a chain of integer operations. It takes more
// registers that way (ptxas sm_90), no spills.
//
// The fold is row_reduce_kernel's order for a row of this length -- items of
// kWidth consecutive elements folded in index order from the identity, item
// i into slot (i / group) % kRowSlots, the slots in turn, then the butterfly
// over the row's `group` lanes -- so a staged row gives the bits of its copy
// read by the row kernels, and of the same row gathered in a larger input
// (batch invariance; tests/test_sum.py).
#pragma once

#include <type_traits>

#include "gathered_rows.cuh"
#include "output.cuh"
#include "primitives.cuh"
#include "row_reduce.cuh"

namespace torch_reduce {
namespace cuda {

// Loads a thread keeps in flight while staging: one round trip stages
// kStageLoads * kRowThreads elements, the most a block takes in rows of that
// length or less (staged_rows_per_block).
constexpr int kStageLoads = 8;
constexpr int kStagedElements = kStageLoads * kRowThreads;

template <typename scalar_t, typename out_t>
struct StagedRowsArgs {
  const scalar_t* data;
  int rows;            // the layout's batch; rows * row_length < 2^31
  int row_length;      // the layout's reduce
  int rows_per_block;  // rows_per_block * row_length elements fit the block's shared memory
  int group;           // lanes per row: row_group_size, as row_reduce_kernel's
  StridedIndex row_length_divisor;  // one dim of row_length: an element's row and place
  bool stage_vectors;  // runs of innermost reduced elements: whole vectors, aligned (stages_vectors)
  out_t* out;
};

// Copies elements [0, elements) of the block's rows, from first_row on, into
// `stage`, kLoadWidth elements a load (elements and every run of them a
// multiple of it, each vector aligned, where kLoadWidth > 1).
template <int kLoadWidth, typename scalar_t, typename out_t>
__device__ __forceinline__ void stage_rows(const StagedRowsArgs<scalar_t, out_t>& args, const RowGather& gather,
                                           int first_row, int elements, scalar_t* stage) {
  // A vector's bits moved as one uint4: as kLoadWidth one-byte elements
  // they took a register each (ptxas sm_90).
  using Load = std::conditional_t<kLoadWidth == 1, scalar_t, uint4>;
  static_assert(kLoadWidth == 1 || kLoadWidth * sizeof(scalar_t) == sizeof(uint4), "a vector is 16 bytes");
  const int loads = elements / kLoadWidth;
  // Load j holds element j * kLoadWidth of the block's rows, element e % length
  // of row e / length: all kStageLoads loads are issued before any is stored.
  for (int first = threadIdx.x; first < loads; first += kStageLoads * kRowThreads) {
    Load loaded[kStageLoads];
#pragma unroll
    for (int k = 0; k < kStageLoads; ++k) {
      const int j = first + k * kRowThreads;
      if (j < loads) {
        const auto e = static_cast<uint32_t>(j * kLoadWidth);
        const uint32_t row = divide_by_size(e, args.row_length_divisor, 0);
        const uint32_t place = e - row * static_cast<uint32_t>(args.row_length);
        loaded[k] = *reinterpret_cast<const Load*>(args.data + strided_offset(first_row + row, gather.rows) +
                                                   gathered_element(place, gather).offset);
      }
    }
#pragma unroll
    for (int k = 0; k < kStageLoads; ++k) {
      const int j = first + k * kRowThreads;
      if (j < loads) reinterpret_cast<Load*>(stage)[j] = loaded[k];
    }
  }
}

// kPermutedOutput: args.out is a permuted view, `out_index` (output.cuh).
template <typename scalar_t, typename acc_t, typename out_t, typename Op, bool kPermutedOutput>
__global__ void __launch_bounds__(kRowThreads)
    staged_rows_kernel(StagedRowsArgs<scalar_t, out_t> args, Op op, RowGather gather, StridedIndex out_index) {
  constexpr int kWidth = vector_width<scalar_t>();
  extern __shared__ __align__(kVectorBytes) unsigned char stage_bytes[];
  scalar_t* stage = reinterpret_cast<scalar_t*>(stage_bytes);
  const Output<out_t> out{args.out, out_index};
  const int length = args.row_length;
  const int first_row = blockIdx.x * args.rows_per_block;
  const int rows = min(args.rows_per_block, args.rows - first_row);
  const int elements = rows * length;

  if (args.stage_vectors) {
    stage_rows<kWidth>(args, gather, first_row, elements, stage);
  } else {
    stage_rows<1>(args, gather, first_row, elements, stage);
  }
  __syncthreads();

  const int group = args.group;
  const int lane = threadIdx.x % group;
  const int groups_per_block = kRowThreads / group;
  const int items = (length + kWidth - 1) / kWidth;
  // Every lane of a warp takes part in each butterfly, so the loop runs the
  // same number of times in the whole block.
  for (int base = 0; base < rows; base += groups_per_block) {
    const int row = base + static_cast<int>(threadIdx.x) / group;
    acc_t acc[kRowSlots];
#pragma unroll
    for (int s = 0; s < kRowSlots; ++s) acc[s] = op.identity();
    if (row < rows) {
      const scalar_t* p = stage + row * length;
      for (int step = 0; step < items; step += kRowSlots * group) {
#pragma unroll
        for (int s = 0; s < kRowSlots; ++s) {
          // An item as row_reduce_kernel folds one read element by element.
          const int item = step + s * group + lane;
          acc[s] = op.combine(acc[s], item < items ? fold_elements(op.identity(),
                                                                   load_elements(p + item * kWidth, length - item * kWidth),
                                                                   item * kWidth, op)
                                                   : op.identity());
        }
      }
    }
#pragma unroll
    for (int s = 1; s < kRowSlots; ++s) acc[0] = op.combine(acc[0], acc[s]);
    const acc_t total = group_reduce(acc[0], group, op);
    if (lane == 0 && row < rows)
      *out.template at<kPermutedOutput>(first_row + row) = static_cast<out_t>(op.project(total));
  }
}

}  // namespace cuda
}  // namespace torch_reduce
