// The CPU kernels of torch_reduce: one template, reduce_layout<Spec>, for
// every op and dtype, instantiated once per op in a translation unit of its
// own (build_support/kernel_units.py), so that the ops compile in parallel.
//
// Every output is reduced in an order that depends only on `layout.reduce`,
// never on batch, inner or the number of threads (batch invariance). A row
// (Inner) is cut into runs folded by interleaved lanes whose results combine
// pairwise, runs add up in sequence within a block, and blocks combine
// pairwise; a column (Outer) is folded top to bottom within blocks of rows,
// and blocks combine pairwise. Threads split either the outputs or, when
// there are too few of them, each output's blocks along subtrees of that
// pairwise tree, so the split does not change a bit of the results.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "backend.h"
#include "dispatch.h"

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
    return half_to_float(x);
  } else {
    return static_cast<acc_t>(x);
  }
}

// The folds below are compiled for the build's baseline (SSE2 on x86-64, as
// in any wheel) and again for AVX2 and AVX-512; the widest one that the CPU
// has runs (ATEN_CPU_CAPABILITY=default|avx2 caps it, as for torch's own
// kernels). Vector width changes how many lanes one instruction updates,
// never the operations on a lane, so every path gives the same bits; the
// wider loads are what reach the memory bandwidth that torch.sum reaches.
// The fold is called with the Isa it is compiled for (an IsaTag), for the
// few places that spell an instruction out (widen_vector).
enum class VectorIsa { Baseline, Avx2, Avx512 };
template <VectorIsa isa>
using IsaTag = std::integral_constant<VectorIsa, isa>;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TORCH_REDUCE_X86_ISAS 1
// Both wider paths convert half with F16C, which every AVX2 and AVX-512
// processor has, but which the compiler does not assume from either.
inline VectorIsa detect_vector_isa() {
  __builtin_cpu_init();
  VectorIsa isa = VectorIsa::Baseline;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) isa = VectorIsa::Avx2;
  if (isa == VectorIsa::Avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    isa = VectorIsa::Avx512;
  }
  const char* cap = std::getenv("ATEN_CPU_CAPABILITY");
  if (cap != nullptr && std::strcmp(cap, "default") == 0) return VectorIsa::Baseline;
  if (cap != nullptr && std::strcmp(cap, "avx2") == 0) return std::min(isa, VectorIsa::Avx2);
  return isa;
}

inline const VectorIsa kVectorIsa = detect_vector_isa();

// `flatten` inlines everything f calls, so it is compiled for the target.
template <typename F>
__attribute__((target("avx2,f16c"), flatten)) void run_avx2(const F& f) {
  f(IsaTag<VectorIsa::Avx2>{});
}

template <typename F>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,f16c"), flatten)) void run_avx512(const F& f) {
  f(IsaTag<VectorIsa::Avx512>{});
}

template <typename F>
void run_vectorised(const F& f) {
  switch (kVectorIsa) {
    case VectorIsa::Avx512:
      return run_avx512(f);
    case VectorIsa::Avx2:
      return run_avx2(f);
    case VectorIsa::Baseline:
      return f(IsaTag<VectorIsa::Baseline>{});
  }
}

// F16C's conversion of 8 (AVX2) or 16 (AVX-512) halves, exact like
// half_to_float. Called only from code compiled for that Isa, into which
// run_avx2 / run_avx512 inline it.
__attribute__((target("avx2,f16c"))) inline void widen_halves_f16c(const at::Half* x, float* out) {
  _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}

// (_mm512_cvtph_ps's merge source is an undefined value, of which gcc 12
// warns; with no element masked off, the zero source is never used.)
__attribute__((target("avx512f,f16c"))) inline void widen_halves_avx512(const at::Half* x, float* out) {
  _mm512_storeu_ps(out, _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))));
}

// The same for the first n halves of a vector (0 < n < 8 or 16): out[n, ...)
// is 0, and nothing past x + n is read. AVX-512 loads them under a mask;
// AVX2, which has no 16-bit masked load, copies them into a vector.
__attribute__((target("avx2,f16c"))) inline void widen_some_halves_f16c(const at::Half* x, int n, float* out) {
  __m128i halves = _mm_setzero_si128();
  std::memcpy(&halves, x, n * sizeof(at::Half));
  _mm256_storeu_ps(out, _mm256_cvtph_ps(halves));
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) inline void widen_some_halves_avx512(const at::Half* x, int n,
                                                                                               float* out) {
  const __m256i halves = _mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1), x);
  _mm512_storeu_ps(out, _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), halves));
}

// bfloat16 is a float's upper 16 bits: zero-extended and shifted into place,
// exact like widen. 8 (AVX2) or 16 (AVX-512) of them, or the first n. (The
// AVX-512 forms are the masked ones with no element masked off, for the
// reason above.)
__attribute__((target("avx2"))) inline __m256 bfloat16s_to_floats_avx2(__m128i x) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
}

__attribute__((target("avx512f,avx512bw"))) inline __m512 bfloat16s_to_floats_avx512(__m256i x) {
  const __mmask16 all = 0xFFFF;
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, x), 16));
}

__attribute__((target("avx2"))) inline void widen_bfloat16s_avx2(const at::BFloat16* x, float* out) {
  _mm256_storeu_ps(out, bfloat16s_to_floats_avx2(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x))));
}

