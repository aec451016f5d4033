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

const c10::OperatorHandle& op_handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

struct SumFunction : public torch::autograd::Function<SumFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
    save_shape(ctx, self, dim, keepdim);
    at::AutoDispatchBelowADInplaceOrView guard;
    static const auto op = op_handle("torch_reduce::sum")
                               .typed<at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                                                 std::optional<at::ScalarType>, std::optional<std::string>)>();
    return op.call(self, dim, keepdim, dtype, algorithm);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    return {broadcast_back(ctx, grads[0]), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct MeanFunction : public torch::autograd::Function<MeanFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    save_shape(ctx, self, dim, keepdim);
    int64_t count = 1;
    for (int64_t d : ctx->saved_data["dims"].toIntVector()) count *= self.size(d);
    ctx->saved_data["count"] = count;
    at::AutoDispatchBelowADInplaceOrView guard;
    static const auto op =
        op_handle("torch_reduce::mean")
            .typed<at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, std::optional<at::ScalarType>)>();
    return op.call(self, dim, keepdim, dtype);
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto count = static_cast<double>(ctx->saved_data["count"].toInt());
    return {broadcast_back(ctx, grads[0] / count), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// amax and amin share everything but the op they call.
template <const char* kOpName>
struct ExtremumFunction : public torch::autograd::Function<ExtremumFunction<kOpName>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    save_shape(ctx, self, dim, keepdim);
    at::Tensor result;
    {
      at::AutoDispatchBelowADInplaceOrView guard;
      static const auto op =
          op_handle(kOpName).template typed<at::Tensor(const at::Tensor&, at::IntArrayRef, bool)>();
      result = op.call(self, dim, keepdim);
    }
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

constexpr char kAmax[] = "torch_reduce::amax";
constexpr char kAmin[] = "torch_reduce::amin";

at::Tensor sum_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
  return SumFunction::apply(self, dim, keepdim, dtype, algorithm);
}
at::Tensor mean_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
  return MeanFunction::apply(self, dim, keepdim, dtype);
}
at::Tensor amax_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return ExtremumFunction<kAmax>::apply(self, dim, keepdim);
}
at::Tensor amin_autograd(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return ExtremumFunction<kAmin>::apply(self, dim, keepdim);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, Autograd, m) {
  m.impl("sum", &sum_autograd);
  m.impl("mean", &mean_autograd);
  m.impl("amax", &amax_autograd);
  m.impl("amin", &amin_autograd);
}

}  // namespace torch_reduce
