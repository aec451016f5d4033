// Outer layouts: columns folded top to bottom within blocks of rows (vector
// tiles, a loop over columns, narrow blocks side by side), and
// reduce_columns, which cuts them into chunks and blocks for reduce_blocks.
// Apart from the rows, with which it shares only the headers below.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "block_schedule.h"
#include "common.h"
#include "layout.h"
#include "vector_convert.h"
#include "vector_isa.h"

namespace torch_reduce {
namespace cpu {

// acc[0, n) = the first n (0 < n <= kTile) columns of `rows` rows that
// start `row_stride` elements apart, folded top to bottom in registers; the
// first row is row `first_row` of the reduction (the elements' position). A
// tile of fewer columns than kTile is one vector (kTile == kWidenVector),
// whose other lanes fold zeros that are never stored. (kVectorExtrema's
// tiles are whole vectors.)
template <int kTile, VectorIsa isa, typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE void fold_column_tile(const scalar_t* x, int64_t rows, int64_t row_stride, int64_t first_row, int n,
                                        acc_t* __restrict acc, const Op& op) {
  acc_t column[kTile];
  for (int j = 0; j < kTile; ++j) column[j] = op.identity();
  if constexpr (kVectorExtrema<scalar_t, acc_t, Op, isa>) {
#ifdef TORCH_REDUCE_X86_ISAS
    fold_extrema_rows_avx512<Op::kCombine == Combine::Max, kTile>(column, x, rows, row_stride);
#endif
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      acc_t wide[kTile];
      if (kTile == kWidenVector<scalar_t, acc_t, isa> && n < kTile) {
        widen_part_of_vector<isa>(x + r * row_stride, n, wide);
      } else {
        widen_vector<isa, kTile>(x + r * row_stride, wide);
      }
      if constexpr (kSelects<Op> && kTile == kWidenVector<scalar_t, acc_t, isa>) {
        // A tile of one vector folds amax's and amin's select in a loop, not
        // unrolled: unrolled, gcc 12 did not vectorise it. Tiles of four
        // vectors stay unrolled, which gcc does vectorise: as loops they were
        // slower. Sums vectorise either way.
#pragma GCC unroll 1
        for (int j = 0; j < kTile; ++j) column[j] = fold_element(op, column[j], wide[j], first_row + r);
      } else {
        for (int j = 0; j < kTile; ++j) column[j] = fold_element(op, column[j], wide[j], first_row + r);
      }
    }
  }
  for (int j = 0; j < n; ++j) acc[j] = column[j];
}

// acc[c] = column c (c < width) of `rows` rows that start `row_stride`
// elements apart, folded top to bottom (from row first_row of the
// reduction); the loop over columns vectorises.
// Four rows per pass, so that narrow blocks do not wait on acc's store and
// reload after every row.
template <typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE void fold_column_loop(const scalar_t* x, int64_t rows, int64_t row_stride, int64_t first_row,
                                        int64_t width, acc_t* __restrict acc, const Op& op) {
  for (int64_t c = 0; c < width; ++c) acc[c] = op.identity();
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const scalar_t* __restrict r0 = x + r * row_stride;
    const scalar_t* __restrict r1 = r0 + row_stride;
    const scalar_t* __restrict r2 = r1 + row_stride;
    const scalar_t* __restrict r3 = r2 + row_stride;
    const int64_t p = first_row + r;
    for (int64_t c = 0; c < width; ++c) {
      acc_t a = fold_element(op, acc[c], widen<acc_t>(r0[c]), p);
      a = fold_element(op, a, widen<acc_t>(r1[c]), p + 1);
      a = fold_element(op, a, widen<acc_t>(r2[c]), p + 2);
      acc[c] = fold_element(op, a, widen<acc_t>(r3[c]), p + 3);
    }
  }
  for (; r < rows; ++r) {
    const scalar_t* __restrict row = x + r * row_stride;
    for (int64_t c = 0; c < width; ++c) {
      acc[c] = fold_element(op, acc[c], widen<acc_t>(row[c]), first_row + r);
    }
  }
}

