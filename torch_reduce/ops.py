"""The Python face of the ops: documented wrappers with torch's signatures, and
the fake (meta) kernels that let them run under torch.compile."""
import operator
from typing import List, Optional, Sequence, Union

import torch

from . import _C
from . import _library  # noqa: F401
from . import selection as _selection

DimArg = Union[None, int, Sequence[int]]

# Looked up once: these wrappers are on the hot path of every call.
_sum = torch.ops.torch_reduce.sum.default
_mean = torch.ops.torch_reduce.mean.default
_amax = torch.ops.torch_reduce.amax.default
_amin = torch.ops.torch_reduce.amin.default
_is_compiling = torch.compiler.is_compiling

# The fast path (csrc/python_fast_path.cpp) takes the common call form,
# op(tensor, dim, keepdim), straight into the dispatcher; it returns
# NotImplemented for anything it does not take (a __torch_function__
# subclass, an active torch function mode, other argument types), and the
# torch.ops overload above handles those. torch.compile traces the torch.ops
# path: it cannot see into a C function.
_fast_sum = _C.sum
_fast_mean = _C.mean
_fast_amax = _C.amax
_fast_amin = _C.amin


def _dim_list(dim: DimArg) -> Optional[List[int]]:
    """dim as torch's reductions take it: None, an int, or a sequence of ints.

    Like torch: a bool is refused, and any other integer scalar (a numpy
    integer, a one-element integer tensor) is one dim. A sequence's elements
    are left to the op's schema, which takes what aten's does.
    """
    if dim is None:
        return None
    if isinstance(dim, bool):
        raise TypeError("dim must be an int or a sequence of ints, not bool")
    if isinstance(dim, int):
        return [dim]
    if hasattr(dim, "__index__"):
        return [operator.index(dim)]
    return list(dim)


def _reduces_all(input: torch.Tensor, dims: Optional[List[int]]) -> bool:
    return dims is None or len(dims) == 0 or len({d % max(input.dim(), 1) for d in dims}) == max(input.dim(), 1)


def sum(
    input: torch.Tensor,
    dim: DimArg = None,
    keepdim: bool = False,
    *,
    dtype: Optional[torch.dtype] = None,
    algorithm: Optional[str] = None,
) -> torch.Tensor:
    """Like torch.sum(input, dim, keepdim, dtype=dtype).

    `algorithm` picks a kernel of the reduction ladder (see torch_reduce.algorithms());
    when None, the default set by torch_reduce.use_algorithm applies to full
    reductions of CUDA tensors.
    """
    if dtype is None and algorithm is None and _selection.default is None and not _is_compiling():
        result = _fast_sum(input, dim, keepdim)
        if result is not NotImplemented:
            return result
    dims = _dim_list(dim)
    if algorithm is None and _selection.default is not None and input.is_cuda and _reduces_all(input, dims):
        algorithm = _selection.default
    if dtype is None and algorithm is None:
        return _sum(input, dims, keepdim)  # keyword arguments cost time in the binding
    return _sum(input, dims, keepdim, dtype=dtype, algorithm=algorithm)


def mean(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False, *, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Like torch.mean(input, dim, keepdim, dtype=dtype)."""
    if dtype is None and not _is_compiling():
        result = _fast_mean(input, dim, keepdim)
        if result is not NotImplemented:
            return result
    return _mean(input, _dim_list(dim), keepdim, dtype=dtype)


def amax(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """Like torch.amax(input, dim, keepdim): NaN propagates."""
    if not _is_compiling():
        result = _fast_amax(input, dim, keepdim)
        if result is not NotImplemented:
            return result
    return _amax(input, _dim_list(dim) or [], keepdim)


def amin(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """Like torch.amin(input, dim, keepdim): NaN propagates."""
    if not _is_compiling():
        result = _fast_amin(input, dim, keepdim)
        if result is not NotImplemented:
            return result
    return _amin(input, _dim_list(dim) or [], keepdim)


# Fake kernels: the output is always a new contiguous tensor; torch's own
# reductions on the fake input give its shape and dtype (and torch's errors).
def _like(reference: torch.Tensor) -> torch.Tensor:
    return reference.new_empty(reference.shape)


@torch.library.register_fake("torch_reduce::sum")
def _sum_fake(input, dim=None, keepdim=False, *, dtype=None, algorithm=None):
    return _like(torch.sum(input, dim, keepdim, dtype=dtype))


@torch.library.register_fake("torch_reduce::mean")
def _mean_fake(input, dim=None, keepdim=False, *, dtype=None):
    return _like(torch.mean(input, dim, keepdim, dtype=dtype))


@torch.library.register_fake("torch_reduce::amax")
def _amax_fake(input, dim=(), keepdim=False):
    return _like(torch.amax(input, dim, keepdim))


@torch.library.register_fake("torch_reduce::amin")
def _amin_fake(input, dim=(), keepdim=False):
    return _like(torch.amin(input, dim, keepdim))

# Autograd is registered in C++ (csrc/autograd.cpp): a Python autograd kernel
# would be entered on every call, gradient or not.
