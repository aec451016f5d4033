// The op schemas of torch_reduce (one per op of the op list) and the Python
// module that loads them. Kernels are registered per backend
// (cpu/reduce_cpu.cpp, cuda/reduce_cuda.cu).
#include <Python.h>
#include <torch/library.h>

#include "algorithm.h"
#include "explain.h"
#include "op_list.h"
#include "python_fast_path.h"

extern "C" {
// `import torch_reduce._C` loads this library, so that the registrations
// below run. The ops are reached through torch.ops; the module's own
// functions are their fast path from Python.
PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1,
                                          torch_reduce::fast_path_methods()};
  return PyModule_Create(&module_def);
}
}

namespace torch_reduce {

std::vector<std::string> algorithms() { return algorithm_names(); }

bool built_with_cuda() {
#ifdef TORCH_REDUCE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

// The ops for which dim=[] reduces nothing (EmptyDimList::NoDims), for the
// Python rules (vmap, sharding) that read the dims.
std::vector<std::string> empty_dims_reduce_nothing() {
  std::vector<std::string> names;
#define TORCH_REDUCE_NO_DIMS(name, Spec, families) \
  if (Spec::kEmptyDims == EmptyDimList::NoDims) names.push_back(#name);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_NO_DIMS)
#undef TORCH_REDUCE_NO_DIMS
  return names;
}

// The ops that reduce one dim or every dim (kPositions: argmax, argmin).
std::vector<std::string> one_dim_ops() {
  std::vector<std::string> names;
#define TORCH_REDUCE_ONE_DIM(name, Spec, families) \
  if (HasPositions<Spec>::value) names.push_back(#name);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_ONE_DIM)
#undef TORCH_REDUCE_ONE_DIM
  return names;
}

TORCH_LIBRARY(torch_reduce, m) {
#define TORCH_REDUCE_DEFINE(name, Spec, families) m.def(Spec::kSchema);
  TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_DEFINE)
#undef TORCH_REDUCE_DEFINE
  m.def("algorithms() -> str[]", &algorithms);
  m.def("built_with_cuda() -> bool", &built_with_cuda);
  m.def("empty_dims_reduce_nothing() -> str[]", &empty_dims_reduce_nothing);
  m.def("one_dim_ops() -> str[]", &one_dim_ops);
  m.def("explain(Tensor self, str op, int[1]? dim=None, bool keepdim=False, ScalarType? dtype=None, "
        "str? device=None) -> str",
        &explain);
}

}  // namespace torch_reduce
