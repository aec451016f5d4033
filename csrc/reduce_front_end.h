// The front end every op and backend shares: torch's semantics (dtypes,
// dims, keepdim, empty inputs, errors) and the canonical layouts that the
// kernels consume. It reads an op's semantics from its OpSemantics and a
// backend's from its Backend; it names neither.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <tuple>
#include <type_traits>

#include "backend.h"
#include "layout.h"
#include "ops/op_base.h"

namespace torch_reduce {

// An op's semantics as plain values (made from its ops object by semantics_of).
struct OpSemantics {
  const char* name;  // in error messages: "sum", "amax", ...
  DtypePlan (*dtypes)(at::ScalarType self, std::optional<at::ScalarType> requested);
  // What stages pass between them; none where no dtype holds the op's
  // state (var's), whose layouts are then read in one stage.
  std::optional<at::ScalarType> (*stage_dtype)(const DtypePlan& dtypes);
  EmptyReduction empty;
  RepeatRule repeats;
  EmptyDimList empty_dims;
  // The results of an output (var_mean's two). An op of several gets the
  // kernel's output back as it is, a struct of them per output in the
  // kernel's dtype, and its forward splits and rounds them.
  int results;
  // The op's elements count by their position (argmax): it reduces one dim,
  // or every dim in their logical order (HasPositions in op_base.h).
  bool positions;
};

// How many tensors an op's Signature returns.
template <typename Signature>
struct ResultCount;
template <typename Result, typename... Args>
struct ResultCount<Result(Args...)> : std::integral_constant<int, 1> {};
template <typename... Results, typename... Args>
struct ResultCount<std::tuple<Results...>(Args...)> : std::integral_constant<int, sizeof...(Results)> {};

template <typename Spec>
const OpSemantics& semantics_of() {
  static const OpSemantics semantics{
      Spec::kName, &Spec::dtypes,
      [](const DtypePlan& d) -> std::optional<at::ScalarType> { return Spec::stage_dtype(d); }, Spec::kEmpty,
      Spec::kRepeats, Spec::kEmptyDims, ResultCount<typename Spec::Signature>::value, HasPositions<Spec>::value};
  return semantics;
}

// The body of every op: `self` reduced over `dim` (None or [] for every
// dim) with torch's semantics, by the backend's kernels; `call` holds the
// op's own values for its kernels (OpCall's scalar and root), where it has
// them; the front end sets the rest.
at::Tensor reduce_front_end(const OpSemantics& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, const Backend& backend, OpCall call = {});

}  // namespace torch_reduce
