// The CUDA kernels of torch_reduce.amin for integral and bool inputs, in a translation unit of their own.
#include "reduce_layout.cuh"

namespace torch_reduce {
namespace cuda {
template void reduce_layout<ReduceKind::Min, TypeFamily::Integral>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cuda
}  // namespace torch_reduce
