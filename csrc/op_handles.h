// Typed dispatcher handles of the ops, looked up once: what the autograd
// kernels call below autograd, and what the Python fast path calls from the
// top of the dispatcher.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>

namespace torch_reduce {

template <typename Spec>
const c10::TypedOperatorHandle<typename Spec::Signature>& op_handle() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow((std::string("torch_reduce::") + Spec::kName).c_str(), "")
                                 .template typed<typename Spec::Signature>();
  return handle;
}

}  // namespace torch_reduce