__attribute__((target("avx512f,avx512bw"))) inline void widen_bfloat16s_avx512(const at::BFloat16* x, float* out) {
  _mm512_storeu_ps(out, bfloat16s_to_floats_avx512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))));
}

__attribute__((target("avx2"))) inline void widen_some_bfloat16s_avx2(const at::BFloat16* x, int n, float* out) {
  __m128i bits = _mm_setzero_si128();
  std::memcpy(&bits, x, n * sizeof(at::BFloat16));
  _mm256_storeu_ps(out, bfloat16s_to_floats_avx2(bits));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void widen_some_bfloat16s_avx512(const at::BFloat16* x,
                                                                                           int n, float* out) {
  _mm512_storeu_ps(out, bfloat16s_to_floats_avx512(_mm256_maskz_loadu_epi16(static_cast<__mmask16>((1u << n) - 1), x)));
}

// Results as half: F16C's conversion of 8 (AVX2) or 16 (AVX-512) floats,
// rounded to nearest even like c10's portable conversion, but for NaNs,
// whose payload F16C keeps (truncated) where c10 writes the sign and 0x7E00:
// they take c10's bits here, so that every path writes the same ones.
__attribute__((target("avx2,f16c"))) inline void narrow_floats_f16c(const float* x, at::Half* out) {
  const __m256 v = _mm256_loadu_ps(x);
  const __m128i halves = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // Each float's upper 16 bits, and its NaN mask, packed to 16 bits a lane
  // (signed saturation keeps sign-extended 16-bit values as they are).
  const __m256i upper = _mm256_srai_epi32(_mm256_castps_si256(v), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m128i sign = _mm_and_si128(
      _mm_packs_epi32(_mm256_castsi256_si128(upper), _mm256_extracti128_si256(upper, 1)), _mm_set1_epi16(INT16_MIN));
  const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
  const __m128i canonical = _mm_or_si128(sign, _mm_set1_epi16(0x7E00));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_blendv_epi8(halves, canonical, nan16));
}

__attribute__((target("avx512f,avx512bw,avx512vl,f16c"))) inline void narrow_floats_avx512(const float* x,
                                                                                           at::Half* out) {
  const __mmask16 all = 0xFFFF;
  const __m512 v = _mm512_loadu_ps(x);
  const __m256i halves = _mm512_maskz_cvtps_ph(all, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m256i upper = _mm512_maskz_cvtepi32_epi16(all, _mm512_maskz_srli_epi32(all, _mm512_castps_si512(v), 16));
  const __m256i canonical =
      _mm256_or_si256(_mm256_and_si256(upper, _mm256_set1_epi16(INT16_MIN)), _mm256_set1_epi16(0x7E00));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_mask_blend_epi16(nan, halves, canonical));
}

// amax and amin of float32 and float64 on AVX-512, lane[0, n) with v[0, n):
// vmax/vmin give a > b ? a : b (a < b ? a : b) -- b where the two are equal
// or either is a NaN -- and an unordered compare keeps a NaN accumulator:
// max_propagate_nan's (min_propagate_nan's) bits, where gcc's code for it
// took two compares, a mask-or and a blend a vector, and the mask registers'
// ports held the fold back. The lane trees and AVX2 keep gcc's code; column
// tiles fold many rows at a time (fold_extrema_rows_avx512). (The maskz
// forms, no element masked off, are a plain vmax/vmin without
// _mm512_max_ps's undefined merge source, of which gcc 12 warns. The masked
// form of vmax/vmin that keeps a NaN accumulator in one instruction made
// float64 rows much slower.)
// The AVX-512 forms of float32 and float64 that the extrema folds below
// take, so that one template of each fold serves both types. (merge: a's
// lanes where `keep` is clear; all: no lane masked off, the maskz form.)
#define TORCH_REDUCE_AVX512_FN __attribute__((target("avx512f"), always_inline)) static inline
template <typename T>
struct Avx512Extrema;

template <>
struct Avx512Extrema<float> {
  using Vector = __m512;
  using Mask = __mmask16;
  static constexpr int kWidth = 16;
  TORCH_REDUCE_AVX512_FN Vector load(const float* p) { return _mm512_loadu_ps(p); }
  TORCH_REDUCE_AVX512_FN void store(float* p, Vector v) { _mm512_storeu_ps(p, v); }
  template <int kPredicate>
  TORCH_REDUCE_AVX512_FN Mask compare(Vector a, Vector b) { return _mm512_cmp_ps_mask(a, b, kPredicate); }
  template <bool kMax>
  TORCH_REDUCE_AVX512_FN Vector merge(Vector a, Mask keep, Vector b) {
    return kMax ? _mm512_mask_max_ps(a, keep, a, b) : _mm512_mask_min_ps(a, keep, a, b);
  }
  template <bool kMax>
  TORCH_REDUCE_AVX512_FN Vector all(Vector a, Vector b) {
    return kMax ? _mm512_maskz_max_ps(Mask(0xFFFF), a, b) : _mm512_maskz_min_ps(Mask(0xFFFF), a, b);
  }
  TORCH_REDUCE_AVX512_FN Vector select(Vector a, Mask m, Vector b) { return _mm512_mask_mov_ps(a, m, b); }
};

template <>
struct Avx512Extrema<double> {
  using Vector = __m512d;
  using Mask = __mmask8;
  static constexpr int kWidth = 8;
  TORCH_REDUCE_AVX512_FN Vector load(const double* p) { return _mm512_loadu_pd(p); }
  TORCH_REDUCE_AVX512_FN void store(double* p, Vector v) { _mm512_storeu_pd(p, v); }
  template <int kPredicate>
  TORCH_REDUCE_AVX512_FN Mask compare(Vector a, Vector b) { return _mm512_cmp_pd_mask(a, b, kPredicate); }
  template <bool kMax>
  TORCH_REDUCE_AVX512_FN Vector merge(Vector a, Mask keep, Vector b) {
    return kMax ? _mm512_mask_max_pd(a, keep, a, b) : _mm512_mask_min_pd(a, keep, a, b);
  }
  template <bool kMax>
  TORCH_REDUCE_AVX512_FN Vector all(Vector a, Vector b) {
    return kMax ? _mm512_maskz_max_pd(Mask(0xFF), a, b) : _mm512_maskz_min_pd(Mask(0xFF), a, b);
  }
  TORCH_REDUCE_AVX512_FN Vector select(Vector a, Mask m, Vector b) { return _mm512_mask_mov_pd(a, m, b); }
};
#undef TORCH_REDUCE_AVX512_FN

template <bool kMax, int n, typename T>
__attribute__((target("avx512f"))) inline void combine_extrema_avx512(T* lane, const T* v) {
  using V = Avx512Extrema<T>;
  for (int k = 0; k < n; k += V::kWidth) {
    const typename V::Vector a = V::load(lane + k), b = V::load(v + k);
    V::store(lane + k, V::select(V::template all<kMax>(a, b), V::template compare<_CMP_UNORD_Q>(a, a), a));
  }
}

// lane[0, n) folds the n columns of `rows` rows that start `stride` elements
// apart, top to bottom, to combine_extrema_avx512's bits. A lane that holds
// a NaN is frozen by a mask instead of being restored after each vmax/vmin:
// the mask's chain is one k-register and a row, where the restore's compare
// of the accumulator put a compare's latency on each row's chain. Tried for
// fold_lanes' rows too: rows of 128 gained, but long rows lost fold_vector's
// prefetch.
template <bool kMax, int n, typename T>
__attribute__((target("avx512f"))) inline void fold_extrema_rows_avx512(T* lane, const T* x, int64_t rows,
                                                                        int64_t stride) {
  using V = Avx512Extrema<T>;
  constexpr int kVectors = n / V::kWidth;
  typename V::Vector acc[kVectors];
  typename V::Mask live[kVectors];
  for (int k = 0; k < kVectors; ++k) {
    acc[k] = V::load(lane + V::kWidth * k);
    live[k] = V::template compare<_CMP_ORD_Q>(acc[k], acc[k]);
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int k = 0; k < kVectors; ++k) {
      const typename V::Vector b = V::load(x + r * stride + V::kWidth * k);
      acc[k] = V::template merge<kMax>(acc[k], live[k], b);
      live[k] &= V::template compare<_CMP_ORD_Q>(b, b);
    }
  }
  for (int k = 0; k < kVectors; ++k) V::store(lane + V::kWidth * k, acc[k]);
}
#else
template <typename F>
void run_vectorised(const F& f) {
  f(IsaTag<VectorIsa::Baseline>{});
}
#endif

