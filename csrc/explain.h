// torch_reduce.explain: what a call would do, without doing it. The front
// end runs on a meta tensor of the input's sizes, strides and dtype, with a
// backend whose layout kernel records each launch instead of making it.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend.h"
#include "launch_plan.h"

namespace torch_reduce {

// An op's launches for one layout kernel call, planned by the function the
// backend launches by; nullopt where they cannot be planned here (CUDA
// without a GPU: grids depend on the device).
using LayoutPlanner = std::optional<std::vector<LaunchStep>> (*)(const at::Tensor& input, const ReduceLayout& layout,
                                                                const at::Tensor& out, const OpCall& call);

// What explain needs of a backend: its capabilities, the name of the
// kernel (family) it reads a layout with, and, where it has them, each op's
// planner (by op name).
struct BackendDescription {
  const BackendCapabilities* caps;
  const char* (*kernel_for)(const ReduceLayout& layout, int64_t element_bytes);
  std::map<std::string, LayoutPlanner> planners;
};

// Called by register_backend for each backend.
void describe_backend(c10::DeviceType device, const BackendDescription& description);

// The plan of op `op` over `self` as JSON: the dtypes, then one step per
// layout kernel call (its input: in place or a copy; its layout; its kernel
// family; its output; and, where the backend plans them, its launches).
// `device`: the backend to plan for (default: self's).
std::string explain(const at::Tensor& self, const std::string& op, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, const std::optional<std::string>& device);

}  // namespace torch_reduce
