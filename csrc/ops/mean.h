// torch_reduce.mean: torch.mean's semantics.
#pragma once

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

struct Mean {
  static constexpr const char* kName = "mean";
  static constexpr const char* kSchema =
      "mean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>);

  // A sum whose result is scaled once, in the accumulator type, before it is
  // rounded to the output type (what torch.mean does).
  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = Combine::Add;
    acc_t factor;  // 1 / number of reduced elements
    C10_HOST_DEVICE acc_t identity() const { return acc_t(0); }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return a * factor; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t count, const OpCall& /*call*/) {
    return {static_cast<acc_t>(1.0 / static_cast<double>(count))};
  }

  static constexpr bool kIntegralKernels = false;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType out, F&& f) {
    static_assert(family == TypeFamily::Floating, "mean has floating kernels only");
    dispatch_floating(kName, in, out, f);
  }

  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> requested) {
    check_kernel_dtype(kName, self, "input");
    if (requested) check_kernel_dtype(kName, *requested, "output");
    const at::ScalarType result = requested.value_or(self);
    TORCH_CHECK(at::isFloatingType(result), kName,
                "(): could not infer output dtype. Input dtype must be either "
                "a floating point or complex dtype. Got: ",
                result);
    return floating_result_dtypes(self, result);
  }
  static at::ScalarType stage_dtype(const DtypePlan& d) { return accumulator_dtype(d); }
  static constexpr EmptyReduction kEmpty = EmptyReduction::NaN;
  static constexpr RepeatRule kRepeats = RepeatRule::Invariant;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::None;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    return reduce_front_end(semantics_of<Mean>(), self, dim, keepdim, dtype, backend);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim, std::nullopt);
  }

  // The output's gradient divided by the count, broadcast back; the tangent
  // is the input's, averaged as the input is.
  static constexpr bool kBackwardSavesTensors = false;
  static at::Tensor backward(const Gradient& g) {
    return g.broadcast_back(g.grad / static_cast<double>(g.count()));
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent&, const at::Tensor& tangent, const SameOp& same_op) {
    return same_op(tangent);
  }
};

}  // namespace torch_reduce
