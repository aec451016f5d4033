// torch_reduce.any: torch.any's semantics (logical.h).
#pragma once

#include "logical.h"

namespace torch_reduce {

struct Any : Logical<Any, /*kAny=*/true> {
  static constexpr const char* kName = "any";
  static constexpr const char* kSchema = "any(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor";
};

}  // namespace torch_reduce
