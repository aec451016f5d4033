#include "reduce_dims.h"

#include <algorithm>

#include "in_place_plans.h"
#include "layout.h"

namespace torch_reduce {
namespace {

// A new tensor for the output of reducing `input`, of its dims (`shape`: size
// 1 where reduced). Where `input` is the op's input permuted (`permutation`,
// as given to permute(); empty: not permuted), it is laid out as the result,
// contiguous in the op's input's dims, and this is a permuted view of it.
at::Tensor new_output(at::IntArrayRef shape, const at::TensorOptions& options, at::IntArrayRef permutation) {
  if (permutation.empty()) return at::empty(shape, options);
  DimList result_shape(shape.size());
  for (size_t j = 0; j < shape.size(); ++j) result_shape[permutation[j]] = shape[j];
  return at::empty(result_shape, options).permute(permutation);
}

// Reduces `input`, whose layout is `layout`, into a new tensor of the dims of
// `input` (size 1 where reduced) and dtype `out_dtype` (see new_output): its
// element b * inner + c, in row-major order, is where the kernels write it.
at::Tensor reduce_layout(const at::Tensor& input, at::IntArrayRef shape, const ReduceLayout& layout,
                         at::ScalarType out_dtype, at::IntArrayRef permutation, const OpCall& call,
                         const Backend& backend) {
  at::Tensor out = new_output(shape, input.options().dtype(out_dtype), permutation);
  backend.kernel(input, layout, out, call);
  return out;
}

// Reduces `input` over `reduced` where the kernels read it in place, in one
// layout or in stages, into a new tensor laid out as new_output lays it out.
// Stages before the last write contiguous partials of `stage_dtype`; the
// last writes `out_dtype` from them (no kernel of its own for the cast).
// Each stage tells the op where it sits (OpCall). nullopt otherwise, and
// where stages are needed but the op has no stage dtype.
std::optional<at::Tensor> reduce_in_place(const at::Tensor& input, const std::vector<bool>& reduced,
                                          at::ScalarType out_dtype, std::optional<at::ScalarType> stage_dtype,
                                          at::IntArrayRef permutation, const OpCall& call, const Backend& backend) {
  if (const auto layout = plan_layout(input, reduced))
    return reduce_layout(input, keepdim_shape(input, reduced), *layout, out_dtype, permutation, call, backend);
  if (!stage_dtype) return std::nullopt;
  const auto stages = plan_stages(input, reduced, *backend.caps);
  if (!stages) return std::nullopt;
  at::Tensor partial = input;
  for (size_t i = 0; i < stages->size(); ++i) {
    const std::vector<bool>& stage = (*stages)[i];
    auto layout = plan_layout(partial, stage, &input);
    if (!layout && partial.is_same(input)) {
      // A slice whose kept dims do not merge takes the same stages on a
      // contiguous copy; the stages after the first read contiguous
      // partials, which always fit.
      partial = partial.contiguous();
      layout = plan_layout(partial, stage, &input);
    }
    TORCH_INTERNAL_ASSERT(layout.has_value());
    const bool last = i + 1 == stages->size();
    OpCall stage_call = call;
    stage_call.reads_input = i == 0;
    stage_call.writes_result = last;
    partial = reduce_layout(partial, keepdim_shape(partial, stage), *layout, last ? out_dtype : *stage_dtype,
                            last ? permutation : at::IntArrayRef{}, stage_call, backend);
  }
  return partial;
}

}  // namespace

at::Tensor reduce_dims(const at::Tensor& input, const std::vector<bool>& reduced, at::ScalarType out_dtype,
                       std::optional<at::ScalarType> stage_dtype, const OpCall& call, const Backend& backend) {
  if (auto out = reduce_in_place(input, reduced, out_dtype, stage_dtype, {}, call, backend)) return *out;
  const BackendCapabilities& caps = *backend.caps;

  // The dims in memory order. Where the kept dims are out of order there (a
  // transposed or permuted tensor), it is reduced in that order all the same,
  // into the result's memory through a permuted view (new_output).
  const int64_t ndim = input.dim();
  const DimList memory_order = dims_by_stride(input);
  std::vector<bool> memory_reduced(ndim);
  DimList inverse(ndim);
  for (int64_t d = 0; d < ndim; ++d) {
    memory_reduced[d] = reduced[memory_order[d]];
    inverse[memory_order[d]] = d;
  }
  const at::Tensor in_memory_order = input.permute(memory_order);
  // `t` (in_memory_order, or a dense copy of it) reduced in `layout`, into the
  // result through a view permuted into memory order (new_output).
  auto reduce_into_result = [&](const at::Tensor& t, const ReduceLayout& layout) {
    return reduce_layout(t, keepdim_shape(t, memory_reduced), layout, out_dtype, memory_order, call, backend)
        .permute(inverse);
  };
  if (!std::is_sorted(memory_order.begin(), memory_order.end())) {
    if (auto out =
            reduce_in_place(in_memory_order, memory_reduced, out_dtype, stage_dtype, memory_order, call, backend))
      return out->permute(inverse);
  }

  // Anything else would be copied once. Made dense in memory order where that
  // fits a layout (the reduced dims then form one run): a strided innermost
  // dim (x[:, ::3]), or a slice whose kept dims no longer merge (x[..., :k] of
  // a reduction over a middle dim of a 4-D tensor), which then reads as the
  // whole does (batch invariance). The layout is planned on a meta tensor of
  // the copy's shape first, so that the input is copied only once.
  const at::Tensor dense_shape = at::empty(in_memory_order.sizes(), input.options().device(at::kMeta));
  const auto dense_layout = plan_layout(dense_shape, memory_reduced, &in_memory_order);
  // Where the copy would be rows, a backend that gathers rows reads them in
  // place instead, in the copy's order; where it would be columns, short
  // ones are read in place, as columns, so that a slice reads as the whole.
  // (A backend without them copies kept dims first, below: its result is
  // then written in its own order, not dense and copied again.)
  if (caps.gathered_rows && (!dense_layout || dense_layout->kind == ReduceLayout::Inner)) {
    if (const auto gather = plan_gather(in_memory_order, memory_reduced, caps))
      return reduce_into_result(in_memory_order, *gather);
  }
  if (caps.gathered_column_max_rows > 0 && dense_layout && dense_layout->kind == ReduceLayout::Outer) {
    if (const auto gathered = plan_gathered_columns(in_memory_order, memory_reduced, *dense_layout, caps))
      return reduce_into_result(in_memory_order, *gathered);
  }
  if (dense_layout) {
    const at::Tensor dense = in_memory_order.contiguous();
    const auto layout = plan_layout(dense, memory_reduced, &in_memory_order);
    TORCH_INTERNAL_ASSERT(layout.has_value());
    return reduce_into_result(dense, *layout);
  }

  // Else the kept dims go first and the reduced dims after them, in memory
  // order, so that the copy reads along it.
  DimList order;
  for (int64_t d = 0; d < ndim; ++d)
    if (!reduced[d]) order.push_back(d);
  for (const int64_t d : memory_order)
    if (reduced[d]) order.push_back(d);
  const at::Tensor copy = input.permute(order).contiguous();
  std::vector<bool> copy_reduced(ndim);
  for (int64_t d = 0; d < ndim; ++d) copy_reduced[d] = reduced[order[d]];
  const auto layout = plan_layout(copy, copy_reduced);
  TORCH_INTERNAL_ASSERT(layout.has_value() && layout->kind == ReduceLayout::Inner);
  return reduce_layout(copy, keepdim_shape(input, reduced), *layout, out_dtype, {}, call, backend);
}

}  // namespace torch_reduce
