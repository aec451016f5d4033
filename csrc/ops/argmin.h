// torch_reduce.argmin: torch.argmin's semantics, by argmax's kernels
// (arg_extremum.h).
#pragma once

#include "argmax.h"

namespace torch_reduce {

struct ArgMin : ArgExtremum<ArgMin> {
  static constexpr const char* kName = "argmin";
  static constexpr const char* kSchema = "argmin(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr bool kLargest = false;
  using Kernels = ArgMax;
};

}  // namespace torch_reduce