// Elements a widen_vector call converts with one instruction (or two).
template <typename scalar_t, VectorIsa isa>
constexpr int kWidenVector =
    !(std::is_same_v<scalar_t, at::Half> || std::is_same_v<scalar_t, at::BFloat16>) || isa == VectorIsa::Baseline ? 1
    : isa == VectorIsa::Avx2                                                                                      ? 8
                                                                                                                  : 16;

// out[0, n) = x[0, n) widened, n a multiple of kWidenVector. Half is
// converted by F16C where the Isa has it: the portable half_to_float takes
// some ten vector instructions an element where F16C takes one. bfloat16 by
// a zero extension and a shift, spelled out for the column tiles
// (fold_columns).
template <VectorIsa isa, int n, typename acc_t, typename scalar_t>
C10_ALWAYS_INLINE void widen_vector(const scalar_t* x, acc_t* out) {
  constexpr int step = kWidenVector<scalar_t, isa>;
  static_assert(n % step == 0);
#ifdef TORCH_REDUCE_X86_ISAS
  if constexpr (step > 1) {
    for (int k = 0; k < n; k += step) {
      if constexpr (std::is_same_v<scalar_t, at::BFloat16>) {
        if constexpr (isa == VectorIsa::Avx512) {
          widen_bfloat16s_avx512(x + k, out + k);
        } else {
          widen_bfloat16s_avx2(x + k, out + k);
        }
      } else if constexpr (isa == VectorIsa::Avx512) {
        widen_halves_avx512(x + k, out + k);
      } else {
        widen_halves_f16c(x + k, out + k);
      }
    }
    return;
  }
#endif
  for (int k = 0; k < n; ++k) out[k] = widen<acc_t>(x[k]);
}

// out[0, n) = x[0, n) widened, 0 < n < kWidenVector (> 1); out[n,
// kWidenVector) is 0.
template <VectorIsa isa, typename acc_t, typename scalar_t>
C10_ALWAYS_INLINE void widen_part_of_vector(const scalar_t* x, int n, acc_t* out) {
#ifdef TORCH_REDUCE_X86_ISAS
  if constexpr (std::is_same_v<scalar_t, at::BFloat16>) {
    if constexpr (isa == VectorIsa::Avx512) {
      widen_some_bfloat16s_avx512(x, n, out);
    } else {
      widen_some_bfloat16s_avx2(x, n, out);
    }
  } else if constexpr (isa == VectorIsa::Avx512) {
    widen_some_halves_avx512(x, n, out);
  } else {
    widen_some_halves_f16c(x, n, out);
  }
#endif
}

