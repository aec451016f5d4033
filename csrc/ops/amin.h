// torch_reduce.amin: torch.amin's semantics (extremum.h).
#pragma once

#include "extremum.h"

namespace torch_reduce {

struct Amin : Extremum<Amin, /*kMax=*/false> {
  static constexpr const char* kName = "amin";
  static constexpr const char* kSchema = "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor";
};

}  // namespace torch_reduce
