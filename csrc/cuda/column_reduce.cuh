// Reduces strided columns: element (b, r, c) at b * batch_stride +
// r * reduce_stride + c, reduced over r. Consecutive threads own consecutive
// columns (one 16-byte vector of them when aligned), so every load of a warp
// is coalesced; each thread walks down one chunk of rows of its columns.
//
// One pass turns R rows into ceil(R / chunk) rows of partial results, laid
// out as a new column problem [chunks, batch * columns]; passes repeat until
// one row is left, and the last one writes the output. The first pass reads
// the input in chunks of kColumnChunk rows (few partials to write back);
// later passes, over small partial arrays, use chunks of kPartialChunk rows,
// so that each is a single round of loads rather than a long latency chain.
// A column's order -- sequential within chunks, chunks combined level by
// level -- depends only on R: never on the number of columns or batches
// (batch invariance), and there is parallelism for tall, narrow inputs
// without atomics.
#pragma once

#include "primitives.cuh"

namespace torch_reduce {
namespace cuda {

constexpr int kColumnThreads = 256;
constexpr int kColumnChunk = 64;
constexpr int kPartialChunk = 8;
// Rows loaded before they are folded. (32 element loads in flight on the
// scalar path measured no faster for narrow columns and, through register
// pressure, slowed the vector path of bfloat16 by a third.)
constexpr int kColumnVectorUnroll = 8;
constexpr int kColumnScalarUnroll = 8;

template <typename in_t, typename acc_t, typename out_t>
struct ColumnArgs {
  const in_t* data;
  int64_t batch;
  int64_t reduce;
  int64_t columns;
  int64_t batch_stride;
  int64_t reduce_stride;
  int64_t chunk_rows;  // rows folded by one thread: kColumnChunk or kPartialChunk
  int64_t chunks;      // ceil(reduce / chunk_rows); 1 on the last pass
  bool vectorized;     // data, columns and strides allow 16-byte loads
  acc_t* partials;     // [chunks, batch * columns] when chunks > 1
  out_t* out;          // [batch * columns] when chunks == 1
};

template <typename in_t, typename acc_t, typename out_t, typename Op>
__global__ void __launch_bounds__(kColumnThreads) column_reduce_kernel(ColumnArgs<in_t, acc_t, out_t> args, Op op) {
  constexpr int kWidth = vector_width<in_t>();
  const int width = args.vectorized ? kWidth : 1;
  const int64_t column_groups = (args.columns + width - 1) / width;
  const int64_t work = args.batch * args.chunks * column_groups;
  const int64_t outputs = args.batch * args.columns;

  for (int64_t w = blockIdx.x * static_cast<int64_t>(kColumnThreads) + threadIdx.x; w < work;
       w += static_cast<int64_t>(gridDim.x) * kColumnThreads) {
    const int64_t column = (w % column_groups) * width;
    const int64_t chunk = (w / column_groups) % args.chunks;
    const int64_t b = w / (column_groups * args.chunks);
    const int64_t row_begin = chunk * args.chunk_rows;
    const int64_t row_end = row_begin + args.chunk_rows < args.reduce ? row_begin + args.chunk_rows : args.reduce;
    const in_t* base = args.data + b * args.batch_stride + column;

    acc_t acc[kWidth];
#pragma unroll
    for (int i = 0; i < kWidth; ++i) acc[i] = op.identity();

    if (args.vectorized) {
      for (int64_t r = row_begin; r < row_end; r += kColumnVectorUnroll) {
        Vector<in_t> loaded[kColumnVectorUnroll];
#pragma unroll
        for (int u = 0; u < kColumnVectorUnroll; ++u)
          if (r + u < row_end) loaded[u] = load_vector(base + (r + u) * args.reduce_stride);
#pragma unroll
        for (int u = 0; u < kColumnVectorUnroll; ++u) {
          if (r + u < row_end) {
#pragma unroll
            for (int i = 0; i < kWidth; ++i) acc[i] = op.combine(acc[i], static_cast<acc_t>(loaded[u].value[i]));
          }
        }
      }
    } else {
      for (int64_t r = row_begin; r < row_end; r += kColumnScalarUnroll) {
        in_t loaded[kColumnScalarUnroll];
#pragma unroll
        for (int u = 0; u < kColumnScalarUnroll; ++u)
          if (r + u < row_end) loaded[u] = base[(r + u) * args.reduce_stride];
#pragma unroll
        for (int u = 0; u < kColumnScalarUnroll; ++u)
          if (r + u < row_end) acc[0] = op.combine(acc[0], static_cast<acc_t>(loaded[u]));
      }
    }

    const int64_t output = b * args.columns + column;
#pragma unroll
    for (int i = 0; i < kWidth; ++i) {
      if (i < width) {
        if (args.chunks == 1) {
          args.out[output + i] = static_cast<out_t>(op.project(acc[i]));
        } else {
          args.partials[chunk * outputs + output + i] = acc[i];
        }
      }
    }
  }
}

}  // namespace cuda
}  // namespace torch_reduce
