// The CUDA backend: the registration of every op for CUDA tensors. Each
// op's kernels (reduce_layout.cuh) are compiled an op and input family (and,
// for some ops, element width) per translation unit
// (build_support/kernel_units.py); the ladder (ladder/ladder.h) is sum's alone.
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "capabilities.cuh"
#include "device_code.h"
#include "ladder/ladder.h"
#include "kernel_family.cuh"
#include "launch_plan.h"
#include "register_backend.h"

namespace torch_reduce {
namespace cuda {

// Instantiated in the generated units.
template <typename Spec, TypeFamily family, ElementWidth width>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out, const OpCall& call);
template <typename Spec, TypeFamily family, ElementWidth width>
std::vector<LaunchStep> plan_layout(const at::Tensor& input, const ReduceLayout& layout, const at::Tensor& out,
                                    const OpCall& call);

struct CudaBackend {
  static constexpr c10::DeviceType kDevice = c10::DeviceType::CUDA;
  static const BackendCapabilities& capabilities() { return cuda::capabilities(); }
  static const char* kernel_for(const ReduceLayout& layout, int64_t element_bytes) {
    return kernel_family_name(layout, element_bytes);
  }
  template <typename Spec>
  static void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out,
                            const OpCall& call) {
    const c10::cuda::CUDAGuard guard(input.device());
    check_device_has_code();
    dispatch_unit<Spec>(input.scalar_type(), [&](auto family, auto width) {
      cuda::reduce_layout<Spec, decltype(family)::value, decltype(width)::value>(input, layout, out, call);
    });
  }
  // The launches on the current device; none without a GPU, whose size and
  // residencies the grids depend on.
  template <typename Spec>
  static std::optional<std::vector<LaunchStep>> plan_layout(const at::Tensor& input, const ReduceLayout& layout,
                                                            const at::Tensor& out, const OpCall& call) {
    if (c10::cuda::device_count() == 0) return std::nullopt;
    std::vector<LaunchStep> steps;
    dispatch_unit<Spec>(input.scalar_type(), [&](auto family, auto width) {
      steps = cuda::plan_layout<Spec, decltype(family)::value, decltype(width)::value>(input, layout, out, call);
    });
    return steps;
  }
  template <typename Spec>
  static LayoutPlanner planner() {
    return &plan_layout<Spec>;
  }
  static constexpr LadderSum kLadderSum = &ladder_sum;
};

}  // namespace cuda

TORCH_LIBRARY_IMPL(torch_reduce, CUDA, m) { register_backend<cuda::CudaBackend>(m); }

}  // namespace torch_reduce
