// The CPU kernels of torch_reduce.amax, in a translation unit of their own.
#include "reduce_layout.h"

namespace torch_reduce {
namespace cpu {
template void reduce_layout<ReduceKind::Max>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cpu
}  // namespace torch_reduce
