// Autocast: the ops follow torch's own reductions under torch.autocast, so
// that swapping torch.sum for torch_reduce.sum keeps a mixed-precision
// model's dtypes. An op's ops object names its policy (AutocastPolicy); ops
// without one have no AutocastCUDA kernel, so the key falls through.
//
// Float32IfNoDtype is ATen's fp32_set_opt_dtype policy (torch.sum's): for a
// floating CUDA input other than float64, and no dtype given, the op runs
// with dtype=float32, so a float16 loss summed over many elements does not
// overflow to inf. Float32 is ATen's fp32 policy (torch.linalg.vector_norm's):
// such an input is cast to float32 first. CPU autocast leaves these ops
// alone, as it does torch's.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "op_handles.h"
#include "op_list.h"

namespace torch_reduce {
namespace {

template <typename Spec, typename Signature = typename Spec::Signature>
struct Autocast;

// Ops whose fourth argument is `dtype`, after (self, dim, keepdim).
template <typename Spec, typename Dim, typename... Rest>
struct Autocast<Spec, at::Tensor(const at::Tensor&, Dim, bool, std::optional<at::ScalarType>, Rest...)> {
  static at::Tensor kernel(const at::Tensor& self, Dim dim, bool keepdim, std::optional<at::ScalarType> dtype,
                           Rest... rest) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
    // ATen's own test of an input its CUDA policies apply to (floating, not float64).
    if (!dtype.has_value() && at::autocast::is_eligible(self, c10::DeviceType::CUDA)) dtype = at::kFloat;
    return op_handle<Spec>().call(self, dim, keepdim, dtype, rest...);
  }
};

template <typename Spec, typename Signature = typename Spec::Signature>
struct AutocastToFloat32;

template <typename Spec, typename... Rest>
struct AutocastToFloat32<Spec, at::Tensor(const at::Tensor&, Rest...)> {
  static at::Tensor kernel(const at::Tensor& self, Rest... rest) {
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
    return op_handle<Spec>().call(at::autocast::cached_cast(at::kFloat, self, c10::DeviceType::CUDA), rest...);
  }
};

template <typename Spec>
void register_autocast(torch::Library& m) {
  if constexpr (Spec::kAutocast == AutocastPolicy::Float32IfNoDtype) m.impl(Spec::kName, &Autocast<Spec>::kernel);
  if constexpr (Spec::kAutocast == AutocastPolicy::Float32) m.impl(Spec::kName, &AutocastToFloat32<Spec>::kernel);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, AutocastCUDA, m) {
#define TORCH_REDUCE_AUTOCAST(name, Spec, families) register_autocast<Spec>(m);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_AUTOCAST)
#undef TORCH_REDUCE_AUTOCAST
}

}  // namespace torch_reduce
