// The classic reduction ladder (one step per file in this folder), as the
// implementation of torch_reduce.sum(x, algorithm=...) for every algorithm
// but Default.
#pragma once

#include <ATen/ATen.h>

#include "algorithm.h"
#include "ops/op_base.h"

namespace torch_reduce {

// torch_reduce.sum(self, algorithm=step) over every dim: the sum op's
// dtypes, keepdim's shape, an empty input's zero, and the elements read in
// memory order, from a dense copy where they are not dense.
at::Tensor ladder_sum(const at::Tensor& self, bool keepdim, const DtypePlan& dtypes, Algorithm step);

// Sums every element of `input` into `out` with the ladder step `algorithm`
// (not Algorithm::Default), on the current stream of the input's device,
// without synchronising the host (so it can be captured in a CUDA graph).
//   input: a contiguous CUDA tensor of n >= 1 elements, of a dtype that
//          dispatch.h instantiates; its data may be only element-aligned (x[1:]).
//   out:   a contiguous 1-element tensor on the same device, of the kernel's
//          output dtype for that input (dispatch_reduction<Sum>).
void ladder_sum_cuda(const at::Tensor& input, at::Tensor& out, Algorithm algorithm);

}  // namespace torch_reduce
