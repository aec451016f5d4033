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
void dispatch_extremum(at::ScalarType in, F&& f) {
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

// Calls f(ReduceTypes<...>{}, op) with the ops object of `kind`; `count` is
// the number of elements reduced into each output (for mean's factor).
template <ReduceKind kind, typename F>
void dispatch_reduction(at::ScalarType in, at::ScalarType out, int64_t count,
                        F&& f) {
  auto with_op = [&](auto types) {
    using acc_t = typename decltype(types)::acc_t;
    f(types, OpFor<kind, acc_t>::make(count));
  };
  if constexpr (kind == ReduceKind::Sum) {
    if (at::isFloatingType(in)) return dispatch_floating(in, out, with_op);
    return dispatch_integral_sum(in, with_op);
  } else if constexpr (kind == ReduceKind::Mean) {
    return dispatch_floating(in, out, with_op);
  } else {
    return dispatch_extremum(in, with_op);
  }
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
