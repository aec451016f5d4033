// Reduces long contiguous rows -- the whole tensor for a full reduction -- in
// one launch: `splits` blocks share each row, and the last of them to finish
// combines their partial results.
//
//  - Each thread keeps kUnroll independent 16-byte loads in flight per tile
//    and folds them into kUnroll accumulators (latency hiding without
//    reordering a thread's own sum).
//  - A row that does not start on a 16-byte boundary, or whose length is not a
//    multiple of the vector width, has its head and tail folded in exactly
//    once, by block 0 of the row.
//  - Block results go to `partials`; each block then takes a ticket (an
//    acquire-release atomic, cheaper than a full fence per block), and the
//    block that draws the last one combines the row's partials in split
//    order and resets the ticket for the next launch.
//  - Deterministic: the order of every operation depends only on the row's
//    length, its alignment and `splits`, never on timing.
#pragma once

#include <cuda/atomic>

#include <type_traits>

#include "gathered_rows.cuh"
#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

constexpr int kSplitThreads = 256;
constexpr int kSplitUnroll = 4;
// Vectors of one tile: every thread loads kSplitUnroll of them.
constexpr int kSplitTileVectors = kSplitThreads * kSplitUnroll;

template <typename scalar_t, typename acc_t, typename out_t>
struct SplitRowArgs {
  const scalar_t* data;
  int64_t row_length;
  int64_t row_stride;
  int64_t splits;  // blocks per row; gridDim.x == rows * splits
  out_t* out;
  acc_t* partials;         // rows * splits values (unused when splits == 1)
  unsigned int* tickets;   // rows zeroed counters (unused when splits == 1)
};

