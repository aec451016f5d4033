// Autograd for the ops, in C++ so that a call that needs no gradient costs no
// Python (a Python autograd kernel would be entered on every call).
//
// The gradient of a reduction is the output gradient broadcast back over the
// reduced dims: as is for sum, divided by the count for mean, and routed to
// the elements equal to the result for amax/amin, split evenly among ties
// (like torch). Backward uses differentiable ATen ops, so double backward works.
//
// Forward mode (torch.autograd.forward_ad, torch.func.jvp): the kernels below
// this key see no tangents, and a C++ autograd Function has no jvp, so each
// op sets its result's tangent here: the input's tangent reduced as the input
// is (sum, mean), or averaged over the elements equal to the result (amax,
// amin: ties share it evenly, as in torch's forward formula). Without this
// the tangent was silently dropped (a zero jvp).
#include <ATen/ATen.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "op_handles.h"

namespace torch_reduce {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The reduced dims, ascending; every dim for dim=None or dim=[].
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::vector<int64_t> dims;
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
    return dims;
  }
  const auto mask = at::dim_list_to_bitset(*dim, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) dims.push_back(d);
  return dims;
}

// `grad` with the reduced dims put back as size 1 (if keepdim dropped them).
at::Tensor with_reduced_dims(at::Tensor grad, const std::vector<int64_t>& dims, bool keepdim) {
  if (!keepdim)
    for (int64_t d : dims) grad = grad.unsqueeze(d);
  return grad;
}

void save_shape(AutogradContext* ctx, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  ctx->saved_data["dims"] = reduced_dims(self, dim);
  ctx->saved_data["keepdim"] = keepdim;
  ctx->saved_data["sizes"] = self.sizes().vec();
  ctx->saved_data["dtype"] = self.scalar_type();
}

at::Tensor broadcast_back(AutogradContext* ctx, const at::Tensor& grad) {
  const auto dims = ctx->saved_data["dims"].toIntVector();
  const auto sizes = ctx->saved_data["sizes"].toIntVector();
  const auto dtype = ctx->saved_data["dtype"].toScalarType();
  return with_reduced_dims(grad, dims, ctx->saved_data["keepdim"].toBool()).expand(sizes).to(dtype);
}

// Where the input equals the result of amax/amin: the elements the result came from.
at::Tensor extremum_hits(const at::Tensor& self, const at::Tensor& result, const std::vector<int64_t>& dims,
                         bool keepdim) {
  return self.eq(with_reduced_dims(result, dims, keepdim));
}

struct SumFunction : public torch::autograd::Function<SumFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor result = sum_op().call(self, dim, keepdim, dtype, algorithm);
    save_shape(ctx, self, dim, keepdim);
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {broadcast_back(ctx, grads[0]), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct MeanFunction : public torch::autograd::Function<MeanFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor result = mean_op().call(self, dim, keepdim, dtype);
    save_shape(ctx, self, dim, keepdim);
    int64_t count = 1;
    for (int64_t d : ctx->saved_data["dims"].toIntVector()) count *= self.size(d);
    ctx->saved_data["count"] = count;
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto count = static_cast<double>(ctx->saved_data["count"].toInt());
    return {broadcast_back(ctx, grads[0] / count), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// amax and amin share everything but the op they call.
template <ExtremumOp extremum_op>
struct ExtremumFunction : public torch::autograd::Function<ExtremumFunction<extremum_op>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    at::Tensor result;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      result = extremum_op().call(self, dim, keepdim);
    }
    save_shape(ctx, self, dim, keepdim);
    ctx->save_for_backward({self, result});
    return result;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto dims = ctx->saved_data["dims"].toIntVector();
    const bool keepdim = ctx->saved_data["keepdim"].toBool();
    const at::Tensor hits = extremum_hits(saved[0], saved[1], dims, keepdim).to(grads[0].scalar_type());
    const at::Tensor ties = hits.sum(dims, /*keepdim=*/true);
    return {hits * (with_reduced_dims(grads[0], dims, keepdim) / ties), at::Tensor(), at::Tensor()};
  }
};

// Calls that cannot need a gradient skip the Function (and its context) and go
// straight to the kernel: the common inference case stays cheap.
bool needs_grad(const at::Tensor& self) { return at::GradMode::is_enabled() && self.requires_grad(); }

// torch's forward AD has one level of tangents.
constexpr uint64_t kForwardLevel = 0;

// primal(input) for the input without its tangent, with tangent_of(input's
// primal, input's tangent, result) set as the result's tangent; just
// primal(self) where self has none. The primal keeps the input's backward
// graph, so both modes work at once.
template <typename Primal, typename Tangent>
at::Tensor with_tangent(const at::Tensor& self, const Primal& primal, const Tangent& tangent_of) {
  const at::Tensor tangent = self._fw_grad(kForwardLevel);
  if (!tangent.defined()) return primal(self);
  const at::Tensor self_primal = self._fw_primal(kForwardLevel);
  at::Tensor result = primal(self_primal);
  result._set_fw_grad(tangent_of(self_primal, tangent, result), kForwardLevel, /*is_inplace_op=*/false);
  return result;
}

// The op's result for an input without a tangent: straight from the kernel
// where no gradient can be needed, else through the op's autograd Function.
template <typename Function, typename OpHandle, typename... Args>
at::Tensor result_of(const at::Tensor& input, OpHandle op, const Args&... args) {
  if (!needs_grad(input)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return op().call(input, args...);
  }
  return Function::apply(input, args...);
}

at::Tensor sum_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
  return with_tangent(
      self,
      [&](const at::Tensor& input) {
        return result_of<SumFunction>(input, sum_op, dim, keepdim, dtype, algorithm);
      },
      [&](const at::Tensor&, const at::Tensor& tangent, const at::Tensor&) {
        return sum_op().call(tangent, dim, keepdim, dtype, algorithm);
      });
}
at::Tensor mean_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
  return with_tangent(
      self, [&](const at::Tensor& input) { return result_of<MeanFunction>(input, mean_op, dim, keepdim, dtype); },
      [&](const at::Tensor&, const at::Tensor& tangent, const at::Tensor&) {
        return mean_op().call(tangent, dim, keepdim, dtype);
      });
}
template <ExtremumOp extremum_op>
at::Tensor extremum_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return with_tangent(
      self,
      [&](const at::Tensor& input) {
        return result_of<ExtremumFunction<extremum_op>>(input, extremum_op, dim, keepdim);
      },
      [&](const at::Tensor& input, const at::Tensor& tangent, const at::Tensor& result) {
        const auto dims = reduced_dims(input, dim);
        const at::Tensor hits = extremum_hits(input, result, dims, keepdim);
        return at::where(hits, tangent, 0).sum(dims, keepdim) / hits.sum(dims, keepdim);
      });
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, Autograd, m) {
  m.impl("sum", &sum_autograd);
  m.impl("mean", &mean_autograd);
  m.impl("amax", &extremum_autograd<amax_op>);
  m.impl("amin", &extremum_autograd<amin_op>);
}

}  // namespace torch_reduce
