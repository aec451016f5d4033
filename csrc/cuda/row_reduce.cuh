// Reduces many contiguous rows of up to a few thousand elements: a group of
// `group` lanes (a power of two <= 32, chosen from the row length) owns one
// row at a time, so that a warp reads whole 128-byte lines even for rows of
// 2 to 32 elements.
//
// Every lane keeps kRowSlots items in flight (twice that many for lanes of
// more items): items of one long row, or one item of each of several short
// rows (rows_per_pass > 1). A row's order -- each lane folds its items in
// index order, then the fixed butterfly across the group -- depends only on
// the row length, never on the number of rows or the row's alignment (batch
// invariance).
#pragma once

#include <type_traits>

#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

constexpr int kRowThreads = 256;
constexpr int kRowSlots = 4;

template <typename scalar_t, typename out_t>
struct RowArgs {
  const scalar_t* data;
  int64_t rows;
  int64_t row_length;
  int64_t row_stride;
  int group;           // lanes per row
  int items_per_lane;  // ceil(items / group); an item is a vector or an element
  out_t* out;
};

// An item is always kWidth consecutive elements (the last one may be short),
// so the order of a row's operations never depends on its alignment.
// kVectorized: every row starts 16-byte aligned and its length is a multiple
// of the vector width, so each item is read with one 16-byte load.
template <typename scalar_t, typename acc_t, typename out_t, typename Op, bool kVectorized>
__global__ void __launch_bounds__(kRowThreads) row_reduce_kernel(RowArgs<scalar_t, out_t> args, Op op) {
  constexpr int kWidth = vector_width<scalar_t>();
  const int group = args.group;
  const int lane = threadIdx.x % group;
  const int64_t items = (args.row_length + kWidth - 1) / kWidth;
  const int rows_per_pass = args.items_per_lane >= kRowSlots ? 1 : kRowSlots / args.items_per_lane;
  const int64_t groups_per_block = kRowThreads / group;
  const int64_t group_id = blockIdx.x * groups_per_block + threadIdx.x / group;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * groups_per_block * rows_per_pass;
  // The first row of the warp's first group: the whole warp loops together,
  // since the butterfly needs all 32 lanes.
  const int64_t warp_first_group = blockIdx.x * groups_per_block + (threadIdx.x / kWarpSize) * (kWarpSize / group);

  // An item's load: one 16-byte vector, or the item folded from its elements.
  using Loaded = std::conditional_t<kVectorized, Vector<scalar_t>, acc_t>;
  auto load_item = [&](int64_t row, int64_t item) -> Loaded {
    const scalar_t* p = args.data + row * args.row_stride + item * kWidth;
    if constexpr (kVectorized) {
      return load_vector(p);
    } else {
      const int64_t count = args.row_length - item * kWidth < kWidth ? args.row_length - item * kWidth : kWidth;
      return fold_elements<acc_t>(p, count, op);
    }
  };
  auto fold_item = [&](const Loaded& loaded) -> acc_t {
    if constexpr (kVectorized) {
      return fold_vector(op.identity(), loaded, op);
    } else {
      return loaded;
    }
  };

  for (int64_t first = group_id * rows_per_pass, warp_first = warp_first_group * rows_per_pass; warp_first < args.rows;
       first += row_step, warp_first += row_step) {
    acc_t acc[kRowSlots];
    if (rows_per_pass == 1) {
      // One row; slot s holds items lane + group * (s + kRowSlots * j).
#pragma unroll
      for (int s = 0; s < kRowSlots; ++s) acc[s] = op.identity();
      // kLoads items a step: twice kRowSlots when the lane has more than
      // kRowSlots items (a step is a round trip to memory). Item i + kRowSlots
      // folds after item i into the same slot, so the order is the same. A
      // step loads all its items first and folds them after; an item past
      // the row's end loads item 0 again and is dropped. With loads under a
      // predicate, folded as they came, ptxas kept one bfloat16 load in
      // flight at a time (sm_90 SASS of 5163c86).
      auto fold_items = [&](auto loads) {
        constexpr int kLoads = decltype(loads)::value;
        for (int64_t base = 0; base < items; base += kLoads * group) {
          Loaded loaded[kLoads];
#pragma unroll
          for (int u = 0; u < kLoads; ++u) {
            const int64_t item = base + u * group + lane;
            loaded[u] = load_item(first, item < items ? item : 0);
          }
#pragma unroll
          for (int u = 0; u < kLoads; ++u) {
            const bool valid = base + u * group + lane < items;
            acc[u % kRowSlots] = op.combine(acc[u % kRowSlots], valid ? fold_item(loaded[u]) : op.identity());
          }
        }
      };
      if (first < args.rows) {
        if (args.items_per_lane > kRowSlots) {
          fold_items(std::integral_constant<int, 2 * kRowSlots>{});
        } else {
          fold_items(std::integral_constant<int, kRowSlots>{});
        }
      }
#pragma unroll
      for (int s = 1; s < kRowSlots; ++s) acc[0] = op.combine(acc[0], acc[s]);
      const acc_t total = group_reduce(acc[0], group, op);
      if (lane == 0 && first < args.rows) args.out[first] = static_cast<out_t>(op.project(total));
    } else {
      // Several short rows; slot s holds item (s % ipl) * group + lane of
      // row first + s / ipl. As in one row's steps, every slot loads before
      // any folds, a slot past the rows or the row's items loading item 0 of
      // row 0: under a predicate each, the loads went one at a time
      // (bfloat16) or two (float32) (sm_90 SASS of f2f40e0).
      const int ipl = args.items_per_lane;
      Loaded loaded[kRowSlots];
      bool valid[kRowSlots];
#pragma unroll
      for (int s = 0; s < kRowSlots; ++s) {
        const int64_t row = first + s / ipl;
        const int64_t item = (s % ipl) * group + lane;
        valid[s] = s / ipl < rows_per_pass && row < args.rows && item < items;
        loaded[s] = load_item(valid[s] ? row : 0, valid[s] ? item : 0);
      }
#pragma unroll
      for (int s = 0; s < kRowSlots; ++s) acc[s] = valid[s] ? fold_item(loaded[s]) : op.identity();
      // Fold each row's slots in order, then its group's butterfly. The
      // conditions are uniform across the warp, as the butterfly needs.
      acc_t row_acc = op.identity();
#pragma unroll
      for (int s = 0; s < kRowSlots; ++s) {
        row_acc = s % ipl == 0 ? acc[s] : op.combine(row_acc, acc[s]);
        const int r = s / ipl;
        if (s % ipl == ipl - 1 && r < rows_per_pass) {
          const acc_t total = group_reduce(row_acc, group, op);
          if (lane == 0 && first + r < args.rows) args.out[first + r] = static_cast<out_t>(op.project(total));
        }
      }
    }
  }
}

}  // namespace cuda
}  // namespace torch_reduce
