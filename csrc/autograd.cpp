// Autograd for every op of the op list, in C++ so that a call that needs no
// gradient costs no Python (a Python autograd kernel would be entered on
// every call). The formulas are the ops objects' (backward, tangent); this
// file only saves what they need and routes the modes.
//
// Backward uses differentiable ATen ops, so double backward works. Forward
// mode (torch.autograd.forward_ad, torch.func.jvp): the kernels below this
// key see no tangents, and a C++ autograd Function has no jvp, so each op
// sets its result's tangent here (without it the tangent was silently
// dropped: a zero jvp).
//
// Every op's arguments begin (self, dim, keepdim).
#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <tuple>
#include <utility>

#include "op_handles.h"
#include "op_list.h"

namespace torch_reduce {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The reduced dims, ascending; every dim for dim=None or dim=[].
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  const bool all_dims = !dim.has_value() || dim->empty();
  const auto mask = all_dims ? std::bitset<at::dim_bitset_size>() : at::dim_list_to_bitset(*dim, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d)
    if (all_dims || mask[d]) dims.push_back(d);
  return dims;
}

// The op called with `input` in place of the first argument.
template <typename Spec, typename Tuple, size_t... I>
at::Tensor call_with_input(const at::Tensor& input, const Tuple& args, std::index_sequence<I...>) {
  return op_handle<Spec>().call(input, std::get<I + 1>(args)...);
}

template <typename Spec, typename Signature = typename Spec::Signature>
struct Autograd;

template <typename Spec, typename... Args>
struct Autograd<Spec, at::Tensor(Args...)> {
  using Rest = std::make_index_sequence<sizeof...(Args) - 1>;

  struct Function : public torch::autograd::Function<Function> {
    static at::Tensor forward(AutogradContext* ctx, Args... args) {
      const auto tuple = std::forward_as_tuple(args...);
      const at::Tensor& self = std::get<0>(tuple);
      at::Tensor result;
      {
        at::AutoDispatchBelowADInplaceOrView guard;
        result = op_handle<Spec>().call(args...);
      }
      ctx->saved_data["dims"] = reduced_dims(self, std::get<1>(tuple));
      ctx->saved_data["keepdim"] = std::get<2>(tuple);
      ctx->saved_data["sizes"] = self.sizes().vec();
      ctx->saved_data["dtype"] = self.scalar_type();
      if constexpr (Spec::kBackwardSavesTensors) ctx->save_for_backward({self, result});
      return result;
    }
    static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
      Gradient g{grads[0],
                 ctx->saved_data["dims"].toIntVector(),
                 ctx->saved_data["keepdim"].toBool(),
                 ctx->saved_data["sizes"].toIntVector(),
                 ctx->saved_data["dtype"].toScalarType()};
      if constexpr (Spec::kBackwardSavesTensors) {
        const auto saved = ctx->get_saved_variables();
        g.input = saved[0];
        g.result = saved[1];
      }
      tensor_list out(sizeof...(Args));
      out[0] = Spec::backward(g);
      return out;
    }
  };

  // The op's result for an input without a tangent: straight from the kernel
  // where no gradient can be needed (the common inference case stays
  // cheap), else through the Function.
  template <typename Tuple>
  static at::Tensor primal_result(const at::Tensor& input, const Tuple& args) {
    if (!(at::GradMode::is_enabled() && input.requires_grad())) {
      at::AutoDispatchBelowADInplaceOrView guard;
      return call_with_input<Spec>(input, args, Rest{});
    }
    return std::apply([&](const auto&, const auto&... rest) { return Function::apply(input, rest...); }, args);
  }

  static at::Tensor kernel(Args... args) {
    // torch's forward AD has one level of tangents.
    constexpr uint64_t kLevel = 0;
    const auto tuple = std::forward_as_tuple(args...);
    const at::Tensor& self = std::get<0>(tuple);
    const at::Tensor tangent = self._fw_grad(kLevel);
    if (!tangent.defined()) return primal_result(self, tuple);
    // The primal keeps the input's backward graph, so both modes work at once.
    const at::Tensor primal = self._fw_primal(kLevel);
    at::Tensor result = primal_result(primal, tuple);
    const Tangent t{primal, result, reduced_dims(primal, std::get<1>(tuple)), std::get<2>(tuple)};
    const auto same_op = [&](const at::Tensor& x) { return call_with_input<Spec>(x, tuple, Rest{}); };
    result._set_fw_grad(Spec::tangent(t, tangent, same_op), kLevel, /*is_inplace_op=*/false);
    return result;
  }
};

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, Autograd, m) {
#define TORCH_REDUCE_AUTOGRAD(name, Spec, families) m.impl(#name, &Autograd<Spec>::kernel);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_AUTOGRAD)
#undef TORCH_REDUCE_AUTOGRAD
}

}  // namespace torch_reduce
