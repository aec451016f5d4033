// torch_reduce.var_mean: torch.var_mean's semantics, in one read of the
// input: var's fold, whose ops object projects the mean beside the variance.
// std_mean (std_mean.h) runs these kernels.
#pragma once

#include <tuple>

#include "std.h"

namespace torch_reduce {

// The two results of one output. The kernels write them side by side, as
// they write any result type: the kernel's output dtype is the complex dtype
// of T, whose elements have their size, and the op's forward splits it.
template <typename T>
struct alignas(2 * sizeof(T)) VarAndMean {
  T var;
  T mean;

  VarAndMean() = default;
  C10_HOST_DEVICE VarAndMean(T var_, T mean_) : var(var_), mean(mean_) {}
};

// For dispatch_floating_states: the result of an accumulator T.
template <typename T, typename /*out_t*/>
using VarAndMeanOf = VarAndMean<T>;

struct VarMean : Var {
  static constexpr const char* kName = "var_mean";
  static constexpr const char* kSchema =
      "var_mean(Tensor self, int[1]? dim=None, *, bool keepdim=False, float correction=1) -> (Tensor, Tensor)";
  using Signature = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, at::OptionalIntArrayRef, bool, double);

  // var's ops object, projecting {variance, mean}: the fold's mean, which
  // is torch.mean's where there are infinities (Var::Op::combine).
  template <typename acc_t>
  struct Op : Var::Op<acc_t> {
    using T = typename acc_t::value_type;
    C10_HOST_DEVICE VarAndMean<T> project(acc_t a) const { return {Var::Op<acc_t>::project(a), a.mean}; }
    Op reading_partials() const {
      Op op = *this;
      op.maps = false;
      return op;
    }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t count, const OpCall& call) {
    return {Var::make_op<acc_t>(count, call)};
  }

  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType /*out*/, F&& f) {
    static_assert(family == TypeFamily::Floating, "var_mean has floating kernels only");
    dispatch_floating_states<WelfordState, VarAndMeanOf>(kName, in, f);
  }
  // The kernel writes {variance, mean} in the accumulator's type, a complex
  // dtype to the front end, which returns it as it is (OpSemantics::results);
  // forward rounds each to the input's dtype.
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    return pair_dtypes(kName, self);
  }

  static std::tuple<at::Tensor, at::Tensor> forward(const Backend& backend, const at::Tensor& self,
                                                     at::OptionalIntArrayRef dim, bool keepdim, double correction) {
    return split(run<VarMean>(backend, self, dim, keepdim, correction), self.scalar_type());
  }
  template <typename Handle>
  static std::tuple<at::Tensor, at::Tensor> call_common(const Handle& op, const at::Tensor& self,
                                                        at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim, 1.0);
  }

  // torch's: var's gradient and the mean's (the gradient spread evenly),
  // each where its result has one.
  static at::Tensor backward(const Gradient& g) { return backward_of<Var>(g); }
  template <typename SameOp>
  static std::tuple<at::Tensor, at::Tensor> tangent(const Tangent& t, const at::Tensor& tangent,
                                                    const SameOp& same_op) {
    return {Var::tangent(t, tangent, same_op), tangent.mean(t.dims, t.keepdim)};
  }

 protected:
  static DtypePlan pair_dtypes(const char* name, at::ScalarType self) {
    dtypes_of(name, name, self);
    const at::ScalarType pair = self == at::kDouble ? at::kComplexDouble : at::kComplexFloat;
    return {self, pair, self};
  }
  static std::tuple<at::Tensor, at::Tensor> split(const at::Tensor& pairs, at::ScalarType dtype) {
    const at::Tensor parts = at::view_as_real(pairs);
    return {parts.select(-1, 0).to(dtype).contiguous(), parts.select(-1, 1).to(dtype).contiguous()};
  }
  // `First` (Var or Std) has the first result's gradient.
  template <typename First>
  static at::Tensor backward_of(const Gradient& g) {
    at::Tensor total;
    if (g.grad.defined()) total = First::backward(g);
    if (g.second_grad.defined()) {
      const at::Tensor of_mean = g.broadcast_back(g.second_grad) / static_cast<double>(g.count());
      total = total.defined() ? total + of_mean : of_mean;
    }
    return total;
  }
};

}  // namespace torch_reduce
