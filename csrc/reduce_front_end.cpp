#include "reduce_front_end.h"

#include <ATen/WrapDimUtilsMulti.h>

#include <limits>

#include "reduce_dims.h"

namespace torch_reduce {
namespace {

int64_t product(at::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// An input's expanded dims (stride 0, size 2 or more) hold the same values at
// every index. They are cut to width 1 before the reduction: a kept one's
// outputs are reduced once and expanded; a reduced one's repeats are the
// op's RepeatRule. The input's values are then read once rather than once a
// repeat, and an output takes the bits that it takes in a slice of any kept
// dim (batch invariance: where an expanded dim lies innermost in memory, the
// whole's copy read columns where a slice x[:, k:k+1] of it read rows).
struct DistinctValues {
  at::Tensor input;     // the expanded dims cut to width 1
  int64_t repeats = 1;  // of each value along the reduced ones: the product of their sizes
};

DistinctValues cut_expanded_dims(const at::Tensor& input, const std::vector<bool>& reduced) {
  DistinctValues distinct{input};
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (input.stride(d) != 0 || input.size(d) < 2) continue;
    distinct.input = distinct.input.narrow(d, 0, 1);
    if (reduced[d]) distinct.repeats *= input.size(d);
  }
  return distinct;
}

// An op without an identity raises torch's errors on an empty reduced dim,
// even where the output is empty too (an empty kept dim), and names the
// first such dim as the caller wrote it.
void check_identity_not_needed(const OpSemantics& op, const at::Tensor& self, at::OptionalIntArrayRef dim,
                               bool all_dims) {
  // torch's ops of one dim (argmax, argmin) say it shorter, as an IndexError.
  TORCH_CHECK_INDEX(!all_dims || !op.positions, op.name,
                    "(): Expected reduction dim to be specified for input.numel() == 0.");
  TORCH_CHECK(!all_dims, op.name,
              "(): Expected reduction dim to be specified for input.numel() == 0. "
              "Specify the reduction dim with the 'dim' argument.");
  for (const int64_t d : *dim) {
    const int64_t wrapped = at::maybe_wrap_dim(d, self.dim());
    // torch's amax names the dim as written, its argmax wrapped.
    TORCH_CHECK_INDEX(self.size(wrapped) != 0, op.name, "(): Expected reduction dim ", op.positions ? wrapped : d,
                      " to have non-zero size.");
  }
}

at::Tensor empty_reduction(const OpSemantics& op, at::IntArrayRef shape, const at::TensorOptions& options) {
  switch (op.empty) {
    case EmptyReduction::Zero:
      return at::zeros(shape, options);
    case EmptyReduction::One:
      return at::ones(shape, options);
    case EmptyReduction::NaN: {
      // Every part NaN: a complex kernel dtype holds two results (var_mean's).
      constexpr double nan = std::numeric_limits<double>::quiet_NaN();
      if (at::isComplexType(c10::typeMetaToScalarType(options.dtype())))
        return at::full(shape, c10::complex<double>(nan, nan), options);
      return at::full(shape, nan, options);
    }
    case EmptyReduction::NegativeInfinity:
      return at::full(shape, -std::numeric_limits<double>::infinity(), options);
    case EmptyReduction::Error:
      break;
  }
  TORCH_INTERNAL_ASSERT(false, "torch_reduce.", op.name, ": an empty reduction without an identity");
}

// x ** n, elementwise; integers wrap around as their product does (n > 0).
at::Tensor wrapping_power(const at::Tensor& x, int64_t n) {
  if (x.is_floating_point()) return x.pow(static_cast<double>(n));
  // Squaring and multiplying: int64 products wrap modulo 2^64 like the fold's.
  at::Tensor result = at::ones_like(x), base = x.clone();
  for (; n > 0; n >>= 1) {
    if (n & 1) result.mul_(base);
    if (n > 1) base.mul_(base);
  }
  return result;
}

}  // namespace

at::Tensor reduce_front_end(const OpSemantics& op, const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype, const Backend& backend, OpCall call) {
  // No dims: each element reduced on its own, as one over a new dim of size 1.
  if (dim.has_value() && dim->empty() && op.empty_dims == EmptyDimList::NoDims)
    return reduce_front_end(op, self.unsqueeze(-1), at::IntArrayRef{-1}, false, dtype, backend, call);
  const DtypePlan dtypes = op.dtypes(self.scalar_type(), dtype);
  const int64_t ndim = self.dim();

  // dim=None and dim=[] both reduce every dim, as in torch.
  std::vector<bool> reduced(ndim, true);
  const bool all_dims = !dim.has_value() || dim->empty();
  if (op.positions) {
    // One dim, whose single run the layouts read in order; or every dim,
    // read in order only as one contiguous run: other tensors are copied
    // (the layouts would read their dims in memory order, and an expanded
    // dim, cut to one element, would move the positions after it).
    TORCH_CHECK_TYPE(all_dims || dim->size() == 1, op.name, "(): argument 'dim' must be int, not a list of ",
                     dim->size());
    if (all_dims && !self.is_contiguous())
      return reduce_front_end(op, self.contiguous(), dim, keepdim, dtype, backend, call);
  }
  if (!all_dims) {
    // Raises torch's errors for out-of-range and repeated dims.
    const auto mask = at::dim_list_to_bitset(*dim, ndim);
    for (int64_t d = 0; d < ndim; ++d) reduced[d] = mask[d];
  }

  DimList out_shape;
  int64_t count = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (reduced[d]) {
      count *= self.size(d);
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(self.size(d));
    }
  }

  if (count == 0 && op.empty == EmptyReduction::Error) check_identity_not_needed(op, self, dim, all_dims);
  const at::ScalarType returned = op.results > 1 ? dtypes.kernel : dtypes.result;
  const auto out_options = self.options().dtype(returned);
  if (product(out_shape) == 0) return at::empty(out_shape, out_options);
  if (count == 0) return empty_reduction(op, out_shape, out_options);

  // Expanded dims are cut before the cast, which would write the expansion.
  const DistinctValues distinct = cut_expanded_dims(self, reduced);
  const at::Tensor input =
      distinct.input.scalar_type() == dtypes.input ? distinct.input : distinct.input.to(dtypes.input);
  const std::optional<at::ScalarType> stage = op.stage_dtype(dtypes);
  if (op.repeats == RepeatRule::Weight) call.weight = static_cast<double>(distinct.repeats);
  at::Tensor out;
  if ((op.repeats == RepeatRule::Multiply || op.repeats == RepeatRule::Power) && distinct.repeats > 1) {
    // The fold of the distinct values times their repeats (a sum), or to their power (a
    // product), in the accumulator dtype: the repeats take one rounding where their fold took
    // one a repeat (integers wrap as the fold does).
    TORCH_INTERNAL_ASSERT(stage.has_value(), "torch_reduce.", op.name, ": repeats folded in a stage dtype");
    out = reduce_dims(input, reduced, *stage, stage, call, backend);
    if (op.repeats == RepeatRule::Multiply) out.mul_(distinct.repeats);
    else out = wrapping_power(out, distinct.repeats);
    out = out.to(dtypes.kernel);
  } else {
    out = reduce_dims(input, reduced, dtypes.kernel, stage, call, backend);
  }
  if (!distinct.input.is_same(self)) out = out.expand(keepdim_shape(self, reduced)).contiguous();
  const at::Tensor result = out.view(out_shape);
  return result.scalar_type() == returned ? result : result.to(returned);
}

}  // namespace torch_reduce
