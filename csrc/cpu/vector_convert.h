// Widening and narrowing a vector at a time on the Isa a fold is compiled for
// (widen_vector, widen_part_of_vector, store_results): vector_isa.h's F16C
// and bfloat16 instructions where the Isa has them, else the portable loop.
// Apart from vector_isa.h, which holds the instructions; rows and columns
// both call these.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <type_traits>

#include "common.h"
#include "ops/op_base.h"
#include "vector_isa.h"

namespace torch_reduce {
namespace cpu {

// Elements a widen_vector call converts with one instruction (or two); one
// where the accumulator is a struct (var's state), which the vector
// instructions do not write.
template <typename scalar_t, typename acc_t, VectorIsa isa>
constexpr int kWidenVector =
    !(std::is_same_v<scalar_t, at::Half> || std::is_same_v<scalar_t, at::BFloat16>) || isa == VectorIsa::Baseline ||
            kStructAccumulator<acc_t>
        ? 1
    : isa == VectorIsa::Avx2 ? 8
                             : 16;

// out[0, n) = x[0, n) widened, n a multiple of kWidenVector. Half is
// converted by F16C where the Isa has it: the portable half_to_float takes
// some ten vector instructions an element where F16C takes one. bfloat16 by
// a zero extension and a shift, spelled out for the column tiles
// (fold_columns).
template <VectorIsa isa, int n, typename acc_t, typename scalar_t>
C10_ALWAYS_INLINE void widen_vector(const scalar_t* x, acc_t* out) {
  constexpr int step = kWidenVector<scalar_t, acc_t, isa>;
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
  static_assert(kWidenVector<scalar_t, acc_t, isa> > 1, "called only where widen_vector converts several");
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

}  // namespace cpu
}  // namespace torch_reduce