// out[0, n) = op.project(acc[0, n)) as out_t. Half results of float
// accumulators go a vector at a time through F16C where the Isa has it
// (narrow_floats_*): c10's portable conversion, which the rest take, is some
// twenty instructions an element, and perf put it level with the fold
// itself in a float16 column sum.
template <typename out_t, typename acc_t, VectorIsa isa, typename Op>
C10_ALWAYS_INLINE void store_results(IsaTag<isa>, const acc_t* acc, int64_t n, out_t* out, const Op& op) {
  int64_t i = 0;
#ifdef TORCH_REDUCE_X86_ISAS
  if constexpr (std::is_same_v<out_t, at::Half> && std::is_same_v<acc_t, float> && isa != VectorIsa::Baseline) {
    if constexpr (isa == VectorIsa::Avx512) {
      for (; i + 16 <= n; i += 16) {
        float projected[16];
        for (int j = 0; j < 16; ++j) projected[j] = op.project(acc[i + j]);
        narrow_floats_avx512(projected, out + i);
      }
    }
    for (; i + 8 <= n; i += 8) {
      float projected[8];
      for (int j = 0; j < 8; ++j) projected[j] = op.project(acc[i + j]);
      narrow_floats_f16c(projected, out + i);
    }
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<out_t>(op.project(acc[i]));
}

// store_results from code compiled for no Isa: only half results take a
// vectorised call (other results stored from inside one were slower).
template <typename out_t, typename acc_t, typename Op>
void store_results(const acc_t* acc, int64_t n, out_t* out, const Op& op) {
  if constexpr (std::is_same_v<out_t, at::Half> && std::is_same_v<acc_t, float>) {
    run_vectorised([&](auto isa) { store_results(isa, acc, n, out, op); });
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<out_t>(op.project(acc[i]));
  }
}

// lane[0] = lane[0, 2 * w) combined pairwise: lane[j] with lane[j + w], then
// the same on the first half. A loop of fixed size per level is what the
// compiler turns into whole-vector operations and a few shuffles.
template <int w, typename acc_t, typename Op>
void combine_halves(acc_t* lane, const Op& op) {
  for (int j = 0; j < w; ++j) lane[j] = op.combine(lane[j], lane[j + w]);
  if constexpr (w > 1) combine_halves<w / 2>(lane, op);
}

// amax and amin, whose combine is a compare and a select.
template <typename Op>
constexpr bool kSelects = Op::kCombine == Combine::Max || Op::kCombine == Combine::Min;

// Where amax and amin fold a vector with combine_extrema_avx512: float32
// and float64 inputs, on AVX-512.
template <typename scalar_t, typename acc_t, typename Op, VectorIsa isa>
constexpr bool kVectorExtrema = kSelects<Op> && std::is_same_v<scalar_t, acc_t> && std::is_floating_point_v<acc_t> &&
                                isa == VectorIsa::Avx512;

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

// Folds x[0, n) into one accumulator: lane j folds x[j], x[j + lanes], ...
// of the whole vectors in sequence, the lanes are combined pairwise, then the
// last n % lanes elements are folded in one by one (a scalar tail, so that
// the lanes are never indexed at run time and stay in registers), or before
// the tree as one more vector (kVectorTail). With kSets sets of lanes, the
// sets take kSets vectors in turn, and are combined into the first before
// the last whole vectors.
template <int kSets, typename scalar_t, typename acc_t, typename Isa, typename Op>
acc_t fold_lanes(Isa, const scalar_t* __restrict x, int64_t n, const Op& op) {
  constexpr int lanes = kLanes<acc_t>;
  // lane[j] folds v[j] of the vector of `lanes` elements at v.
  auto fold_vector = [&](acc_t* lane, const scalar_t* v) {
    prefetch(reinterpret_cast<const char*>(v) + kPrefetchBytes);
    if constexpr (std::is_same_v<scalar_t, at::Half>) {
      // Half widened first, folded after: in one loop gcc 12 vectorised
      // neither the conversion nor amax/amin's select (scalar code, many
      // times slower than float32's). The other types keep one loop: split,
      // float32 and int32 amax were slower.
      acc_t wide[lanes];
      widen_vector<Isa::value, lanes>(v, wide);
      for (int j = 0; j < lanes; ++j) lane[j] = op.combine(lane[j], wide[j]);
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
      for (int j = 0; j < lanes; ++j) lane[j] = op.combine(lane[j], widen<acc_t>(v[j]));
    } else {
      for (int j = 0; j < lanes; ++j) lane[j] = op.combine(lane[j], widen<acc_t>(v[j]));
    }
  };
  acc_t lane[kSets][lanes];
  for (int s = 0; s < kSets; ++s)
    for (int j = 0; j < lanes; ++j) lane[s][j] = op.identity();
  int64_t i = 0;
  for (; i + kSets * lanes <= n; i += kSets * lanes)
    for (int s = 0; s < kSets; ++s) fold_vector(lane[s], x + i + s * lanes);
  for (int s = 1; s < kSets; ++s)
    for (int j = 0; j < lanes; ++j) lane[0][j] = op.combine(lane[0][j], lane[s][j]);
  for (; i + lanes <= n; i += lanes) fold_vector(lane[0], x + i);
  if constexpr (kVectorTail<scalar_t, Op>) {
    if (i < n) {
      const int left = static_cast<int>(n - i);
      acc_t last[lanes];
      if constexpr (constexpr int step = kWidenVector<scalar_t, Isa::value>; step > 1) {
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
        for (int j = 0; j < lanes; ++j) last[j] = j < left ? last[j] : op.identity();
      } else {
        for (int j = 0; j < lanes; ++j) last[j] = j < left ? widen<acc_t>(x[i + j]) : op.identity();
      }
      for (int j = 0; j < lanes; ++j) lane[0][j] = op.combine(lane[0][j], last[j]);
      i = n;
    }
  }
  combine_halves<lanes / 2>(lane[0], op);
  acc_t acc = lane[0][0];
  for (; i < n; ++i) acc = op.combine(acc, widen<acc_t>(x[i]));
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
acc_t fold_run(Isa isa, const scalar_t* __restrict x, int64_t n, const Op& op) {
  if constexpr (kSelects<Op>) {
    if (n >= 8 * kLanes<acc_t>) return fold_lanes<2, scalar_t, acc_t>(isa, x, n, op);
  }
  return fold_lanes<1, scalar_t, acc_t>(isa, x, n, op);
}

// Elements of one run of fold_contiguous: kRun * lanes, but a whole block
// for amax and amin, exact in any order: their runs' set-up and lane trees
// cost time and buy no accuracy.
template <typename acc_t, typename Op>
constexpr int64_t kFoldRun = kSelects<Op> ? kRowBlock : kRun * kLanes<acc_t>;

// Folds x[0, n) into one accumulator: runs of kFoldRun elements, one after
// the other. Inlined, as short rows cost little more than the calls.
template <typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE acc_t fold_contiguous(const scalar_t* x, int64_t n, const Op& op) {
  constexpr int64_t run = kFoldRun<acc_t, Op>;
  // Each run is a vectorised call of its own, never a loop inside one: gcc
  // 12.2 -O3 miscompiles the AVX2 / AVX-512 lanes of int8/int16 -> int64 sums
  // once they sit in an outer loop, be it over runs or over rows.
  acc_t acc;
  run_vectorised([&](auto isa) { acc = fold_run<scalar_t, acc_t>(isa, x, std::min(n, run), op); });
  for (int64_t i = run; i < n; i += run) {
    acc_t next;
    run_vectorised([&](auto isa) { next = fold_run<scalar_t, acc_t>(isa, x + i, std::min(n - i, run), op); });
    acc = op.combine(acc, next);
  }
  return acc;
}

// acc[0, n) = the first n (0 < n <= kTile) columns of `rows` rows that
// start `row_stride` elements apart, folded top to bottom in registers. A
// tile of fewer columns than kTile is one vector (kTile == kWidenVector),
// whose other lanes fold zeros that are never stored. (kVectorExtrema's
// tiles are whole vectors.)
template <int kTile, VectorIsa isa, typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE void fold_column_tile(const scalar_t* x, int64_t rows, int64_t row_stride, int n,
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
      if (kTile == kWidenVector<scalar_t, isa> && n < kTile) {
        widen_part_of_vector<isa>(x + r * row_stride, n, wide);
      } else {
        widen_vector<isa, kTile>(x + r * row_stride, wide);
      }
      if constexpr (kSelects<Op> && kTile == kWidenVector<scalar_t, isa>) {
        // A tile of one vector folds amax's and amin's select in a loop, not
        // unrolled: unrolled, gcc 12 did not vectorise it. Tiles of four
        // vectors stay unrolled, which gcc does vectorise: as loops they were
        // slower. Sums vectorise either way.
#pragma GCC unroll 1
        for (int j = 0; j < kTile; ++j) column[j] = op.combine(column[j], wide[j]);
      } else {
        for (int j = 0; j < kTile; ++j) column[j] = op.combine(column[j], wide[j]);
      }
    }
  }
  for (int j = 0; j < n; ++j) acc[j] = column[j];
}

