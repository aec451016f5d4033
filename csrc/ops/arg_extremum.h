// argmax and argmin: what they share (argmax.h and argmin.h name them).
// The first op whose element step takes each element's place in its
// reduction: its state is a value and the index it was found at.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

// The best value so far and its index, in T (the input's type; float for
// half and bfloat16, whose values it holds exactly). 16 bytes, aligned, so
// that the kernels move it as one vector. An element enters as {x, 0}, by
// the explicit constructor the kernels' conversions call; the ops object's
// at() then gives it its index.
template <typename T>
struct alignas(16) ValueAndIndex {
  using value_type = T;
  T value;
  int64_t index;

  ValueAndIndex() = default;
  C10_HOST_DEVICE ValueAndIndex(T value_, int64_t index_) : value(value_), index(index_) {}
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U, T>>>
  C10_HOST_DEVICE explicit ValueAndIndex(U x) : value(static_cast<T>(x)), index(0) {}
};

template <typename T>
struct IsStructAccumulator<ValueAndIndex<T>> : std::true_type {};

// `Self` (ArgMax or ArgMin) brings kName, kSchema and kLargest; argmin
// runs argmax's kernels (Kernels), told the direction by OpCall::smallest.
// The result, int64, has no gradient.
template <typename Self>
struct ArgExtremum : WithoutGradient<Self> {
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool);

  // The larger (smaller) value wins, a NaN over any number, and of equal
  // values (or two NaNs) the one of the smaller index: torch's first index.
  // Every order of combines gives that one element, so the result does not
  // depend on the fold's order. The identity loses to every element: the
  // worst value at an index past any.
  template <typename acc_t>
  struct Op {
    using T = typename acc_t::value_type;
    static constexpr Combine kCombine = Combine::Other;
    static constexpr bool kPositions = true;
    bool largest;
    bool partials;  // folds states that hold their indices (the CUDA column passes after the first)

    C10_HOST_DEVICE acc_t identity() const {
      using limits = std::numeric_limits<T>;
      const T worst = largest ? (limits::has_infinity ? -limits::infinity() : limits::lowest())
                              : (limits::has_infinity ? limits::infinity() : limits::max());
      return acc_t(worst, std::numeric_limits<int64_t>::max());
    }
    C10_HOST_DEVICE acc_t at(acc_t x, int64_t index) const { return partials ? x : acc_t(x.value, index); }
    Op reading_partials() const { return {largest, true}; }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
      const bool b_better = largest ? b.value > a.value : b.value < a.value;
      const bool tie = a_nan == b_nan && (a_nan || a.value == b.value);
      const bool b_wins = tie ? b.index < a.index : b_nan || (!a_nan && b_better);
      return b_wins ? b : a;
    }
    // An element at `position`, past every index the state has seen
    // (op_base.h, HasOrderedFold): it wins only if strictly better, or a
    // NaN against a number; a NaN state keeps its place. The identity (its
    // index's high word INT32_MAX, which no position reaches) loses to any
    // element. About half the instructions of the combine and a shorter
    // chain through the state.
    C10_HOST_DEVICE acc_t fold(acc_t acc, acc_t x, int64_t position) const {
      if (!partials) {
        const bool better = largest ? !(x.value <= acc.value) : !(x.value >= acc.value);
        const bool empty = static_cast<int32_t>(acc.index >> 32) == std::numeric_limits<int32_t>::max();
        return (better && acc.value == acc.value) || empty ? acc_t(x.value, position) : acc;
      }
      return combine(acc, at(x, position));
    }
    C10_HOST_DEVICE int64_t project(acc_t a) const { return a.index; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& call) {
    return {!call.smallest, !call.reads_input};
  }

  // Every dtype; the result is int64.
  static constexpr bool kIntegralKernels = true;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType /*out*/, F&& f) {
    auto to_indices = [&](auto types) {
      using Types = decltype(types);
      f(ReduceTypes<typename Types::scalar_t, ValueAndIndex<typename Types::acc_t>, int64_t>{});
    };
    if constexpr (family == TypeFamily::Floating) dispatch_floating_exact(Self::kName, in, to_indices);
    else dispatch_integral_exact(Self::kName, in, to_indices);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    TORCH_CHECK(self != at::kBool, Self::kName, "(): does not support bool input");  // torch's error
    check_kernel_dtype(Self::kName, self, "input");
    return {self, at::kLong, at::kLong};
  }
  // No dtype holds the state; one dim, or every dim of a contiguous tensor,
  // never takes stages.
  static std::optional<at::ScalarType> stage_dtype(const DtypePlan&) { return std::nullopt; }
  static constexpr EmptyReduction kEmpty = EmptyReduction::Error;
  static constexpr RepeatRule kRepeats = RepeatRule::Invariant;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::None;
  // Its ops object takes each element's position (op_base.h, HasPositions).
  static constexpr bool kPositions = true;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim,
                            bool keepdim) {
    OpCall call;
    call.smallest = !Self::kLargest;
    return reduce_front_end(semantics_of<Self>(), self, dim, keepdim, std::nullopt, backend, call);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim);
  }
};

}  // namespace torch_reduce
