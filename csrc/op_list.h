// The op list: one line per op, naming its ops object (csrc/ops/<op>.h).
// It drives the schemas (torch_reduce.cpp), each backend's registration
// (register_backend.h), the dispatcher handles (op_handles.h), autograd
// (autograd.cpp), autocast (autocast.cpp) and the Python fast path
// (python_fast_path.cpp); the build instantiates each op's kernels from it
// (setup.py). Adding an op: docs/DESIGN.md, "Adding an op".
#pragma once

#include "ops/all.h"
#include "ops/amax.h"
#include "ops/amin.h"
#include "ops/any.h"
#include "ops/argmax.h"
#include "ops/argmin.h"
#include "ops/logsumexp.h"
#include "ops/mean.h"
#include "ops/prod.h"
#include "ops/std.h"
#include "ops/std_mean.h"
#include "ops/sum.h"
#include "ops/var.h"
#include "ops/var_mean.h"
#include "ops/vector_norm.h"

// X(name, OpsObject, input families its kernels take: Floating or
// FloatingAndIntegral, as its kIntegralKernels says; None for an op that
// runs another's kernels, OpsObject::Kernels)
#define TORCH_REDUCE_FOR_EACH_OP(X)      \
  X(sum, Sum, FloatingAndIntegral)       \
  X(mean, Mean, Floating)                \
  X(amax, Amax, FloatingAndIntegral)     \
  X(amin, Amin, FloatingAndIntegral)     \
  X(prod, Prod, FloatingAndIntegral)     \
  X(any, Any, FloatingAndIntegral)       \
  X(all, All, FloatingAndIntegral)       \
  X(vector_norm, VectorNorm, Floating)   \
  X(var, Var, Floating)                  \
  X(std, Std, None)                      \
  X(logsumexp, LogSumExp, Floating)      \
  X(var_mean, VarMean, Floating)         \
  X(std_mean, StdMean, None)             \
  X(argmax, ArgMax, FloatingAndIntegral) \
  X(argmin, ArgMin, None)
