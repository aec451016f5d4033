// any and all: what they share (any.h and all.h name them).
#pragma once

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

// `Self` (Any or All) brings kName and kSchema; kAny picks the connective.
// The result, bool (or uint8), has no gradient.
template <typename Self, bool kAny>
struct Logical : WithoutGradient<Self> {
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool);

  // The accumulator is the input's (compared) type holding 0 or 1: an
  // element enters as itself, nonzero or not, so no kernel converts it
  // (NaN is nonzero, as in torch). Partials are 0 and 1 again.
  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = Combine::Other;
    C10_HOST_DEVICE acc_t identity() const { return acc_t(kAny ? 0 : 1); }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      const bool x = a != acc_t(0), y = b != acc_t(0);
      return acc_t(kAny ? (x | y) : (x & y));
    }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& /*call*/) {
    return {};
  }

  // The result is bool (uint8 for a uint8 input, as in torch).
  static constexpr bool kIntegralKernels = true;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType, F&& f) {
    if constexpr (family == TypeFamily::Floating) dispatch_floating_logical(Self::kName, in, f);
    else dispatch_integral_logical(Self::kName, in, f);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType>) {
    check_kernel_dtype(Self::kName, self, "input");
    const at::ScalarType result = self == at::kByte ? at::kByte : at::kBool;
    return {self, result, result};
  }
  static at::ScalarType stage_dtype(const DtypePlan& d) { return d.kernel; }
  static constexpr EmptyReduction kEmpty = kAny ? EmptyReduction::Zero : EmptyReduction::One;
  static constexpr RepeatRule kRepeats = RepeatRule::Invariant;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::NoDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::None;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim,
                            bool keepdim) {
    return reduce_front_end(semantics_of<Self>(), self, dim, keepdim, std::nullopt, backend);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim);
  }
};

}  // namespace torch_reduce
