"""The Python entry points: torch_reduce.{sum,mean,amax,amin} take the common call form
op(tensor, dim, keepdim) through a fast path (torch_reduce._C) that enters the dispatcher
directly. It must give what the torch.ops overload gives, and decline -- returning
NotImplemented, so that the wrapper takes the torch.ops path -- whatever it does not handle
itself: __torch_function__ subclasses, torch function modes, other argument types.
"""
import inspect

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import cases
import torch_reduce
from cases import _id

OPS = cases.ALL_OPS
SPECS = cases.OPS
#: The entries that are an op's common form, op(x, dim, keepdim), one an op: not vector_norm_inf
#: (an ord other than the default), but std_mean_mean (a result of std_mean's common form).
FAST_PATH_OPS = [op for op in OPS if not SPECS[op].op_name or SPECS[op].result is not None]
DIMS = [None, 0, -1, [0, 2], (1,), [], ()]


def _torch_ops_call(op, x, dim, keepdim):
    """The same call through the torch.ops overload, with dim as a list (for dim=None, the form of
    every dim the op's schema takes: None, or amax's [])."""
    dims = [dim] if isinstance(dim, int) else (None if dim is None else list(dim))
    if dims is None and SPECS[op].all_dims is not None:
        dims = list(SPECS[op].all_dims)
    return SPECS[op].raw.default(x, dims, keepdim)


@pytest.mark.parametrize("op", FAST_PATH_OPS)
@pytest.mark.parametrize("dim", DIMS, ids=_id)
@pytest.mark.parametrize("keepdim", [False, True], ids=["nokeep", "keepdim"])
def test_fast_path_matches_torch_ops(device, op, dim, keepdim, make_input, bitwise_equal):
    x = make_input((3, 4, 5), torch.float32, device)
    fast = getattr(torch_reduce._C, SPECS[op].library_name)(x, dim, keepdim)
    assert fast is not NotImplemented
    if SPECS[op].result is not None:  # a tuple (var_mean's): the entry's result of it
        fast = fast[SPECS[op].result]
    reference = _torch_ops_call(op, x, dim, keepdim)
    bitwise_equal(fast, reference)
    bitwise_equal(SPECS[op].fn(x, dim, keepdim), reference)


def np():
    """numpy, for the forms that need it (skipped with a reason where it is not installed)."""
    return pytest.importorskip("numpy")


# dim forms torch's reductions take beyond ints and lists of ints (a tensor as one dim, as torch
# 2.14 takes it; torch 2.4 reduced every dim), and those they refuse.
TAKEN_DIMS = {
    "numpy int": lambda: np().int64(1),
    "numpy ints": lambda: (np().int32(0), np().uint8(2)),
    "0-d tensor": lambda: torch.tensor(1),
    "one-element tensor": lambda: torch.tensor([-1]),
    "tensors in a list": lambda: [torch.tensor(0), torch.tensor(2)],
}
REFUSED_DIMS = {
    "bool": lambda: True,
    "two-element tensor": lambda: torch.tensor([0, 1]),
    "float tensor": lambda: torch.tensor(1.0),
    "numpy array": lambda: np().array([0, 1]),
}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("form", list(TAKEN_DIMS))
@pytest.mark.parametrize("keepdim", [False, True], ids=["nokeep", "keepdim"])
def test_wrappers_take_the_dim_forms_torch_takes(device, op, form, keepdim, make_input, bitwise_equal):
    x = make_input((3, 4, 5), torch.float32, device)
    dim = TAKEN_DIMS[form]()
    dims = torch.as_tensor(dim).reshape(-1).tolist()
    if SPECS[op].one_dim and len(dims) > 1:
        pytest.skip(f"{op} takes one dim")
    reference = SPECS[op].fn(x, dims, keepdim)
    bitwise_equal(SPECS[op].fn(x, dim, keepdim), reference)
    bitwise_equal(SPECS[op].fn(x, dim=dim, keepdim=keepdim), reference)
    assert reference.shape == cases.OPS[op].reference(x, dims, keepdim).shape


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("form", list(REFUSED_DIMS))
def test_wrappers_refuse_the_dim_forms_torch_refuses(op, form, make_input):
    x = make_input((3, 4, 5), torch.float32, "cpu")
    dim = REFUSED_DIMS[form]()
    if not (form == "bool" and cases.OPS[op].keepdim_by_name):  # torch.var(x, True) is unbiased=True
        with pytest.raises(TypeError):
            cases.OPS[op].reference(x, dim)
    with pytest.raises(TypeError):
        SPECS[op].fn(x, dim)


