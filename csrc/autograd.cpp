// Autograd for the ops, in C++ so that a call that needs no gradient costs no
// Python (a Python autograd kernel would be entered on every call).
//
// The gradient of a reduction is the output gradient broadcast back over the
// reduced dims: as is for sum, divided by the count for mean, and routed to
// the elements equal to the result for amax/amin, split evenly among ties
// (like torch). Backward uses differentiable ATen ops, so double backward works.
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
    const at::Tensor hits = saved[0].eq(with_reduced_dims(saved[1], dims, keepdim)).to(grads[0].scalar_type());
    const at::Tensor ties = hits.sum(dims, /*keepdim=*/true);
    return {hits * (with_reduced_dims(grads[0], dims, keepdim) / ties), at::Tensor(), at::Tensor()};
  }
};

// Calls that cannot need a gradient skip the Function (and its context) and go
// straight to the kernel: the common inference case stays cheap.
bool needs_grad(const at::Tensor& self) { return at::GradMode::is_enabled() && self.requires_grad(); }

at::Tensor sum_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
  if (!needs_grad(self)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return sum_op().call(self, dim, keepdim, dtype, algorithm);
  }
  return SumFunction::apply(self, dim, keepdim, dtype, algorithm);
}
at::Tensor mean_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
  if (!needs_grad(self)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return mean_op().call(self, dim, keepdim, dtype);
  }
  return MeanFunction::apply(self, dim, keepdim, dtype);
}
template <ExtremumOp extremum_op>
at::Tensor extremum_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (!needs_grad(self)) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return extremum_op().call(self, dim, keepdim);
  }
  return ExtremumFunction<extremum_op>::apply(self, dim, keepdim);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, Autograd, m) {
  m.impl("sum", &sum_autograd);
  m.impl("mean", &mean_autograd);
  m.impl("amax", &extremum_autograd<amax_op>);
  m.impl("amin", &extremum_autograd<amin_op>);
}

}  // namespace torch_reduce
