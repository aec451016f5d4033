// The CUDA backend: device guard, the ladder for non-default algorithms, and
// the fast kernels for everything else.
#include <c10/cuda/CUDAGuard.h>

#include "device_code.h"
#include "dispatch.h"
#include "ladder/ladder.h"
#include "register_backend.h"

namespace torch_reduce {
namespace cuda {

template <ReduceKind kind, TypeFamily family>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out);

void reduce_layout_cuda(ReduceKind kind, const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out,
                        Algorithm algorithm) {
  const c10::cuda::CUDAGuard guard(input.device());
  check_device_has_code();
  if (algorithm != Algorithm::Default) {
    // The front end allows the ladder for full sums only: `reduce` dense
    // elements from the data pointer.
    TORCH_INTERNAL_ASSERT(kind == ReduceKind::Sum && layout.full && layout.kind == ReduceLayout::Inner);
    return ladder_sum_cuda(input.as_strided({layout.reduce}, {1}), out, algorithm);
  }
  dispatch_kind(kind, [&](auto k) {
    constexpr ReduceKind kKind = decltype(k)::value;
    dispatch_family<kKind>(input.scalar_type(),
                           [&](auto family) { reduce_layout<kKind, decltype(family)::value>(input, layout, out); });
  });
}

}  // namespace cuda

TORCH_LIBRARY_IMPL(torch_reduce, CUDA, m) { register_backend<cuda::reduce_layout_cuda>(m); }

}  // namespace torch_reduce
