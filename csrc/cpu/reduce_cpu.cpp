// The CPU backend: the registration of every op for CPU tensors. Its
// kernels (reduce_layout.h) are compiled an op per translation unit
// (build_support/kernel_units.py). It reads the Inner and Outer layouts and
// reduces in stages at every size (a stage costs no launch here); gathered
// layouts are CUDA's.
#include <ATen/ATen.h>

#include "register_backend.h"

namespace torch_reduce {
namespace cpu {

// Instantiated in the generated unit of each op.
template <typename Spec>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out, const OpCall& call);

struct CpuBackend {
  static constexpr c10::DeviceType kDevice = c10::DeviceType::CPU;
  // reduce_layout's two kernels.
  static const char* kernel_for(const ReduceLayout& layout, int64_t) {
    return layout.kind == ReduceLayout::Inner ? "reduce_rows" : "reduce_columns";
  }
  // Its launches are the kernel above, on at::parallel_for's threads.
  template <typename Spec>
  static LayoutPlanner planner() {
    return nullptr;
  }
  static const BackendCapabilities& capabilities() {
    static const BackendCapabilities caps{};
    return caps;
  }
  template <typename Spec>
  static void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out,
                            const OpCall& call) {
    if (!out.is_contiguous()) {
      // A permuted view of the result: the CPU kernels write dense outputs.
      return reduce_through_dense(out,
                                  [&](at::Tensor& dense) { cpu::reduce_layout<Spec>(input, layout, dense, call); });
    }
    cpu::reduce_layout<Spec>(input, layout, out, call);
  }
  static constexpr LadderSum kLadderSum = nullptr;
};

}  // namespace cpu

TORCH_LIBRARY_IMPL(torch_reduce, CPU, m) { register_backend<cpu::CpuBackend>(m); }

}  // namespace torch_reduce
