"""torch_reduce in deployed models (docs/DEPLOY.md).

* torch.export: every torch_reduce call of a model stays in the exported graph as a
  torch.ops.torch_reduce.* node (strict and non-strict tracing, static and dynamic shapes), and the
  exported program's module gives eager's bits; torch.export.save/load round trips it.
* AOTInductor (torch >= 2.6): a model of every op (examples/aoti_cpp/export_model.py), compiled once
  per device with torch._inductor.aoti_compile_and_package and loaded with aoti_load_package, gives
  eager's bits at every shape. The package calls our ops by name through its proxy executor, none
  decomposed or replaced by torch's own reductions, so a process must load torch_reduce's op library
  before it loads the package, and the library alone (not the Python package) is enough.
* From C++: examples/aoti_cpp/main.cpp, built by build.sh, loads the op library and runs the package.

Each compile takes seconds to a minute, so the package is made once per device (a module fixture).
"""
import collections
import importlib.util
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import torch
import torch._inductor
from torch import nn

import torch_reduce
from cases import ALL_OPS, OPS, reduce

_TORCH = torch.torch_version.TorchVersion(torch.__version__)
_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "aoti_cpp"


def _load_example():
    """examples/aoti_cpp/export_model.py: EveryOp, export(device), compile_package(path, device): the
    model main.cpp runs, tested here as it is deployed."""
    spec = importlib.util.spec_from_file_location("export_model", _EXAMPLE / "export_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


every_op = _load_example()

requires_export = pytest.mark.skipif(
    not all(hasattr(torch.export, name) for name in ("export", "Dim", "save", "load")),
    reason=f"torch.export (export, Dim, save, load) is missing from torch {torch.__version__}",
)
# aoti_compile_and_package took (program, args, kwargs) in 2.5 and the program alone from 2.6.
_HAS_AOTI = _TORCH >= "2.6" and all(
    hasattr(torch._inductor, name) for name in ("aoti_compile_and_package", "aoti_load_package")
)
requires_aoti = pytest.mark.skipif(
    not _HAS_AOTI,
    reason=f"AOTInductor packages need torch >= 2.6 (torch._inductor.aoti_compile_and_package and "
    f"aoti_load_package); this is torch {torch.__version__}",
)

# Before the fix of pytorch#169157 (pytorch#173562, in the releases after 2.11), AOTInductor's
# proxy executor passes a custom op's ScalarType argument as the serialized enum's number, which
# c10 reads as another dtype: EveryOp's sum(x, dtype=torch.float64) reaches the op as ComplexHalf
# (seen with torch 2.11 on the H100). The runs of the package then fail, through no fault of the
# ops; a dtype= whose number names a dtype the op takes would be a silent wrong dtype.
proxy_executor_dtypes = pytest.mark.xfail(
    _TORCH < "2.12", reason="pytorch#169157: the AOTI proxy executor misreads dtype arguments", strict=False
)

# The devices of the module-scoped package fixture (a module fixture cannot take the conftest's
# function-scoped `device` parameter): cuda skips with conftest's reason through its marker.
_PACKAGE_DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.requires_cuda)]


def _call_targets(graph):
    """The call_function targets of an exported graph, in order, but for the picks of a result from
    a tuple (var_mean's)."""
    return [node.target for node in graph.nodes if node.op == "call_function" and node.target is not operator.getitem]


def _assert_same_bits(actual, expected, bitwise_equal):
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        bitwise_equal(a, e, f"output {i}")


# --------------------------------------------------------------------------- #
# torch.export
# --------------------------------------------------------------------------- #
def _calls(op):
    """How the one-op model calls `op`: (dim, keepdim, kwargs) for every dim, the last dim, two dims
    kept, and dtype= where the op takes it."""
    calls = [(None, False, {}), (-1, False, {}), (2 if OPS[op].one_dim else (0, 2), True, {})]
    if OPS[op].takes_dtype:
        calls.append((1, False, {"dtype": torch.float64}))
    return calls


