// The CPU kernels of torch_reduce.amin, in a translation unit of their own.
#include "reduce_layout.h"

namespace torch_reduce {
namespace cpu {
template void reduce_layout<ReduceKind::Min>(const at::Tensor&, const ReduceLayout&, at::Tensor&);
}  // namespace cpu
}  // namespace torch_reduce
