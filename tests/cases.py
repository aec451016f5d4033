"""What the test files share: the ops and what sets each apart (OPS), the dtypes they support
and refuse, how each op is called, and how parameters are named in test ids.

Tests that state a property of every op take an ``op`` parameter (a name in OPS) and read what
differs between the ops from its entry, rather than repeating the test for each op.
"""
import dataclasses
import math
from typing import Optional

import pytest
import torch

import torch_reduce

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool]
UNSUPPORTED_DTYPES = [
    torch.complex64,
    torch.complex128,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.uint16,
    torch.uint32,
    torch.uint64,
]
C10_NAMES = {
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
    torch.float8_e4m3fn: "Float8_e4m3fn",
    torch.float8_e5m2: "Float8_e5m2",
    torch.uint16: "UInt16",
    torch.uint32: "UInt32",
    torch.uint64: "UInt64",
}


# --------------------------------------------------------------------------- #
# The ops
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class Op:
    """One reduction, and what sets it apart from the others."""

    name: str
    #: torch's own function, the reference: torch.sum, torch.mean, torch.amax, torch.amin.
    reference: object
    #: Takes dtype= (the accumulation and result dtype).
    takes_dtype: bool
    #: The input dtypes it takes without dtype= (mean: floating inputs only, as torch.mean).
    dtypes: tuple
    #: The value of a reduction over no elements, or None where torch raises (amax, amin).
    empty_result: object
    #: Floating results equal torch's exactly (amax, amin); otherwise they are compared with the
    #: float64 reduction within a tolerance (conftest.assert_matches_reference). Integer and bool
    #: results are always exact.
    exact: bool
    #: The dim argument that means every dim, for the op's torch.ops overload and torch function.
    all_dims: object
    #: Each element adds a rounding relative to the result (a product), rather than one relative
    #: to the sum of |x| (a sum): the tolerance grows with the number of elements reduced.
    error_per_element: bool = False
    #: How many of the tolerance's rounding budgets a result may take. A norm's sum of squares
    #: cancels nothing, so where a sum's error is small against the sum of |x|, a norm's is
    #: relative to the norm itself: it grows with the fold's sequential chains (columns folded
    #: down a block of rows on the CPU), and a float64 reference (torch's own norm in float64)
    #: has as much error as the result.
    rounding_budgets: float = 1.0
    #: The result is a variance (or its root) of the elements: its rounding is relative to their
    #: second moment, the mean of x^2 (halved over the result for a root), not to the op of |x|.
    second_moment: bool = False
    #: Floating inputs give a result with a gradient (any and all give bools).
    differentiable: bool = True
    #: The op of the library, where this entry is one of its forms: vector_norm of one ord.
    op_name: str = ""
    #: The arguments the op takes before dim (vector_norm's ord), given by the entry.
    leading: tuple = ()
    #: keepdim is keyword-only, as torch.var's (a third positional argument there is `unbiased`).
    keepdim_by_name: bool = False
    #: The result is the root of a variance (std).
    root: bool = False
    #: The op returns a tuple (var_mean: the variance and the mean); the entry is its result of this
    #: index, in the wrapper, the torch.ops call and the reference alike.
    result: Optional[int] = None
    #: The op reduces one dim or every dim, as torch.argmax: a test of several dims leaves it out.
    one_dim: bool = False

    @property
    def empty_raises(self):
        return self.empty_result is None

    def takes(self, dim):
        """Whether the op is called with dim: an op of one dim is not called with several."""
        return not (self.one_dim and isinstance(dim, (tuple, list)) and len(dim) > 1)

    @property
    def fn(self):
        """The Python wrapper: torch_reduce.<op>, called as (input, dim, keepdim, ...)."""
        return self._form(getattr(torch_reduce, self.library_name))

    @property
    def raw(self):
        """The dispatcher op: torch.ops.torch_reduce.<op>, called as (input, dim, keepdim, ...)."""
        packet = getattr(torch.ops.torch_reduce, self.library_name)
        if not self.leading and not self.keepdim_by_name and self.result is None:
            return packet
        call = self._form(packet)
        call.default = self._form(packet.default)
        return call

    def _form(self, fn):
        fn = _with_leading(fn, self.leading)
        fn = _keepdim_by_name(fn) if self.keepdim_by_name else fn
        return fn if self.result is None else _result(fn, self.result)

    @property
    def library_name(self):
        return self.op_name or self.name

    @property
    def overload(self):
        """The op's OpOverload, as it appears in graphs."""
        return getattr(torch.ops.torch_reduce, self.library_name).default


