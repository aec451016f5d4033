// torch_reduce.std_mean: torch.std_mean's semantics, by var_mean's kernels
// (Kernels), whose ops object takes the root before the result is rounded.
#pragma once

#include "var_mean.h"

namespace torch_reduce {

struct StdMean : VarMean {
  static constexpr const char* kName = "std_mean";
  static constexpr const char* kSchema =
      "std_mean(Tensor self, int[1]? dim=None, *, bool keepdim=False, float correction=1) -> (Tensor, Tensor)";
  using Kernels = VarMean;
  static constexpr bool kRoot = true;

  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    return pair_dtypes(kName, self);
  }

  static std::tuple<at::Tensor, at::Tensor> forward(const Backend& backend, const at::Tensor& self,
                                                     at::OptionalIntArrayRef dim, bool keepdim, double correction) {
    return split(run<StdMean>(backend, self, dim, keepdim, correction), self.scalar_type());
  }

  static at::Tensor backward(const Gradient& g) { return backward_of<Std>(g); }
  template <typename SameOp>
  static std::tuple<at::Tensor, at::Tensor> tangent(const Tangent& t, const at::Tensor& tangent,
                                                    const SameOp& same_op) {
    return {Std::tangent(t, tangent, same_op), tangent.mean(t.dims, t.keepdim)};
  }
};

}  // namespace torch_reduce
