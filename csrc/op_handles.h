// Typed dispatcher handles of the ops, looked up once: what the autograd
// kernels call below autograd, and what the Python fast path calls from the
// top of the dispatcher.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <optional>
#include <string>

namespace torch_reduce {

using SumSignature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>,
                                std::optional<std::string>);
using MeanSignature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>);
using ExtremumSignature = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);

template <typename Signature>
c10::TypedOperatorHandle<Signature> typed_op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

inline const c10::TypedOperatorHandle<SumSignature>& sum_op() {
  static const auto handle = typed_op<SumSignature>("torch_reduce::sum");
  return handle;
}
inline const c10::TypedOperatorHandle<MeanSignature>& mean_op() {
  static const auto handle = typed_op<MeanSignature>("torch_reduce::mean");
  return handle;
}
inline const c10::TypedOperatorHandle<ExtremumSignature>& amax_op() {
  static const auto handle = typed_op<ExtremumSignature>("torch_reduce::amax");
  return handle;
}
inline const c10::TypedOperatorHandle<ExtremumSignature>& amin_op() {
  static const auto handle = typed_op<ExtremumSignature>("torch_reduce::amin");
  return handle;
}

// amax_op or amin_op, as a template argument of the code they share.
using ExtremumOp = const c10::TypedOperatorHandle<ExtremumSignature>& (*)();

}  // namespace torch_reduce
