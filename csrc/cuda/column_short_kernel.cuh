// column_short_kernel: columns of one chunk (at most 64 rows), a thread per
// column vector (see column_fold.cuh for the order it computes).
#pragma once

#include "column_fold.cuh"

namespace torch_reduce {
namespace cuda {

// One column chunk of up to 8 rows (one row per slot), all loaded at once.
// Not inlined, like fold_chunk_by_slots: each gets its own register budget.
template <int kItems, typename in_t, typename acc_t, typename Op>
__device__ __noinline__ void fold_short_chunk(const in_t* base, int64_t stride, int rows, acc_t (&value)[kItems],
                                              const Op& op) {
  Vector<in_t, kItems> loaded[kSlots];
  load_rows(base, stride, rows, loaded);
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    acc_t p[kSlots];
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      p[s] = s < rows ? op.combine(op.identity(), static_cast<acc_t>(loaded[s].value[i])) : op.identity();
    value[i] = combine_slots(p, op);
  }
}

// One column chunk of up to 64 rows, slot after slot: step q folds slot s =
// the 3-bit reverse of q (0, 4, 2, 6, 1, 5, 3, 7), and the results combine
// into pairs, pairs of pairs and halves, as combine_slots. The loop stays
// rolled, so that only one slot's loads and the tree's pending values are
// in registers.
template <int kItems, typename in_t, typename acc_t, typename Op>
__device__ __noinline__ void fold_chunk_by_slots(const in_t* base, int64_t stride, int rows, acc_t (&value)[kItems],
                                                 const Op& op) {
  acc_t pending[kItems], quad[kItems], left[kItems];
#pragma unroll 1
  for (int q = 0; q < kSlots; ++q) {
    const int s = ((q & 1) << 2) | (q & 2) | (q >> 2);
    const int count = slot_rows(rows, s);
    Vector<in_t, kItems> loaded[kSlots];
    load_rows(base + s * stride, kSlots * stride, count, loaded);
    acc_t p[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) p[i] = op.identity();
    fold_rows(p, loaded, count, op);
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      if (q % 2 == 0) {
        pending[i] = p[i];
      } else {
        const acc_t pair = op.combine(pending[i], p[i]);
        quad[i] = q % 4 == 1 ? pair : op.combine(quad[i], pair);
        if (q == 3) left[i] = quad[i];
        if (q == 7) value[i] = op.combine(left[i], quad[i]);
      }
    }
  }
}

// Columns of one chunk (at most 64 rows), one level: a thread per (batch,
// item), items fastest so that a warp reads adjacent columns.
template <int kItems, typename in_t, typename acc_t, typename out_t, typename Op>
__device__ __forceinline__ void short_columns(const ColumnArgs<in_t, acc_t, out_t>& args, const Op& op) {
  const int64_t work = args.batch * args.items;
  const int rows = static_cast<int>(args.reduce);
  for (int64_t w = blockIdx.x * static_cast<int64_t>(kColumnThreads) + threadIdx.x; w < work;
       w += static_cast<int64_t>(gridDim.x) * kColumnThreads) {
    const int64_t item = w % args.items;
    const int64_t b = w / args.items;
    const in_t* base = args.data + b * args.batch_stride + item * kItems;
    acc_t value[kItems];
    if (rows <= kSlots) {
      fold_short_chunk(base, args.reduce_stride, rows, value, op);
    } else {
      fold_chunk_by_slots(base, args.reduce_stride, rows, value, op);
    }
    store_item(args, /*last_pass=*/true, 0, b * args.columns + item * kItems, value, op);
  }
}

template <typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads) column_short_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  with_width<column_width<in_t, acc_t>()>(args.width,
                                         [&](auto width) { short_columns<decltype(width)::value>(args, op); });
}

}  // namespace cuda
}  // namespace torch_reduce
