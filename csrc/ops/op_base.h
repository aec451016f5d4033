// What every ops object shares: the vocabulary in which an op states its
// semantics (op_list.h lists the ops; docs/DESIGN.md has the recipe).
//
// An op is one struct (csrc/ops/<op>.h) with two halves:
//  - the device half, `Op<acc_t>`, which every kernel (CPU and CUDA, rows,
//    columns, gathered or staged) is a template over. Kernels call only
//      op.identity()      the value an empty accumulator starts from,
//      op.combine(a, b)   folds two accumulators,
//      op.map(x)          optional: an input element, converted to acc_t
//                         (static_cast, or the code that gives its bits:
//                         widen on the CPU, vector_element on CUDA), as the
//                         accumulator it contributes (|x|^p for a norm); the
//                         kernels fold elements through fold_element, which
//                         leaves them as they are for ops without one
//                         (an op with one also has reading_partials(): a
//                         copy that does not map, for the CUDA column
//                         passes that read another pass's partials),
//      op.project(a)      turns the final accumulator into the result;
//    make_op builds it for a launch; an op may also have a faster ops
//    object for some calls (a compile-time case of a run-time choice), which
//    its with_op hands the kernels instead (see with_op below);
//  - the host half: name and schema, the dtypes it takes and returns, the
//    type triples its kernels are built for, the result of an empty
//    reduction, the rule for expanded (stride-0) reduced dims, its autocast
//    policy and its gradient formulas.
// The front end, the backends and the registration read these fields and
// name no op.
#pragma once

#include <ATen/ATen.h>
#include <c10/macros/Macros.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

