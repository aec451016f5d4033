// The functions of the torch_reduce._C module (python_fast_path.cpp).
#pragma once

#include <Python.h>

namespace torch_reduce {

// The module's method table, ending in a null entry.
PyMethodDef* fast_path_methods();

}  // namespace torch_reduce
