// Reduces many contiguous rows of up to a few thousand elements: a group of
// `group` lanes (a power of two <= 32, chosen from the row length) owns one
// row at a time, so that a warp reads whole 128-byte lines even for rows of
// 2 to 32 elements.
//
// Every lane keeps kRowSlots items in flight (twice that many for lanes of
// more items, but of 8-byte elements) of one row, or kShortRowSlots items of
// several short rows (rows_per_pass > 1: rows of at most kShortRowItems
// items a lane). A row's order -- each lane folds its items in index order,
// then the fixed butterfly across the group -- depends only on the row
// length, never on the number of rows or the row's alignment (batch
// invariance). Rows of at most kShortRowItems items a lane take either
// kernel, by the number of rows (short_rows_per_pass); the one-row kernel
// folds their items in the same order, with identities after them, which
// change no bits.
#pragma once

#include <type_traits>

#include "gathered_rows.cuh"
#include "output.cuh"
#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

constexpr int kRowThreads = 256;
constexpr int kRowSlots = 4;
// Rows of at most kShortRowItems items a lane are read several at a time,
// kShortRowSlots loads in flight. (Rows of 3 and 4 items a lane stay one at a
// time: read eight items a lane, long float32 rows lost more than bfloat16
// ones gained.)
constexpr int kShortRowItems = 2;
constexpr int kShortRowSlots = 8;

// The most rows a lane reads per pass (more than one: the several-rows kernel).
__host__ __device__ inline int row_reduce_rows_per_pass(int items_per_lane) {
  return items_per_lane > kShortRowItems ? 1 : kShortRowSlots / items_per_lane;
}

template <typename scalar_t, typename out_t>
struct RowArgs {
  const scalar_t* data;
  int64_t rows;
  int64_t row_length;
  int64_t row_stride;
  int group;           // lanes per row
  int items_per_lane;  // ceil(items / group); an item is a vector or an element
  out_t* out;
  int rows_per_pass;   // rows a lane reads per pass: 1, or (several rows) up to row_reduce_rows_per_pass(items_per_lane)
};

// Blocks per SM the kernels of 16-byte loads and 32-bit accumulators are
// built for (ptxas sm_90): as many as their registers allow without spills.
// One row a lane: 5 blocks (float32), 4 (bfloat16). Several rows: 3 blocks,
// eight 16-byte loads in flight. The others spill there: several rows get 2
// blocks, one row no bound. Shifted items (row_kernel_shifts_items), four a
// step: 3 blocks (eight a step fit one block an SM, and were slower than
// element loads).
template <typename scalar_t, typename acc_t, bool kVectorized, bool kSeveralRows, bool kShifted>
constexpr int row_kernel_min_blocks() {
  constexpr bool kBuiltFor = kVectorized && sizeof(acc_t) == 4;
  if constexpr (kSeveralRows) return kBuiltFor ? 3 : 2;
  if constexpr (kShifted) return 3;
  return kBuiltFor ? (sizeof(scalar_t) >= 4 ? 5 : 4) : 1;
}

// Rows of 2-byte elements, one a lane, not all 16-byte aligned (nor
// gathered): each item is read as the two aligned vectors that hold it
// (UnalignedItem), four items a step, where element by element an item takes
// eight loads. Items of 4- and 8-byte elements take four and two loads
// element by element, and shifted they lost; so did 1-byte items, sixteen
// elements to shift and fold, and several rows a lane, whose items share
// lines.
template <typename scalar_t>
constexpr bool row_kernel_shifts_items(bool vectorized, bool several_rows, bool gathered) {
  return sizeof(scalar_t) == 2 && !vectorized && !several_rows && !gathered;
}

// Lanes of more than kRowSlots items of one row load twice as many a step,
// but for 8-byte elements: there ptxas (sm_90) kept the eight 16-byte loads
// of a step in one or two register quads, each load issued after the
// compares or adds of the one before (float64 amin: LDG, DSETP, ..., LDG),
// where four a step stay in flight together. Four a step for every type lost
// on small rows of the others.
template <typename scalar_t>
constexpr int row_kernel_long_row_loads() {
  return sizeof(scalar_t) < 8 ? 2 * kRowSlots : kRowSlots;
}

// An item is always kWidth consecutive elements (the last one may be short),
// so the order of a row's operations never depends on its alignment.
// kVectorized: every row starts 16-byte aligned and its length is a multiple
// of the vector width, so each item is read with one 16-byte load; else
// its elements are read one by one, or (row_kernel_shifts_items) the two
// aligned vectors that hold it.
// kLoads: the items a lane loads a step, of one row (kRowSlots, or twice
// that for lanes of more items: row_kernel_long_row_loads) or of several
// (kShortRowSlots, with kSeveralRows: rows_per_pass > 1). A kernel for
// each, so that each gets the registers it needs: the several rows' loads
// and slots cost the one-row kernels their occupancy, and one kernel for
// both one-row lengths was slower.
// kEvictFirst: the vectorized loads read evict-first (evict_first_input);
// launched for one row a lane only (for several rows, evict-first loads
// made that kernel spill: ptxas sm_90, as a run-time policy).
// kPermutedOutput: args.out is a permuted view, `out_index`
// (output.cuh). kGathered: the rows are read through `gather`
// (gathered_rows.cuh), element by element; args.row_stride is unused.
template <typename scalar_t, typename acc_t, typename out_t, typename Op, bool kVectorized, int kLoads, bool kSeveralRows,
          bool kEvictFirst, bool kPermutedOutput, bool kGathered>
