// Autocast: the ops follow torch's own reductions under torch.autocast, so
// that swapping torch.sum for torch_reduce.sum keeps a mixed-precision
// model's dtypes.
//
// Under CUDA autocast torch.sum runs in float32: for a floating CUDA input
// other than float64, and no dtype given, it sums with dtype=float32 (ATen's
// fp32_set_opt_dtype policy), so a float16 loss summed over many elements
// does not overflow to inf. torch_reduce.sum does the same. torch.mean,
// amax and amin have no autocast policy, nor have these ops: the Autocast
// keys fall through for them. CPU autocast leaves torch.sum alone too.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "op_handles.h"

namespace torch_reduce {
namespace {

at::Tensor sum_autocast_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCUDA);
  // ATen's own test of an input its CUDA policies apply to (floating, not float64).
  if (!dtype.has_value() && at::autocast::is_eligible(self, c10::DeviceType::CUDA)) dtype = at::kFloat;
  return sum_op().call(self, dim, keepdim, dtype, algorithm);
}

}  // namespace

TORCH_LIBRARY_IMPL(torch_reduce, AutocastCUDA, m) { m.impl("sum", &sum_autocast_cuda); }

}  // namespace torch_reduce
