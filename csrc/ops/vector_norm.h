// torch_reduce.vector_norm: torch.linalg.vector_norm's semantics. The first
// op with an element step (map): an element enters as x^2, |x| or x != 0,
// and the kind of norm is a run-time value of one ops object, so that every
// ord shares one set of kernels.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "extremum.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

struct VectorNorm {
  static constexpr const char* kName = "vector_norm";
  static constexpr const char* kSchema =
      "vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
      "-> Tensor";
  using Signature = at::Tensor(const at::Tensor&, const at::Scalar&, at::OptionalIntArrayRef, bool,
                               std::optional<at::ScalarType>);
  // torch's order: ord comes before dim and keepdim.
  static constexpr size_t kDimArg = 2;
  static constexpr int kScalarArg = 1;

  // The kinds of norm whose map, combine or project differ. The kernels take
  // all but Power: a general p's |x|^p, in every kernel's unrolled folds,
  // made the op's CUDA unit compile for most of an hour, so forward() raises
  // the elements to the power first (one pass more) and sums them.
  enum class Kind { Zero, One, Two, Inf, NegInf, Power };
  static Kind kind_of(double ord) {
    if (ord == 0) return Kind::Zero;
    if (ord == 1) return Kind::One;
    if (ord == 2) return Kind::Two;
    if (std::isinf(ord)) return ord > 0 ? Kind::Inf : Kind::NegInf;
    return Kind::Power;
  }