// kGathered: the rows are read through `gather` (gathered_rows.cuh), as
// rows that start on a 16-byte boundary (no head), a vector's elements one
// by one; args.row_stride is unused.
template <typename scalar_t, typename acc_t, typename out_t, typename Op, bool kGathered>
__global__ void __launch_bounds__(kSplitThreads)
    split_row_reduce_kernel(SplitRowArgs<scalar_t, acc_t, out_t> args, Op op, RowGather gather) {
  constexpr int kWidth = vector_width<scalar_t>();
  __shared__ acc_t scratch[kSplitThreads / kWarpSize];
  __shared__ bool is_last_block;

  const int64_t row = blockIdx.x / args.splits;
  const int64_t split = blockIdx.x % args.splits;
  const int tid = threadIdx.x;
  const scalar_t* row_data = kGathered ? args.data + strided_offset(static_cast<uint32_t>(row), gather.rows)
                                       : args.data + row * args.row_stride;
  const int64_t n = args.row_length;

  const int64_t head = kGathered ? 0 : misaligned_head(row_data, n);
  const int64_t vectors = (n - head) / kWidth;
  const int64_t tail_start = head + vectors * kWidth;
  const scalar_t* body = row_data + head;

  auto element = [&](int64_t i) -> acc_t {
    if constexpr (kGathered) {
      return static_cast<acc_t>(row_data[gathered_element(static_cast<uint32_t>(i), gather).offset]);
    } else {
      return static_cast<acc_t>(row_data[i]);
    }
  };
  // Vector i of the body.
  using Loaded = std::conditional_t<kGathered, Elements<scalar_t>, Vector<scalar_t>>;
  auto load = [&](int64_t i) -> Loaded {
    if constexpr (kGathered) {
      Elements<scalar_t> e = load_gathered(row_data, i * kWidth, n, gather);
      keep_loaded(e);
      return e;
    } else {
      return load_vector(body + i * kWidth);
    }
  };
  // Vector i of the body, its first element at position head + i * kWidth.
  auto fold = [&](acc_t acc, const Loaded& loaded, int64_t i) -> acc_t {
    if constexpr (kGathered) {
      return fold_elements(acc, loaded, head + i * kWidth, op);
    } else {
      return fold_vector(acc, loaded, head + i * kWidth, op);
    }
  };

  acc_t acc[kSplitUnroll];
#pragma unroll
  for (int u = 0; u < kSplitUnroll; ++u) acc[u] = op.identity();

  // Head and tail are each shorter than one vector; the head folds before
  // the body and the tail after it, so that every accumulator takes its
  // elements in increasing position (op_base.h, HasOrderedFold).
  if (split == 0 && tid < head) acc[0] = fold_element(op, acc[0], element(tid), tid);

  // Tiles are dealt round-robin to the row's blocks, so that at any moment
  // the blocks stream neighbouring memory.
  const int64_t tile_step = args.splits * kSplitTileVectors;
  int64_t v = split * kSplitTileVectors + tid;
  if constexpr (kGathered) {
    // The last, partial tile too, its items past the body skipped: the
    // gathered loads' long code is there once rather than twice, and the
    // partial tile's loads are in flight together.
    for (; v < vectors; v += tile_step) {
      Loaded loaded[kSplitUnroll];
#pragma unroll
      for (int u = 0; u < kSplitUnroll; ++u) {
        loaded[u].count = 0;
        if (v + u * kSplitThreads < vectors) loaded[u] = load(v + u * kSplitThreads);
      }
#pragma unroll
      for (int u = 0; u < kSplitUnroll; ++u) acc[u] = fold(acc[u], loaded[u], v + u * kSplitThreads);
    }
  } else {
    // Whole tiles: no bounds checks inside.
    for (; v + (kSplitUnroll - 1) * kSplitThreads < vectors; v += tile_step) {
      Loaded loaded[kSplitUnroll];
#pragma unroll
      for (int u = 0; u < kSplitUnroll; ++u) loaded[u] = load(v + u * kSplitThreads);
#pragma unroll
      for (int u = 0; u < kSplitUnroll; ++u) acc[u] = fold(acc[u], loaded[u], v + u * kSplitThreads);
    }
    // The last, partial tile.
    if (v < vectors) {
#pragma unroll
      for (int u = 0; u < kSplitUnroll; ++u) {
        const int64_t i = v + u * kSplitThreads;
        if (i < vectors) acc[u] = fold(acc[u], load(i), i);
      }
    }
  }

  if (split == 0 && tail_start + tid < n)
    acc[1] = fold_element(op, acc[1], element(tail_start + tid), tail_start + tid);

  acc_t result = acc[0];
#pragma unroll
  for (int u = 1; u < kSplitUnroll; ++u) result = op.combine(result, acc[u]);
  result = block_reduce<kSplitThreads>(result, scratch, op);

  if (args.splits == 1) {
    if (tid == 0) args.out[row] = static_cast<out_t>(op.project(result));
    return;
  }

  acc_t* row_partials = args.partials + row * args.splits;
  if (tid == 0) {
    row_partials[split] = result;
    // Release: this partial is visible to the block that draws a later
    // ticket; acquire: the last block sees every earlier partial.
    ::cuda::atomic_ref<unsigned int, ::cuda::thread_scope_device> ticket(args.tickets[row]);
    is_last_block = ticket.fetch_add(1u, ::cuda::memory_order_acq_rel) == static_cast<unsigned int>(args.splits - 1);
  }
  __syncthreads();
  if (!is_last_block) return;

  // Thread 0's acquire (which also invalidated this SM's L1) and the barrier
  // order the block's reads after every other block's partial. Fixed order:
  // thread t folds partials t, t + kSplitThreads, ...; then the block tree.
  acc_t total = op.identity();
  for (int64_t i = tid; i < args.splits; i += kSplitThreads) total = op.combine(total, row_partials[i]);
  total = block_reduce<kSplitThreads>(total, scratch, op);
  if (tid == 0) {
    args.out[row] = static_cast<out_t>(op.project(total));
    args.tickets[row] = 0;  // ready for the next launch on this stream
  }
}

}  // namespace cuda
}  // namespace torch_reduce
