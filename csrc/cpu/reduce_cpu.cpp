// The CPU backend: the registration of torch_reduce's ops for CPU tensors,
// whose kernels (reduce_layout.h) are compiled a kind per translation unit.
#include <ATen/ATen.h>

#include "dispatch.h"
#include "reduce_front_end.h"
#include "register_backend.h"

namespace torch_reduce {
namespace cpu {

// Instantiated in reduce_sum.cpp, reduce_mean.cpp, reduce_amax.cpp and reduce_amin.cpp.
template <ReduceKind kind>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out);

void reduce_layout_cpu(ReduceKind kind, const at::Tensor& input,
                       const ReduceLayout& layout, at::Tensor& out,
                       Algorithm algorithm) {
  // The front end refuses the CUDA ladder's algorithms for CPU tensors.
  TORCH_INTERNAL_ASSERT(algorithm == Algorithm::Default,
                        "torch_reduce: CPU kernel called with algorithm '",
                        algorithm_name(algorithm), "'");
  // The front end plans Gather layouts for CUDA tensors only.
  TORCH_INTERNAL_ASSERT(layout.kind != ReduceLayout::Gather, "torch_reduce: CPU kernel called with a Gather layout");
  if (!out.is_contiguous()) {
    // A permuted view of the result: the CPU kernels write dense outputs.
    return reduce_through_dense(out,
                                [&](at::Tensor& dense) { reduce_layout_cpu(kind, input, layout, dense, algorithm); });
  }
  dispatch_kind(kind, [&](auto k) { reduce_layout<decltype(k)::value>(input, layout, out); });
}

}  // namespace cpu

TORCH_LIBRARY_IMPL(torch_reduce, CPU, m) { register_backend<cpu::reduce_layout_cpu>(m); }

}  // namespace torch_reduce
