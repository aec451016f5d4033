// Column reductions: the order they compute, and what their kernels share.
//
// Reduces strided columns: element (b, r, c) at b * batch_stride +
// r * reduce_stride + c, reduced over r, with c contiguous.
//
// The order of a column's operations depends on its length R alone -- never
// on the number of columns or batches, the alignment or the launch -- so
// that sum(x[:, :k], 0) is sum(x, 0)[:k] bitwise (batch invariance). It is
// defined level by level:
//   one level folds each run of 64 consecutive values into one ("fold64"):
//   slot s (0..7) folds values s, s + 8, ..., s + 56 in that order, and the
//   eight slots are combined by the fixed tree ((p0 p4)(p2 p6))((p1 p5)(p3 p7));
//   levels repeat on the results until one value is left.
// The eight slots are independent, which lets four kernels compute that
// same order, each where it reads memory best:
//  - column_short_kernel.cuh (R <= 64, or the first level of longer columns
//    in large inputs): a thread reads all rows of a chunk of a few adjacent
//    columns, eight at a time, a group of slots a step (or, for some chunks
//    of narrow items, eight consecutive rows a step: a row of each slot).
//  - column_block_kernel.cuh (many columns): the slots are a block's eight
//    warps, each lane reads adjacent columns (a warp's load is 32 adjacent
//    vectors), and the tree runs through shared memory.
//  - column_tile_kernel.cuh (few columns): the slots are eight lanes of a
//    warp, so that a warp reads consecutive rows, and the tree runs through
//    shuffles.
//  - column_flat_kernel.cuh (the first level of long, dense columns of
//    narrow items): eight rows are one run of memory read with 16-byte
//    loads, a lane of a load holding one slot of one column, and the tree
//    runs through shared memory.
// The block and tile kernels fold one level a pass, or two when a block (or
// a team of lanes) owns a whole tile of 64 chunks. A pass writes its results as a new column
// problem [values, batch * columns] of accumulators, and passes repeat until
// one value is left; the last one writes the output. launch_config.cuh
// picks the kernel of each pass; dependent_launch.cuh starts each pass
// early.
#pragma once

#include <type_traits>
#include <utility>

#include "dependent_launch.cuh"
#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

constexpr int kColumnThreads = 256;
// Slots of a fold64, and the values one level folds into one.
constexpr int kSlots = 8;
constexpr int64_t kFoldLength = kSlots * kSlots;
// column_short_kernel's threads of one-column items load all rows of a chunk
// of up to this many rows a slot before they fold them (kAhead there).
constexpr int kAheadRowsPerSlot = 4;
// Lanes of column_tile_kernel that share a row of a chunk: up to 4 items.
constexpr int kMaxRowLanes = 4;

// Columns read by one load: up to 16 bytes of input, and up to 32 bytes or 8
// of accumulators per lane (so that column_block_kernel's shared memory and
// tree threads suffice).
template <typename in_t, typename acc_t>
constexpr int column_width() {
  constexpr int by_input = vector_width<in_t>();
  constexpr int by_accumulator = 32 / sizeof(acc_t) < 8 ? 32 / sizeof(acc_t) : 8;
  return by_input < by_accumulator ? by_input : by_accumulator;
}

// 32-bit registers that a load of `width` columns of `element_bytes` each
// fills: an item narrower than a register takes a whole one.
constexpr int item_registers(int width, int element_bytes) { return (width * element_bytes + 3) / 4; }

// Chunks a step of column_block_kernel reads (and, up to two, rounds a lane
// group of column_tile_kernel's teams keeps in flight) for items of kItems columns:
// as many as the registers of the widest item's load hold of this one's, so
// that a narrow item keeps about as many bytes in flight as a wide one. The
// shared memory and tree threads of the widest item then hold a step.
// Accumulators narrower than 32 bits keep one: their kernels take 124-128
// registers with one, and spilled with more (ptxas sm_90, int16 amax).
template <typename in_t, typename acc_t, int kItems>
constexpr int chunks_per_step() {
  constexpr int element_bytes = static_cast<int>(sizeof(in_t));
  constexpr int widest = item_registers(column_width<in_t, acc_t>(), element_bytes);
  return sizeof(acc_t) < 4 ? 1 : widest / item_registers(kItems, element_bytes);
}

