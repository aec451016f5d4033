// column_flat_kernel: dense columns too narrow for a vector a row, read as
// the flat run of memory they are (see column_fold.cuh for the order).
#pragma once

#include "column_fold.cuh"

namespace torch_reduce {
namespace cuda {

// Columns whose items are narrower than a vector (an odd column count, a
// misaligned view) leave the other kernels reading each row in pieces of 2
// to 8 bytes. Where the rows are dense -- the columns are a window
// [first_column, first_column + columns) of frame rows of reduce_stride
// elements, less than a vector of them outside it, the frame 16-byte aligned
// -- eight frame rows are one run of 8 * reduce_stride elements, a whole
// number of vectors (launch_config.cuh, flat_first_column). A block reads
// those runs with 16-byte loads: unit v loads vector v of the eight runs of
// a chunk (its rows 8i to 8i + 7, i = 0..7), so that lane j, at run position
// v * width + j = r * reduce_stride + c, sees row 8i + r of frame column c:
// folded in i order it holds slot r of that column (rows r, r + 8, ...,
// r + 56). The units put their slots in shared memory, and a thread per
// column combines the eight (combine_slots): one level a pass, a value per
// column and chunk, the bits of the other kernels.

// Units (vectors of a run) of a chunk, and the chunks a block takes at once.
// A run has at most kColumnThreads vectors (flat_first_column), so the slots
// of a block's chunks fill kColumnThreads vectors of accumulators at most.
__host__ __device__ __forceinline__ int flat_run_vectors(int64_t reduce_stride, int width) {
  return static_cast<int>(kSlots * reduce_stride / width);
}
__host__ __device__ __forceinline__ int flat_chunks_per_block(int run_vectors) {
  return kColumnThreads / run_vectors;
}

// The loads of one unit -- vector v of a chunk's eight runs -- in flight.
// `rows`: the chunk's rows (all 64 where `whole`: every row in the view and
// before its last row, the chunk past the first row's first column, so that
// no load or fold needs a predicate).
template <typename in_t>
struct FlatUnit {
  Vector<in_t> loaded[kSlots];
  int rows;
  bool whole;
  int64_t first_row;  // of the reduction: the chunk's first (HasPositions)
};

// Issues a unit's loads, from `base` (its first vector) on, `run` elements
// apart. A vector that reaches outside the view -- elements before `lo` (the
// batch's first column) or from `hi` on (past its last row's last column),
// both relative to `base` -- is read element by element, its outside
// elements left at zero (they are folded into no column's result); only the
// first and last vectors of a batch can. `lo` and `hi` are clamped to the
// unit's span (a run has at most 2048 elements).
template <bool kEvictFirst, typename in_t>
__device__ __forceinline__ void load_flat_unit(FlatUnit<in_t>& unit, const in_t* base, int run, int lo, int hi) {
  constexpr int kWidth = vector_width<in_t>();
  bool inside[kSlots];
#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
    const int o = i * run;
    inside[i] = unit.whole || (o >= lo && o + kWidth <= hi);
    if (inside[i]) {
      unit.loaded[i] = load_input<kEvictFirst, in_t>(base + o);
    } else {
#pragma unroll
      for (int j = 0; j < kWidth; ++j) unit.loaded[i].value[j] = in_t{};
    }
  }
#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
    const int o = i * run;
    if (!inside[i] && o < hi && o + kWidth > lo) {
#pragma unroll
      for (int j = 0; j < kWidth; ++j)
        if (o + j >= lo && o + j < hi) unit.loaded[i].value[j] = base[o + j];
    }
    keep_loaded(unit.loaded[i]);
  }
}

// Folds a unit's loads, lane j into the slot of its row in each run (4 bits
// of lane_rows each); a whole chunk folds without predicates.
template <typename in_t, typename acc_t, typename Op>
__device__ __forceinline__ Vector<acc_t, vector_width<in_t>()> fold_flat_unit(const FlatUnit<in_t>& unit,
                                                                              uint32_t lane_rows, const Op& op) {
  constexpr int kWidth = vector_width<in_t>();
  Vector<acc_t, kWidth> acc;
#pragma unroll
  for (int j = 0; j < kWidth; ++j) acc.value[j] = op.identity();
  auto fold = [&](auto whole) {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
#pragma unroll
      for (int j = 0; j < kWidth; ++j) {
        const int row = kSlots * i + static_cast<int>((lane_rows >> (4 * j)) & 0xf);
        const acc_t folded =
            fold_element(op, acc.value[j], vector_element<acc_t>(unit.loaded[i], j), unit.first_row + row);
        acc.value[j] = decltype(whole)::value || row < unit.rows ? folded : acc.value[j];
      }
    }
  };
  if (unit.whole) {
    fold(std::true_type{});
  } else {
    fold(std::false_type{});
  }
  return acc;
}