// acc[c] = column c (c < width) of `rows` rows that start `row_stride`
// elements apart, folded top to bottom; the loop over columns vectorises.
// Four rows per pass, so that narrow blocks do not wait on acc's store and
// reload after every row.
template <typename scalar_t, typename acc_t, typename Op>
C10_ALWAYS_INLINE void fold_column_loop(const scalar_t* x, int64_t rows, int64_t row_stride, int64_t width,
                                        acc_t* __restrict acc, const Op& op) {
  for (int64_t c = 0; c < width; ++c) acc[c] = op.identity();
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const scalar_t* __restrict r0 = x + r * row_stride;
    const scalar_t* __restrict r1 = r0 + row_stride;
    const scalar_t* __restrict r2 = r1 + row_stride;
    const scalar_t* __restrict r3 = r2 + row_stride;
    for (int64_t c = 0; c < width; ++c) {
      acc_t a = op.combine(acc[c], widen<acc_t>(r0[c]));
      a = op.combine(a, widen<acc_t>(r1[c]));
      a = op.combine(a, widen<acc_t>(r2[c]));
      acc[c] = op.combine(a, widen<acc_t>(r3[c]));
    }
  }
  for (; r < rows; ++r) {
    const scalar_t* __restrict row = x + r * row_stride;
    for (int64_t c = 0; c < width; ++c) {
      acc[c] = op.combine(acc[c], widen<acc_t>(row[c]));
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
void fold_columns(Isa, const scalar_t* x, int64_t rows, int64_t row_stride, int64_t width, acc_t* __restrict acc,
                  const Op& op) {
  int64_t first = 0;
  if constexpr (kVectorExtrema<scalar_t, acc_t, Op, Isa::value>) {
    // Blocks of up to four whole vectors of columns, as one tile: their few
    // chains of max (min) down the rows left fold_column_loop waiting on
    // each row. Wider blocks keep the loop, which streams four rows at a time:
    // as tiles down their rows, they were slower.
    constexpr int step = 64 / sizeof(acc_t);
    switch (width <= 4 * step ? width / step : 0) {
      case 4:
        fold_column_tile<4 * step, Isa::value>(x, rows, row_stride, 4 * step, acc, op);
        first = 4 * step;
        break;
      case 3:
        fold_column_tile<3 * step, Isa::value>(x, rows, row_stride, 3 * step, acc, op);
        first = 3 * step;
        break;
      case 2:
        fold_column_tile<2 * step, Isa::value>(x, rows, row_stride, 2 * step, acc, op);
        first = 2 * step;
        break;
      case 1:
        fold_column_tile<step, Isa::value>(x, rows, row_stride, step, acc, op);
        first = step;
        break;
    }
  } else if constexpr (constexpr int step = kWidenVector<scalar_t, Isa::value>; step > 1) {
    for (; first + 4 * step <= width; first += 4 * step)
      fold_column_tile<4 * step, Isa::value>(x + first, rows, row_stride, 4 * step, acc + first, op);
    for (; first < width; first += step)
      fold_column_tile<step, Isa::value>(x + first, rows, row_stride,
                                         static_cast<int>(std::min<int64_t>(step, width - first)), acc + first, op);
  }
  fold_column_loop(x + first, rows, row_stride, width - first, acc + first, op);
}

// Column blocks of up to kNarrowColumns columns are folded kSideBySide at a
// time: one block's fold is a chain of dependent adds per column, too few
// chains to keep the adders busy, and the blocks' chains are independent.
constexpr int64_t kNarrowColumns = 8;
constexpr int64_t kSideBySide = 8;

// kBlocks consecutive blocks of kColumnBlock rows of kWidth columns, each
// folded exactly as fold_columns folds it (top to bottom from the identity);
// block k's results go to acc[k * kWidth, (k + 1) * kWidth).
template <int kBlocks, int kWidth, typename scalar_t, typename acc_t, typename Op>
void fold_column_blocks_side_by_side(const scalar_t* x, int64_t row_stride, acc_t* acc, const Op& op) {
  acc_t a[kBlocks][kWidth];
  for (int k = 0; k < kBlocks; ++k)
    for (int c = 0; c < kWidth; ++c) a[k][c] = op.identity();
  for (int64_t r = 0; r < kColumnBlock; ++r) {
    for (int k = 0; k < kBlocks; ++k) {
      const scalar_t* __restrict row = x + (k * kColumnBlock + r) * row_stride;
      for (int c = 0; c < kWidth; ++c) a[k][c] = op.combine(a[k][c], widen<acc_t>(row[c]));
    }
  }
  for (int k = 0; k < kBlocks; ++k)
    for (int c = 0; c < kWidth; ++c) acc[k * kWidth + c] = a[k][c];
}

// fold_column_blocks_side_by_side for the run-time width (1 to kMax).
template <int kBlocks, int kMax, typename scalar_t, typename acc_t, typename Op>
void fold_narrow_column_blocks(const scalar_t* x, int64_t row_stride, int64_t width, acc_t* acc, const Op& op) {
  if constexpr (kMax > 1) {
    if (width < kMax) return fold_narrow_column_blocks<kBlocks, kMax - 1>(x, row_stride, width, acc, op);
  }
  fold_column_blocks_side_by_side<kBlocks, kMax>(x, row_stride, acc, op);
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
int64_t fold_narrow_blocks_side_by_side(const scalar_t* x, int64_t row_stride, int64_t width, int64_t whole,
                                        acc_t* acc, const Op& op) {
  if (whole >= kSideBySide) {
    fold_narrow_column_blocks<kSideBySide, kNarrowColumns, scalar_t>(x, row_stride, width, acc, op);
    return kSideBySide;
  }
  if constexpr (!std::is_same_v<scalar_t, at::Half> && !std::is_same_v<scalar_t, at::BFloat16>) {
    if (whole >= 4) {
      fold_narrow_column_blocks<4, kNarrowColumns, scalar_t>(x, row_stride, width, acc, op);
      return 4;
    }
    if constexpr (!(kSelects<Op> && std::is_integral_v<acc_t>)) {
      fold_narrow_column_blocks<2, kNarrowColumns, scalar_t>(x, row_stride, width, acc, op);
      return 2;
    }
  }
  return 0;
}

// Combines the results of blocks 0, 1, 2, ... pairwise as they arrive, in
// O(log blocks) space: a binary counter merges each complete pair of equal
// subtrees, and finish() merges what is left, last first. The tree depends
// only on the number of blocks (blocks [0, n) split after the largest power
// of two below n), and any aligned run of 2^k blocks is one of its subtrees,
// which is what lets threads fold such spans on their own.
template <typename acc_t, typename Op>
class PairwiseCombiner {
 public:
  PairwiseCombiner(int64_t width, int64_t max_blocks, const Op& op)
      : width_(width),
        op_(op),
        slots_(std::make_unique<acc_t[]>(width * (ceil_log2(max_blocks) + 1))) {}

  // Where the next block's `width` results are to be written.
  acc_t* next() { return slots_.get() + depth_ * width_; }

  // Takes the results written to next().
  void push() {
    ++depth_;
    for (int64_t n = ++count_; n % 2 == 0; n /= 2) merge_top();
  }

  // The combined results of the blocks pushed so far (at least one); then
  // starts over.
  const acc_t* finish() {
    while (depth_ > 1) merge_top();
    depth_ = count_ = 0;
    return slots_.get();
  }

 private:
  void merge_top() {
    acc_t* below = slots_.get() + (depth_ - 2) * width_;
    const acc_t* top = below + width_;
    for (int64_t c = 0; c < width_; ++c) below[c] = op_.combine(below[c], top[c]);
    --depth_;
  }

  int64_t width_;
  const Op& op_;
  std::unique_ptr<acc_t[]> slots_;
  int64_t depth_ = 0;
  int64_t count_ = 0;
};

// The schedule shared by both layouts: `units` independent groups of `width`
// outputs, each made of `blocks` blocks of about `block_work` elements.
// leaf(unit, block, count, acc) writes the `width` results of each of blocks
// block, ..., block + count - 1, one after the other (count is at most
// `leaf_blocks`: a leaf that gains from folding blocks side by side asks for
// more than one); store(unit, acc) writes a unit's outputs from its combined
// results.
template <typename acc_t, typename Op, typename Leaf, typename Store>
void reduce_blocks(int64_t units, int64_t blocks, int64_t width,
                   int64_t block_work, int64_t leaf_blocks, const Op& op,
                   const Leaf& leaf, const Store& store) {
  // Blocks [first, last) of unit u, pushed in order; several at a time go
  // through `group`, single ones straight into the combiner.
  auto push_blocks = [&](PairwiseCombiner<acc_t, Op>& combiner, acc_t* group, int64_t u,
                         int64_t first, int64_t last) {
    for (int64_t b = first; b < last;) {
      const int64_t count = std::min(leaf_blocks, last - b);
      if (count == 1) {
        leaf(u, b, 1, combiner.next());
        combiner.push();
      } else {
        leaf(u, b, count, group);
        for (int64_t k = 0; k < count; ++k) {
          std::copy_n(group + k * width, width, combiner.next());
          combiner.push();
        }
      }
      b += count;
    }
  };
  // Enough tasks to balance the threads: whole units when there are many,
  // otherwise spans of a power-of-two number of blocks (subtrees of the
  // unit's tree, so the split does not change the results). Each thread
  // takes a contiguous range of tasks, of at least GRAIN_SIZE elements: the
  // grain bounds the threads, not the spans, which stay fine enough to split
  // the blocks evenly. With spans of at least GRAIN_SIZE elements, two
  // threads split the six blocks of a float64 sum of 84132 elements four and
  // two.
  const int64_t tasks_per_unit = ceil_div(4 * at::get_num_threads(), units);
  const int64_t grain_blocks = ceil_div(at::internal::GRAIN_SIZE, block_work);
  int64_t span = blocks;
  if (tasks_per_unit > 1) span = bit_floor(ceil_div(blocks, tasks_per_unit));
  const int64_t spans = ceil_div(blocks, span);
  if (spans == 1) {
    const int64_t grain = std::max<int64_t>(1, grain_blocks / blocks);
    at::parallel_for(0, units, grain, [&](int64_t begin, int64_t end) {
      PairwiseCombiner<acc_t, Op> combiner(width, blocks, op);
      auto group = std::make_unique<acc_t[]>(leaf_blocks * width);
      for (int64_t u = begin; u < end; ++u) {
        if (blocks == 1) {  // short columns: the combiner's bookkeeping would cost more
          acc_t* acc = combiner.next();
          leaf(u, 0, 1, acc);
          store(u, acc);
          continue;
        }
        push_blocks(combiner, group.get(), u, 0, blocks);
        store(u, combiner.finish());
      }
    });
    return;
  }
  auto span_results = std::make_unique<acc_t[]>(units * spans * width);
  at::parallel_for(0, units * spans, ceil_div(grain_blocks, span), [&](int64_t begin, int64_t end) {
    PairwiseCombiner<acc_t, Op> combiner(width, span, op);
    auto group = std::make_unique<acc_t[]>(leaf_blocks * width);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t u = task / spans, first = task % spans * span;
      push_blocks(combiner, group.get(), u, first, std::min(blocks, first + span));
      std::copy_n(combiner.finish(), width, span_results.get() + task * width);
    }
  });
  PairwiseCombiner<acc_t, Op> combiner(width, spans, op);
  for (int64_t u = 0; u < units; ++u) {
    for (int64_t k = 0; k < spans; ++k) {
      std::copy_n(span_results.get() + (u * spans + k) * width, width, combiner.next());
      combiner.push();
    }
    store(u, combiner.finish());
  }
}

// Rows shorter than one set of lanes: fold_run's lanes would all stay at the
// identity, so a row is its elements folded in sequence from the identity.
// Here that takes a few instructions a row instead of fold_run's set-up and
// lane tree, and many rows per vectorised call. Rows of up to
// kShortRowLengths elements have their length as a compile-time constant:
// then the compiler vectorises across rows (and amax/amin's selects become
// blends, not branches on the data).
constexpr int kShortRowLengths = 8;

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
  for (int64_t i = 0; i < length; ++i) acc = op.combine(acc, widen<acc_t>(x[i]));
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
      if constexpr (std::is_same_v<scalar_t, at::Half> && kWidenVector<scalar_t, Isa::value> > 1) {
        constexpr int step = kWidenVector<scalar_t, VectorIsa::Avx2>;
        acc_t wide[kRowsTogether][kLanes<acc_t>];
        for (int k = 0; k < kRowsTogether; ++k) {
          int64_t i = 0;
          for (; i + step <= n; i += step) widen_vector<VectorIsa::Avx2, step>(x + k * stride + i, wide[k] + i);
          for (; i < n; ++i) wide[k][i] = widen<acc_t>(x[k * stride + i]);
        }
        for (int64_t i = 0; i < n; ++i) {
          for (int k = 0; k < kRowsTogether; ++k) acc[k] = op.combine(acc[k], wide[k][i]);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          for (int k = 0; k < kRowsTogether; ++k) acc[k] = op.combine(acc[k], widen<acc_t>(x[k * stride + i]));
        }
      }
      store_results(isa, acc, kRowsTogether, out + row, op);
    }
  }
  if constexpr (kLength > 0 && reads_interleaved_rows(kLength)) {
    if (stride == kLength) {
      if constexpr (std::is_same_v<scalar_t, at::Half> && kWidenVector<scalar_t, Isa::value> > 1) {
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

// Rows shorter than kLanes<acc_t> (fold_short_rows' buffer of widened half).
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_short_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out, const Op& op) {
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(layout.reduce < kLanes<acc_t>);  // reduce_rows' test, restated
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
  // A grouped row is one run of fold_contiguous, which fold_run folds alone.
  static_assert(kFoldRun<acc_t, Op> * static_cast<int64_t>(sizeof(scalar_t)) >= kGroupedRowBytes,
                "a grouped row is one run");
  const bool grouped = reduce * static_cast<int64_t>(sizeof(scalar_t)) <= kGroupedRowBytes;
  const int64_t grain = ceil_div(at::internal::GRAIN_SIZE, reduce);
  at::parallel_for(0, layout.batch, grain, [&](int64_t begin, int64_t end) {
    int64_t row = begin;
    if (grouped) {
      for (; row + kRowsPerCall <= end; row += kRowsPerCall) {
        const scalar_t* x = data + row * stride;
        acc_t acc[kRowsPerCall]{};  // (set in run_vectorised, which gcc does not see)
        run_vectorised([&](auto isa) {
          [&]<size_t... k>(std::index_sequence<k...>) {
            ((acc[k] = fold_run<scalar_t, acc_t>(isa, x + k * stride, reduce, op)), ...);
          }(std::make_index_sequence<kRowsPerCall>{});
        });
        store_results(acc, kRowsPerCall, out + row, op);
      }
    }
    for (; row < end; ++row)
      out[row] = static_cast<out_t>(op.project(fold_contiguous<scalar_t, acc_t>(data + row * stride, reduce, op)));
  });
}

// Inner: one unit per output row, blocks of kRowBlock contiguous elements.
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void reduce_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out,
                 const Op& op) {
  const int64_t reduce = layout.reduce;
  if (reduce < kLanes<acc_t>) return reduce_short_rows<scalar_t, acc_t, out_t>(data, layout, out, op);
  if (reduce <= kRowBlock) return reduce_rows_of_one_block<scalar_t, acc_t, out_t>(data, layout, out, op);
  reduce_blocks<acc_t>(
      layout.batch, ceil_div(reduce, kRowBlock), /*width=*/1,
      std::min(reduce, kRowBlock), /*leaf_blocks=*/1, op,
      [&](int64_t row, int64_t block, int64_t, acc_t* acc) {
        const int64_t start = block * kRowBlock;
        *acc = fold_contiguous<scalar_t, acc_t>(
            data + row * layout.batch_stride + start,
            std::min(kRowBlock, reduce - start), op);
      },
      [&](int64_t row, const acc_t* acc) {
        out[row] = static_cast<out_t>(op.project(*acc));
      });
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
                  x + (block + k) * kColumnBlock * layout.reduce_stride, layout.reduce_stride, width, whole - k,
                  acc + k * width, op);
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
                                          std::min(kColumnBlock, reduce - first_row), layout.reduce_stride,
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

template <typename Spec>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout,
                   at::Tensor& out) {
  dispatch_reduction<Spec>(
      input.scalar_type(), out.scalar_type(), layout.reduce,
      [&](auto types, auto op) {
        using T = decltype(types);
        using scalar_t = typename T::scalar_t;
        using acc_t = typename T::acc_t;
        using out_t = typename T::out_t;
        const auto* data = static_cast<const scalar_t*>(input.data_ptr());
        auto* result = static_cast<out_t*>(out.data_ptr());
        if (layout.kind == ReduceLayout::Inner) {
          reduce_rows<scalar_t, acc_t, out_t>(data, layout, result, op);
        } else {
          reduce_columns<scalar_t, acc_t, out_t>(data, layout, result, op);
        }
      });
}

}  // namespace cpu
}  // namespace torch_reduce