__global__ void __launch_bounds__(
    kRowThreads,
    (row_kernel_min_blocks<scalar_t, acc_t, kVectorized, kSeveralRows,
                           row_kernel_shifts_items<scalar_t>(kVectorized, kSeveralRows, kGathered)>()))
    row_reduce_kernel(RowArgs<scalar_t, out_t> args, Op op, StridedIndex out_index, RowGather gather) {
  static_assert(!(kGathered && kVectorized), "gathered rows are read element by element");
  constexpr int kWidth = vector_width<scalar_t>();
  const Output<out_t> out{args.out, out_index};
  const int group = args.group;
  const int lane = threadIdx.x % group;
  // Rows here are shorter than kSplitRowBytes, so their items' indices fit an
  // int: the one-row loop counts its items in 32 bits (below).
  const int items = static_cast<int>((args.row_length + kWidth - 1) / kWidth);
  // args.rows_per_pass (1 for the one-row kernels), bounded here by what the
  // items allow: read alone, or as the constant 1, it cost registers and
  // spills (ptxas sm_90).
  const int most_rows = row_reduce_rows_per_pass(args.items_per_lane);
  const int rows_per_pass = args.rows_per_pass < most_rows ? args.rows_per_pass : most_rows;
  const int64_t groups_per_block = kRowThreads / group;
  const int64_t group_id = blockIdx.x * groups_per_block + threadIdx.x / group;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * groups_per_block * rows_per_pass;
  // The first row of the warp's first group: the whole warp loops together,
  // since the butterfly needs all 32 lanes.
  const int64_t warp_first_group = blockIdx.x * groups_per_block + (threadIdx.x / kWarpSize) * (kWarpSize / group);

  constexpr bool kShifted = row_kernel_shifts_items<scalar_t>(kVectorized, kSeveralRows, kGathered);
  static_assert(!kShifted || kLoads == kRowSlots, "shifted items: four a step (row_kernel_min_blocks)");
  // An item's load: one 16-byte vector, the two aligned vectors that hold
  // it, or its elements one by one.
  using Loaded = std::conditional_t<kVectorized, Vector<scalar_t>,
                                    std::conditional_t<kShifted, UnalignedItem<scalar_t>, Elements<scalar_t>>>;
  auto load_item = [&](int64_t row, auto item) -> Loaded {
    if constexpr (kGathered) {
      return load_gathered(args.data + strided_offset(static_cast<uint32_t>(row), gather.rows), item * kWidth,
                           args.row_length, gather);
    } else {
      const scalar_t* p = args.data + row * args.row_stride + item * kWidth;
      if constexpr (kVectorized) {
        return load_input<kEvictFirst>(p);
      } else if constexpr (kShifted) {
        return load_unaligned_item(p, args.row_length - item * kWidth);
      } else {
        return load_elements(p, args.row_length - item * kWidth);
      }
    }
  };
  // Item `item` of its row: its first element is at position item * kWidth.
  auto fold_item = [&](const Loaded& loaded, int64_t item) -> acc_t {
    const int64_t position = item * kWidth;
    if constexpr (kVectorized) {
      return fold_vector(op.identity(), loaded, position, op);
    } else if constexpr (kShifted) {
      return fold_elements(op.identity(), shifted_elements(loaded), position, op);
    } else {
      return fold_elements(op.identity(), loaded, position, op);
    }
  };

  for (int64_t first = group_id * rows_per_pass, warp_first = warp_first_group * rows_per_pass; warp_first < args.rows;
       first += row_step, warp_first += row_step) {
    if constexpr (!kSeveralRows) {
      // One row; slot s holds items lane + group * (s + kRowSlots * j).
      acc_t acc[kRowSlots];
#pragma unroll
      for (int s = 0; s < kRowSlots; ++s) acc[s] = op.identity();
      // kLoads items a step (a step is a round trip to memory): item
      // i + kRowSlots folds after item i into the same slot, so the order is
      // the same for both lengths. A step loads all its items first and
      // folds them after; an item past the row's end loads item 0 again and
      // is dropped. With loads under a predicate, folded as they came, ptxas
      // kept one bfloat16 load in flight at a time (sm_90 SASS).
      // Items counted in 32 bits rather than 64: fewer integer operations
      // around the loads (sm_90 SASS).
      for (int base = 0; first < args.rows && base < items; base += kLoads * group) {
        Loaded loaded[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          const int item = base + u * group + lane;
          loaded[u] = load_item(first, item < items ? item : 0);
          // Items read element by element or as two vectors were otherwise
          // folded item by item, each waiting for its loads (sm_90 SASS).
          if constexpr (!kVectorized) keep_loaded(loaded[u]);
        }
#pragma unroll
        for (int u = 0; u < kLoads; ++u) {
          const bool valid = base + u * group + lane < items;
          if constexpr (kLoads == kRowSlots && !kShifted) {
            // Folded under `valid`, a bfloat16 item's fold became a branch,
            // and ptxas moved the second load into it, below the first
            // item's fold: two round trips to memory a step (sm_90 SASS).
            // Folded unconditionally, the four loads go out first, with fewer
            // instructions and registers. The eight-load kernels keep the branches:
            // there they are what keeps ptxas from interleaving loads and folds
            // (unconditional folds: more registers, the loads one or two at a
            // time). So do shifted items, whose loads went out first too but
            // which lost.
            acc_t folded = fold_item(loaded[u], base + u * group + lane);
            keep_computed(folded);
            acc[u % kRowSlots] = op.combine(acc[u % kRowSlots], valid ? folded : op.identity());
          } else {
            // The fold stays inside the select: computed before it, even
            // with no keep_computed, ptxas interleaves the eight-load
            // kernels' loads and folds as above (sm_90 SASS).
            acc[u % kRowSlots] =
                op.combine(acc[u % kRowSlots], valid ? fold_item(loaded[u], base + u * group + lane) : op.identity());
          }
        }
      }
#pragma unroll
      for (int s = 1; s < kRowSlots; ++s) acc[0] = op.combine(acc[0], acc[s]);
      const acc_t total = group_reduce(acc[0], group, op);
      if (lane == 0 && first < args.rows)
        *out.template at<kPermutedOutput>(first) = static_cast<out_t>(op.project(total));
    } else {
      // Several short rows: the warp's groups take rows_per_pass rounds of
      // consecutive rows (row r of group g is row g + r * groups of the
      // warp's), so that each load of the warp reads adjacent rows. Slot s
      // holds item k * group + lane of round r, s = r * ipl + k. As in one
      // row's steps, every slot loads before any folds, a slot past the rows
      // or the row's items loading item 0 of row 0: under a predicate each,
      // the loads went one at a time (bfloat16) or two (float32) (sm_90
      // SASS); keep_loaded stops the compiler from moving them there.
      const int ipl = args.items_per_lane;
      const int groups_per_warp = kWarpSize / group;
      const int64_t group_row = warp_first + (threadIdx.x % kWarpSize) / group;
      static_assert(kLoads == kShortRowSlots, "several rows load kShortRowSlots items");
      // Slots loaded at once: all of them, but for items of 16 one-byte
      // elements read one by one, half (all of them spilled: ptxas sm_90).
      constexpr int kBatch = kVectorized || sizeof(scalar_t) > 1 ? kShortRowSlots : kShortRowSlots / 2;
      acc_t row_acc = op.identity();
      int r = 0, k = 0;            // the fold's round and item, counted along s without divisions
      int load_r = 0, load_k = 0;  // the same for the loads, a batch ahead
#pragma unroll
      for (int first_slot = 0; first_slot < kShortRowSlots; first_slot += kBatch) {
        Loaded loaded[kBatch];
        bool valid[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int64_t row = group_row + static_cast<int64_t>(load_r) * groups_per_warp;
          const int64_t item = load_k * group + lane;
          valid[b] = load_r < rows_per_pass && row < args.rows && item < items;
          loaded[b] = load_item(valid[b] ? row : 0, valid[b] ? item : 0);
          keep_loaded(loaded[b]);
          load_k = load_k + 1 == ipl ? 0 : load_k + 1;
          load_r = load_k == 0 ? load_r + 1 : load_r;
        }
        // Fold each row's slots in order, then its group's butterfly. The
        // conditions are uniform across the warp, as the butterfly needs.
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const acc_t slot = valid[b] ? fold_item(loaded[b], k * group + lane) : op.identity();
          row_acc = k == 0 ? slot : op.combine(row_acc, slot);
          if (k == ipl - 1 && r < rows_per_pass) {
            const acc_t total = group_reduce(row_acc, group, op);
            const int64_t row = group_row + static_cast<int64_t>(r) * groups_per_warp;
            if (lane == 0 && row < args.rows)
              *out.template at<kPermutedOutput>(row) = static_cast<out_t>(op.project(total));
          }
          k = k + 1 == ipl ? 0 : k + 1;
          r = k == 0 ? r + 1 : r;
        }
      }
    }
  }
}

}  // namespace cuda
}  // namespace torch_reduce
