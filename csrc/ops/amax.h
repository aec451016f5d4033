// torch_reduce.amax: torch.amax's semantics (extremum.h).
#pragma once

#include "extremum.h"

namespace torch_reduce {

struct Amax : Extremum<Amax, /*kMax=*/true> {
  static constexpr const char* kName = "amax";
  static constexpr const char* kSchema = "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor";
};

}  // namespace torch_reduce