// fold_column_loop's results. Where widen_vector converts several elements
// with one instruction (half with F16C, bfloat16), the columns go in tiles
// of four such vectors, then of one (the last one a part of a vector), each
// folded down all the rows in registers: the compiler vectorises these
// explicit conversions in a loop of fixed length, as in fold_run, but not in
// fold_column_loop, one conversion an element (half), or its columns past
// the last whole vector (bfloat16). The same bits.
//
// So do float32 and float64 amax and amin on AVX-512 (kVectorExtrema) in
// blocks of up to four whole vectors of columns, the rest in
// fold_column_loop.
template <typename scalar_t, typename acc_t, typename Isa, typename Op>
void fold_columns(Isa, const scalar_t* x, int64_t rows, int64_t row_stride, int64_t first_row, int64_t width,
                  acc_t* __restrict acc, const Op& op) {
  int64_t first = 0;
  if constexpr (kVectorExtrema<scalar_t, acc_t, Op, Isa::value>) {
    // Blocks of up to four whole vectors of columns, as one tile: their few
    // chains of max (min) down the rows left fold_column_loop waiting on
    // each row. Wider blocks keep the loop, which streams four rows at a time:
    // as tiles down their rows, they were slower.
    constexpr int step = 64 / sizeof(acc_t);
    switch (width <= 4 * step ? width / step : 0) {
      case 4:
        fold_column_tile<4 * step, Isa::value>(x, rows, row_stride, first_row, 4 * step, acc, op);
        first = 4 * step;
        break;
      case 3:
        fold_column_tile<3 * step, Isa::value>(x, rows, row_stride, first_row, 3 * step, acc, op);
        first = 3 * step;
        break;
      case 2:
        fold_column_tile<2 * step, Isa::value>(x, rows, row_stride, first_row, 2 * step, acc, op);
        first = 2 * step;
        break;
      case 1:
        fold_column_tile<step, Isa::value>(x, rows, row_stride, first_row, step, acc, op);
        first = step;
        break;
    }
  } else if constexpr (constexpr int step = kWidenVector<scalar_t, acc_t, Isa::value>; step > 1) {
    for (; first + 4 * step <= width; first += 4 * step)
      fold_column_tile<4 * step, Isa::value>(x + first, rows, row_stride, first_row, 4 * step, acc + first, op);
    for (; first < width; first += step)
      fold_column_tile<step, Isa::value>(x + first, rows, row_stride, first_row,
                                         static_cast<int>(std::min<int64_t>(step, width - first)), acc + first, op);
  }
  fold_column_loop(x + first, rows, row_stride, first_row, width - first, acc + first, op);
}

// Column blocks of up to kNarrowColumns columns are folded kSideBySide at a
// time: one block's fold is a chain of dependent adds per column, too few
// chains to keep the adders busy, and the blocks' chains are independent.
constexpr int64_t kNarrowColumns = 8;
constexpr int64_t kSideBySide = 8;

// kBlocks consecutive blocks of kColumnBlock rows of kWidth columns, each
// folded exactly as fold_columns folds it (top to bottom from the identity);
// block k's results go to acc[k * kWidth, (k + 1) * kWidth). The first
// block starts at row first_row of the reduction.
template <int kBlocks, int kWidth, typename scalar_t, typename acc_t, typename Op>
void fold_column_blocks_side_by_side(const scalar_t* x, int64_t row_stride, int64_t first_row, acc_t* acc,
                                     const Op& op) {
  acc_t a[kBlocks][kWidth];
  for (int k = 0; k < kBlocks; ++k)
    for (int c = 0; c < kWidth; ++c) a[k][c] = op.identity();
  for (int64_t r = 0; r < kColumnBlock; ++r) {
    for (int k = 0; k < kBlocks; ++k) {
      const scalar_t* __restrict row = x + (k * kColumnBlock + r) * row_stride;
      const int64_t position = first_row + k * kColumnBlock + r;
      for (int c = 0; c < kWidth; ++c) a[k][c] = fold_element(op, a[k][c], widen<acc_t>(row[c]), position);
    }
  }
  for (int k = 0; k < kBlocks; ++k)
    for (int c = 0; c < kWidth; ++c) acc[k * kWidth + c] = a[k][c];
}

// fold_column_blocks_side_by_side for the run-time width (1 to kMax).
template <int kBlocks, int kMax, typename scalar_t, typename acc_t, typename Op>
void fold_narrow_column_blocks(const scalar_t* x, int64_t row_stride, int64_t first_row, int64_t width, acc_t* acc,
                               const Op& op) {
  if constexpr (kMax > 1) {
    if (width < kMax) return fold_narrow_column_blocks<kBlocks, kMax - 1>(x, row_stride, first_row, width, acc, op);
  }
  fold_column_blocks_side_by_side<kBlocks, kMax>(x, row_stride, first_row, acc, op);
}

