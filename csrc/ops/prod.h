// torch_reduce.prod: torch.prod's semantics, over any dims (torch's takes one
// dim or all).
#pragma once

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

struct Prod {
  static constexpr const char* kName = "prod";
  static constexpr const char* kSchema =
      "prod(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor";
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>);

  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = Combine::Other;
    C10_HOST_DEVICE acc_t identity() const { return acc_t(1); }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return wrapping_multiply(a, b); }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& /*call*/) {
    return {};
  }

  // The types of a sum: floating inputs in their type (half and bfloat16 in
  // float), bool and integers in int64, wrapping around like torch.
  static constexpr bool kIntegralKernels = true;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType out, F&& f) {
    dispatch_folding<family>(kName, in, out, f);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> requested) {
    return folding_dtypes(kName, self, requested);
  }
  static at::ScalarType stage_dtype(const DtypePlan& d) { return accumulator_dtype(d); }
  static constexpr EmptyReduction kEmpty = EmptyReduction::One;
  static constexpr RepeatRule kRepeats = RepeatRule::Power;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::Float32IfNoDtype;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    return reduce_front_end(semantics_of<Prod>(), self, dim, keepdim, dtype, backend);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim, std::nullopt);
  }

  // d prod / d x_i is the product of the other elements of x_i's output,
  // zeros included: from exclusive running products from both ends, rather
  // than result / x_i, which a zero makes 0 / 0 (torch takes that quotient
  // where no element is zero, and running products where one is).
  static constexpr bool kBackwardSavesTensors = true;
  static at::Tensor backward(const Gradient& g) {
    return (others_product(g.input, g.dims) * with_reduced_dims(g.grad, g.dims, g.keepdim)).to(g.dtype);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp&) {
    const at::Tensor terms = others_product(t.input, t.dims) * tangent;
    return terms.sum(t.dims, t.keepdim).to(t.result.scalar_type());
  }

 private:
  // For each element, the product of the other elements reduced with it (of
  // the input's shape; differentiable, so double backward works): the
  // products of the elements before it and after it, in row-major order over
  // the reduced dims. Along one dim at a time, so that a DTensor input keeps
  // its placements (no reshape across a sharded dim).
  static at::Tensor others_product(const at::Tensor& narrow_input, const std::vector<int64_t>& dims) {
    // Half and bfloat16 in float, as the op accumulates them.
    const at::Tensor input =
        is_reduced_precision(narrow_input.scalar_type()) ? narrow_input.to(at::kFloat) : narrow_input;
    if (input.numel() == 0) return at::zeros_like(input);
    // From the innermost reduced dim out: exclusive running products along
    // dims[k], from the front and from the back, of `inner`, the products
    // over the dims inside it.
    at::Tensor before, after, inner = input;
    for (size_t k = dims.size(); k-- > 0;) {
      const int64_t d = dims[k];
      const at::Tensor front = exclusive_cumprod(inner, d);
      const at::Tensor back = exclusive_cumprod(inner.flip(d), d).flip(d);
      before = before.defined() ? before * front : front;
      after = after.defined() ? after * back : back;
      if (k > 0) inner = inner.prod(d, /*keepdim=*/true);
    }
    if (!before.defined()) return at::ones_like(input);  // a 0-dim input: no other element
    return before * after;
  }
  // [1, x0, x0 x1, ...] along dim d.
  static at::Tensor exclusive_cumprod(const at::Tensor& x, int64_t d) {
    const at::Tensor ones = at::ones_like(x.narrow(d, 0, 1));
    return at::cat({ones, x.narrow(d, 0, x.size(d) - 1)}, d).cumprod(d);
  }
};

}  // namespace torch_reduce
