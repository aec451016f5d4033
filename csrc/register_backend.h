// Registers the four ops for one backend. The op bodies are the shared front
// end (reduce_front_end.h); a backend only brings its LayoutKernel.
#pragma once

#include <torch/library.h>

#include "reduce_front_end.h"

namespace torch_reduce {

template <LayoutKernel kernel>
struct BackendOps {
  static at::Tensor sum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        std::optional<at::ScalarType> dtype, std::optional<std::string> algorithm) {
    return reduce_front_end(ReduceKind::Sum, "sum", self, dim, keepdim, dtype, algorithm, kernel);
  }
  static at::Tensor mean(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                         std::optional<at::ScalarType> dtype) {
    return reduce_front_end(ReduceKind::Mean, "mean", self, dim, keepdim, dtype, std::nullopt, kernel);
  }
  static at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    return reduce_front_end(ReduceKind::Max, "amax", self, dim, keepdim, std::nullopt, std::nullopt, kernel);
  }
  static at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    return reduce_front_end(ReduceKind::Min, "amin", self, dim, keepdim, std::nullopt, std::nullopt, kernel);
  }
};

template <LayoutKernel kernel>
void register_backend(torch::Library& m) {
  m.impl("sum", &BackendOps<kernel>::sum);
  m.impl("mean", &BackendOps<kernel>::mean);
  m.impl("amax", &BackendOps<kernel>::amax);
  m.impl("amin", &BackendOps<kernel>::amin);
}

}  // namespace torch_reduce
