// The CPU kernels of torch_reduce: one template, reduce_layout<Spec>, for
// every op and dtype, instantiated once per op in a translation unit of its
// own (build_support/kernel_units.py), so that the ops compile in parallel.
//
// Every output is reduced in an order that depends only on `layout.reduce`,
// never on batch, inner or the number of threads (batch invariance). A row
// (Inner) is cut into runs folded by interleaved lanes whose results combine
// pairwise, runs add up in sequence within a block, and blocks combine
// pairwise; a column (Outer) is folded top to bottom within blocks of rows,
// and blocks combine pairwise. Threads split either the outputs or, when
// there are too few of them, each output's blocks along subtrees of that
// pairwise tree, so the split does not change a bit of the results.
#pragma once

#include <ATen/ATen.h>

#include "backend.h"
#include "column_folds.h"
#include "dispatch.h"
#include "row_folds.h"

namespace torch_reduce {
namespace cpu {

template <typename Spec>
void reduce_layout(const at::Tensor& input, const ReduceLayout& layout,
                   at::Tensor& out, const OpCall& call) {
  dispatch_reduction<Spec>(
      input.scalar_type(), out.scalar_type(), layout.reduce, call,
      [&](auto types, auto op) {
        using T = decltype(types);
        using scalar_t = typename T::scalar_t;
        using acc_t = typename T::acc_t;
        using out_t = typename T::out_t;
        const auto* data = static_cast<const scalar_t*>(input.data_ptr());
        auto* result = static_cast<out_t*>(out.data_ptr());
        if (layout.kind == ReduceLayout::Inner) {
          reduce_rows<scalar_t, acc_t, out_t>(data, layout, result, op);
        } else {
          reduce_columns<scalar_t, acc_t, out_t>(data, layout, result, op);
        }
      });
}

}  // namespace cpu
}  // namespace torch_reduce
