// torch_reduce.logsumexp: torch.logsumexp's semantics, in one pass. Its
// accumulator is a struct (op_base.h): the largest element so far and the
// sum of exp(x - that maximum), rescaled whenever the maximum grows, so
// that no exp overflows (elements of +-1000) and the input is read once
// (torch reads it for the maximum, then again for the sum).
#pragma once

#include <c10/core/DefaultDtype.h>

#include <cmath>
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

// One logsumexp fold's state, in T (float, or double for double inputs):
// trivially copyable and default-constructible, 8 or 16 bytes, so that a
// pass moves it as one aligned vector. An element enters as {x, 1}, by the
// explicit constructor that the kernels' conversions of an element to
// acc_t call.
template <typename T>
struct alignas(2 * sizeof(T)) LogSumExpState {
  using value_type = T;
  T max;  // the largest element folded
  T sum;  // the sum of exp(x - max) over the elements folded

  LogSumExpState() = default;
  C10_HOST_DEVICE LogSumExpState(T max_, T sum_) : max(max_), sum(sum_) {}
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U, T>>>
  C10_HOST_DEVICE explicit LogSumExpState(U x) : max(static_cast<T>(x)), sum(1) {}
};

template <typename T>
struct IsStructAccumulator<LogSumExpState<T>> : std::true_type {};

struct LogSumExp {
  static constexpr const char* kName = "logsumexp";
  // torch's dim has no default; dim=[] (the default here) reduces every dim,
  // as amax's.
  static constexpr const char* kSchema = "logsumexp(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor";
  using Signature = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);

  // Two states combine at the larger maximum: the other's sum is scaled by
  // exp(its maximum - the larger), one exp per element (a state of one).
  // Equal maxima add unscaled: two equal infinities (or the identity's -inf
  // with an element's) would otherwise give inf - inf = NaN. A NaN element
  // makes the sum NaN, and the result with it. Selects, not branches: the
  // kernels unroll the fold for every element they hold. The map weighs an
  // element by the repeats of an expanded dim; the CUDA column passes that
  // read partials do not map.
  template <typename acc_t>
  struct Op {
    using T = typename acc_t::value_type;
    static constexpr Combine kCombine = Combine::Other;
    T weight;  // how many times each element counts
    bool maps;

    C10_HOST_DEVICE acc_t identity() const { return acc_t(-std::numeric_limits<T>::infinity(), T(0)); }
    C10_HOST_DEVICE acc_t map(acc_t x) const { return maps ? acc_t(x.max, weight) : x; }
    Op reading_partials() const { return {weight, false}; }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      const bool a_larger = a.max >= b.max;
      const acc_t larger = a_larger ? a : b;
      const acc_t smaller = a_larger ? b : a;
      const T gap = smaller.max == larger.max ? T(0) : smaller.max - larger.max;
      return acc_t(larger.max, larger.sum + smaller.sum * exp_of_nonpositive(gap));
    }
    // An element x (of weight w) against the state, unordered: the sum is
    // scaled by exp(max - x) where x is larger, else w by exp(x - max).
    // Fewer instructions than the combine's ordering of two states; the
    // same equal-maxima rule, and a NaN makes the sum NaN either way.
    C10_HOST_DEVICE acc_t fold(acc_t acc, acc_t element) const {
#ifndef __CUDA_ARCH__
      // On the CPU, libm's fmax and exp2 calls cost more than the combine.
      return combine(acc, map(element));
#else
      if (!maps) return combine(acc, element);
      const T x = element.max;
      const T gap = x == acc.max ? T(0) : x - acc.max;
      const T scale = exp_of_nonpositive(-std::abs(gap));
      return acc_t(std::fmax(acc.max, x), gap > T(0) ? acc.sum * scale + weight : acc.sum + weight * scale);
#endif
    }
    // max + log(sum): -inf for no elements or only -inf (log 0 = -inf),
    // +inf where an element is, NaN where one is NaN; as torch's.
    C10_HOST_DEVICE T project(acc_t a) const { return a.max + std::log(a.sum); }
  };
  // exp(x) for x <= 0; on CUDA as 2^(x log2 e): one MUFU.EX2 and a
  // multiply, where expf takes eight instructions.
  template <typename T>
  static C10_HOST_DEVICE T exp_of_nonpositive(T x) {
#ifdef __CUDA_ARCH__
    return exp2(x * static_cast<T>(1.4426950408889634));
#else
    return std::exp(x);
#endif
  }

  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& call) {
    using T = typename acc_t::value_type;
    return {static_cast<T>(call.weight), call.reads_input};
  }

  // Floating kernels; half and bfloat16 fold in float and return their own
  // type. Integer and bool inputs become the default dtype first, as torch's.
  static constexpr bool kIntegralKernels = false;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType /*out*/, F&& f) {
    static_assert(family == TypeFamily::Floating, "logsumexp has floating kernels only");
    dispatch_floating_states<LogSumExpState>(kName, in, f);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    check_kernel_dtype(kName, self, "input");
    const at::ScalarType result =
        at::isIntegralType(self, /*includeBool=*/true) ? c10::get_default_dtype_as_scalartype() : self;
    return {result, result, result};
  }
  // No dtype holds the state: layouts that would take stages are read in
  // one (gathered or copied) instead.
  static std::optional<at::ScalarType> stage_dtype(const DtypePlan&) { return std::nullopt; }
  static constexpr EmptyReduction kEmpty = EmptyReduction::NegativeInfinity;
  static constexpr RepeatRule kRepeats = RepeatRule::Weight;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::Float32;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    return reduce_front_end(semantics_of<LogSumExp>(), self, dim, keepdim, std::nullopt, backend);
  }
  // dim=None and dim=[] both mean every dim.
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim.value_or(at::IntArrayRef{}), keepdim);
  }

  // torch's logsumexp_backward: the output's gradient times the softmax of
  // the input, exp(x - result); the tangent is the input's, weighed alike.
  static constexpr bool kBackwardSavesTensors = true;
  static at::Tensor backward(const Gradient& g) {
    return with_reduced_dims(g.grad, g.dims, g.keepdim) * softmax(g.input, g.result, g.dims, g.keepdim);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp&) {
    return (tangent * softmax(t.input, t.result, t.dims, t.keepdim)).sum(t.dims, t.keepdim);
  }

 private:
  static at::Tensor softmax(const at::Tensor& x, const at::Tensor& result, const std::vector<int64_t>& dims,
                            bool keepdim) {
    return (x - with_reduced_dims(result, dims, keepdim)).exp();
  }
};

}  // namespace torch_reduce
