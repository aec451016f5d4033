// Layouts that the dims' merge alone does not give, read in place where the
// backend's kernels can (BackendCapabilities) instead of copied: gathered
// rows, gathered columns, and reductions in stages.
#pragma once

#include <optional>
#include <vector>

#include "backend.h"
#include "layout.h"

namespace torch_reduce {

// Rows whose copy would be dense rows (the reduced dims innermost), read in
// place through their strides; `input`'s dims are in memory order. nullopt
// where runs_of refuses them or the copy is cheaper.
std::optional<ReduceLayout> plan_gather(const at::Tensor& input, const std::vector<bool>& reduced,
                                        const BackendCapabilities& caps);

// Columns whose kept dims merge into neither layout, read in place where a
// column is short. `dense` is the layout of the copy of `input` (in memory
// order), whose columns these are, in its order.
std::optional<ReduceLayout> plan_gathered_columns(const at::Tensor& input, const std::vector<bool>& reduced,
                                                  const ReduceLayout& dense, const BackendCapabilities& caps);

// Reduced dims that form several runs, reduced one run a stage: the dims
// each stage reduces, or nullopt where there are fewer than two runs, too few
// values an output, or the dims are not in memory order.
std::optional<std::vector<std::vector<bool>>> plan_stages(const at::Tensor& input, const std::vector<bool>& reduced,
                                                          const BackendCapabilities& caps);

}  // namespace torch_reduce
