// The CUDA kernels of torch_reduce.amax for floating inputs, in a translation unit of their own.
#include "reduce_layout.cuh"

namespace torch_reduce {
namespace cuda {
template void reduce_layout<ReduceKind::Max, TypeFamily::Floating>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cuda
}  // namespace torch_reduce
