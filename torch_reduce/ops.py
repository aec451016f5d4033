"""The Python face of the ops: wrappers with torch's signatures, and the fake
(meta) kernels that let them run under torch.compile.

Every op of the C++ op list (csrc/op_list.h) gets both from its schema: a
wrapper `torch_reduce.<name>` that tries the fast path first, and a fake
kernel that asks torch's own reduction of the same name for the output's
shape and dtype. `sum` (for the ladder's `algorithm`) and `vector_norm` (whose
`ord` comes before `dim`, as in torch.linalg.vector_norm) are written out."""
import inspect
import operator
from typing import Callable, Dict, List, Optional, Sequence, Union

import torch

from . import _C
from . import _library  # noqa: F401
from . import selection as _selection

DimArg = Union[None, int, Sequence[int]]

_is_compiling = torch.compiler.is_compiling


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


def _prod(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False, *, dtype=None) -> torch.Tensor:
    """torch.prod over any dims, as the op takes them: torch's own takes one dim or every dim."""
    if dtype == torch.bool and input.dtype != torch.bool:
        # Every element nonzero, as the op computes it: torch 2.4's prod(dtype=torch.bool) of
        # 500 int8 values gave True with zeros among them.
        return _prod(input.to(torch.bool), dim, keepdim).to(torch.bool)
    dims = _dim_list(dim)
    if not dims:
        result = torch.prod(input, dtype=dtype)
        return result.reshape([1] * input.dim()) if keepdim else result
    # torch.sum's checks of the dims (range, repeats) and their errors.
    torch.sum(torch.empty(input.shape, device="meta"), dims)
    wrapped = sorted({d % max(input.dim(), 1) for d in dims}, reverse=True)
    result = input
    for d in wrapped:
        result = torch.prod(result, d, keepdim=True, dtype=dtype)
    return result if keepdim or input.dim() == 0 else result.squeeze(tuple(wrapped))


def _logsumexp(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """torch.logsumexp, with dim=[] reducing every dim: torch's raises for it on a tensor of a dim
    or more (its output is shaped for no dim, its result for every dim)."""
    dims = _dim_list(dim)
    return torch.logsumexp(input, dims if dims else list(range(input.dim())), keepdim)


def _std_mean(input: torch.Tensor, dim: DimArg = None, *, keepdim: bool = False, correction: float = 1):
    """torch.std_mean, as the root of torch.var_mean's variance: on fake tensors of symbolic sizes
    (torch.export's dynamic shapes) torch 2.14's own reaches a decomposition that takes keepdim by
    name with it given by position, and raises."""
    var, mean = torch.var_mean(input, dim, keepdim=keepdim, correction=correction)
    return var.sqrt(), mean


def _arg_extremum(reference: Callable) -> Callable:
    """torch.argmax (argmin) of dim as the op takes it: None, an int, or a list of one int."""

    def call(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False) -> torch.Tensor:
        dims = _dim_list(dim)
        if dims is not None and len(dims) != 1:
            if dims:
                raise TypeError(f"{reference.__name__}(): argument 'dim' must be int, not a list of {len(dims)}")
            dims = None
        return reference(input, None if dims is None else dims[0], keepdim)

    return call


#: torch's ops that do not take the arguments of the op of the same name.
_REFERENCES: Dict[str, Callable] = {"prod": _prod, "logsumexp": _logsumexp, "std_mean": _std_mean,
                                     "argmax": _arg_extremum(torch.argmax), "argmin": _arg_extremum(torch.argmin)}


def _reference(name: str) -> Callable:
    """torch's op of the same name: what the wrappers promise to behave like."""
    return _REFERENCES.get(name) or getattr(torch, name, None) or getattr(torch.linalg, name)


def _op_names() -> List[str]:
    """The ops of the op list (sorted): the fast path has one function per op."""
    return [name for name in dir(_C) if not name.startswith("_") and hasattr(torch.ops.torch_reduce, name)]


def _make_wrapper(name: str) -> Callable:
    """torch_reduce.<name>(input, dim, keepdim, *, <the schema's other arguments>)."""
    op = getattr(torch.ops.torch_reduce, name).default
    fast = getattr(_C, name)
    arguments = {a.name: a for a in op._schema.arguments}
    dim_optional = isinstance(arguments["dim"].type, torch.OptionalType)
    dim_default = None if dim_optional else ()
    keepdim_positional = not arguments["keepdim"].kwarg_only
    extra = [a for a in op._schema.arguments if a.name not in ("self", "dim", "keepdim")]

    def wrapper(input: torch.Tensor, dim: DimArg = dim_default, keepdim: bool = False, **kwargs) -> torch.Tensor:
        # The common form takes the fast path (csrc/python_fast_path.cpp); it
        # returns NotImplemented for what it does not take (a
        # __torch_function__ subclass, a torch function mode, other argument
        # types), which the torch.ops overload handles. torch.compile traces
        # the torch.ops path: it cannot see into a C function.
        if not _is_compiling() and (not kwargs or all(v is None for v in kwargs.values())):
            result = fast(input, dim, keepdim)
            if result is not NotImplemented:
                return result
        dims = _dim_list(dim)
        if dims is None and not dim_optional:
            dims = []
        if keepdim_positional:
            return op(input, dims, keepdim, **kwargs)
        return op(input, dims, keepdim=keepdim, **kwargs)

    if not keepdim_positional:
        # keepdim by name only, as torch's op takes it (torch.var(x, 1, True) is unbiased=True).
        keepdim_or_not = wrapper

        def wrapper(input: torch.Tensor, dim: DimArg = dim_default, *, keepdim: bool = False, **kwargs):
            return keepdim_or_not(input, dim, keepdim, **kwargs)

    keepdim_kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if keepdim_positional else inspect.Parameter.KEYWORD_ONLY
    parameters = [
        inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("dim", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=dim_default),
        inspect.Parameter("keepdim", keepdim_kind, default=False),
    ] + [inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=a.default_value) for a in extra]
    wrapper.__signature__ = inspect.Signature(parameters)
    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"Like torch.{name}{wrapper.__signature__}, computed by torch.ops.torch_reduce.{name}."
    return wrapper


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