// Items narrower than this many bytes (one or two half-precision columns,
// one float32 column, where an odd column count or a misaligned view allows
// no wider load) read a 32-byte sector in several pieces (column_tile_kernel's
// kMaxRowLanes lanes of a row read less than one), and a thread that reads
// one a row keeps few bytes in flight.
constexpr int kSectorBytes = 32;
constexpr int kNarrowItemBytes = kSectorBytes / kMaxRowLanes;

// The most items a thread of column_short_kernel reads, kWarpSize items
// apart, for items of `width` columns: for narrow ones, as many as fill the
// registers of one 16-byte vector (item_registers), up to the columns of the
// widest item (its accumulators). One-byte elements keep one item a thread: their kernels
// for several took 118-178 registers (ptxas sm_90, 8-bit and bool amax).
template <typename in_t, typename acc_t>
constexpr int short_spread(int width) {
  const int item_bytes = width * static_cast<int>(sizeof(in_t));
  const int by_registers = kVectorBytes / 4 / item_registers(width, static_cast<int>(sizeof(in_t)));
  const int by_columns = column_width<in_t, acc_t>() / width;
  if (item_bytes >= kNarrowItemBytes || sizeof(in_t) == 1) return 1;
  return by_registers < by_columns ? by_registers : by_columns;
}

// Calls f(std::integral_constant<int, W>{}) for the run-time item width W, a
// power of two from kMin up to kMax: each width gets code (or a kernel) of
// its own.
template <int kMax, int kMin = 1, typename F>
__host__ __device__ __forceinline__ void with_width(int width, F&& f) {
  if constexpr (kMax > kMin) {
    if (width == kMax) {
      f(std::integral_constant<int, kMax>{});
    } else {
      with_width<kMax / 2, kMin>(width, f);
    }
  } else {
    f(std::integral_constant<int, kMin>{});
  }
}

template <typename acc_t, typename Op>
__device__ __forceinline__ acc_t combine_slots(const acc_t (&p)[kSlots], const Op& op) {
  return op.combine(op.combine(op.combine(p[0], p[4]), op.combine(p[2], p[6])),
                    op.combine(op.combine(p[1], p[5]), op.combine(p[3], p[7])));
}

template <typename in_t, typename acc_t, typename out_t>
struct ColumnArgs {
  const in_t* data;
  int64_t batch;
  int64_t reduce;
  int64_t columns;
  int64_t batch_stride;
  int64_t reduce_stride;
  int width;          // columns per item, read by one load: a power of two up to column_width()
  int64_t items;      // ceil(columns / width)
  int row_lanes;      // tile kernel: items sharing a row of a chunk (1, 2 or 4)
  acc_t* partials;    // [values left after this pass, batch * columns], unless it is the last pass
  out_t* out;         // [batch * columns], on the last pass
};

