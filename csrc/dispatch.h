// The one place where dtypes become C++ types.
//
// The front end casts every input to a dtype that the kernels are
// instantiated for and picks the kernel's output dtype (an op's dtypes()).
// Here that (input, output) pair becomes ReduceTypes<scalar_t, acc_t, out_t>
// through the op's dispatch_types(), which picks one of the type maps below,
// and the op's ops object is made for acc_t.
#pragma once

#include <ATen/ATen.h>

#include <type_traits>

#include "ops/op_base.h"

namespace torch_reduce {

template <typename scalar_t_, typename acc_t_, typename out_t_>
struct ReduceTypes {
  using scalar_t = scalar_t_;
  using acc_t = acc_t_;
  using out_t = out_t_;
};

// Input dtypes fall in two families, floating (float, double, half,
// bfloat16) and integral (bool and the integers), which the CUDA kernels
// compile in translation units of their own, so that they compile in
// parallel.
enum class TypeFamily { Floating, Integral };

// Within a family, inputs of at most two bytes an element (half, bfloat16,
// bool, the 8- and 16-bit integers) and wider ones: the CUDA kernels of one
// op and family compile in one unit, or in one unit per width where that
// unit would be the build's longest by far (build_support/kernel_units.py).
enum class ElementWidth { Narrow, Wide };
constexpr ElementWidth element_width(int64_t bytes) { return bytes <= 2 ? ElementWidth::Narrow : ElementWidth::Wide; }

[[noreturn]] inline void no_kernel_for(const char* op, at::ScalarType in, at::ScalarType out) {
  TORCH_CHECK(false, "torch_reduce: internal error: no ", op, " kernel from ", in, " to ", out);
}

// Floating inputs, accumulated in float (half, bfloat16) or their own type:
// output in the input type, or float for a half/bfloat16 input whose caller
// asked for dtype=torch.float32; and half or bfloat16 from float, the
// accumulator dtype that a half/bfloat16 reduction's stages pass between
// them, for its last stage.
template <typename F>
void dispatch_floating(const char* op, at::ScalarType in, at::ScalarType out, F&& f) {
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
      no_kernel_for(op, in, out);
  }
}

// Integers and bool accumulated in int64, the output int64.
template <typename F>
void dispatch_integral_accumulated(const char* op, at::ScalarType in, F&& f) {
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
      no_kernel_for(op, in, at::kLong);
  }
}

// Folds of values (sum, prod): floating inputs as dispatch_floating maps
// them, bool and integers accumulated in int64.
template <TypeFamily family, typename F>
void dispatch_folding(const char* op, at::ScalarType in, at::ScalarType out, F&& f) {
  if constexpr (family == TypeFamily::Floating) dispatch_floating(op, in, out, f);
  else dispatch_integral_accumulated(op, in, f);
}

// Exact ops (an extremum): the output is the input type; half and bfloat16
// compare in float.
template <typename F>
void dispatch_floating_exact(const char* op, at::ScalarType in, F&& f) {
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
      no_kernel_for(op, in, in);
  }
}

// Ops that fold floating inputs in a struct state (var's, logsumexp's):
// State<acc_t> over dispatch_floating_exact's types, the result of the
// input's type, or Result<acc_t> where an output is several numbers
// (var_mean's variance and mean).
template <typename acc_t, typename out_t>
using InputTypeResult = out_t;
template <template <typename> class State, template <typename, typename> class Result = InputTypeResult,
          typename F>
void dispatch_floating_states(const char* op, at::ScalarType in, F&& f) {
  dispatch_floating_exact(op, in, [&](auto types) {
    using Types = decltype(types);
    using acc_t = typename Types::acc_t;
    f(ReduceTypes<typename Types::scalar_t, State<acc_t>, Result<acc_t, typename Types::out_t>>{});
  });
}

template <typename F>
void dispatch_integral_exact(const char* op, at::ScalarType in, F&& f) {
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
      no_kernel_for(op, in, in);
  }
}

