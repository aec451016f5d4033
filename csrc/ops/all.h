// torch_reduce.all: torch.all's semantics (logical.h).
#pragma once

#include "logical.h"

namespace torch_reduce {

struct All : Logical<All, /*kAny=*/false> {
  static constexpr const char* kName = "all";
  static constexpr const char* kSchema = "all(Tensor self, int[1]? dim=None, bool keepdim=False) -> Tensor";
};

}  // namespace torch_reduce
