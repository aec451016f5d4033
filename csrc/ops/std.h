// torch_reduce.std: torch.std's semantics, by var's kernels (Kernels), whose
// ops object takes the root before the result is rounded (kRoot, OpCall::root).
#pragma once

#include "var.h"

namespace torch_reduce {

struct Std : Var {
  static constexpr const char* kName = "std";
  static constexpr const char* kSchema =
      "std(Tensor self, int[1]? dim=None, *, bool keepdim=False, float correction=1) -> Tensor";
  using Kernels = Var;
  static constexpr bool kRoot = true;

  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    return dtypes_of(kName, "std and var", self);
  }

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            double correction) {
    return run<Std>(backend, self, dim, keepdim, correction);
  }

  // torch's std_backward and std_jvp: var's, with the output's gradient
  // (the tangent) divided by twice the result, and 0 where the result is 0.
  static at::Tensor backward(const Gradient& g) {
    Gradient var = g;
    var.grad = over_twice(g.grad, g.result);
    return Var::backward(var);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp& same_op) {
    return over_twice(Var::tangent(t, tangent, same_op), t.result);
  }

 private:
  static at::Tensor over_twice(const at::Tensor& g, const at::Tensor& result) {
    return (g / (result * 2)).masked_fill_(result == 0, 0);
  }
};

}  // namespace torch_reduce
