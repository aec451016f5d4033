// The front end every op and backend shares: torch's semantics (dtypes,
// dims, keepdim, empty inputs, errors) and the canonical layouts that the
// kernels consume. It reads an op's semantics from its OpSemantics and a
// backend's from its Backend; it names neither.
#pragma once

#include <ATen/ATen.h>

#include <optional>

#include "backend.h"
#include "layout.h"
#include "ops/op_base.h"

namespace torch_reduce {

// An op's semantics as plain values (made from its ops object by semantics_of).
struct OpSemantics {
  const char* name;  // in error messages: "sum", "amax", ...
  DtypePlan (*dtypes)(at::ScalarType self, std::optional<at::ScalarType> requested);
  at::ScalarType (*stage_dtype)(const DtypePlan& dtypes);  // what stages pass between them
  EmptyReduction empty;
  RepeatRule repeats;
  EmptyDimList empty_dims;
};

template <typename Spec>
const OpSemantics& semantics_of() {
  static const OpSemantics semantics{Spec::kName, &Spec::dtypes, &Spec::stage_dtype, Spec::kEmpty, Spec::kRepeats,
                                      Spec::kEmptyDims};
  return semantics;
}

// The body of every op: `self` reduced over `dim` (None or [] for every
// dim) with torch's semantics, by the backend's kernels; `scalar` is the
// op's scalar argument (OpCall::scalar), where it has one.
at::Tensor reduce_front_end(const OpSemantics& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, const Backend& backend, double scalar = 0);

}  // namespace torch_reduce
