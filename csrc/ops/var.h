// torch_reduce.var: torch.var's semantics; std (std.h) runs these kernels.
// The first op whose accumulator is a struct: Welford's state, a mean and
// the sum of squared deviations from it (M2) of a count of elements.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

// One variance fold's state, in T (float, or double for double inputs).
// The kernels hold it where they hold any accumulator: it is trivially
// copyable and default-constructible (CUDA shared memory, shuffles by
// 32-bit word), 16 or 32 bytes, so that a pass moves it as one aligned
// vector. An element enters as {x, 0, 1}, by the explicit constructor that
// the kernels' conversions of an element to acc_t call.
template <typename T>
struct alignas(sizeof(T) == 4 ? 16 : 32) WelfordState {
  using value_type = T;
  T mean;
  T m2;
  int64_t count;

  WelfordState() = default;
  C10_HOST_DEVICE WelfordState(T mean_, T m2_, int64_t count_) : mean(mean_), m2(m2_), count(count_) {}
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U, T>>>
  C10_HOST_DEVICE explicit WelfordState(U x) : mean(static_cast<T>(x)), m2(0), count(1) {}
};

template <typename T>
struct IsStructAccumulator<WelfordState<T>> : std::true_type {};

struct Var {
  static constexpr const char* kName = "var";
  // keepdim right after dim, keyword-only like correction (torch.var's
  // correction overload): Python binds both by name.
  static constexpr const char* kSchema =
      "var(Tensor self, int[1]? dim=None, *, bool keepdim=False, float correction=1) -> Tensor";
  using Signature = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool, double);
  static constexpr int kScalarArg = 3;

  // Chan's combine of two states; an element is a state of one, so folding
  // elements is Welford's update. Chosen over a shifted two-pass because it
  // reads the input once, and over sums of x and x^2 because those lose a
  // variance that is small beside the mean (float32 of mean 1000 and spread
  // 3). The empty state (count 0) is the identity: selected, not computed,
  // since 0 * inf is NaN. The map weighs an element by the repeats of an
  // expanded dim; the CUDA column passes that read partials do not map.
  template <typename acc_t>
  struct Op {
    using T = typename acc_t::value_type;
    static constexpr Combine kCombine = Combine::Other;
    T correction;
    int64_t weight;  // how many times each element counts
    bool maps;
    bool root;  // std: the square root of the variance, before it is rounded

    C10_HOST_DEVICE acc_t identity() const { return acc_t(T(0), T(0), 0); }
    C10_HOST_DEVICE acc_t map(acc_t x) const { return maps ? acc_t(x.mean, T(0), weight) : x; }
    Op reading_partials() const {
      Op op = *this;
      op.maps = false;
      return op;
    }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      const int64_t count = a.count + b.count;
      const T delta = b.mean - a.mean;
      const T b_share = static_cast<T>(b.count) / static_cast<T>(count);
      // Where delta is not finite (an infinity among the elements), the
      // weighted mean: +-inf for infinities of one sign, NaN for both, as
      // torch.mean, in any order. Welford's step would give NaN wherever an
      // infinity meets a finite mean (torch.var_mean's mean does, but for an
      // infinity it folds last). The variance is NaN either way.
      const T mean = delta - delta == T(0)
                         ? a.mean + delta * b_share
                         : a.mean * (static_cast<T>(a.count) / static_cast<T>(count)) + b.mean * b_share;
      const acc_t both(mean, a.m2 + b.m2 + delta * delta * static_cast<T>(a.count) * b_share, count);
      return b.count == 0 ? a : a.count == 0 ? b : both;
    }
    // M2 over (count - correction), or over 0 where that is not positive
    // (inf or NaN, as torch). An infinity among the elements makes the
    // mean infinite or NaN, and the variance NaN, as torch's.
    C10_HOST_DEVICE T project(acc_t a) const {
      const T n = static_cast<T>(a.count);
      const T divisor = n > correction ? n - correction : T(0);
      const T variance = a.mean - a.mean == T(0) ? a.m2 / divisor : std::numeric_limits<T>::quiet_NaN();
      return root ? std::sqrt(variance) : variance;
    }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& call) {
    using T = typename acc_t::value_type;
    return {static_cast<T>(call.scalar), static_cast<int64_t>(call.weight), call.reads_input, call.root};
  }

  // Floating inputs; half and bfloat16 fold in float and return their own
  // type, as torch's.
  static constexpr bool kIntegralKernels = false;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType /*out*/, F&& f) {
    static_assert(family == TypeFamily::Floating, "var has floating kernels only");
    dispatch_floating_states<WelfordState>(kName, in, f);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> /*requested*/) {
    return dtypes_of(kName, "std and var", self);
  }
  // No dtype holds the state: layouts that would take stages are read in
  // one (gathered or copied) instead.
  static std::optional<at::ScalarType> stage_dtype(const DtypePlan&) { return std::nullopt; }
  static constexpr EmptyReduction kEmpty = EmptyReduction::NaN;
  static constexpr RepeatRule kRepeats = RepeatRule::Weight;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::None;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            double correction) {
    return run<Var>(backend, self, dim, keepdim, correction);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim, keepdim, 1.0);
  }

  // torch's var_backward, in its order of operations: 2 / (n - correction)
  // * grad * (x - mean), and where n - correction <= 0 for a reduction of
  // every element, grad times NaN where x is the mean, else infinity. The
  // jvp is the same factor times the tangent, summed.
  static constexpr bool kBackwardSavesTensors = true;
  static at::Tensor backward(const Gradient& g) {
    const at::Tensor x = widened(g.input);
    const at::Tensor grad = with_reduced_dims(g.grad, g.dims, g.keepdim).to(x.scalar_type());
    return times_derivative(grad, x, g.dims, g.scalar).to(g.dtype);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp&) {
    const at::Tensor x = widened(t.input);
    return times_derivative(tangent.to(x.scalar_type()), x, t.dims, t.scalar)
        .sum(t.dims, t.keepdim)
        .to(t.result.scalar_type());
  }

  // Whether the result is the root of the variance (std).
  static constexpr bool kRoot = false;

 protected:
  // The kernels of var and std (Spec::kRoot).
  template <typename Spec>
  static at::Tensor run(const Backend& backend, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                        double correction) {
    OpCall call;
    call.scalar = correction;
    call.root = Spec::kRoot;
    return reduce_front_end(semantics_of<Spec>(), self, dim, keepdim, std::nullopt, backend, call);
  }
  // `who` names the op as torch's message does ("std and var", "var_mean").
  static DtypePlan dtypes_of(const char* name, const char* who, at::ScalarType self) {
    // torch's message, and the dtype it was given.
    TORCH_CHECK(at::isFloatingType(self) || at::isComplexType(self), who,
                " only support floating point and complex dtypes, got ", self);
    check_kernel_dtype(name, self, "input");
    return {self, self, self};
  }
  // Half and bfloat16 in float, as the op computes them.
  static at::Tensor widened(const at::Tensor& x) { return is_reduced_precision(x.scalar_type()) ? x.to(at::kFloat) : x; }
  // `g` (of x's shape, or broadcast to it) times d var / d x.
  static at::Tensor times_derivative(const at::Tensor& g, const at::Tensor& x, const std::vector<int64_t>& dims,
                                     double correction) {
    int64_t n = 1;
    for (const int64_t d : dims) n *= x.size(d);
    const double dof = static_cast<double>(n) - correction;
    const at::Tensor mean = x.mean(dims, /*keepdim=*/true);
    if (dof <= 0 && dims.size() == static_cast<size_t>(x.dim()))
      return g * at::where(x == mean, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity());
    return (2.0 / dof) * g * (x - mean);
  }
};

}  // namespace torch_reduce