namespace torch_reduce {

// What one kernel launch tells make_op besides the count: the op's scalar
// argument, the repeats of each value (RepeatRule::Weight), and where the
// launch sits among a reduction's stages. Only the first stage reads input
// elements (an op with a map maps them) and only the last writes results
// (an op that cannot take a result as an element, a norm, projects only
// there); the stages between read and write accumulators. Ops whose
// results fold as their elements do (a mean: means of means of equal
// counts) may ignore the stage.
struct OpCall {
  double scalar = 0;  // the op's scalar argument: vector_norm's ord
  double weight = 1;  // how many times each element counts
  bool reads_input = true;
  bool writes_result = true;
  bool root = false;      // std, by var's kernels: the result's square root
  bool smallest = false;  // argmin, by argmax's kernels: the smallest value's index
};

// Whether an accumulator is a struct of several values (var's mean, M2 and
// count) rather than a number: the kernels then fold it only through the
// ops object, and skip the paths that hold accumulators in vector registers.
template <typename acc_t>
struct IsStructAccumulator : std::false_type {};
template <typename acc_t>
constexpr bool kStructAccumulator = IsStructAccumulator<acc_t>::value;

// The dtypes of one call: the input is cast to `input` first (usually a
// no-op), the kernel writes `kernel`, the caller gets `result`.
struct DtypePlan {
  at::ScalarType input;
  at::ScalarType kernel;
  at::ScalarType result;
};

// What an ops object's combine is, for kernels that have a faster
// instruction or order for it (a vector select for Max and Min, narrow
// integers added first for an integer Add). Other: only combine() is known.
enum class Combine { Add, Max, Min, Other };

// An op whose elements count by their place (argmax: of equal values, the
// first): Op::kPositions, and op.at(x, position), the element x as the
// accumulator it contributes at `position`, its index in the reduction of
// its output (0 to count - 1, in the input's logical order: the front end
// reads such ops' reduced dim in that order). The kernels fold every input
// element through the forms below, which give the other ops' ops objects
// what they gave before (the position is then dead code).
template <typename Op, typename = void>
struct HasPositions : std::false_type {};
template <typename Op>
struct HasPositions<Op, std::void_t<decltype(Op::kPositions)>> : std::integral_constant<bool, Op::kPositions> {};

// An input element folded into an accumulator: op.map(x) where the op has
// an element step, else x itself.
template <typename Op, typename = void>
struct HasMap : std::false_type {};
template <typename Op>
struct HasMap<Op, std::void_t<decltype(&Op::map)>> : std::true_type {};

template <typename Op, typename acc_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t map_element(const Op& op, acc_t x) {
  static_assert(!HasPositions<Op>::value, "an op of positions folds its elements with their positions");
  if constexpr (HasMap<Op>::value) return op.map(x);
  else return x;
}
// An op may also fold an element by a step of its own, cheaper than the
// combine of a one-element accumulator (logsumexp's: the element against
// the state's maximum, one exp): op.fold(acc, x), x the element converted
// to acc_t (or, for an op that reads partials, a partial).
template <typename Op, typename acc_t, typename = void>
struct HasFold : std::false_type {};
template <typename Op, typename acc_t>
struct HasFold<Op, acc_t,
               std::void_t<decltype(std::declval<const Op&>().fold(std::declval<acc_t>(), std::declval<acc_t>()))>>
    : std::true_type {};

template <typename Op, typename acc_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t fold_element(const Op& op, acc_t acc, acc_t x) {
  if constexpr (HasFold<Op, acc_t>::value) return op.fold(acc, x);
  else return op.combine(acc, map_element(op, x));
}
// The same, for an element at `position` (HasPositions above).
template <typename Op, typename acc_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t map_element(const Op& op, acc_t x, int64_t position) {
  if constexpr (HasPositions<Op>::value) return op.at(x, position);
  else if constexpr (HasMap<Op>::value) return op.map(x);
  else return x;
}
// An op of positions may have a step of its own too, op.fold(acc, x,
// position), which may rely on the order every kernel keeps: an element
// folds into an accumulator (op.identity(), or states of the same run) only
// past every position the accumulator holds (argmax's: a later equal value
// never wins, so no index is compared). Partials, and accumulators against
// each other, meet by the combine, which takes any order.
template <typename Op, typename acc_t, typename = void>
struct HasOrderedFold : std::false_type {};
template <typename Op, typename acc_t>
struct HasOrderedFold<Op, acc_t,
                      std::void_t<decltype(std::declval<const Op&>().fold(std::declval<acc_t>(), std::declval<acc_t>(),
                                                                          int64_t{}))>> : std::true_type {};

template <typename Op, typename acc_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t fold_element(const Op& op, acc_t acc, acc_t x, int64_t position) {
  static_assert(!(HasFold<Op, acc_t>::value && HasPositions<Op>::value), "an op of positions folds with them");
  if constexpr (HasOrderedFold<Op, acc_t>::value) return op.fold(acc, x, position);
  else if constexpr (HasFold<Op, acc_t>::value) return op.fold(acc, x);
  else return op.combine(acc, map_element(op, x, position));
}
// The op for a pass that reads another pass's partials (accumulators): an
// op with a map leaves them unmapped, an op of positions keeps their
// positions (Op::reading_partials()).
template <typename Op>
Op reading_partials(const Op& op) {
  if constexpr (HasMap<Op>::value || HasPositions<Op>::value) return op.reading_partials();
  else return op;
}

// x * x, rounded before anything adds it: CUDA would otherwise fuse a
// square and the add after it into one fma, whose bits differ from another
// kernel's that does not.
template <typename acc_t>
C10_HOST_DEVICE C10_ALWAYS_INLINE acc_t unfused_square(acc_t x) {
#ifdef __CUDA_ARCH__
  if constexpr (std::is_same_v<acc_t, float>) return __fmul_rn(x, x);
  else if constexpr (std::is_same_v<acc_t, double>) return __dmul_rn(x, x);
  else return x * x;
#else
  return x * x;
#endif
}

// The ops object a launch folds with: Spec::make_op's, or, for an op with
// a faster ops object for some calls, the one its with_op(count, call, f)
// hands f (vector_norm's 2-norm). The kernels are compiled for every ops
// object with_op may hand them.
struct IgnoreOp {
  template <typename Op>
  void operator()(const Op&) const {}
};
template <typename Spec, typename acc_t, typename = void>
struct HasWithOp : std::false_type {};
template <typename Spec, typename acc_t>
struct HasWithOp<Spec, acc_t,
                 std::void_t<decltype(Spec::template with_op<acc_t>(int64_t{}, std::declval<const OpCall&>(),
                                                                    IgnoreOp{}))>> : std::true_type {};
template <typename Spec, typename acc_t, typename F>
void with_op(int64_t count, const OpCall& call, F&& f) {
  if constexpr (HasWithOp<Spec, acc_t>::value) Spec::template with_op<acc_t>(count, call, f);
  else f(Spec::template make_op<acc_t>(count, call));
}

// What reducing no elements gives (an output whose reduced dims are empty).
enum class EmptyReduction {
  Zero,              // the identity of a sum (false for any)
  One,               // the identity of a product (true for all)
  NaN,               // 0 / 0, as torch.mean
  NegativeInfinity,  // log 0, as torch.logsumexp
  Error,             // no identity: torch's "Expected reduction dim ..." errors
};

// What dim=[] means: every dim (torch.sum, torch.amax: the older rule) or
// none (torch.any, torch.all: each element on its own).
enum class EmptyDimList { AllDims, NoDims };

// How repeats of a value along an expanded (stride-0) reduced dim change the
// result: not at all (an extremum, a mean, any), by a factor (a sum), by a
// power (a product), or as the op's map weighs its elements (a norm: the
// front end passes the repeats as OpCall::weight).
enum class RepeatRule { Invariant, Multiply, Power, Weight };

// What the op does under CUDA autocast.
enum class AutocastPolicy {
  None,              // the key falls through (torch.mean, amax, amin)
  Float32IfNoDtype,  // dtype=float32 for eligible inputs when no dtype is given (torch.sum)
  Float32,           // eligible inputs cast to float32 first (torch.linalg.vector_norm)
};

// The dtypes the kernels are instantiated for.
inline bool is_kernel_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kBool:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
      return true;
    default:
      return false;
  }
}

