// Launches the row kernels as their plans (row_plans.cuh) say: each plan
// field becomes the template argument or launch parameter it names, and
// nothing here decides anything.
#pragma once

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include <type_traits>

#include "gathered_rows.cuh"
#include "output.cuh"
#include "row_plans.cuh"
#include "workspace.h"

namespace torch_reduce {
namespace cuda {

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_split_rows(const SplitRowsPlan& plan, const scalar_t* data, const ReduceLayout& layout, out_t* out,
                       const Op& op, const c10::cuda::CUDAStream& stream) {
  SplitRowArgs<scalar_t, acc_t, out_t> args{data, layout.reduce, layout.batch_stride, plan.splits, out, nullptr, nullptr};
  if (plan.splits > 1) {
    const Workspace workspace = stream_workspace(stream, layout.batch, plan.workspace_bytes);
    args.partials = static_cast<acc_t*>(workspace.partials);
    args.tickets = workspace.tickets;
  }
  auto kernel = plan.gathered ? split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, true>
                              : split_row_reduce_kernel<scalar_t, acc_t, out_t, Op, false>;
  kernel<<<static_cast<unsigned int>(plan.grid), kSplitThreads, 0, stream.stream()>>>(
      args, op, plan.gathered ? row_gather(layout) : RowGather{});
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_packed_rows(const RowsPlan& plan, const scalar_t* data, const ReduceLayout& layout, out_t* out,
                        const Op& op, const c10::cuda::CUDAStream& stream) {
  constexpr int kWidth = vector_width<scalar_t>();
  PackedRowArgs<scalar_t, out_t> args{data, layout.batch, out};
  auto launch = [&](auto rows, auto lanes) {
    constexpr int kRows = decltype(rows)::value, kLanes = decltype(lanes)::value;
    auto kernel = plan.evict_first ? packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, true>
                                   : packed_row_reduce_kernel<scalar_t, acc_t, out_t, Op, kRows, kLanes, false>;
    kernel<<<static_cast<unsigned int>(plan.grid), kRowThreads, 0, stream.stream()>>>(args, op);
  };
  if (plan.packed_lanes == 1) {
    with_width<kWidth>(plan.packed_rows, [&](auto rows) { launch(rows, std::integral_constant<int, 1>{}); });
  } else {
    launch(std::integral_constant<int, 1>{}, std::integral_constant<int, kPackedRowVectors>{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_rows(const RowsPlan& plan, const scalar_t* data, const ReduceLayout& layout, const Output<out_t>& out,
                 const Op& op, const c10::cuda::CUDAStream& stream) {
  if (plan.packed) return launch_packed_rows<scalar_t, acc_t, out_t>(plan, data, layout, out.data, op, stream);
  const RowGather gather = plan.gathered ? row_gather(layout) : RowGather{};
  RowArgs<scalar_t, out_t> args{data, layout.batch, layout.reduce, layout.batch_stride, plan.group,
                                plan.items_per_lane, out.data, plan.rows_per_pass};
  const auto blocks = static_cast<unsigned int>(plan.grid);
  auto launch = [&](auto vectorized_loads, auto loads, auto several_rows, auto evict_first_loads) {
    constexpr bool kVectorized = decltype(vectorized_loads)::value;
    constexpr int kLoads = decltype(loads)::value;
    constexpr bool kSeveralRows = decltype(several_rows)::value;
    constexpr bool kEvictFirst = decltype(evict_first_loads)::value;
    auto kernel = [&](auto permuted_output, auto gathered_rows) {
      constexpr bool kGathered = decltype(gathered_rows)::value;
      if constexpr (row_kernel_shifts_items<scalar_t>(kVectorized, kSeveralRows, kGathered) && kLoads != kRowSlots) {
        TORCH_INTERNAL_ASSERT(false, "shifted items are read four a step (plan_rows)");
      } else {
        row_reduce_kernel<scalar_t, acc_t, out_t, Op, kVectorized, kLoads, kSeveralRows, kEvictFirst,
                          decltype(permuted_output)::value, kGathered>
            <<<blocks, kRowThreads, 0, stream.stream()>>>(args, op, out.index, gather);
      }
    };
    // Permuted outputs are small (output_index) and gathered rows are read
    // element by element into dense outputs: the evict-first kernels read
    // contiguous rows into dense outputs only.
    if constexpr (!kEvictFirst) {
      if constexpr (!kVectorized) {
        if (plan.gathered) return kernel(std::false_type{}, std::true_type{});
      }
      if (plan.permuted) return kernel(std::true_type{}, std::false_type{});
    }
    kernel(std::false_type{}, std::false_type{});
  };
  auto launch_one_row = [&](auto vectorized_loads, auto loads) {
    if constexpr (decltype(vectorized_loads)::value) {
      if (plan.evict_first) return launch(vectorized_loads, loads, std::false_type{}, std::true_type{});
    }
    launch(vectorized_loads, loads, std::false_type{}, std::false_type{});
  };
  auto launch_mode = [&](auto vectorized_loads) {
    if (plan.several_rows) {
      launch(vectorized_loads, std::integral_constant<int, kShortRowSlots>{}, std::true_type{}, std::false_type{});
    } else if (plan.loads != kRowSlots) {
      launch_one_row(vectorized_loads, std::integral_constant<int, row_kernel_long_row_loads<scalar_t>()>{});
    } else {
      launch_one_row(vectorized_loads, std::integral_constant<int, kRowSlots>{});
    }
  };
  if (plan.vectorized) {
    launch_mode(std::true_type{});
  } else {
    launch_mode(std::false_type{});
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_staged_rows(const StagedRowsPlan& plan, const scalar_t* data, const ReduceLayout& layout,
                        const Output<out_t>& out, const Op& op, const c10::cuda::CUDAStream& stream) {
  StagedRowsArgs<scalar_t, out_t> args{data,
                                       static_cast<int>(layout.batch),
                                       static_cast<int>(layout.reduce),
                                       plan.rows_per_block,
                                       plan.group,
                                       {},
                                       plan.stage_vectors,
                                       out.data};
  args.row_length_divisor.dims = 1;
  set_divisor(args.row_length_divisor, 0, static_cast<uint32_t>(layout.reduce));
  auto kernel = plan.permuted ? staged_rows_kernel<scalar_t, acc_t, out_t, Op, true>
                              : staged_rows_kernel<scalar_t, acc_t, out_t, Op, false>;
  kernel<<<static_cast<unsigned int>(plan.grid), kRowThreads, static_cast<size_t>(plan.shared_bytes),
           stream.stream()>>>(args, op, row_gather(layout), out.index);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace cuda
}  // namespace torch_reduce
