// What an op's gradient formulas see of a call (csrc/autograd.cpp builds
// these; each ops object's backward() and tangent() use them).
#pragma once

#include <ATen/ATen.h>

#include <type_traits>
#include <vector>

namespace torch_reduce {

// `t` with the reduced dims put back as size 1 (where keepdim dropped them).
inline at::Tensor with_reduced_dims(at::Tensor t, const std::vector<int64_t>& dims, bool keepdim) {
  if (!keepdim)
    for (int64_t d : dims) t = t.unsqueeze(d);
  return t;
}

// Backward: the output's gradient and the call's shape; `input` and
// `result` are saved only for ops with kBackwardSavesTensors.
struct Gradient {
  at::Tensor grad;
  std::vector<int64_t> dims;  // the reduced dims, ascending
  bool keepdim;
  std::vector<int64_t> sizes;  // the input's
  at::ScalarType dtype;        // the input's
  double scalar;               // the op's scalar argument (vector_norm's ord), else 0
  at::Tensor input;
  at::Tensor result;  // the first, for an op of two results
  // The second result's gradient (var_mean's mean's), undefined where none
  // flows; grad is undefined where only this one does.
  at::Tensor second_grad;

  // Elements reduced into each output.
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= sizes[d];
    return n;
  }

  // `g` (of the output's shape) broadcast over the input, in its dtype.
  at::Tensor broadcast_back(const at::Tensor& g) const {
    return with_reduced_dims(g, dims, keepdim).expand(sizes).to(dtype);
  }
};

// Forward mode: the input's primal, the result (the first, for an op of
// two results), and the call's dims.
struct Tangent {
  at::Tensor input;
  at::Tensor result;
  std::vector<int64_t> dims;
  bool keepdim;
  double scalar;  // as Gradient's
};

// The gradient formulas of an op whose result (bool, int64) has none:
// autograd never calls them. `Self` brings kName.
template <typename Self>
struct WithoutGradient {
  static constexpr bool kBackwardSavesTensors = false;
  static at::Tensor backward(const Gradient&) {
    TORCH_INTERNAL_ASSERT(false, "torch_reduce.", Self::kName, ": its result has no gradient");
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent&, const at::Tensor&, const SameOp&) {
    TORCH_INTERNAL_ASSERT(false, "torch_reduce.", Self::kName, ": its result has no tangent");
  }
};

// Where an op's arguments put dim (keepdim follows it) and its scalar
// argument: (self, dim, keepdim, ...) and none, unless the ops object says
// otherwise (kDimArg, kScalarArg: vector_norm's (self, ord, dim, keepdim),
// var's (self, dim, keepdim, correction)).
template <typename Spec, typename = void>
struct DimArg : std::integral_constant<size_t, 1> {};
template <typename Spec>
struct DimArg<Spec, std::void_t<decltype(Spec::kDimArg)>> : std::integral_constant<size_t, Spec::kDimArg> {};
template <typename Spec, typename = void>
struct ScalarArg : std::integral_constant<int, -1> {};
template <typename Spec>
struct ScalarArg<Spec, std::void_t<decltype(Spec::kScalarArg)>> : std::integral_constant<int, Spec::kScalarArg> {};

// The scalar argument's value: a Scalar (vector_norm's ord) or a float
// (var's correction).
inline double scalar_value(const at::Scalar& s) { return s.toDouble(); }
inline double scalar_value(double s) { return s; }

}  // namespace torch_reduce
