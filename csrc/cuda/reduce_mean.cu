// The CUDA kernels of torch_reduce.mean, in a translation unit of their own.
#include "reduce_layout.cuh"

namespace torch_reduce {
namespace cuda {
template void reduce_layout<ReduceKind::Mean>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cuda
}  // namespace torch_reduce