  // Zero, One and Two add their elements' contributions (x != 0, |x|, x^2,
  // each times its weight: the repeats of an expanded dim); Inf and NegInf
  // take the largest and smallest |x|, NaN propagating. Only a reduction's
  // first stage maps elements and only its last projects (OpCall): stages
  // between pass sums of squares, not norms. Selects, not branches: the
  // kernels unroll the map for every element they hold.
  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = Combine::Other;
    Kind kind;
    acc_t weight;     // how many times each element counts
    bool maps;        // the elements are the input's
    bool projects;    // the results are the norms
    C10_HOST_DEVICE acc_t identity() const {
      return kind == Kind::NegInf ? std::numeric_limits<acc_t>::infinity() : acc_t(0);
    }
    C10_HOST_DEVICE acc_t map(acc_t x) const {
      if (!maps) return x;
      const acc_t a = std::abs(x);
      const acc_t m = kind == Kind::Two ? a * a : kind == Kind::Zero ? acc_t(a != acc_t(0)) : a;
      return m * weight;
    }
    Op reading_partials() const {
      Op op = *this;
      op.maps = false;
      return op;
    }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      if (kind == Kind::Inf) return max_propagate_nan(a, b);
      if (kind == Kind::NegInf) return min_propagate_nan(a, b);
      return a + b;
    }
    C10_HOST_DEVICE acc_t project(acc_t a) const {
      return projects && kind == Kind::Two ? std::sqrt(a) : a;
    }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& call) {
    const Kind kind = kind_of(call.scalar);
    TORCH_INTERNAL_ASSERT(kind != Kind::Power, "vector_norm: a general ord reaches the kernels as ord 1 (forward)");
    // The largest and smallest |x| do not depend on how often each occurs.
    const double weight = kind == Kind::Inf || kind == Kind::NegInf ? 1.0 : call.weight;
    return {kind, static_cast<acc_t>(weight), call.reads_input, call.writes_result};
  }

  // The 2-norm of elements that count once, the common case (gradient
  // clipping), with no kind to select on: an element is x * x, added. Op's
  // selects made bfloat16 norms compute-bound on the H100, up to 3.5x a
  // sum's time (benchmarks/results/dims_h100.json at 9fd4731); this one
  // costs what a sum does. Its square is never fused into the add
  // (unfused_square), so both objects give a 2-norm the same bits.
  template <typename acc_t>
  struct SquareSum {
    static constexpr Combine kCombine = Combine::Add;
    bool maps;
    bool projects;
    C10_HOST_DEVICE acc_t identity() const { return acc_t(0); }
    C10_HOST_DEVICE acc_t map(acc_t x) const { return maps ? unfused_square(x) : x; }
    SquareSum reading_partials() const { return {false, projects}; }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return projects ? std::sqrt(a) : a; }
  };
  // Hands f the ops object of a launch (op_base.h, with_op): SquareSum where
  // it applies, else Op. Both have kernels.
  template <typename acc_t, typename F>
  static void with_op(int64_t count, const OpCall& call, F&& f) {
    const Op<acc_t> op = make_op<acc_t>(count, call);
    if (op.kind == Kind::Two && op.weight == acc_t(1)) return f(SquareSum<acc_t>{op.maps, op.projects});
    f(op);
  }

  // Floating inputs only; half and bfloat16 accumulate in float. dtype=
  // casts the input to a dtype it converts to without narrowing (half and
  // bfloat16 are read as they are and written as float).
  static constexpr bool kIntegralKernels = false;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType out, F&& f) {
    static_assert(family == TypeFamily::Floating, "vector_norm has floating kernels only");
    dispatch_floating(kName, in, out, f);
  }
  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType> requested) {
    TORCH_CHECK(at::isFloatingType(self) || at::isComplexType(self),
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got ", self);
    check_kernel_dtype(kName, self, "input");
    if (!requested) return {self, self, self};
    const at::ScalarType result = *requested;
    TORCH_CHECK(at::isFloatingType(result) || at::isComplexType(result),
                "linalg.vector_norm: dtype should be floating point or complex, but got ", result);
    TORCH_CHECK(at::promoteTypes(self, result) == result, "linalg.vector_norm: the dtype of the input (", self,
                ") should be convertible without narrowing to the specified dtype (", result, ")");
    check_kernel_dtype(kName, result, "output");
    return floating_result_dtypes(self, result);
  }
  static at::ScalarType stage_dtype(const DtypePlan& d) { return accumulator_dtype(d); }
  // Empty reductions of the norms without an identity raise in forward().
  static constexpr EmptyReduction kEmpty = EmptyReduction::Zero;
  static constexpr RepeatRule kRepeats = RepeatRule::Weight;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::Float32;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, const at::Scalar& ord,
                            at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
    TORCH_CHECK(!ord.isComplex(), "linalg.vector_norm: Expected a non-complex scalar as the order of norm.");
    const double p = ord.toDouble();
    if (p < 0 || std::isinf(p)) check_not_empty(self, dim, p);
    const OpSemantics& norm = semantics_of<VectorNorm>();
    if (kind_of(p) != Kind::Power) return reduce_front_end(norm, self, dim, keepdim, dtype, backend, OpCall{p});
    // (sum of |x|^p)^(1/p): |x|^p in the accumulator's dtype (a dtype= cast
    // first), summed as the 1-norm sums, the root taken in the same dtype.
    const DtypePlan dtypes = VectorNorm::dtypes(self.scalar_type(), dtype);
    const at::ScalarType acc = accumulator_dtype(dtypes);
    const at::Tensor powers = self.to(acc).abs().pow(p);
    const at::Tensor sum = reduce_front_end(norm, powers, dim, keepdim, std::nullopt, backend, OpCall{/*scalar=*/1.0});
    return sum.pow(1.0 / p).to(dtypes.result);
  }
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, 2, dim, keepdim, std::nullopt);
  }

  // torch's formulas (norm_backward, linalg_vector_norm_jvp): the derivative
  // of the norm by each element, times the output's gradient or summed with
  // the input's tangent; for ord +-inf in torch's order of operations (so
  // that the result has its bits: the elements whose |x| is the norm, or
  // NaN, share the gradient evenly).
  static constexpr bool kBackwardSavesTensors = true;
  static at::Tensor backward(const Gradient& g) {
    if (g.scalar == 0) return {};  // torch's: no gradient at all (undefined), rather than zeros
    const at::Tensor grad = with_reduced_dims(g.grad, g.dims, g.keepdim);
    const Widened w(g.input, g.result, g.dims, g.keepdim);
    if (std::isinf(g.scalar)) {
      const at::Tensor hits = w.hits();
      return (w.x.sgn() * ((grad / hits.sum(g.dims, /*keepdim=*/true)) * hits)).to(g.dtype);
    }
    return (derivative(w, g.scalar) * grad).to(g.dtype);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp&) {
    const Widened w(t.input, t.result, t.dims, t.keepdim);
    if (std::isinf(t.scalar)) {
      const at::Tensor hits = w.tangent_hits().to(w.x.scalar_type());
      const at::Tensor ties = hits.sum(t.dims, /*keepdim=*/true);
      return (w.x.sgn() * tangent * hits / ties).sum(t.dims, t.keepdim).to(t.result.scalar_type());
    }
    return (derivative(w, t.scalar) * tangent).sum(t.dims, t.keepdim).to(t.result.scalar_type());
  }

 private:
  // torch's error for an empty reduced dim of a norm without an identity.
  static void check_not_empty(const at::Tensor& self, at::OptionalIntArrayRef dim, double p) {
    std::ostringstream ord;
    ord << p;
    if (!dim.has_value() || dim->empty()) {
      TORCH_CHECK(self.numel() != 0, "linalg.vector_norm cannot compute the ", ord.str(),
                  " norm on an empty tensor because the operation does not have an identity");
      return;
    }
    for (const int64_t d : *dim) {
      const int64_t wrapped = at::maybe_wrap_dim(d, self.dim());
      TORCH_CHECK(self.dim() == 0 || self.size(wrapped) != 0, "linalg.vector_norm cannot compute the ", ord.str(),
                  " norm on the dimension ", d,
                  "because this dimension is empty and the operation does not have an identity");
    }
  }

  // The input and the norm (with its reduced dims put back) as the gradient
  // takes them: half and bfloat16 in float, as the op computes them.
  struct Widened {
    at::Tensor x, norm;
    Widened(const at::Tensor& input, const at::Tensor& result, const std::vector<int64_t>& dims, bool keepdim) {
      const bool widen = is_reduced_precision(input.scalar_type());
      x = widen ? input.to(at::kFloat) : input;
      norm = with_reduced_dims(result, dims, keepdim).to(x.scalar_type());
    }
    // The elements the inf-norms came from: |x| equal to the norm, or NaN
    // (torch's backward); for its jvp, NaN where the norm is NaN too.
    at::Tensor hits() const {
      const at::Tensor magnitude = x.abs();
      return magnitude.eq(norm).logical_or(magnitude.isnan());
    }
    at::Tensor tangent_hits() const { return x.abs().eq(norm).logical_or(x.isnan().logical_and(norm.isnan())); }
  };

  // d norm / d x for the finite ords, of the input's shape: 0 where the norm
  // is 0 (ord > 1) and where x is 0 (ord < 1).
  static at::Tensor derivative(const Widened& w, double p) {
    const at::Tensor& x = w.x;
    const at::Tensor& norm = w.norm;
    if (p == 0) return at::zeros_like(x);
    if (p == 1) return x.sgn();
    if (p == 2) return x * at::where(norm == 0, 0, norm.reciprocal());
    if (p < 1) return x.sgn() * at::where(x == 0, 0, x.abs().pow(p - 1)) * norm.pow(1 - p);
    const at::Tensor scale = at::where(norm == 0, 0, norm.pow(p - 1).reciprocal());
    return (p < 2 ? x.sgn() * x.abs().pow(p - 1) : x * x.abs().pow(p - 2)) * scale;
  }
};

}  // namespace torch_reduce
