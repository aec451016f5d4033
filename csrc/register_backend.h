// Registers every op of the op list for one backend. An op's kernel is its
// ops object's forward(), given the backend: its capabilities, its layout
// kernel instantiated for the op, and the ladder where there is one.
//
// `BackendT` brings
//   static const BackendCapabilities& capabilities();
//   template <typename Spec> static void reduce_layout(input, layout, out, call);
//   static constexpr LadderSum kLadderSum;  // nullptr without a ladder
//   static constexpr c10::DeviceType kDevice;
//   static const char* kernel_for(layout, element_bytes);  // for explain
//   template <typename Spec> static LayoutPlanner planner();  // for explain; nullptr: none
#pragma once

#include <torch/library.h>

#include <type_traits>
#include <utility>

#include "explain.h"
#include "op_list.h"

namespace torch_reduce {

// The op whose kernels an op runs: its own, or another's that it names as
// Spec::Kernels (std runs var's), whose units the build then does not
// compile twice.
template <typename Spec, typename = void>
struct KernelsOf {
  using type = Spec;
};
template <typename Spec>
struct KernelsOf<Spec, std::void_t<typename Spec::Kernels>> {
  using type = typename Spec::Kernels;
};

template <typename Spec, typename BackendT, typename Signature = typename Spec::Signature>
struct BackendEntry;

template <typename Spec, typename BackendT, typename Result, typename... Args>
struct BackendEntry<Spec, BackendT, Result(Args...)> {
  static Result call(Args... args) {
    static const Backend backend{&BackendT::capabilities(), &BackendT::template reduce_layout<typename KernelsOf<Spec>::type>,
                                 BackendT::kLadderSum};
    return Spec::forward(backend, args...);
  }
};

template <typename BackendT>
void register_backend(torch::Library& m) {
  BackendDescription description{&BackendT::capabilities(), &BackendT::kernel_for, {}};
#define TORCH_REDUCE_REGISTER(name, Spec, families)                                                 \
  m.impl(#name, &BackendEntry<Spec, BackendT>::call);                                               \
  description.planners[Spec::kName] = BackendT::template planner<typename KernelsOf<Spec>::type>();
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_REGISTER)
#undef TORCH_REDUCE_REGISTER
  describe_backend(BackendT::kDevice, std::move(description));
}

}  // namespace torch_reduce