// An ops object whose projection is left out: a pass that writes partials
// stores its values as they are (mean scales the output alone). Its
// elements are mapped as the op's are (HasMap below).
template <typename Op>
struct Unprojected {
  static constexpr bool kPositions = HasPositions<Op>::value;
  Op op;
  __device__ __forceinline__ auto identity() const { return op.identity(); }
  template <typename T>
  __device__ __forceinline__ T map(T x) const {
    return map_element(op, x);
  }
  template <typename T>
  __device__ __forceinline__ T at(T x, int64_t position) const {
    return map_element(op, x, position);
  }
  // An op's ordered step (op_base.h, HasOrderedFold: argmax's), where it
  // has one. Not logsumexp's plain step: in these passes it gives the
  // combine's bits, and tall bfloat16 columns were slower with it
  // (benchmarks/results/dims_fold_steps_rest_h100.json).
  template <typename T, typename Same = Op>
  __device__ __forceinline__ auto fold(T acc, T x, int64_t position) const
      -> decltype(std::declval<const Same&>().fold(acc, x, position)) {
    return op.fold(acc, x, position);
  }
  template <typename T>
  __device__ __forceinline__ T combine(T a, T b) const {
    return op.combine(a, b);
  }
  template <typename T>
  __device__ __forceinline__ T project(T a) const {
    return a;
  }
};
}  // namespace cuda
template <typename Op>
struct HasMap<cuda::Unprojected<Op>> : HasMap<Op> {};
namespace cuda {

// Writes an item of kItems columns: to the output (projected) on the last
// pass, else to row `value_row` of the partials.
template <int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void store_item(const ColumnArgs<in_t, acc_t, out_t>& args, bool last_pass,
                                           int64_t value_row, int64_t output, const acc_t (&value)[kItems],
                                           const Op& op) {
  if (last_pass) {
    Vector<out_t, kItems> v;
#pragma unroll
    for (int i = 0; i < kItems; ++i) v.value[i] = static_cast<out_t>(op.project(value[i]));
    store_vector(args.out + output, v);
  } else {
    Vector<acc_t, kItems> v;
#pragma unroll
    for (int i = 0; i < kItems; ++i) v.value[i] = value[i];
    store_vector(args.partials + value_row * args.batch * args.columns + output, v);
  }
}

// Loads rows 0, 1, ..., 7 of kItems adjacent columns, `stride` elements
// apart, all eight in flight; rows at or past `count` read row 0 again, so
// `base` must be readable even when count is 0. Unpredicated loads let ptxas
// keep the eight loads in flight with few registers: with loads under
// `k < count` it held each one's address and predicate, and split bfloat16
// vectors into 16-bit registers (column_chunk_kernel bfloat16: about twice
// the registers).
template <int kItems, typename in_t>
__device__ __forceinline__ void load_rows(const in_t* base, int64_t stride, int count,
                                          Vector<in_t, kItems> (&loaded)[kSlots]) {
#pragma unroll
  for (int k = 0; k < kSlots; ++k) loaded[k] = load_vector<in_t, kItems>(k < count ? base + k * stride : base);
}

// Folds the first `count` loaded rows into acc (one accumulator per column),
// in row order; loaded[k] is row first_row + k * kSlots of the reduction
// (HasPositions); rows outer, so that each loaded vector dies once folded. A
// full chunk folds without predicates, so that ptxas does not sink a load
// into its predicated fold (and wait for it there).
template <int kItems, typename in_t, typename acc_t, typename Op>
__device__ __forceinline__ void fold_rows(acc_t (&acc)[kItems], const Vector<in_t, kItems> (&loaded)[kSlots], int count,
                                          int64_t first_row, const Op& op) {
  auto fold = [&](int rows) {
#pragma unroll
    for (int k = 0; k < kSlots; ++k) {
      if (k < rows) {
#pragma unroll
        for (int i = 0; i < kItems; ++i)
          acc[i] = fold_element(op, acc[i], vector_element<acc_t>(loaded[k], i), first_row + k * kSlots);
      }
    }
  };
  if (count == kSlots) {
    fold(kSlots);
  } else {
    fold(count);
  }
}

// Rows of a chunk that slot s folds: s, s + 8, ... below `rows` (the rows
// left from the chunk's first; a chunk has at most 64).
__device__ __forceinline__ int slot_rows(int64_t rows, int s) {
  const int chunk_rows = static_cast<int>(rows < kFoldLength ? rows : kFoldLength);
  return chunk_rows > s ? (chunk_rows - s + kSlots - 1) / kSlots : 0;
}

}  // namespace cuda
}  // namespace torch_reduce
