// The vector ISAs the folds are compiled for (baseline, AVX2, AVX-512), the
// run-time choice among them (run_vectorised), and the x86 intrinsics spelled
// out: F16C and bfloat16 widening, half narrowing, AVX-512 amax/amin. Apart
// as the one header that holds intrinsics and defines the ISA macros
// (TORCH_REDUCE_X86_ISAS), which the headers that include it test.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

#include "ops/op_base.h"

namespace torch_reduce {
namespace cpu {

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

// amax and amin, whose combine is a compare and a select.
template <typename Op>
constexpr bool kSelects = Op::kCombine == Combine::Max || Op::kCombine == Combine::Min;

// Where amax and amin fold a vector with combine_extrema_avx512: float32
// and float64 inputs, on AVX-512.
template <typename scalar_t, typename acc_t, typename Op, VectorIsa isa>
constexpr bool kVectorExtrema = kSelects<Op> && std::is_same_v<scalar_t, acc_t> && std::is_floating_point_v<acc_t> &&
                                isa == VectorIsa::Avx512;

}  // namespace cpu
}  // namespace torch_reduce
