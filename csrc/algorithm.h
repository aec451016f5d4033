// The reduction algorithms a caller can pick for torch_reduce.sum.
//
// `Default` is the fast path; the others are the classic ladder kept for
// study (csrc/cuda/ladder/), in the order of the steps that build it. The
// sum op routes a call to the ladder (ladder_step) before the front end,
// which never sees an algorithm.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <vector>

namespace torch_reduce {

enum class Algorithm {
  Default,
  Serial,                     // 00: one GPU thread
  InterleavedDivergent,       // 01: tid % (2*s) == 0
  InterleavedStrided,         // 02: index = 2*s*tid, bank conflicts
  SequentialAddressing,       // 03: s = blockDim/2 .. 1
  FirstAddDuringLoad,         // 04: two elements per thread on load
  UnrollLastWarp,             // 05: the last 32 threads unrolled
  CompleteUnroll,             // 06: block size as a template parameter
  MultipleElementsPerThread,  // 07: grid-stride load (Brent)
  WarpShuffle,                // 08: __shfl_down_sync
  WarpShuffleVec4,            // 09: shuffle + 16-byte loads
};

// Names in ladder order, "default" first.
const std::vector<std::string>& algorithm_names();

// Parses a name; an unknown one is a TORCH_CHECK error listing the valid ones.
Algorithm parse_algorithm(const std::string& name);

const std::string& algorithm_name(Algorithm algorithm);

// The process-wide default from the TORCH_REDUCE_ALGORITHM environment
// variable (read once), or std::nullopt when it is unset.
std::optional<Algorithm> environment_algorithm();

// The ladder step a sum call asks for: `algorithm`, or where it is None the
// process-wide default, which applies to full reductions of CUDA tensors
// only; nullopt for the fast path. An explicit step that cannot run (a CPU
// tensor, a dim reduction) is an error, as are torch's dim errors.
std::optional<Algorithm> ladder_step(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                     const std::optional<std::string>& algorithm);

}  // namespace torch_reduce
