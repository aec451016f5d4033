// What every CPU fold shares and no vector ISA touches: the tuned constants
// (runs, lanes, blocks, prefetch distance), integer and float-bit helpers,
// and an element's widening to its accumulator one at a time (widen). Apart
// so that the ISA, row, column and schedule headers take them from one place.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace torch_reduce {
namespace cpu {

// Accumulators take at most about kRun values in sequence (a lane within a
// run, a column within a block of rows) before their results are combined
// with others, which keeps float32 error close to that of pairwise summation.
// What each tuned constant here trades, and its evidence: docs/TUNING.md.
constexpr int64_t kRun = 64;
// Inner rows: accumulators per row, 128 bytes of them (lane j folds elements
// j, j + lanes, ...: several vectors' worth, to hide add latency), and
// elements per block: many, so that the per-block work stays negligible.
template <typename acc_t>
constexpr int kLanes = 128 / sizeof(acc_t);
constexpr int64_t kRowBlock = 16384;
// How far ahead rows are prefetched: the hardware prefetcher alone leaves
// memory bandwidth unused, more so where each element costs more work, as
// half's conversion does.
constexpr int64_t kPrefetchBytes = 4096;
// Outer columns: reduced rows per block (each column is folded sequentially
// within a block), and columns per unit of work (accumulators stay in L1).
constexpr int64_t kColumnBlock = kRun;
constexpr int64_t kColumnChunk = 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t ceil_log2(int64_t n) {
  int64_t d = 0;
  while ((int64_t(1) << d) < n) ++d;
  return d;
}

// The largest power of two not above n (n >= 1).
inline int64_t bit_floor(int64_t n) {
  int64_t p = 1;
  while (p <= n / 2) p *= 2;
  return p;
}

inline float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint32_t bits_from_float(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

inline void prefetch(const void* address) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(address);
#endif
}

// c10::Half's conversion to float, exact for every value (subnormals,
// infinities, NaN), written without a branch: c10's own version only
// vectorises when the build enables F16C, and reading half would otherwise
// be many times slower than reading float.
inline float half_to_float(at::Half h) {
  const uint32_t w = uint32_t(h.x) << 16;
  const uint32_t two_w = w + w;  // exponent and mantissa, sign dropped
  const float normal =
      float_from_bits((two_w >> 4) + (UINT32_C(0xE0) << 23)) * 0x1.0p-112f;
  const float subnormal =
      float_from_bits((two_w >> 17) | (UINT32_C(126) << 23)) - 0.5f;
  const uint32_t is_subnormal = two_w < (UINT32_C(1) << 27) ? ~UINT32_C(0) : 0;
  return float_from_bits((w & UINT32_C(0x80000000)) |
                         (bits_from_float(normal) & ~is_subnormal) |
                         (bits_from_float(subnormal) & is_subnormal));
}

// An input element as the accumulator type (a static_cast, see ops/op_base.h).
template <typename acc_t, typename scalar_t>
acc_t widen(scalar_t x) {
  if constexpr (std::is_same_v<scalar_t, at::Half>) {
    return acc_t(half_to_float(x));
  } else {
    return static_cast<acc_t>(x);
  }
}

}  // namespace cpu
}  // namespace torch_reduce
