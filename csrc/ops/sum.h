// torch_reduce.sum: torch.sum's semantics, plus the ladder's `algorithm`.
#pragma once

#include "../algorithm.h"
#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

struct Sum {
  static constexpr const char* kName = "sum";
  static constexpr const char* kSchema =
      "sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
      "str? algorithm=None) -> Tensor";
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>,
                               std::optional<std::string>);

  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = Combine::Add;
    C10_HOST_DEVICE acc_t identity() const { return acc_t(0); }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return wrapping_add(a, b); }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& /*call*/) {
    return {};
  }

  // Floating inputs sum in their type (half and bfloat16 in float); bool and
  // integers in int64, wrapping around like torch.
  static constexpr bool kIntegralKernels = true;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType out, F&& f) {
    dispatch_folding<family>(kName, in, out, f);
  }

  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> requested) {
    return folding_dtypes(kName, self, requested);
  }
  // What stages pass between them: the accumulator's dtype.
  static at::ScalarType stage_dtype(const DtypePlan& d) { return accumulator_dtype(d); }
  static constexpr EmptyReduction kEmpty = EmptyReduction::Zero;
  static constexpr RepeatRule kRepeats = RepeatRule::Multiply;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::Float32IfNoDtype;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
    // The ladder (csrc/cuda/ladder/) runs beside the front end, never through it.
    if (const auto step = ladder_step(self, dim, algorithm))
      return backend.ladder_sum(self, keepdim, dtypes(self.scalar_type(), dtype), *step);
    return reduce_front_end(semantics_of<Sum>(), self, dim, keepdim, dtype, backend);
  }
  // The common call form of the Python fast path.
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim, std::nullopt, std::nullopt);
  }

  // The gradient is the output's, broadcast back over the reduced dims; the
  // tangent is the input's, summed as the input is.
  static constexpr bool kBackwardSavesTensors = false;
  static at::Tensor backward(const Gradient& g) { return g.broadcast_back(g.grad); }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent&, const at::Tensor& tangent, const SameOp& same_op) {
    return same_op(tangent);
  }
};

}  // namespace torch_reduce