// Folds the first of `whole` (> 1) whole blocks of narrow columns side by
// side: as many as the largest of kSideBySide, 4 and 2 that fits (units of
// 2 to 7 blocks, which columns of 128 to 511 rows make, gain from it too).
// Half and bfloat16 only in groups of kSideBySide: their conversion is one
// element at a time here, and fold_columns' tiles convert a vector an
// instruction (in groups of 2 they were slower). Integer amax and amin not
// in groups of 2 either (slower there too).
// Returns how many blocks it folded.
template <typename scalar_t, typename acc_t, typename Op>
int64_t fold_narrow_blocks_side_by_side(const scalar_t* x, int64_t row_stride, int64_t first_row, int64_t width,
                                        int64_t whole, acc_t* acc, const Op& op) {
  if (whole >= kSideBySide) {
    fold_narrow_column_blocks<kSideBySide, kNarrowColumns, scalar_t>(x, row_stride, first_row, width, acc, op);
    return kSideBySide;
  }
  if constexpr (!std::is_same_v<scalar_t, at::Half> && !std::is_same_v<scalar_t, at::BFloat16>) {
    if (whole >= 4) {
      fold_narrow_column_blocks<4, kNarrowColumns, scalar_t>(x, row_stride, first_row, width, acc, op);
      return 4;
    }
    if constexpr (!(kSelects<Op> && std::is_integral_v<acc_t>)) {
      fold_narrow_column_blocks<2, kNarrowColumns, scalar_t>(x, row_stride, first_row, width, acc, op);
      return 2;
    }
  }
  return 0;
}

// Outer: one unit per (batch, chunk of kColumnChunk columns), blocks of
// kColumnBlock reduced rows.
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_columns(const scalar_t* data, const ReduceLayout& layout,
                    out_t* out, const Op& op) {
  const int64_t reduce = layout.reduce, inner = layout.inner;
  const int64_t chunks = ceil_div(inner, kColumnChunk);
  const int64_t width = std::min(inner, kColumnChunk);
  const int64_t rows = std::min(reduce, kColumnBlock);
  const bool narrow = width <= kNarrowColumns;
  reduce_blocks<acc_t>(
      layout.batch * chunks, ceil_div(reduce, kColumnBlock), width,
      rows * width, narrow ? kSideBySide : 1, op,
      [&](int64_t unit, int64_t block, int64_t count, acc_t* acc) {
        const int64_t batch = unit / chunks, first_column = unit % chunks * width;
        const int64_t columns = std::min(width, inner - first_column);
        const scalar_t* x = data + batch * layout.batch_stride + first_column;
        int64_t k = 0;
        if (narrow) {
          // One chunk, so columns == width. Whole blocks side by side.
          const int64_t whole = std::min(count, reduce / kColumnBlock - block);
          run_vectorised([&](auto) {
            while (whole - k > 1) {
              const int64_t folded = fold_narrow_blocks_side_by_side<scalar_t>(
                  x + (block + k) * kColumnBlock * layout.reduce_stride, layout.reduce_stride,
                  (block + k) * kColumnBlock, width, whole - k, acc + k * width, op);
              if (folded == 0) break;
              k += folded;
            }
          });
        }
        for (; k < count; ++k) {
          const int64_t first_row = (block + k) * kColumnBlock;
          acc_t* block_acc = acc + k * width;
          run_vectorised([&](auto isa) {
            fold_columns<scalar_t, acc_t>(isa, x + first_row * layout.reduce_stride,
                                          std::min(kColumnBlock, reduce - first_row), layout.reduce_stride, first_row,
                                          columns, block_acc, op);
          });
          // The last chunk's missing columns take part in the tree unchanged.
          std::fill(block_acc + columns, block_acc + width, op.identity());
        }
      },
      [&](int64_t unit, const acc_t* acc) {
        const int64_t batch = unit / chunks, first_column = unit % chunks * width;
        const int64_t columns = std::min(width, inner - first_column);
        store_results(acc, columns, out + batch * inner + first_column, op);
      });
}

}  // namespace cpu
}  // namespace torch_reduce