def _with_leading(fn, leading):
    """fn called as (input, dim, keepdim, ...), the form every entry's tests use."""
    if not leading:
        return fn

    def call(input, *args, **kwargs):
        return fn(input, *leading, *args, **kwargs)

    return call


def _keepdim_by_name(fn):
    """fn, whose keepdim is keyword-only, called as (input, dim, keepdim, ...)."""

    def call(input, *args, **kwargs):
        if len(args) > 1:
            kwargs["keepdim"] = args[1]
            args = args[:1] + args[2:]
        return fn(input, *args, **kwargs)

    return call


def _result(fn, index):
    """fn's result of `index`, of the tuple it returns."""

    def call(*args, **kwargs):
        return fn(*args, **kwargs)[index]

    return call


def _norm_reference(ord):
    def reference(input, dim=None, keepdim=False, *, dtype=None):
        return torch.linalg.vector_norm(input, ord, dim, keepdim, dtype=dtype)

    return reference


OPS = {
    op.name: op
    for op in [
        Op("sum", torch.sum, takes_dtype=True, dtypes=tuple(ALL_DTYPES), empty_result=0, exact=False, all_dims=None),
        Op("mean", torch.mean, takes_dtype=True, dtypes=tuple(FLOAT_DTYPES), empty_result=math.nan, exact=False,
           all_dims=None),
        Op("amax", torch.amax, takes_dtype=False, dtypes=tuple(ALL_DTYPES), empty_result=None, exact=True, all_dims=()),
        Op("amin", torch.amin, takes_dtype=False, dtypes=tuple(ALL_DTYPES), empty_result=None, exact=True, all_dims=()),
        Op("prod", torch_reduce.ops._prod, takes_dtype=True, dtypes=tuple(ALL_DTYPES), empty_result=1, exact=False,
           all_dims=None, error_per_element=True),
        Op("any", torch.any, takes_dtype=False, dtypes=tuple(ALL_DTYPES), empty_result=False, exact=True,
           all_dims=None, differentiable=False),
        Op("all", torch.all, takes_dtype=False, dtypes=tuple(ALL_DTYPES), empty_result=True, exact=True,
           all_dims=None, differentiable=False),
        # vector_norm's every ord shares the op's kernels; the 2-norm maps and projects, the
        # inf-norm takes the largest |x| (tests/test_vector_norm.py covers the other ords).
        Op("vector_norm", _norm_reference(2), takes_dtype=True, dtypes=tuple(FLOAT_DTYPES), empty_result=0,
           exact=False, all_dims=None, rounding_budgets=8, leading=(2,)),
        Op("vector_norm_inf", _norm_reference(math.inf), takes_dtype=True, dtypes=tuple(FLOAT_DTYPES),
           empty_result=None, exact=True, all_dims=None, op_name="vector_norm", leading=(math.inf,)),
        # var folds Welford's state (a struct accumulator); std is var's kernels and a root. Their
        # rounding grows with the fold's sequential chains, as a norm's does.
        Op("var", _keepdim_by_name(torch.var), takes_dtype=False, dtypes=tuple(FLOAT_DTYPES), empty_result=math.nan,
           exact=False, all_dims=None, keepdim_by_name=True, second_moment=True, rounding_budgets=16),
        Op("std", _keepdim_by_name(torch.std), takes_dtype=False, dtypes=tuple(FLOAT_DTYPES), empty_result=math.nan,
           exact=False, all_dims=None, keepdim_by_name=True, second_moment=True, rounding_budgets=16, root=True),
        # var_mean and std_mean run var's fold, projecting the mean too. An entry is one of their
        # results: var_mean's variance, std_mean's mean (std_mean's root and var_mean's mean come
        # from the same kernels: tests/test_var_mean.py compares them bitwise). The mean's
        # reference is torch.mean: torch.std_mean's is NaN after an infinity that does not come
        # last in its fold, where torch.mean's (and ours, in any order) is the infinity.
        Op("var_mean", _result(_keepdim_by_name(torch.var_mean), 0), takes_dtype=False, dtypes=tuple(FLOAT_DTYPES),
           empty_result=math.nan, exact=False, all_dims=None, keepdim_by_name=True, second_moment=True,
           rounding_budgets=16, result=0),
        Op("std_mean_mean", torch.mean, takes_dtype=False,
           dtypes=tuple(FLOAT_DTYPES), empty_result=math.nan, exact=False, all_dims=None, keepdim_by_name=True,
           rounding_budgets=16, op_name="std_mean", result=1),
        # logsumexp folds a maximum and a rescaled sum (a struct accumulator); its reference reads
        # dim=[] as every dim, as the op does (torch's raises). Each element adds an exp's rounding
        # (up to 2 ulps) to the sum's.
        Op("logsumexp", torch_reduce.ops._logsumexp, takes_dtype=False, dtypes=tuple(ALL_DTYPES),
           empty_result=-math.inf, exact=False, all_dims=(), rounding_budgets=4),
        # argmax and argmin: the index of the first largest (smallest) element, NaN the largest and
        # the smallest; exact. torch's take one dim (or none) and refuse bool.
        Op("argmax", torch_reduce.ops._REFERENCES["argmax"], takes_dtype=False, dtypes=tuple(FLOAT_DTYPES + INT_DTYPES),
           empty_result=None, exact=True, all_dims=None, differentiable=False, one_dim=True),
        Op("argmin", torch_reduce.ops._REFERENCES["argmin"], takes_dtype=False, dtypes=tuple(FLOAT_DTYPES + INT_DTYPES),
           empty_result=None, exact=True, all_dims=None, differentiable=False, one_dim=True),
    ]
}
ALL_OPS = list(OPS)
#: The ops whose floating results have a gradient (all but any and all).
GRAD_OPS = [name for name, op in OPS.items() if op.differentiable]
DTYPE_OPS = [name for name, op in OPS.items() if op.takes_dtype]