class OneOp(nn.Module):
    """A model that calls one op, through its Python wrapper, in each form of _calls."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return tuple(reduce(self.op, x, dim, keepdim, **kwargs) for dim, keepdim, kwargs in _calls(self.op))


@requires_export
@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "strict"])
@pytest.mark.parametrize("op", ALL_OPS)
def test_export_keeps_each_call_as_our_op(op, strict, device, make_input, bitwise_equal):
    """Each call of the model is one torch.ops.torch_reduce.<op> node of the exported graph, nothing
    else (no decomposition into aten), and the exported module gives eager's bits."""
    model = OneOp(op)
    x = make_input((4, 6, 5), torch.float32, device)
    exported = torch.export.export(model, (x,), strict=strict)
    assert _call_targets(exported.graph) == [OPS[op].overload] * len(_calls(op))
    fresh = make_input((4, 6, 5), torch.float32, device)
    _assert_same_bits(exported.module()(fresh), model(fresh), bitwise_equal)


@requires_export
@pytest.mark.parametrize("op", ALL_OPS)
def test_export_with_dynamic_shapes_serves_every_shape(op, device, make_input, bitwise_equal):
    """With every dim a torch.export.Dim, the graph's input has symbolic sizes, the ops stay, and
    one exported program gives eager's bits at shapes other than the example's."""
    model = OneOp(op)
    dims = {"x": {0: torch.export.Dim("a"), 1: torch.export.Dim("b"), 2: torch.export.Dim("c")}}
    exported = torch.export.export(model, (make_input((4, 6, 5), torch.float32, device),), dynamic_shapes=dims)
    (placeholder,) = [node for node in exported.graph.nodes if node.op == "placeholder"]
    assert all(isinstance(size, torch.SymInt) for size in placeholder.meta["val"].shape)
    assert _call_targets(exported.graph) == [OPS[op].overload] * len(_calls(op))
    for shape in [(4, 6, 5), (2, 3, 2), (3, 33, 17)]:
        x = make_input(shape, torch.float32, device)
        _assert_same_bits(exported.module()(x), model(x), bitwise_equal)


@requires_export
def test_export_save_load_round_trip(device, tmp_path, make_input, bitwise_equal):
    """torch.export.save writes the ops by name; torch.export.load (in a process that has imported
    torch_reduce) gives back a program with the same nodes and eager's bits at any shape."""
    exported = every_op.export(device)
    torch.export.save(exported, tmp_path / "every_op.pt2")
    loaded = torch.export.load(tmp_path / "every_op.pt2")
    assert _call_targets(loaded.graph) == _call_targets(exported.graph)
    assert {target.name() for target in _call_targets(loaded.graph)} == {f"torch_reduce::{OPS[op].library_name}" for op in ALL_OPS}
    for shape in [(8, 33), (5, 7)]:
        x = make_input(shape, torch.float32, device)
        _assert_same_bits(loaded.module()(x), every_op.EveryOp()(x), bitwise_equal)


# --------------------------------------------------------------------------- #
# AOTInductor
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module", params=_PACKAGE_DEVICES)
def every_op_package(request, tmp_path_factory):
    """(device, path): EveryOp compiled by AOTInductor for `device`, once for the module."""
    device = request.param
    path = tmp_path_factory.mktemp(f"aoti-{device}") / "every_op.pt2"
    return device, every_op.compile_package(str(path), device)


_SHAPES = [(8, 33), (5, 7), (2, 2), (300, 1025)]


@requires_aoti
@proxy_executor_dtypes
def test_aoti_package_gives_eager_results(every_op_package, make_input, bitwise_equal):
    """The loaded package gives eager's bits (the same kernels) at the example's shape and others."""
    device, path = every_op_package
    compiled = torch._inductor.aoti_load_package(path)
    model = every_op.EveryOp()
    for shape in _SHAPES:
        x = make_input(shape, torch.float32, device)
        _assert_same_bits(compiled(x), model(x), bitwise_equal)


def _package_texts(path):
    """The text files of a package (generated C++, the proxy executor's JSON), by name."""
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name).decode(errors="replace") for name in archive.namelist()
                if name.endswith((".cpp", ".json"))}


