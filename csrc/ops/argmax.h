// torch_reduce.argmax: torch.argmax's semantics (arg_extremum.h).
#pragma once

#include "arg_extremum.h"

namespace torch_reduce {

struct ArgMax : ArgExtremum<ArgMax> {
  static constexpr const char* kName = "argmax";
  static constexpr const char* kSchema = "argmax(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr bool kLargest = true;
};

}  // namespace torch_reduce