inline void check_kernel_dtype(const char* name, at::ScalarType t, const char* what) {
  TORCH_CHECK(is_kernel_dtype(t), "torch_reduce.", name, ": unsupported ", what, " dtype ", t,
              " (supported: float32, float64, float16, bfloat16, int8, uint8, "
              "int16, int32, int64, bool)");
}

inline bool is_reduced_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

// The dtype of a fold's accumulator, for ops that fold values (sum, mean):
// float for half and bfloat16 inputs, else the kernel's dtype. Their stages
// pass partials of this dtype, so a staged fold rounds as an unstaged one.
inline at::ScalarType accumulator_dtype(const DtypePlan& d) {
  return is_reduced_precision(d.input) ? at::kFloat : d.kernel;
}

// The dtypes of a floating `result` asked of a floating input `self`: the
// kernels read half/bfloat16 and write float directly; any other result
// dtype is reached by casting the input to it first, like torch.
inline DtypePlan floating_result_dtypes(at::ScalarType self, at::ScalarType result) {
  if (is_reduced_precision(self) && result == at::kFloat) return {self, result, result};
  return {result, result, result};
}

// The dtypes of an op that folds values as torch.sum does (sum, prod):
// floating inputs in their type (half and bfloat16 in float), bool and
// integers in int64; `requested` (dtype=) is the accumulation and result type.
inline DtypePlan folding_dtypes(const char* name, at::ScalarType self, std::optional<at::ScalarType> requested) {
  check_kernel_dtype(name, self, "input");
  if (requested) check_kernel_dtype(name, *requested, "output");
  if (!requested) {
    if (at::isIntegralType(self, /*includeBool=*/true)) return {self, at::kLong, at::kLong};
    return {self, self, self};
  }
  const at::ScalarType result = *requested;
  // Integers accumulate in int64; a narrower integer result is the int64
  // fold wrapped around, which is what torch returns. A bool result is "any
  // element nonzero" (a sum) or "every element nonzero" (a product): the
  // input becomes bool first.
  if (at::isIntegralType(result, /*includeBool=*/true)) {
    const at::ScalarType input =
        at::isIntegralType(self, /*includeBool=*/true) && result != at::kBool ? self : result;
    return {input, at::kLong, result};
  }
  return floating_result_dtypes(self, result);
}

// Two's-complement wrap-around like torch.sum on integers; signed overflow
// is undefined behaviour in C++, so add as unsigned.
template <typename acc_t>
C10_HOST_DEVICE inline acc_t wrapping_add(acc_t a, acc_t b) {
  return a + b;
}
template <>
C10_HOST_DEVICE inline int64_t wrapping_add<int64_t>(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename acc_t>
C10_HOST_DEVICE inline acc_t wrapping_multiply(acc_t a, acc_t b) {
  return a * b;
}
template <>
C10_HOST_DEVICE inline int64_t wrapping_multiply<int64_t>(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

}  // namespace torch_reduce
