// amax and amin: what they share (amax.h and amin.h name them).
#pragma once

#include <limits>

#include "../dispatch.h"
#include "../reduce_front_end.h"
#include "gradient.h"
#include "op_base.h"

namespace torch_reduce {

// NaN propagates (a NaN compares unequal to itself), as in torch.amax/amin.
template <typename acc_t>
C10_HOST_DEVICE inline bool is_nan(acc_t a) {
  return a != a;
}

// max and min that return a NaN when either value is one. For float32 on the
// GPU, one instruction (max.NaN / min.NaN, sm_80 and later) instead of two
// compares and a select, whose dependent chain held the row kernel back. Its
// NaN is the canonical one, and which zero it gives for +0 and -0 may differ
// from the generic form's (either is a correct result; torch's depends on
// its order).
template <typename acc_t>
C10_HOST_DEVICE inline acc_t max_propagate_nan(acc_t a, acc_t b) {
  return (is_nan(a) || a > b) ? a : b;
}
template <typename acc_t>
C10_HOST_DEVICE inline acc_t min_propagate_nan(acc_t a, acc_t b) {
  return (is_nan(a) || a < b) ? a : b;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <>
__device__ inline float max_propagate_nan<float>(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
template <>
__device__ inline float min_propagate_nan<float>(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#endif

// `Self` (Amax or Amin) brings kName and kSchema; kMax picks the direction.
template <typename Self, bool kMax>
struct Extremum {
  using Signature = at::Tensor(const at::Tensor&, at::IntArrayRef, bool);

  template <typename acc_t>
  struct Op {
    static constexpr Combine kCombine = kMax ? Combine::Max : Combine::Min;
    C10_HOST_DEVICE acc_t identity() const {
      using limits = std::numeric_limits<acc_t>;
      if constexpr (kMax) return limits::has_infinity ? -limits::infinity() : limits::lowest();
      else return limits::has_infinity ? limits::infinity() : limits::max();
    }
    C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
      if constexpr (kMax) return max_propagate_nan(a, b);
      else return min_propagate_nan(a, b);
    }
    C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
  };
  template <typename acc_t>
  static Op<acc_t> make_op(int64_t /*count*/, const OpCall& /*call*/) {
    return {};
  }

  // The output is the input's type; half and bfloat16 compare in float.
  static constexpr bool kIntegralKernels = true;
  template <TypeFamily family, typename F>
  static void dispatch_types(at::ScalarType in, at::ScalarType, F&& f) {
    if constexpr (family == TypeFamily::Floating) dispatch_floating_exact(Self::kName, in, f);
    else dispatch_integral_exact(Self::kName, in, f);
  }

  static DtypePlan dtypes(at::ScalarType self, std::optional<at::ScalarType>) {
    check_kernel_dtype(Self::kName, self, "input");
    return {self, self, self};
  }
  // Exact in their own dtype.
  static at::ScalarType stage_dtype(const DtypePlan& d) { return d.kernel; }
  static constexpr EmptyReduction kEmpty = EmptyReduction::Error;
  static constexpr RepeatRule kRepeats = RepeatRule::Invariant;
  static constexpr EmptyDimList kEmptyDims = EmptyDimList::AllDims;
  static constexpr AutocastPolicy kAutocast = AutocastPolicy::None;

  static at::Tensor forward(const Backend& backend, const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
    return reduce_front_end(semantics_of<Self>(), self, dim, keepdim, std::nullopt, backend);
  }
  // dim=None and dim=[] both mean every dim.
  template <typename Handle>
  static at::Tensor call_common(const Handle& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return op.call(self, dim.value_or(at::IntArrayRef{}), keepdim);
  }

  // The gradient goes to the elements equal to the result, split evenly
  // among ties; the tangent is the input's averaged over them (torch's
  // formulas for both).
  static constexpr bool kBackwardSavesTensors = true;
  static at::Tensor backward(const Gradient& g) {
    const at::Tensor hits = hits_of(g.input, g.result, g.dims, g.keepdim).to(g.grad.scalar_type());
    const at::Tensor ties = hits.sum(g.dims, /*keepdim=*/true);
    return hits * (with_reduced_dims(g.grad, g.dims, g.keepdim) / ties);
  }
  template <typename SameOp>
  static at::Tensor tangent(const Tangent& t, const at::Tensor& tangent, const SameOp&) {
    const at::Tensor hits = hits_of(t.input, t.result, t.dims, t.keepdim);
    return at::where(hits, tangent, 0).sum(t.dims, t.keepdim) / hits.sum(t.dims, t.keepdim);
  }

 private:
  // Where the input equals the result: the elements the result came from.
  static at::Tensor hits_of(const at::Tensor& input, const at::Tensor& result, const std::vector<int64_t>& dims,
                            bool keepdim) {
    return input.eq(with_reduced_dims(result, dims, keepdim));
  }
};

}  // namespace torch_reduce