// Logical ops (any, all): the input's type holds 0 or 1 (half and bfloat16
// in float); the output is bool, or uint8 for uint8, as torch's.
template <typename F>
void dispatch_floating_logical(const char* op, at::ScalarType in, F&& f) {
  switch (in) {
    case at::kFloat:
      return f(ReduceTypes<float, float, bool>{});
    case at::kDouble:
      return f(ReduceTypes<double, double, bool>{});
    case at::kHalf:
      return f(ReduceTypes<at::Half, float, bool>{});
    case at::kBFloat16:
      return f(ReduceTypes<at::BFloat16, float, bool>{});
    default:
      no_kernel_for(op, in, at::kBool);
  }
}

template <typename F>
void dispatch_integral_logical(const char* op, at::ScalarType in, F&& f) {
  switch (in) {
    case at::kBool:
      return f(ReduceTypes<bool, bool, bool>{});
    case at::kByte:
      return f(ReduceTypes<uint8_t, uint8_t, uint8_t>{});
    case at::kChar:
      return f(ReduceTypes<int8_t, int8_t, bool>{});
    case at::kShort:
      return f(ReduceTypes<int16_t, int16_t, bool>{});
    case at::kInt:
      return f(ReduceTypes<int32_t, int32_t, bool>{});
    case at::kLong:
      return f(ReduceTypes<int64_t, int64_t, bool>{});
    default:
      no_kernel_for(op, in, at::kBool);
  }
}

template <typename Spec>
constexpr bool has_kernels_for(TypeFamily family) {
  return family == TypeFamily::Floating || Spec::kIntegralKernels;
}

// Calls f(ReduceTypes<...>{}, op) with the ops object of op `Spec` for an
// input of `family` (with_op's choice); `count` is the number of elements
// reduced into each output (for a mean's factor) and `call` the launch's
// OpCall.
template <typename Spec, TypeFamily family, typename F>
void dispatch_family_reduction(at::ScalarType in, at::ScalarType out, int64_t count, const OpCall& call, F&& f) {
  Spec::template dispatch_types<family>(in, out, [&](auto types) {
    using acc_t = typename decltype(types)::acc_t;
    with_op<Spec, acc_t>(count, call, [&](const auto& op) { f(types, op); });
  });
}

// Calls f(std::integral_constant<TypeFamily, family>{}) for in's family.
template <typename Spec, typename F>
void dispatch_family(at::ScalarType in, F&& f) {
  if (at::isFloatingType(in)) return f(std::integral_constant<TypeFamily, TypeFamily::Floating>{});
  if constexpr (Spec::kIntegralKernels) {
    return f(std::integral_constant<TypeFamily, TypeFamily::Integral>{});
  } else {
    no_kernel_for(Spec::kName, in, in);
  }
}

// Calls f(family, width) with the integral constants of the translation
// unit that holds the kernels of an input of dtype `in` (build_support/
// kernel_units.py: a unit per op and family, and per width for some ops).
template <typename Spec, typename F>
void dispatch_unit(at::ScalarType in, F&& f) {
  dispatch_family<Spec>(in, [&](auto family) {
    if (element_width(c10::elementSize(in)) == ElementWidth::Narrow) {
      f(family, std::integral_constant<ElementWidth, ElementWidth::Narrow>{});
    } else {
      f(family, std::integral_constant<ElementWidth, ElementWidth::Wide>{});
    }
  });
}

// The same as dispatch_family_reduction, for an input of any family.
template <typename Spec, typename F>
void dispatch_reduction(at::ScalarType in, at::ScalarType out, int64_t count, const OpCall& call, F&& f) {
  dispatch_family<Spec>(in, [&](auto family) {
    dispatch_family_reduction<Spec, decltype(family)::value>(in, out, count, call, f);
  });
}

}  // namespace torch_reduce
