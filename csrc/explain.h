// torch_reduce.explain: what a call would do, without doing it. The front
// end runs on a meta tensor of the input's sizes, strides and dtype, with a
// backend whose layout kernel records each launch instead of making it.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "backend.h"

namespace torch_reduce {

// What explain needs of a backend: its capabilities, and the name of the
// kernel (family) it reads a layout with.
struct BackendDescription {
  const BackendCapabilities* caps;
  const char* (*kernel_for)(const ReduceLayout& layout, int64_t element_bytes);
};

// Called by register_backend for each backend.
void describe_backend(c10::DeviceType device, const BackendDescription& description);

// The plan of op `op` over `self` as JSON: the dtypes, then one step per
// launch (its input: in place or a copy; its layout; its kernel; its output).
// `device`: the backend to plan for (default: self's).
std::string explain(const at::Tensor& self, const std::string& op, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, const std::optional<std::string>& device);

}  // namespace torch_reduce