class Recorded(torch.Tensor):
    """A subclass whose __torch_function__ records the functions it sees."""

    seen = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(func)
        return super().__torch_function__(func, types, args, kwargs or {})


DECLINED = {
    "float dim": lambda x: (x, 1.0, False),
    "str in dims": lambda x: (x, [0, "a"], False),
    "int keepdim": lambda x: (x, 0, 1),
    "dim past int64": lambda x: (x, 2**70, False),
    "torch.Size dims": lambda x: (x, torch.Size([0]), False),
    "two arguments": lambda x: (x, None),
    "not a tensor": lambda x: (x.tolist(), None, False),
    "subclass": lambda x: (x.as_subclass(Recorded), None, False),
}


@pytest.mark.parametrize("op", FAST_PATH_OPS)
@pytest.mark.parametrize("form", list(DECLINED))
def test_fast_path_declines_other_forms(op, form, make_input):
    x = make_input((3, 4), torch.float32, "cpu")
    assert getattr(torch_reduce._C, SPECS[op].library_name)(*DECLINED[form](x)) is NotImplemented


@pytest.mark.parametrize("op", FAST_PATH_OPS)
def test_fast_path_declines_under_a_torch_function_mode(op, make_input):
    x = make_input((3, 4), torch.float32, "cpu")
    with TorchFunctionMode():
        assert getattr(torch_reduce._C, SPECS[op].library_name)(x, None, False) is NotImplemented


@pytest.mark.parametrize("op", OPS)
def test_torch_function_subclass_sees_the_op(device, op, make_input):
    x = make_input((3, 4), torch.float32, device).as_subclass(Recorded)
    Recorded.seen = []
    SPECS[op].fn(x, 0)
    assert SPECS[op].overload in Recorded.seen


class RecordFunctions(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


class RecordOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", [RecordFunctions, RecordOps], ids=["torch_function_mode", "torch_dispatch_mode"])
def test_modes_see_the_op(device, op, mode, make_input):
    x = make_input((3, 4), torch.float32, device)
    with mode() as recorder:
        result = SPECS[op].fn(x, 1)
    assert SPECS[op].overload in recorder.seen
    torch.testing.assert_close(result, SPECS[op].reference(x, 1))


def test_every_op_of_the_list_has_a_wrapper_a_fast_path_and_a_test_entry():
    """csrc/op_list.h drives the Python side: each op there has a fast path in _C, a wrapper
    with torch's leading arguments, a fake kernel, and an entry in the tests' op table."""
    assert sorted(torch_reduce.ops.OPS) == sorted(SPECS[op].library_name for op in FAST_PATH_OPS)
    for op in FAST_PATH_OPS:
        name, leading = SPECS[op].library_name, len(SPECS[op].leading)
        wrapper = getattr(torch_reduce, name)
        parameters = list(inspect.signature(wrapper).parameters)
        assert parameters[0] == "input" and parameters[leading + 1:leading + 3] == ["dim", "keepdim"]
        assert callable(getattr(torch_reduce._C, name))
        with torch._subclasses.fake_tensor.FakeTensorMode():
            out = SPECS[op].raw(torch.empty(3, 4), [1])
        assert out.shape == (3,)

