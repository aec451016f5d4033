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

#include "capabilities.cuh"
#include "kernel_family.cuh"
#include "dispatch.h"
#include "gathered_rows.cuh"
#include "launch_columns.cuh"
#include "launch_config.cuh"
#include "output.cuh"
#include "workspace.h"

namespace torch_reduce {
namespace cuda {

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_split_rows(const scalar_t* data, const ReduceLayout& layout, out_t* out, const Op& op,
                       const c10::cuda::CUDAStream& stream) {
  const bool gathered = layout.kind == ReduceLayout::Gather;
  auto kernel = gathered ? split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, true>
                         : split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>;
  // A full reduction's splits are its copy's (the contiguous kernel's
  // residency, whatever the gathered one's registers), and so is its order.
  const int64_t splits =
      layout.full ? full_reduction_splits(layout.reduce, sizeof(scalar_t),
                                          resident_blocks<split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>>(
                                                          kSplitThreads))
                  : dim_reduction_splits(layout.reduce, sizeof(scalar_t));
  SplitRowArgs<scalar_t, acc_t, out_t> args{data, layout.reduce, layout.batch_stride, splits, out, nullptr, nullptr};
  if (splits > 1) {
    const Workspace workspace = stream_workspace(stream, layout.batch, layout.batch * splits * sizeof(acc_t));
    args.partials = static_cast<acc_t*>(workspace.partials);
    args.tickets = workspace.tickets;
  }
  const int64_t blocks = layout.batch * splits;
  TORCH_CHECK(blocks <= std::numeric_limits<int32_t>::max(), "torch_reduce: reduction too large for one launch");
  kernel<<<static_cast<unsigned int>(blocks), kSplitThreads, 0, stream.stream()>>>(
      args, op, gathered ? row_gather(layout) : RowGather{});
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_rows(const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out, const Op& op,
                 const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<scalar_t>();
  const bool gathered = layout.kind == ReduceLayout::Gather;
  const RowGather gather = gathered ? row_gather(layout) : RowGather{};
  const bool back_to_back = !gathered && (layout.batch == 1 || layout.batch_stride == layout.reduce);
  const bool evict_first = evict_first_input(layout.batch * layout.reduce * static_cast<int64_t>(sizeof(scalar_t)),
                                             layout.batch * static_cast<int64_t>(sizeof(out_t)));
  // packed_row_reduce_kernel: rows of at most a vector that divide it, or of
  // exactly kPackedRowVectors vectors.
  const bool short_row = layout.reduce <= kWidth;
  const bool packs = short_row ? kWidth % layout.reduce == 0 : layout.reduce == kPackedRowVectors * kWidth;
  const int64_t rows_per_vector = short_row ? kWidth / layout.reduce : 1;
  if (packs && back_to_back && is_aligned(data) && out.index.dims == 0 &&
      is_aligned(out.data, rows_per_vector * sizeof(out_t))) {
    PackedRowArgs<scalar_t, out_t> args{data, layout.batch, out.data};
    const int64_t vectors = short_row ? layout.batch / rows_per_vector : layout.batch * kPackedRowVectors;
    const auto blocks = static_cast<unsigned int>(grid_stride_blocks(ceil_div(vectors, kRowSlots), kRowThreads));
    auto launch_packed = [&](auto rows, auto lanes) {
      constexpr int kRows = decltype(rows)::value, kLanes = decltype(lanes)::value;
      auto kernel = evict_first ? packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, true>
                                : packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, false>;
      kernel<<<blocks, kRowThreads, 0, stream.stream()>>>(args, op);
    };
    if (short_row) {
      with_width<kWidth>(static_cast<int>(rows_per_vector),
                         [&](auto rows) { launch_packed(rows, std::integral_constant<int, 1>{}); });
    } else {
      launch_packed(std::integral_constant<int, 1>{}, std::integral_constant<int, kPackedRowVectors>{});
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  const bool vectorized = !gathered && is_aligned(data) && layout.reduce % kWidth == 0 &&
                          (layout.batch_stride * sizeof(scalar_t)) % kVectorBytes == 0;
  const int64_t items = ceil_div(layout.reduce, kWidth);
  const int group = row_group_size(items);
  // Rows here are shorter than kSplitRowBytes, so this fits an int.
  const int items_per_lane = static_cast<int>(ceil_div(items, group));
  // 1 for rows too long to read several a lane. Short rows read one a pass
  // (few rows) take the one-row kernels too: the same order
  // (row_reduce_kernel), half the loads a lane.
  const int rows_per_pass = short_rows_per_pass(layout.batch, group, items_per_lane);
  const bool several_rows = rows_per_pass > 1;
  RowArgs<scalar_t, out_t> args{data, layout.batch, layout.reduce, layout.batch_stride, group, items_per_lane,
                                out.data, rows_per_pass};
  const int64_t threads_needed = ceil_div(layout.batch, rows_per_pass) * group;
  const auto blocks = static_cast<unsigned int>(grid_stride_blocks(threads_needed, kRowThreads));
  const bool permuted = out.index.dims != 0;
  TORCH_INTERNAL_ASSERT(!(gathered && permuted), "gathered rows are written dense (output_index)");
  auto launch = [&](auto vectorized_loads, auto loads, auto several_rows, auto evict_first_loads) {
    constexpr bool kVectorized = decltype(vectorized_loads)::value;
    constexpr int kLoads = decltype(loads)::value;
    constexpr bool kSeveralRows = decltype(several_rows)::value;
    constexpr bool kEvictFirst = decltype(evict_first_loads)::value;
    auto kernel = [&](auto permuted_output, auto gathered_rows) {
      constexpr bool kGathered = decltype(gathered_rows)::value;
      if constexpr (row_kernel_shifts_items<scalar_t>(kVectorized, kSeveralRows, kGathered) && kLoads != kRowSlots) {
        TORCH_INTERNAL_ASSERT(false, "shifted items are read four a step (launch_mode)");
      } else {
        row_reduce_kernel<scalar_t, acc_t, out_t, Op, kVectorized, kLoads, kSeveralRows, kEvictFirst,
                          decltype(permuted_output)::value, kGathered>
            <<<blocks, kRowThreads, 0, stream.stream()>>>(args, op, out.index, gather);
      }
    };
    // Permuted outputs are small (output_index) and gathered rows are read
    // element by element into dense outputs: the evict-first kernels read
    // contiguous rows into dense outputs only.
    if constexpr (!decltype(evict_first_loads)::value) {
      if constexpr (!decltype(vectorized_loads)::value) {
        if (gathered) return kernel(std::false_type{}, std::true_type{});
      }
      if (permuted) return kernel(std::true_type{}, std::false_type{});
    }
    kernel(std::false_type{}, std::false_type{});
  };
  // Evict-first loads for one row a lane, vectorized (see row_reduce_kernel).
  auto launch_one_row = [&](auto vectorized_loads, auto loads) {
    if constexpr (decltype(vectorized_loads)::value) {
      if (evict_first && !permuted) return launch(vectorized_loads, loads, std::false_type{}, std::true_type{});
    }
    launch(vectorized_loads, loads, std::false_type{}, std::false_type{});
  };
  auto launch_mode = [&](auto vectorized_loads) {
    if (several_rows) {
      launch(vectorized_loads, std::integral_constant<int, kShortRowSlots>{}, std::true_type{}, std::false_type{});
    } else if (items_per_lane > kRowSlots && !row_kernel_shifts_items<scalar_t>(vectorized, false, gathered)) {
      launch_one_row(vectorized_loads, std::integral_constant<int, row_kernel_long_row_loads<scalar_t>()>{});
    } else {
      launch_one_row(vectorized_loads, std::integral_constant<int, kRowSlots>{});
    }
  };
  if (vectorized) {
    launch_mode(std::true_type{});
  } else {
    launch_mode(std::false_type{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Whether staged_rows_kernel may stage a small Gather layout a vector a load:
// its innermost reduced run is contiguous and whole vectors, and every other
// run, and the data, start on a vector's boundary.
template <typename scalar_t>
bool stages_vectors(const scalar_t* data, const ReduceLayout& layout) {
  constexpr int64_t kWidth = vector_width<scalar_t>();
  const Runs& reduce = layout.reduce_runs;
  const Runs& batch = layout.batch_runs;
  if (reduce.strides[0] != 1 || reduce.sizes[0] % kWidth != 0) return false;
  for (int d = 1; d < reduce.count; ++d)
    if (reduce.strides[d] % kWidth != 0) return false;
  for (int d = 0; d < batch.count; ++d)
    if (batch.strides[d] % kWidth != 0) return false;
  return is_aligned(data);
}

// A small Gather layout (small_gather_elements), staged a few rows a block.
template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_staged_rows(const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out, const Op& op,
                        const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<scalar_t>();
  TORCH_INTERNAL_ASSERT(layout.reduce * static_cast<int64_t>(sizeof(scalar_t)) < kSmallGatherMaxRowBytes);
  StagedRowsArgs<scalar_t, out_t> args{data,
                                       static_cast<int>(layout.batch),
                                       static_cast<int>(layout.reduce),
                                       staged_rows_per_block(layout.reduce, layout.batch),
                                       row_group_size(ceil_div(layout.reduce, kWidth)),
                                       {},
                                       stages_vectors(data, layout),
                                       out.data};
  args.row_length_divisor.dims = 1;
  set_divisor(args.row_length_divisor, 0, static_cast<uint32_t>(layout.reduce));
  const auto blocks = static_cast<unsigned int>(ceil_div(layout.batch, args.rows_per_block));
  const size_t stage_bytes = static_cast<size_t>(args.rows_per_block) * layout.reduce * sizeof(scalar_t);
  auto kernel = out.index.dims != 0 ? staged_rows_kernel<scalar_t, acc_t, out_t, Op, true>
                                    : staged_rows_kernel<scalar_t, acc_t, out_t, Op, false>;
  kernel<<<blocks, kRowThreads, stage_bytes, stream.stream()>>>(args, op, row_gather(layout), out.index);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_layout_reduction(const at::Tensor& input, const ReduceLayout& layout, const Output<out_t>& out,
                             const Op& op) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const auto* data = reinterpret_cast<const scalar_t*>(input.data_ptr());
  switch (kernel_family(layout, sizeof(scalar_t))) {
    case KernelFamily::Columns:
      return launch_columns<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
    case KernelFamily::StagedRows:
      return launch_staged_rows<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
    case KernelFamily::SplitRows:
      return launch_split_rows<scalar_t, acc_t, out_t>(data, layout, out.data, op, stream);
    case KernelFamily::Rows:
      return launch_rows<scalar_t, acc_t, out_t>(data, layout, out, op, stream);
  }
}

// Permuted outputs (output.cuh) of up to this many elements are written in
// place; larger ones are written dense and copied. Stores through a
// permutation land a sector each where a dense output's are coalesced, and
// for large outputs that costs more than the copy's kernel saves. See
// docs/TUNING.md.
constexpr int64_t kPermutedOutputMaxElements = 1 << 16;

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
  if (out.numel() > kPermutedOutputMaxElements || !permuted_kernels) return std::nullopt;
  StridedIndex index;
  index.dims = dims;
  for (int d = 0; d < dims; ++d) {
    set_divisor(index, d, static_cast<uint32_t>(sizes[d]));
    index.strides[d] = static_cast<uint32_t>(strides[d]);
  }
  return index;
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
  dispatch_family_reduction<Spec, family>(input.scalar_type(), out.scalar_type(), layout.reduce, call,
                                          [&](auto types, auto op) {
    using T = decltype(types);
    using out_t = typename T::out_t;
    if constexpr (element_width(sizeof(typename T::scalar_t)) != width) {
      TORCH_INTERNAL_ASSERT(false, "torch_reduce: ", Spec::kName, "'s kernels of the other element width");
    } else {
      const Output<out_t> output{reinterpret_cast<out_t*>(out.data_ptr()), *index};
      launch_layout_reduction<typename T::scalar_t, typename T::acc_t, out_t>(input, layout, output, op);
    }
  });
}

}  // namespace cuda
}  // namespace torch_reduce
