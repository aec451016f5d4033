// Ops objects: what a reduction computes, apart from how it is scheduled.
//
// Every kernel (CPU and CUDA, fast path and dimension reductions) is a
// template over <scalar_t, acc_t, out_t, Op> and only ever calls
//   op.identity()       the value an empty accumulator starts from,
//   op.combine(a, b)    folds two accumulators (inputs are first converted
//                       to acc_t: static_cast, or code that gives its bits --
//                       widen on the CPU, vector_element on CUDA),
//   op.project(a)       turns the final accumulator into the result.
// Adding a reduction means adding an ops object here, not a kernel.
#pragma once

#include <c10/macros/Macros.h>

#include <cstdint>
#include <limits>

namespace torch_reduce {

enum class ReduceKind { Sum, Mean, Max, Min };

// Two's-complement wrap-around like torch.sum on integers; signed overflow
// is undefined behaviour in C++, so add as unsigned.
template <typename acc_t>
C10_HOST_DEVICE inline acc_t wrapping_add(acc_t a, acc_t b) {
  return a + b;
}
template <>
C10_HOST_DEVICE inline int64_t wrapping_add<int64_t>(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) +
                              static_cast<uint64_t>(b));
}

template <typename acc_t>
struct SumOp {
  C10_HOST_DEVICE acc_t identity() const { return acc_t(0); }
  C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    return wrapping_add(a, b);
  }
  C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
};

// Mean is a sum whose result is scaled once, in the accumulator type, before
// it is rounded to the output type (what torch.mean does).
template <typename acc_t>
struct MeanOp {
  acc_t factor;  // 1 / number of reduced elements
  C10_HOST_DEVICE acc_t identity() const { return acc_t(0); }
  C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
  C10_HOST_DEVICE acc_t project(acc_t a) const { return a * factor; }
};

// NaN propagates (a NaN compares unequal to itself), as in torch.amax/amin.
template <typename acc_t>
C10_HOST_DEVICE inline bool is_nan(acc_t a) {
  return a != a;
}

// max and min that return a NaN when either value is one. For float32 on
// the GPU, one instruction (max.NaN / min.NaN, sm_80 and later) instead of
// two compares and a select, whose chain held the row kernel back (H100,
// amax over rows of 65536 x 1024 float32: 98.8 -> 88.5 us, torch 94.1). Its
// NaN is the canonical one, and which zero it gives for +0 and -0 may differ
// from the generic form's (either is a correct result; torch's depends on
// the order).
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

template <typename acc_t>
struct MaxOp {
  C10_HOST_DEVICE acc_t identity() const {
    return std::numeric_limits<acc_t>::has_infinity
               ? -std::numeric_limits<acc_t>::infinity()
               : std::numeric_limits<acc_t>::lowest();
  }
  C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    return max_propagate_nan(a, b);
  }
  C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
};

template <typename acc_t>
struct MinOp {
  C10_HOST_DEVICE acc_t identity() const {
    return std::numeric_limits<acc_t>::has_infinity
               ? std::numeric_limits<acc_t>::infinity()
               : std::numeric_limits<acc_t>::max();
  }
  C10_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    return min_propagate_nan(a, b);
  }
  C10_HOST_DEVICE acc_t project(acc_t a) const { return a; }
};

// The ops object of a ReduceKind, built from the number of reduced elements
// (only Mean needs it).
template <ReduceKind kind, typename acc_t>
struct OpFor;
template <typename acc_t>
struct OpFor<ReduceKind::Sum, acc_t> {
  static SumOp<acc_t> make(int64_t) { return {}; }
};
template <typename acc_t>
struct OpFor<ReduceKind::Mean, acc_t> {
  static MeanOp<acc_t> make(int64_t count) {
    return {static_cast<acc_t>(1.0 / static_cast<double>(count))};
  }
};
template <typename acc_t>
struct OpFor<ReduceKind::Max, acc_t> {
  static MaxOp<acc_t> make(int64_t) { return {}; }
};
template <typename acc_t>
struct OpFor<ReduceKind::Min, acc_t> {
  static MinOp<acc_t> make(int64_t) { return {}; }
};

}  // namespace torch_reduce