@requires_aoti
def test_aoti_package_calls_our_ops_by_name(every_op_package):
    """The package's generated code calls each torch_reduce op of the model through the proxy
    executor, which finds it by name in the dispatcher at run time: the JSON it reads lists the
    sixteen calls. No reduction of torch's own (an aten sum, mean, amax or amin through the C shim) stands in
    for one of them."""
    _, path = every_op_package
    texts = _package_texts(path)
    documents = [json.loads(text) for name, text in texts.items() if name.endswith(".json")]
    proxied = [node["node"]["target"] for document in documents if isinstance(document, dict)
               for node in document.get("nodes", [])]
    assert collections.Counter(proxied) == collections.Counter(
        ["torch_reduce::sum", "torch_reduce::mean", "torch_reduce::amax", "torch_reduce::amin", "torch_reduce::sum",
         "torch_reduce::prod", "torch_reduce::any", "torch_reduce::all", "torch_reduce::vector_norm",
         "torch_reduce::var", "torch_reduce::std", "torch_reduce::logsumexp", "torch_reduce::var_mean",
         "torch_reduce::std_mean", "torch_reduce::argmax", "torch_reduce::argmin"]
    )
    code = "\n".join(text for name, text in texts.items() if name.endswith(".cpp"))
    assert "proxy_executor_call_function" in code
    assert not re.search(r"aoti_torch_(cpu|cuda)_(sum|mean|amax|amin|prod|any|all|linalg_vector_norm|var|std|logsumexp|"
                         r"var_mean|std_mean|argmax|argmin)\b",
                         code)


_OP_LIBRARY_ONLY_CHILD = """
import sys, torch, torch._inductor
package, library, inputs, outputs = sys.argv[1:]
try:
    torch._inductor.aoti_load_package(package)
    sys.exit("the package loaded before the op library")
except RuntimeError as e:
    assert "torch_reduce::" in str(e), e
torch.ops.load_library(library)
assert "torch_reduce" not in sys.modules
compiled = torch._inductor.aoti_load_package(package)
torch.save([compiled(x) for x in torch.load(inputs)], outputs)
"""


@requires_aoti
@proxy_executor_dtypes
def test_aoti_package_needs_only_the_op_library(every_op_package, tmp_path, make_input, bitwise_equal):
    """A process that has not loaded torch_reduce's op library cannot load the package (the error
    names the op); one that loads the library (torch.ops.load_library of torch_reduce/_C*.so) and
    never imports the torch_reduce package runs it, with eager's bits: what a C++ program does."""
    device, path = every_op_package
    inputs = [make_input(shape, torch.float32, device) for shape in _SHAPES[:2]]
    torch.save(inputs, tmp_path / "inputs.pt")
    subprocess.run(
        [sys.executable, "-c", _OP_LIBRARY_ONLY_CHILD, path, torch_reduce._C.__file__, str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt")],
        check=True,
    )
    model = every_op.EveryOp()
    for x, outputs in zip(inputs, torch.load(tmp_path / "outputs.pt")):
        _assert_same_bits(outputs, model(x), bitwise_equal)


# --------------------------------------------------------------------------- #
# From C++
# --------------------------------------------------------------------------- #
def _cpp_skip_reason():
    if not sys.platform.startswith("linux"):
        return f"the C++ example is built for Linux (dlopen, g++ flags); this is {sys.platform}"
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return f"no C++ compiler: {os.environ.get('CXX', 'g++')} is not on PATH"
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return "this Python has no shared libpython, which torch_reduce's op library needs outside Python"
    return None


@pytest.fixture(scope="module")
def cpp_program(tmp_path_factory):
    """examples/aoti_cpp/main.cpp built by build.sh against this Python's torch, once."""
    program = tmp_path_factory.mktemp("aoti-cpp") / "every_op"
    build = subprocess.run(["bash", str(_EXAMPLE / "build.sh"), str(program)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHON=sys.executable))
    assert build.returncode == 0, build.stdout + build.stderr
    return program


@requires_aoti
@proxy_executor_dtypes
@pytest.mark.skipif(_cpp_skip_reason() is not None, reason=str(_cpp_skip_reason()))
def test_cpp_program_runs_the_package(every_op_package, cpp_program):
    """The C++ program loads the op library, runs the package (AOTIModelPackageLoader) and finds its
    results equal to the ops called directly through the dispatcher, at shapes other than the
    example's."""
    _, path = every_op_package
    for rows, cols in [(5, 7), (300, 1025)]:
        run = subprocess.run([str(cpp_program), path, torch_reduce._C.__file__, str(rows), str(cols)],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stdout.splitlines()[-1].startswith(f"OK: {rows}x{cols} input")
