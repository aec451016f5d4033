// Routes a ReduceLayout to the kernel that reads it at full bandwidth:
//   full reductions and long rows -> split_row_reduce_kernel (one launch)
//   shorter rows                  -> row_reduce_kernel, or
//                                    packed_row_reduce_kernel (rows of at most a vector, or of two)
//   strided columns               -> column_short_kernel, column_block_kernel
//                                    or column_tile_kernel, pass after pass (launch_columns.cuh)
//   rows read through strides     -> staged_rows_kernel (small inputs), or
//                                    the row kernels' gathered instantiations
//   columns read through strides  -> column_short_kernel's indexed kernels
// Included by one translation unit per op and TypeFamily, generated from the
// op list (build_support/kernel_units.py).
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>

#include <optional>
#include <type_traits>
#include <vector>

#include "capabilities.cuh"
#include "kernel_family.cuh"
#include "dispatch.h"
#include "gathered_rows.cuh"
#include "launch_columns.cuh"
#include "launch_config.cuh"
#include "launch_rows.cuh"
#include "output.cuh"
#include "workspace.h"

namespace torch_reduce {
namespace cuda {

// The plan of a layout's reduction (row_plans.cuh, column_plans.cuh): f(plan)
// with the plan of the kernel family that reads it. data, out: addresses.
template <typename scalar_t, typename acc_t, typename out_t, typename Op, typename F>
void with_layout_plan(uintptr_t data, const ReduceLayout& layout, const StridedIndex& out_index, uintptr_t out,
                      F&& f) {
  switch (kernel_family(layout, sizeof(scalar_t))) {
    case KernelFamily::Columns:
      return f(plan_columns<scalar_t, acc_t, out_t, Op>(data, layout, out_index));
    case KernelFamily::StagedRows:
      return f(plan_staged_rows<scalar_t>(data, layout, out_index));
    case KernelFamily::SplitRows:
      return f(plan_split_rows<scalar_t, acc_t, out_t, Op>(layout));
    case KernelFamily::Rows:
      return f(plan_rows<scalar_t, out_t>(data, layout, out_index, out));
  }
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_layout_reduction(const at::Tensor& input, const ReduceLayout& layout, const Output<out_t>& out,
                             const Op& op) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto* data = reinterpret_cast<const scalar_t*>(input.data_ptr());
  with_layout_plan<scalar_t, acc_t, out_t, Op>(
      reinterpret_cast<uintptr_t>(data), layout, out.index, reinterpret_cast<uintptr_t>(out.data),
      [&](const auto& plan) {
        using Plan = std::decay_t<decltype(plan)>;
        if constexpr (std::is_same_v<Plan, ColumnsPlan>) {
          launch_columns<scalar_t, acc_t, out_t>(plan, data, layout, out, op, stream);
        } else if constexpr (std::is_same_v<Plan, StagedRowsPlan>) {
          launch_staged_rows<scalar_t, acc_t, out_t>(plan, data, layout, out, op, stream);
        } else if constexpr (std::is_same_v<Plan, SplitRowsPlan>) {
          launch_split_rows<scalar_t, acc_t, out_t>(plan, data, layout, out.data, op, stream);
        } else {
          launch_rows<scalar_t, acc_t, out_t>(plan, data, layout, out, op, stream);
        }
      });
}

// Permuted outputs (output.cuh) of up to this many elements are written in
// place; larger ones are written dense and copied. Stores through a
// permutation land a sector each where a dense output's are coalesced, and
// for large outputs that costs more than the copy's kernel saves. See
// docs/TUNING.md.
// (LaunchPolicy: permuted_output_max_elements.)

// Where the kernels write `out` (of the dims of the tensor they reduce, size
// 1 where reduced): no dims where it is dense; nullopt where it is written
// dense and copied. Permuted outputs are written by kernels of their own
// (output.cuh) for rows of a warp or less, staged rows and columns of one
// chunk, the small reductions where the copy's kernel is a good part of the
// time; longer ones are written dense, and so are the other gathered rows
// (inputs of small_gather_elements or more, next to which the copy of the
// output is small).
inline std::optional<StridedIndex> output_index(const at::Tensor& out, const ReduceLayout& layout,
                                               int64_t element_bytes) {
  int64_t sizes[kMaxStridedDims], strides[kMaxStridedDims];
  int dims = 0;
  for (int64_t d = out.dim() - 1; d >= 0; --d) {
    const int64_t size = out.size(d), stride = out.stride(d);
    if (size == 1) continue;
    if (dims > 0 && stride == strides[dims - 1] * sizes[dims - 1]) {
      sizes[dims - 1] *= size;
      continue;
    }
    if (dims == kMaxStridedDims) return std::nullopt;
    sizes[dims] = size;
    strides[dims] = stride;
    ++dims;
  }
  if (dims == 0 || (dims == 1 && strides[0] == 1)) return StridedIndex{};
  const bool permuted_kernels = layout.kind == ReduceLayout::Outer
                                    ? layout.reduce <= kFoldLength
                                    : is_small_gather(layout, element_bytes) ||
                                          (layout.kind == ReduceLayout::Inner && !splits_rows(layout, element_bytes));
  if (out.numel() > launch_policy().permuted_output_max_elements || !permuted_kernels) return std::nullopt;
  StridedIndex index;
  index.dims = dims;
  for (int d = 0; d < dims; ++d) {
    set_divisor(index, d, static_cast<uint32_t>(sizes[d]));
    index.strides[d] = static_cast<uint32_t>(strides[d]);
  }
  return index;
}

// f(types, op) for the input's and output's dtypes, among the kernels of the
// unit's element width (the backend picks the unit by the input's).
template <typename Spec, TypeFamily family, ElementWidth width, typename F>
void dispatch_unit_reduction(const at::Tensor& input, const ReduceLayout& layout, const at::Tensor& out,
                             const OpCall& call, F&& f) {
  dispatch_family_reduction<Spec, family>(input.scalar_type(), out.scalar_type(), layout.reduce, call,
                                          [&](auto types, auto op) {
    if constexpr (element_width(sizeof(typename decltype(types)::scalar_t)) != width) {
      TORCH_INTERNAL_ASSERT(false, "torch_reduce: ", Spec::kName, "'s kernels of the other element width");
    } else {
      f(types, op);
    }
  });
}

// The LayoutKernel body of op `Spec`, for inputs of one TypeFamily and
// ElementWidth; each generated unit instantiates one or both widths of a
// family, so that the units compile in parallel.
template <typename Spec, TypeFamily family, ElementWidth width>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout, at::Tensor& out, const OpCall& call) {
  const std::optional<StridedIndex> index = output_index(out, layout, input.element_size());
  if (!index)
    return reduce_through_dense(
        out, [&](at::Tensor& dense) { reduce_layout<Spec, family, width>(input, layout, dense, call); });
  dispatch_unit_reduction<Spec, family, width>(input, layout, out, call, [&](auto types, auto op) {
    using T = decltype(types);
    using out_t = typename T::out_t;
    const Output<out_t> output{reinterpret_cast<out_t*>(out.data_ptr()), *index};
    launch_layout_reduction<typename T::scalar_t, typename T::acc_t, out_t>(input, layout, output, op);
  });
}

// Where a tensor of the explained call would start: its offset from a base
// that the caching allocator aligns (meta tensors have no address).
inline uintptr_t planned_address(const at::Tensor& t) {
  return static_cast<uintptr_t>(t.storage_offset() * static_cast<int64_t>(t.element_size()));
}

// What reduce_layout would launch for meta tensors of the same sizes,
// strides and dtypes, computed by the same plan (for explain). A view's
// storage is taken to start aligned, as the caching allocator's do.
template <typename Spec, TypeFamily family, ElementWidth width>
std::vector<LaunchStep> plan_layout(const at::Tensor& input, const ReduceLayout& layout, const at::Tensor& out,
                                    const OpCall& call) {
  const std::optional<StridedIndex> index = output_index(out, layout, input.element_size());
  std::vector<LaunchStep> steps;
  dispatch_unit_reduction<Spec, family, width>(input, layout, out, call, [&](auto types, auto op) {
    using T = decltype(types);
    using scalar_t = typename T::scalar_t;
    using acc_t = typename T::acc_t;
    using out_t = typename T::out_t;
    const int64_t element_bytes = sizeof(scalar_t), out_bytes = sizeof(out_t);
    with_layout_plan<scalar_t, acc_t, out_t, decltype(op)>(
        planned_address(input), layout, index.value_or(StridedIndex{}), index ? planned_address(out) : 0,
        [&](const auto& plan) {
          if constexpr (std::is_same_v<std::decay_t<decltype(plan)>, ColumnsPlan>) {
            steps = describe(plan, layout, element_bytes, out_bytes, sizeof(acc_t));
          } else {
            steps.push_back(describe(plan, layout, element_bytes, out_bytes));
          }
        });
  });
  if (!index) {  // written dense, then copied (reduce_through_dense)
    LaunchStep copy;
    copy.kernel = "copy of the dense output into the result (at::Tensor::copy_)";
    copy.bytes_read = copy.bytes_written = out.numel() * static_cast<int64_t>(out.element_size());
    steps.push_back(copy);
  }
  return steps;
}

}  // namespace cuda
}  // namespace torch_reduce
