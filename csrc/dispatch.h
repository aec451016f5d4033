// The one place where dtypes become C++ types.
//
// The front end (reduce_front_end.cpp) casts every input to a dtype that the
// kernels are instantiated for, and picks the kernel's output dtype; here that
// (input, output) pair of one ReduceKind becomes ReduceTypes<scalar_t, acc_t,
// out_t>. Half and bfloat16 accumulate in float, integers and bool in int64.
#pragma once

#include <ATen/ATen.h>

#include <type_traits>

#include "ops.h"

namespace torch_reduce {

template <typename scalar_t_, typename acc_t_, typename out_t_>
struct ReduceTypes {
  using scalar_t = scalar_t_;
  using acc_t = acc_t_;
  using out_t = out_t_;
};

[[noreturn]] inline void no_kernel_for(ReduceKind kind, at::ScalarType in,
                                       at::ScalarType out) {
  TORCH_CHECK(false, "torch_reduce: internal error: no kernel for reduction ",
              static_cast<int>(kind), " from ", in, " to ", out);
}

// Sum and mean of floating types: output in the input type, or float for a
// half/bfloat16 input whose caller asked for dtype=torch.float32; and half or
// bfloat16 from float, the accumulator dtype that a half/bfloat16 reduction's
// stages pass between them, for its last stage.
template <typename F>
void dispatch_floating(at::ScalarType in, at::ScalarType out, F&& f) {
  using at::BFloat16;
  using at::Half;
  switch (in) {
    case at::kFloat:
      if (out == at::kHalf) return f(ReduceTypes<float, float, Half>{});
      if (out == at::kBFloat16) return f(ReduceTypes<float, float, BFloat16>{});
      return f(ReduceTypes<float, float, float>{});
    case at::kDouble:
      return f(ReduceTypes<double, double, double>{});
    case at::kHalf:
      if (out == at::kFloat) return f(ReduceTypes<Half, float, float>{});
      return f(ReduceTypes<Half, float, Half>{});
    case at::kBFloat16:
      if (out == at::kFloat) return f(ReduceTypes<BFloat16, float, float>{});
      return f(ReduceTypes<BFloat16, float, BFloat16>{});
    default:
      no_kernel_for(ReduceKind::Sum, in, out);
  }
}

// Sum of integers and bool: int64 accumulator and output.
template <typename F>
void dispatch_integral_sum(at::ScalarType in, F&& f) {
  switch (in) {
    case at::kBool:
      return f(ReduceTypes<bool, int64_t, int64_t>{});
    case at::kByte:
      return f(ReduceTypes<uint8_t, int64_t, int64_t>{});
    case at::kChar:
      return f(ReduceTypes<int8_t, int64_t, int64_t>{});
    case at::kShort:
      return f(ReduceTypes<int16_t, int64_t, int64_t>{});
    case at::kInt:
      return f(ReduceTypes<int32_t, int64_t, int64_t>{});
    case at::kLong:
      return f(ReduceTypes<int64_t, int64_t, int64_t>{});
    default:
      no_kernel_for(ReduceKind::Sum, in, at::kLong);
  }
}

// amax/amin: the output is the input type; half and bfloat16 compare in float.
template <typename F>
void dispatch_floating_extremum(at::ScalarType in, F&& f) {
  using at::BFloat16;
  using at::Half;
  switch (in) {
    case at::kFloat:
      return f(ReduceTypes<float, float, float>{});
    case at::kDouble:
      return f(ReduceTypes<double, double, double>{});
    case at::kHalf:
      return f(ReduceTypes<Half, float, Half>{});
    case at::kBFloat16:
      return f(ReduceTypes<BFloat16, float, BFloat16>{});
    default:
      no_kernel_for(ReduceKind::Max, in, in);
  }
}

template <typename F>
void dispatch_integral_extremum(at::ScalarType in, F&& f) {
  switch (in) {
    case at::kBool:
      return f(ReduceTypes<bool, bool, bool>{});
    case at::kByte:
      return f(ReduceTypes<uint8_t, uint8_t, uint8_t>{});
    case at::kChar:
      return f(ReduceTypes<int8_t, int8_t, int8_t>{});
    case at::kShort:
      return f(ReduceTypes<int16_t, int16_t, int16_t>{});
    case at::kInt:
      return f(ReduceTypes<int32_t, int32_t, int32_t>{});
    case at::kLong:
      return f(ReduceTypes<int64_t, int64_t, int64_t>{});
    default:
      no_kernel_for(ReduceKind::Max, in, in);
  }
}

// Input dtypes fall in two families, floating (float, double, half,
// bfloat16) and integral (bool and the integers), which the CUDA kernels
// compile in translation units of their own, so that they compile in
// parallel. mean has floating kernels only.
enum class TypeFamily { Floating, Integral };

// Calls f(std::integral_constant<TypeFamily, family>{}) for in's family.
template <ReduceKind kind, typename F>
void dispatch_family(at::ScalarType in, F&& f) {
  if (at::isFloatingType(in)) return f(std::integral_constant<TypeFamily, TypeFamily::Floating>{});
  if constexpr (kind != ReduceKind::Mean) {
    return f(std::integral_constant<TypeFamily, TypeFamily::Integral>{});
  } else {
    no_kernel_for(kind, in, in);
  }
}

// Calls f(ReduceTypes<...>{}, op) with the ops object of `kind`, for an
// input of `family`; `count` is the number of elements reduced into each
// output (for mean's factor).
template <ReduceKind kind, TypeFamily family, typename F>
void dispatch_family_reduction(at::ScalarType in, at::ScalarType out, int64_t count, F&& f) {
  auto with_op = [&](auto types) {
    using acc_t = typename decltype(types)::acc_t;
    f(types, OpFor<kind, acc_t>::make(count));
  };
  constexpr bool kExtremum = kind == ReduceKind::Max || kind == ReduceKind::Min;
  if constexpr (family == TypeFamily::Floating) {
    if constexpr (kExtremum) return dispatch_floating_extremum(in, with_op);
    else return dispatch_floating(in, out, with_op);
  } else {
    static_assert(kind != ReduceKind::Mean, "mean has floating kernels only");
    if constexpr (kExtremum) return dispatch_integral_extremum(in, with_op);
    else return dispatch_integral_sum(in, with_op);
  }
}

// The same, for an input of any family.
template <ReduceKind kind, typename F>
void dispatch_reduction(at::ScalarType in, at::ScalarType out, int64_t count, F&& f) {
  dispatch_family<kind>(in, [&](auto family) {
    dispatch_family_reduction<kind, decltype(family)::value>(in, out, count, f);
  });
}

// Turns a run-time ReduceKind into a compile-time one: calls
// f(std::integral_constant<ReduceKind, kind>{}).
template <typename F>
void dispatch_kind(ReduceKind kind, F&& f) {
  switch (kind) {
    case ReduceKind::Sum:
      return f(std::integral_constant<ReduceKind, ReduceKind::Sum>{});
    case ReduceKind::Mean:
      return f(std::integral_constant<ReduceKind, ReduceKind::Mean>{});
    case ReduceKind::Max:
      return f(std::integral_constant<ReduceKind, ReduceKind::Max>{});
    case ReduceKind::Min:
      return f(std::integral_constant<ReduceKind, ReduceKind::Min>{});
  }
}

}  // namespace torch_reduce