# Looked up once: sum is on the hot path of every call.
_sum = torch.ops.torch_reduce.sum.default
_fast_sum = _C.sum


def vector_norm(
    input: torch.Tensor,
    ord: float = 2,
    dim: DimArg = None,
    keepdim: bool = False,
    *,
    dtype: Optional[torch.dtype] = None,
) -> torch.Tensor:
    """Like torch.linalg.vector_norm(input, ord, dim, keepdim, dtype=dtype)."""
    if dtype is None and isinstance(ord, (int, float)) and ord == 2 and not _is_compiling():
        result = _fast_vector_norm(input, dim, keepdim)
        if result is not NotImplemented:
            return result
    return _vector_norm(input, ord, _dim_list(dim), keepdim, dtype=dtype)


_vector_norm = torch.ops.torch_reduce.vector_norm.default
_fast_vector_norm = _C.vector_norm


# Fake kernels: the output is always a new contiguous tensor; torch's own
# reductions on the fake input give its shape and dtype (and torch's errors).
def _like(reference):
    if isinstance(reference, tuple):
        return tuple(r.new_empty(r.shape) for r in reference)
    return reference.new_empty(reference.shape)


def _register_fake(name: str) -> None:
    reference = _reference(name)

    def fake(input, *args, algorithm=None, **kwargs):  # `algorithm` is the ladder's, not torch's
        return _like(reference(input, *args, **kwargs))

    torch.library.register_fake(f"torch_reduce::{name}")(fake)


OPS: List[str] = _op_names()
#: The ops for which dim=[] reduces nothing, each element on its own (torch.any, torch.all);
#: for the others it reduces every dim, as for torch.sum.
EMPTY_DIMS_REDUCE_NOTHING = frozenset(torch.ops.torch_reduce.empty_dims_reduce_nothing())


#: The ops that reduce one dim or every dim (argmax, argmin), whose every dim is the flattened input.
ONE_DIM_OPS = frozenset(torch.ops.torch_reduce.one_dim_ops())


def reduces_no_dim(name: str, dim: Optional[Sequence[int]]) -> bool:
    """Whether op `name` called with `dim` (as its schema takes it) reduces no dim."""
    return dim is not None and len(dim) == 0 and name in EMPTY_DIMS_REDUCE_NOTHING


def bind_arguments(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict:
    """A call's arguments after self, by name, with the schema's defaults for those left out
    (the dispatcher leaves out trailing arguments equal to their defaults)."""
    arguments = op._schema.arguments[1:]
    bound = {a.name: a.default_value for a in arguments}
    bound.update(zip((a.name for a in arguments), args), **kwargs)
    return bound


_WRITTEN_OUT = {"sum": sum, "vector_norm": vector_norm}
WRAPPERS: Dict[str, Callable] = {name: _WRITTEN_OUT.get(name) or _make_wrapper(name) for name in OPS}
for _name in OPS:
    _register_fake(_name)

# Autograd is registered in C++ (csrc/autograd.cpp): a Python autograd kernel
# would be entered on every call, gradient or not.