// A block takes flat_chunks_per_block (batch, chunk) pairs a step, a unit a
// thread, and puts the units' slots in shared memory; then a thread per
// column of each pair combines the pair's slots and writes the chunk value
// to row `chunk` of the partials (the columns are longer than a chunk:
// flat_first_column). A step's loads are issued before the step before it combines (two
// buffers of slots), so that the block keeps streaming. kEvictFirst: the
// loads ask the L2 to evict their lines first (evict_first_input).
template <bool kEvictFirst, typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads, 2)
    column_flat_kernel(ColumnArgs<in_t, acc_t, out_t> args, int first_column, Op op) {
  start_pass();
  constexpr int kWidth = vector_width<in_t>();
  __shared__ Vector<acc_t, kWidth> stage[2][kColumnThreads];
  const int stride = static_cast<int>(args.reduce_stride);
  const int64_t run = kSlots * static_cast<int64_t>(stride);
  const int units = flat_run_vectors(stride, kWidth);
  const int per_block = flat_chunks_per_block(units);
  const int columns = static_cast<int>(args.columns);
  const int64_t chunks = (args.reduce + kFoldLength - 1) / kFoldLength;
  const int64_t pairs = args.batch * chunks;
  const int64_t limit = (args.reduce - 1) * stride + first_column + columns;
  // This thread's unit, the same in every step: vector v of the step's pair
  // p, whose lane j holds row (lane_rows >> 4j) & 15 of each run.
  const int p = threadIdx.x / units;
  const int v = threadIdx.x - p * units;
  uint32_t lane_rows = 0;
  {
    int r = v * kWidth / stride, c = v * kWidth - r * stride;
#pragma unroll
    for (int j = 0; j < kWidth; ++j) {
      lane_rows |= static_cast<uint32_t>(r) << (4 * j);
      if (++c == stride) c = 0, ++r;
    }
  }
  auto load_step = [&](FlatUnit<in_t>& unit, int64_t first_pair) {
    const int64_t pair = first_pair + p;
    if (p >= per_block || pair >= pairs) return false;
    const int64_t b = pair / chunks;
    const int64_t chunk = pair - b * chunks;
    const int64_t rows = args.reduce - chunk * kFoldLength;
    unit.whole = (chunk > 0 || first_column == 0) && rows > kFoldLength;
    unit.rows = static_cast<int>(rows < kFoldLength ? rows : kFoldLength);
    unit.first_row = chunk * kFoldLength;
    const int64_t e0 = chunk * kSlots * run + v * kWidth;  // the unit's first element in the batch's frame
    auto relative = [&](int64_t e) { return static_cast<int>(e < -1 ? -1 : e > kSlots * run ? kSlots * run : e); };
    load_flat_unit<kEvictFirst>(unit, args.data + b * args.batch_stride + e0, static_cast<int>(run),
                                relative(first_column - e0), relative(limit - e0));
    return true;
  };
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  int64_t first_pair = blockIdx.x * static_cast<int64_t>(per_block);
  FlatUnit<in_t> unit;
  bool loaded = load_step(unit, first_pair);
  for (int parity = 0; first_pair < pairs; parity ^= 1) {
    if (loaded) stage[parity][threadIdx.x] = fold_flat_unit<in_t, acc_t>(unit, lane_rows, op);
    loaded = load_step(unit, first_pair + step);
    // Also orders this step's reads of the buffer before the writes to it
    // two steps on.
    __syncthreads();
    const acc_t* slots = stage[parity][0].value;
    const int block_pairs = static_cast<int>(pairs - first_pair < per_block ? pairs - first_pair : per_block);
    for (int o = threadIdx.x; o < block_pairs * columns; o += blockDim.x) {
      const int q = o / columns;
      const int c = o - q * columns;
      const int64_t pair = first_pair + q;
      const int64_t b = pair / chunks;
      acc_t slot[kSlots];
#pragma unroll
      for (int s = 0; s < kSlots; ++s) slot[s] = slots[q * run + s * stride + first_column + c];
      const acc_t value[1] = {combine_slots(slot, op)};
      store_item(args, /*last_pass=*/false, pair - b * chunks, b * args.columns + c, value, op);
    }
    first_pair += step;
  }
}

}  // namespace cuda
}  // namespace torch_reduce
