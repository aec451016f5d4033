// The Python fast path: torch_reduce._C.<op>(input, dim, keepdim), for
// every op of the op list, enter the dispatcher directly, where torch.ops would first match
// the arguments against the schema in generic code and call a Python
// __call__ (together about 0.75 us of the 1.84 us that
// torch.ops.torch_reduce.sum takes on a 1024-element CPU tensor, against the
// fast path's 1.08 us: benchmarks/results/overhead_cpu.json).
//
// They take only the common form: an exact torch.Tensor (or Parameter), dim
// None, an int or a list or tuple of ints, keepdim a bool, and no torch
// function mode active. For anything else they return NotImplemented and
// the caller takes the torch.ops path, which handles __torch_function__,
// other argument types and their errors. Both paths enter the same
// dispatcher, so autograd, dispatch modes and functorch see the same op.
#include "python_fast_path.h"

#include <ATen/PythonTorchFunctionTLS.h>
#include <c10/util/SmallVector.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include "op_handles.h"
#include "op_list.h"

namespace torch_reduce {
namespace {

// One int, or a list or tuple of ints, into `dims`; false for anything else
// (an int too large for int64_t included: the torch.ops path reports it).
bool parse_dims(PyObject* obj, c10::SmallVector<int64_t, 8>& dims) {
  auto append = [&dims](PyObject* item) {
    if (!PyLong_CheckExact(item)) return false;
    const long long value = PyLong_AsLongLong(item);
    if (value == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    dims.push_back(value);
    return true;
  };
  if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    PyObject** items = PySequence_Fast_ITEMS(obj);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!append(items[i])) return false;
    return true;
  }
  return append(obj);
}

// A result as Python has it: a tensor, or a tuple of them (var_mean's).
PyObject* wrap(at::Tensor result) { return THPVariable_Wrap(std::move(result)); }
PyObject* wrap(std::tuple<at::Tensor, at::Tensor> result) {
  PyObject* first = THPVariable_Wrap(std::move(std::get<0>(result)));
  PyObject* second = THPVariable_Wrap(std::move(std::get<1>(result)));
  if (!first || !second) {
    Py_XDECREF(first);
    Py_XDECREF(second);
    return nullptr;
  }
  PyObject* pair = PyTuple_Pack(2, first, second);
  Py_DECREF(first);
  Py_DECREF(second);
  return pair;
}

// Calls `op(self, dim, keepdim)` for the common form of the arguments, or
// returns NotImplemented.
template <typename Op>
PyObject* call_common_form(PyObject* const* args, Py_ssize_t nargs, Op op) {
  HANDLE_TH_ERRORS
  if (nargs != 3 || !THPVariable_CheckExact(args[0]) || !PyBool_Check(args[2]) ||
      at::impl::torch_function_mode_enabled())
    Py_RETURN_NOTIMPLEMENTED;
  c10::SmallVector<int64_t, 8> dims;
  const bool dim_given = args[1] != Py_None;
  if (dim_given && !parse_dims(args[1], dims)) Py_RETURN_NOTIMPLEMENTED;
  const at::Tensor& self = THPVariable_Unpack(args[0]);
  const at::OptionalIntArrayRef dim = dim_given ? at::OptionalIntArrayRef(dims) : at::OptionalIntArrayRef();
  const bool keepdim = args[2] == Py_True;
  decltype(op(self, dim, keepdim)) result;
  if (self.is_cuda()) {
    // The call only enqueues work: keeping the GIL costs less than handing
    // it over and taking it back.
    result = op(self, dim, keepdim);
  } else {
    pybind11::gil_scoped_release no_gil;
    result = op(self, dim, keepdim);
  }
  return wrap(std::move(result));
  END_HANDLE_TH_ERRORS
}

// The fast-path function of op `Spec`.
template <typename Spec>
PyObject* fast_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  return call_common_form(args, nargs, [](const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
    return Spec::call_common(op_handle<Spec>(), self, dim, keepdim);
  });
}

template <PyObject* (*function)(PyObject*, PyObject* const*, Py_ssize_t)>
constexpr PyCFunction as_method() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(function));
}

PyMethodDef methods[] = {
#define TORCH_REDUCE_FAST_PATH(name, Spec, families)    \
  {#name, as_method<fast_call<Spec>>(), METH_FASTCALL, \
   #name "(input, dim, keepdim): torch.ops.torch_reduce." #name ", or NotImplemented"},
    TORCH_REDUCE_FOR_EACH_OP(TORCH_REDUCE_FAST_PATH)
#undef TORCH_REDUCE_FAST_PATH
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

PyMethodDef* fast_path_methods() { return methods; }

}  // namespace torch_reduce
