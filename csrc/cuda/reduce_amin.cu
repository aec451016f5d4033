// The CUDA kernels of torch_reduce.amin, in a translation unit of their own.
#include "reduce_layout.cuh"

namespace torch_reduce {
namespace cuda {
template void reduce_layout<ReduceKind::Min>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cuda
}  // namespace torch_reduce