def reduce(op, x, dim=None, keepdim=False, **kwargs):
    """torch_reduce.<op>(x, dim, keepdim, **kwargs); dim=None (every dim) is left out of the call,
    the form every op's torch function takes."""
    fn = OPS[op].fn
    if dim is None:
        return fn(x, keepdim=keepdim, **kwargs) if keepdim else fn(x, **kwargs)
    return fn(x, dim, keepdim, **kwargs)


def torch_reference(op, x, dim=None, keepdim=False, dtype=None):
    """torch's own op (OPS[op].reference) with the same arguments (on the same device)."""
    spec = OPS[op]
    if not spec.takes_dtype:
        return spec.reference(x, spec.all_dims if dim is None else dim, keepdim)
    return spec.reference(x, dim, keepdim, dtype=dtype)


def gradient_reference_dim(op, dim):
    """dim for torch's op where its gradient or tangent is the reference: torch's var_backward
    and var_jvp count the elements of dim=[] as one (an infinite or NaN derivative) though its
    var reduces every dim, so dim=None, the same reduction, stands in for it."""
    return None if OPS[op].second_moment and isinstance(dim, (list, tuple)) and len(dim) == 0 else dim


def raw_dims(op, dim):
    """dim as the torch.ops overload takes it: a list, or the op's value for every dim."""
    if dim is None:
        return OPS[op].all_dims
    return list(dim) if isinstance(dim, (tuple, list)) else [dim]


def op_dtype_params(ops=ALL_OPS, dtypes=ALL_DTYPES):
    """(op, dtype) parameters, each op with those of `dtypes` it takes: ids like "mean-float32"."""
    return [pytest.param(op, dtype, id=f"{op}-{_id(dtype)}") for op in ops for dtype in dtypes
            if dtype in OPS[op].dtypes]


# --------------------------------------------------------------------------- #
# Names and inputs
# --------------------------------------------------------------------------- #
def _id(v):
    """A readable test id for a parameter: float32, (3,4), keepdim."""
    if isinstance(v, torch.dtype):
        return str(v).replace("torch.", "")
    if isinstance(v, str):
        return v
    return repr(v).replace(" ", "")


def shape_dim_ids(cases):
    """Test ids for (shape, dim) cases: "(3,4)-dim1"."""
    return [f"{_id(s)}-dim{_id(d)}" for s, d in cases]


def dtype_name_pattern(dtype):
    """A regex matching either name of a dtype in an error: torch's (complex64) or c10's (ComplexFloat)."""
    return "(?i)(" + "|".join(sorted({_id(dtype), C10_NAMES[dtype]})) + ")"


def unsupported_input(dtype, device, shape=(4, 5)):
    """A small tensor of a dtype the ops refuse (unsigned ones from integers, the rest from floats)."""
    x = torch.randint(1, 100, shape) if dtype in (torch.uint16, torch.uint32, torch.uint64) else torch.randn(shape)
    return x.to(dtype).to(device)
