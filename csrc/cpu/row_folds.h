// Inner layouts: a row folded by interleaved lanes in runs (fold_lanes,
// fold_run, fold_contiguous), short rows and rows of one block many to a
// vectorised call, and reduce_rows, which picks among them by row length.
// Apart from the columns, with which it shares only the headers below.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "block_schedule.h"
#include "common.h"
#include "layout.h"
#include "vector_convert.h"
#include "vector_isa.h"

namespace torch_reduce {
namespace cpu {

// lane[0] = lane[0, 2 * w) combined pairwise: lane[j] with lane[j + w], then
// the same on the first half. A loop of fixed size per level is what the
// compiler turns into whole-vector operations and a few shuffles.
template <int w, typename acc_t, typename Op>
void combine_halves(acc_t* lane, const Op& op) {
  for (int j = 0; j < w; ++j) lane[j] = op.combine(lane[j], lane[j + w]);
  if constexpr (w > 1) combine_halves<w / 2>(lane, op);
}

// The last n % lanes elements of fold_lanes' run: as one more vector,
// padded with the identity, for amax and amin (one by one, their selects
// were branches, which random data mispredicts) and for float16 and
// bfloat16 (one by one, a chain of dependent adds after the lanes' tree,
// and half's portable conversion an element). Other sums keep the tail one
// by one: as one vector, float64 sums were slower, even of rows with no
// tail, and float32 moved both ways. The rule depends on the types only,
// never on the ISA: every path gives the same bits.
template <typename scalar_t, typename Op>
constexpr bool kVectorTail = kSelects<Op> || std::is_same_v<scalar_t, at::Half> || std::is_same_v<scalar_t, at::BFloat16>;

// Folds x[0, n), the elements at positions first + [0, n) of their
// reduction (op_base.h, HasPositions), into one accumulator: lane j folds x[j], x[j + lanes], ...
// of the whole vectors in sequence, the lanes are combined pairwise, then the
// last n % lanes elements are folded in one by one (a scalar tail, so that
// the lanes are never indexed at run time and stay in registers), or before
// the tree as one more vector (kVectorTail). With kSets sets of lanes, the
// sets take kSets vectors in turn, and are combined into the first before
// the last whole vectors.
template <int kSets, typename scalar_t, typename acc_t, typename Isa, typename Op>
acc_t fold_lanes(Isa, const scalar_t* __restrict x, int64_t n, int64_t first, const Op& op) {
  constexpr int lanes = kLanes<acc_t>;
  // lane[j] folds v[j] of the vector of `lanes` elements at v, x[at].
  auto fold_vector = [&](acc_t* lane, int64_t at) {
    const scalar_t* v = x + at;
    const int64_t position = first + at;
    prefetch(reinterpret_cast<const char*>(v) + kPrefetchBytes);
    if constexpr (std::is_same_v<scalar_t, at::Half>) {
      // Half widened first, folded after: in one loop gcc 12 vectorised
      // neither the conversion nor amax/amin's select (scalar code, many
      // times slower than float32's). The other types keep one loop: split,
      // float32 and int32 amax were slower.
      acc_t wide[lanes];
      widen_vector<Isa::value, lanes>(v, wide);
      for (int j = 0; j < lanes; ++j) lane[j] = fold_element(op, lane[j], wide[j], position + j);
#ifdef TORCH_REDUCE_X86_ISAS
    } else if constexpr (kVectorExtrema<scalar_t, acc_t, Op, Isa::value>) {
      combine_extrema_avx512<Op::kCombine == Combine::Max, lanes>(lane, v);
#endif
    } else if constexpr (std::is_same_v<acc_t, double> && kSelects<Op>) {
      // Not unrolled: unrolled in full, float64 amax/amin's 16 lanes were
      // not vectorised (gcc 12 -O3: scalar compares and branches). Left to
      // the unroller, the other folds vectorise as they are; as loops,
      // float64 sums (AVX2) and bool sums (AVX-512) were slower.
#pragma GCC unroll 1
      for (int j = 0; j < lanes; ++j) lane[j] = fold_element(op, lane[j], widen<acc_t>(v[j]), position + j);
    } else {
      for (int j = 0; j < lanes; ++j) lane[j] = fold_element(op, lane[j], widen<acc_t>(v[j]), position + j);
    }
  };
  acc_t lane[kSets][lanes];
  for (int s = 0; s < kSets; ++s)
    for (int j = 0; j < lanes; ++j) lane[s][j] = op.identity();
  int64_t i = 0;
  for (; i + kSets * lanes <= n; i += kSets * lanes)
    for (int s = 0; s < kSets; ++s) fold_vector(lane[s], i + s * lanes);
  for (int s = 1; s < kSets; ++s)
    for (int j = 0; j < lanes; ++j) lane[0][j] = op.combine(lane[0][j], lane[s][j]);
  for (; i + lanes <= n; i += lanes) fold_vector(lane[0], i);
  if constexpr (kVectorTail<scalar_t, Op>) {
    if (i < n) {
      const int left = static_cast<int>(n - i);
      acc_t last[lanes];
      if constexpr (constexpr int step = kWidenVector<scalar_t, acc_t, Isa::value>; step > 1) {
        // widen_part_of_vector pads with 0; the identity replaces it below.
        for (int k = 0; k < lanes; k += step) {
          if (k + step <= left) {
            widen_vector<Isa::value, step>(x + i + k, last + k);
          } else if (k < left) {
            widen_part_of_vector<Isa::value>(x + i + k, left - k, last + k);
          } else {
            for (int j = 0; j < step; ++j) last[k + j] = op.identity();
          }
        }
        for (int j = 0; j < lanes; ++j) last[j] = j < left ? map_element(op, last[j], first + i + j) : op.identity();
      } else {
        for (int j = 0; j < lanes; ++j)
          last[j] = j < left ? map_element(op, widen<acc_t>(x[i + j]), first + i + j) : op.identity();
      }
      for (int j = 0; j < lanes; ++j) lane[0][j] = op.combine(lane[0][j], last[j]);
      i = n;
    }
  }
  combine_halves<lanes / 2>(lane[0], op);
  acc_t acc = lane[0][0];
  for (; i < n; ++i) acc = fold_element(op, acc, widen<acc_t>(x[i]), first + i);
  return acc;
}

// fold_lanes with one set of lanes, but two for amax and amin over rows of
// eight vectors or more: a compare, a mask and a select take longer than an
// add, and one set's chains left the loop waiting on them (four sets were
// slower than two). Their result does not depend on the order (but for
// which of -0 and +0 is returned). Shorter rows gain nothing from it and pay
// for the second set's combine; and both kinds of loop in one function kept
// the lanes on the stack, not in registers, between them, which slowed
// rows of either kind.
template <typename scalar_t, typename acc_t, typename Isa, typename Op>
acc_t fold_run(Isa isa, const scalar_t* __restrict x, int64_t n, int64_t first, const Op& op) {
  if constexpr (kSelects<Op>) {
    if (n >= 8 * kLanes<acc_t>) return fold_lanes<2, scalar_t, acc_t>(isa, x, n, first, op);
  }
  return fold_lanes<1, scalar_t, acc_t>(isa, x, n, first, op);
}

// Elements of one run of fold_contiguous: kRun * lanes, but a whole block
// for amax and amin, exact in any order: their runs' set-up and lane trees
// cost time and buy no accuracy.
template <typename acc_t, typename Op>
constexpr int64_t kFoldRun = kSelects<Op> ? kRowBlock : kRun * kLanes<acc_t>;

// Folds x[0, n), at positions first + [0, n), into one accumulator: runs of
// kFoldRun elements, one after the other. Inlined, as short rows cost little
// more than the calls.
template <typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE acc_t fold_contiguous(const scalar_t* x, int64_t n, int64_t first, const Op& op) {
  constexpr int64_t run = kFoldRun<acc_t, Op>;
  // Each run is a vectorised call of its own, never a loop inside one: gcc
  // 12.2 -O3 miscompiles the AVX2 / AVX-512 lanes of int8/int16 -> int64 sums
  // once they sit in an outer loop, be it over runs or over rows.
  acc_t acc{};  // set by the call; initialised for gcc 13's -Wmaybe-uninitialized
  run_vectorised([&](auto isa) { acc = fold_run<scalar_t, acc_t>(isa, x, std::min(n, run), first, op); });
  for (int64_t i = run; i < n; i += run) {
    acc_t next{};
    run_vectorised([&](auto isa) { next = fold_run<scalar_t, acc_t>(isa, x + i, std::min(n - i, run), first + i, op); });
    acc = op.combine(acc, next);
  }
  return acc;
}

// Rows shorter than one set of lanes: fold_run's lanes would all stay at the
// identity, so a row is its elements folded in sequence from the identity.
// Here that takes a few instructions a row instead of fold_run's set-up and
// lane tree, and many rows per vectorised call. Rows of up to
// kShortRowLengths elements have their length as a compile-time constant:
// then the compiler vectorises across rows (and amax/amin's selects become
// blends, not branches on the data).
constexpr int kShortRowLengths = 8;

// Rows folded in sequence (fold_short_rows) rather than by fold_run's lanes:
// those shorter than one set of lanes and, for a struct accumulator, rows
// of up to kRun elements. Its lanes are scalar code (no vector holds the
// state), there only to break the chain of combines, which kRowsTogether
// rows folded side by side break as well; in sequence a row skips the
// lanes' tree.
template <typename acc_t>
constexpr int64_t kSequenceRowsMax = kStructAccumulator<acc_t> ? kRun : kLanes<acc_t> - 1;

// Rows of a run-time length go kRowsTogether at a time, each still folded
// in sequence: one row is a chain of dependent combines, which alone left
// the core waiting on each one's latency.
// Half is widened a row at a time first where F16C can (widen_vector, eight
// elements an instruction; the row is shorter than the lanes). bfloat16 is
// not: so widened, its sums over dim 1 moved both ways.
constexpr int kRowsTogether = 8;

// Back-to-back rows of a compile-time length are folded with their stride a
// constant too: the compiler then reads their elements as interleaved vectors
// (permutes), a vector of rows at a time, where it built each vector an
// element at a time. gcc 12 does so well for lengths of 3 and powers of two;
// for 5, 6 and 7 its permutes were slower than the element-wise loads (much
// slower for float16, whose portable conversion it vectorised too), so
// those keep them.
constexpr bool reads_interleaved_rows(int length) { return length == 3 || (length & (length - 1)) == 0; }

// A row of `length` elements folded in sequence from the identity.
template <typename acc_t, typename scalar_t, typename Op>
C10_ALWAYS_INLINE acc_t fold_in_sequence(const scalar_t* x, int64_t length, const Op& op) {
  acc_t acc = op.identity();
  for (int64_t i = 0; i < length; ++i) acc = fold_element(op, acc, widen<acc_t>(x[i]), i);
  return acc;
}

// Rows [begin, end) of `length` elements, `stride` apart, each folded in
// sequence from the identity.
template <typename acc_t, typename scalar_t, typename out_t, typename Op>
C10_ALWAYS_INLINE void fold_rows_one_by_one(const scalar_t* data, int64_t stride, int64_t length, int64_t begin,
                                            int64_t end, out_t* out, const Op& op) {
  for (int64_t row = begin; row < end; ++row)
    out[row] = static_cast<out_t>(op.project(fold_in_sequence<acc_t>(data + row * stride, length, op)));
}

template <int kLength, typename scalar_t, typename acc_t, typename out_t, typename Isa, typename Op>
void fold_short_rows(Isa isa, const scalar_t* data, int64_t stride, int64_t length, int64_t begin, int64_t end,
                     out_t* out, const Op& op) {
  const int64_t n = kLength > 0 ? kLength : length;
  int64_t row = begin;
  if constexpr (kLength == 0) {
    for (; row + kRowsTogether <= end; row += kRowsTogether) {
      const scalar_t* x = data + row * stride;
      acc_t acc[kRowsTogether];
      for (int k = 0; k < kRowsTogether; ++k) acc[k] = op.identity();
      if constexpr (std::is_same_v<scalar_t, at::Half> && kWidenVector<scalar_t, acc_t, Isa::value> > 1) {
        constexpr int step = kWidenVector<scalar_t, acc_t, VectorIsa::Avx2>;
        acc_t wide[kRowsTogether][kLanes<acc_t>];
        for (int k = 0; k < kRowsTogether; ++k) {
          int64_t i = 0;
          for (; i + step <= n; i += step) widen_vector<VectorIsa::Avx2, step>(x + k * stride + i, wide[k] + i);
          for (; i < n; ++i) wide[k][i] = widen<acc_t>(x[k * stride + i]);
        }
        for (int64_t i = 0; i < n; ++i) {
          for (int k = 0; k < kRowsTogether; ++k) acc[k] = fold_element(op, acc[k], wide[k][i], i);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          for (int k = 0; k < kRowsTogether; ++k)
            acc[k] = fold_element(op, acc[k], widen<acc_t>(x[k * stride + i]), i);
        }
      }
      store_results(isa, acc, kRowsTogether, out + row, op);
    }
  }
  if constexpr (kLength > 0 && reads_interleaved_rows(kLength)) {
    if (stride == kLength) {
      if constexpr (std::is_same_v<scalar_t, at::Half> && kWidenVector<scalar_t, acc_t, Isa::value> > 1) {
        // Half is widened by F16C a block of rows at a time, folded as
        // floats, and the results narrowed by F16C too (store_results): a
        // vector an instruction each way, not an element at a time.
        constexpr int kBlockRows = 64;
        for (; row + kBlockRows <= end; row += kBlockRows) {
          acc_t wide[kBlockRows * kLength];
          widen_vector<Isa::value, kBlockRows * kLength>(data + row * kLength, wide);
          acc_t results[kBlockRows];
          for (int k = 0; k < kBlockRows; ++k) results[k] = fold_in_sequence<acc_t>(wide + k * kLength, kLength, op);
          store_results(isa, results, kBlockRows, out + row, op);
        }
      }
      return fold_rows_one_by_one<acc_t>(data, kLength, n, row, end, out, op);
    }
  }
  fold_rows_one_by_one<acc_t>(data, stride, n, row, end, out, op);
}

// fold_short_rows for a run-time length: compile-time up to kMax, else not.
template <int kMax, typename scalar_t, typename acc_t, typename out_t, typename Isa, typename Op>
void fold_short_rows_of_length(Isa isa, const scalar_t* data, int64_t stride, int64_t length, int64_t begin,
                               int64_t end, out_t* out, const Op& op) {
  if constexpr (kMax > 0) {
    if (length != kMax) {
      return fold_short_rows_of_length<kMax - 1, scalar_t, acc_t>(isa, data, stride, length, begin, end, out, op);
    }
  }
  fold_short_rows<kMax, scalar_t, acc_t>(isa, data, stride, length, begin, end, out, op);
}

// Rows of up to kSequenceRowsMax elements (fold_short_rows' buffer of
// widened half holds fewer than kLanes: a struct accumulator's elements are
// not widened by vector).
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_short_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out, const Op& op) {
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(layout.reduce <= kSequenceRowsMax<acc_t>);  // reduce_rows' test, restated
  const int64_t grain = ceil_div(at::internal::GRAIN_SIZE, layout.reduce);
  at::parallel_for(0, layout.batch, grain, [&](int64_t begin, int64_t end) {
    run_vectorised([&](auto isa) {
      fold_short_rows_of_length<kShortRowLengths, scalar_t, acc_t>(isa, data, layout.batch_stride, layout.reduce,
                                                                   begin, end, out, op);
    });
  });
}

// Rows of one block (kRowBlock elements or fewer) are folded here, each by
// fold_contiguous as reduce_blocks' leaf folds it, without reduce_blocks'
// per-unit bookkeeping. Rows of kGroupedRowBytes or fewer go kRowsPerCall to
// one vectorised call, one fold_run after the other: the rows' lane trees
// and results then overlap, where a call per row left the core waiting on
// each row's tree. Each row takes the operations it takes alone, so its bits
// do not depend on the rows around it (batch invariance). Written as a loop
// over rows inside the call instead, gcc 12 folded the lanes of the trees
// one by one. Longer rows go one a call: in groups of eight, rows of 4 KiB
// lost; groups of two gained about half as much as groups of eight on rows
// of 32 to 40 elements.
constexpr int kRowsPerCall = 8;
constexpr int64_t kGroupedRowBytes = 1024;

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_rows_of_one_block(const scalar_t* data, const ReduceLayout& layout, out_t* out, const Op& op) {
  const int64_t reduce = layout.reduce, stride = layout.batch_stride;
  // A grouped row is one run of fold_contiguous, which fold_run folds alone
  // (every row of kGroupedRowBytes is, but of a struct accumulator's runs of
  // narrow elements: argmax's of int8).
  const bool grouped = reduce * static_cast<int64_t>(sizeof(scalar_t)) <= kGroupedRowBytes &&
                       reduce <= kFoldRun<acc_t, Op>;
  const int64_t grain = ceil_div(at::internal::GRAIN_SIZE, reduce);
  at::parallel_for(0, layout.batch, grain, [&](int64_t begin, int64_t end) {
    int64_t row = begin;
    if (grouped) {
      for (; row + kRowsPerCall <= end; row += kRowsPerCall) {
        const scalar_t* x = data + row * stride;
        acc_t acc[kRowsPerCall]{};  // (set in run_vectorised, which gcc does not see)
        run_vectorised([&](auto isa) {
          [&]<size_t... k>(std::index_sequence<k...>) {
            ((acc[k] = fold_run<scalar_t, acc_t>(isa, x + k * stride, reduce, 0, op)), ...);
          }(std::make_index_sequence<kRowsPerCall>{});
        });
        store_results(acc, kRowsPerCall, out + row, op);
      }
    }
    for (; row < end; ++row)
      out[row] = static_cast<out_t>(op.project(fold_contiguous<scalar_t, acc_t>(data + row * stride, reduce, 0, op)));
  });
}

// Inner: one unit per output row, blocks of kRowBlock contiguous elements.
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out,
                 const Op& op) {
  const int64_t reduce = layout.reduce;
  if (reduce <= kSequenceRowsMax<acc_t>) return reduce_short_rows<scalar_t, acc_t, out_t>(data, layout, out, op);
  if (reduce <= kRowBlock) return reduce_rows_of_one_block<scalar_t, acc_t, out_t>(data, layout, out, op);
  reduce_blocks<acc_t>(
      layout.batch, ceil_div(reduce, kRowBlock), /*width=*/1,
      std::min(reduce, kRowBlock), /*leaf_blocks=*/1, op,
      [&](int64_t row, int64_t block, int64_t, acc_t* acc) {
        const int64_t start = block * kRowBlock;
        *acc = fold_contiguous<scalar_t, acc_t>(
            data + row * layout.batch_stride + start,
            std::min(kRowBlock, reduce - start), start, op);
      },
      [&](int64_t row, const acc_t* acc) {
        out[row] = static_cast<out_t>(op.project(*acc));
      });
}

}  // namespace cpu
}  // namespace torch_reduce
