// Launches a column reduction as its plan (column_plans.cuh) says, pass
// after pass, each pass reading the partials of the one before; nothing
// here decides anything.
#pragma once

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

#include "column_plans.cuh"
#include "gathered_rows.cuh"
#include "output.cuh"

namespace torch_reduce {
namespace cuda {

// A column pass's partials for the next pass: `count` accumulators on the
// stream's device, as bytes (an accumulator may be a struct: var's state).
template <typename acc_t>
at::Tensor new_partials(int64_t count, const c10::cuda::CUDAStream& stream) {
  return at::empty({count * static_cast<int64_t>(sizeof(acc_t))},
                   at::TensorOptions().dtype(at::kByte).device(at::kCUDA, stream.device_index()));
}
template <typename acc_t>
acc_t* partials_of(const at::Tensor& partials) {
  return static_cast<acc_t*>(partials.data_ptr());
}

// One pass; returns its partials where it leaves more than one value a
// column (the next pass's input). gathered: where each column starts
// (gathered columns, of at most one chunk; no dims: b * batch_stride + c).
template <typename in_t, typename acc_t, typename out_t, typename Op>
at::Tensor launch_column_pass(const ColumnPassPlan& p, const in_t* data, const Output<out_t>& out, const Op& op,
                              const c10::cuda::CUDAStream& stream, const StridedIndex& gathered = {}) {
  ColumnArgs<in_t, acc_t, out_t> args{data, p.batch, p.reduce, p.columns, p.batch_stride, p.reduce_stride, p.width};
  args.items = p.items;
  args.row_lanes = p.row_lanes;
  args.out = out.data;
  at::Tensor partials;
  if (p.values_left > 1) {
    partials = new_partials<acc_t>(p.values_left * p.batch * p.columns, stream);
    args.partials = partials_of<acc_t>(partials);
  }
  const auto grid = static_cast<unsigned int>(p.grid);
  auto launch = [&](auto kernel) { launch_pass(kernel, grid, kColumnThreads, stream.stream(), p.early, args, op); };
  switch (p.kernel) {
    case ColumnKernel::Short: {
      // Indexed kernels write through an index, a dense one where the output is dense.
      const StridedIndex out_index =
          p.indexed && out.index.dims == 0 ? strided_index(Runs{1, {p.batch * p.columns}, {1}}, 0, 1) : out.index;
      with_short_kernel<in_t, acc_t, out_t, Op>(p.chunk_rows, p.items_read, p.evict_first, p.indexed, [&](auto kernel) {
        launch_pass(decltype(kernel)::value, grid, kColumnThreads, stream.stream(), p.early, args, op, out_index,
                    gathered);
      });
      break;
    }
    case ColumnKernel::Block:
      launch(column_block_kernel<in_t, acc_t, out_t, Op>);
      break;
    case ColumnKernel::Tile:
      if (p.tile == TileMode::Teams) {
        launch(column_tile_kernel<in_t, acc_t, out_t, Op>);
      } else if (p.tile == TileMode::Wide) {
        launch(column_wide_kernel<in_t, acc_t, out_t, Op>);
      } else {
        with_width<column_width<in_t, acc_t>()>(p.width, [&](auto width) {
          launch(column_chunk_kernel<in_t, acc_t, out_t, Op, decltype(width)::value>);
        });
      }
      break;
  }
  return partials;
}

// The first pass of dense narrow columns (column_flat_kernel.cuh); returns its partials.
template <typename in_t, typename acc_t, typename out_t, typename Op>
at::Tensor launch_flat_columns(const FlatColumnsPlan& plan, const in_t* data, const ReduceLayout& layout,
                               const Op& op, const c10::cuda::CUDAStream& stream) {
  if constexpr (sizeof(in_t) == 1 || sizeof(in_t) >= kNarrowItemBytes || kStructAccumulator<acc_t>) {
    TORCH_INTERNAL_ASSERT(false, "plan_flat_columns: no flat kernel for these types");
    return {};
  } else {
    ColumnArgs<in_t, acc_t, out_t> args{data - plan.first, layout.batch, layout.reduce, layout.inner,
                                        layout.batch_stride, layout.reduce_stride, vector_width<in_t>()};
    at::Tensor partials = new_partials<acc_t>(plan.chunks * layout.batch * layout.inner, stream);
    args.partials = partials_of<acc_t>(partials);
    auto kernel = plan.evict_first ? column_flat_kernel<true, in_t, acc_t, out_t, Op>
                                   : column_flat_kernel<false, in_t, acc_t, out_t, Op>;
    launch_pass(kernel, static_cast<unsigned int>(plan.grid), plan.threads, stream.stream(), /*early=*/true, args,
                static_cast<int>(plan.first), op);
    return partials;
  }
}

template <typename scalar_t, typename acc_t, typename out_t, typename Op>
void launch_columns(const ColumnsPlan& plan, const scalar_t* data, const ReduceLayout& layout,
                    const Output<out_t>& out, const Op& op, const c10::cuda::CUDAStream& stream) {
  const Runs& gathered = layout.column_runs;
  if (gathered.count != 0) {
    launch_column_pass<scalar_t, acc_t, out_t>(plan.pass[0], data, out, op, stream,
                                               strided_index(gathered, 0, gathered.count));
    return;
  }
  at::Tensor partials = plan.flat.first >= 0
                            ? launch_flat_columns<scalar_t, acc_t, out_t>(plan.flat, data, layout, op, stream)
                            : launch_column_pass<scalar_t, acc_t, out_t>(plan.pass[0], data, out, op, stream);
  const Op partials_op = reading_partials(op);
  for (int i = plan.flat.first >= 0 ? 0 : 1; i < plan.passes; ++i) {
    partials = launch_column_pass<acc_t, acc_t, out_t>(plan.pass[i], partials_of<acc_t>(partials), out, partials_op,
                                                       stream);
  }
}

}  // namespace cuda
}  // namespace torch_reduce
