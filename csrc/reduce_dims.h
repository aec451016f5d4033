// A reduction over given dims, planned into layouts the backend reads: in
// place where it can (one layout, stages, gathered rows or columns), else
// through one copy.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "backend.h"

namespace torch_reduce {

// Reduces `input` over `reduced` into a new contiguous tensor of the dims of
// `input` (size 1 where reduced) and dtype `out_dtype`; stages before the
// last pass partials of `stage_dtype`, the accumulator dtype (without one,
// the input is read in one stage, gathered or copied). `call` goes to
// the op's kernels, each stage's marked (OpCall::reads_input, writes_result).
at::Tensor reduce_dims(const at::Tensor& input, const std::vector<bool>& reduced, at::ScalarType out_dtype,
                       std::optional<at::ScalarType> stage_dtype, const OpCall& call, const Backend& backend);

}  // namespace torch_reduce
