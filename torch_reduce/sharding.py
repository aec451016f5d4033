"""DTensor sharding rules for every op of the op list (torch.distributed.tensor).

DTensor runs an op on each rank's shard; an op's rule says which input placements it
takes, for one mesh dim, and what the results then are (register_sharding):
- a shard on a kept dim stays a shard of that dim (its index shifted where keepdim=False
  drops reduced dims before it);
- a shard on a reduced dim gives Partial(COMBINE[op].partial): each rank holds its shard's
  reduction, and the collective combines them with the op's own reduction (vector_norm's
  depends on its ord: DTensor's own partial norm for a p-norm);
- a replicated input gives a replicated result.
DTensor redistributes any other placement (a Partial input) before the op.

COMBINE is the one table: an op of the op list gets its rule from its entry. mean is the op
whose rank-local result over a sharded reduced dim is not the op's own: the mean of each
shard, averaged, weighs the ranks' elements unequally where the dim does not split evenly.
Its entry's local part (the shard's sum over the global count, combined by Partial("sum"))
runs in a handler on DTensor's dispatcher, which takes the placements from the same rule.

Registration waits for torch.distributed.tensor to be imported (importing it would add about
half a second to every import of torch_reduce), and is skipped on a torch without the API.
"""
import dataclasses
import importlib.abc
import importlib.machinery
import itertools
import math
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .ops import OPS, bind_arguments, reduces_no_dim


def _sum_over_count(shard, dim=None, keepdim=False, *, count, out_dtype, dtype=None):
    """mean's part on one rank: its shard's sum, accumulated as mean accumulates, over the
    global count, so that the ranks' parts add up to the mean however the dim is split."""
    accumulate = torch.float64 if out_dtype == torch.float64 else torch.float32
    return (torch.ops.torch_reduce.sum.default(shard, dim, keepdim, dtype=accumulate) / count).to(out_dtype)


@dataclasses.dataclass(frozen=True)
class Combine:
    """How an op's results on the shards of a sharded reduced dim make the whole result."""

    #: The collective that combines the ranks' results: the result is Partial(partial), or
    #: partial(<the call's arguments by name>) where it is a function (vector_norm's).
    partial: Union[str, Callable]
    #: A rank may hold an empty shard of a reduced dim (a sum of nothing is 0). False where
    #: the op raises on an empty reduction (amax, amin): the rule then takes that dim sharded
    #: only where every rank holds some of it. A function of the call's arguments where that
    #: depends on them (vector_norm's ord).
    empty_shard_ok: Union[bool, Callable]
    #: A rank's result where it is not the op's own on its shard (mean's), called as
    #: local_part(shard, *args, count=<elements reduced in all>, out_dtype=..., **kwargs).
    local_part: Optional[Callable] = None


def _norm_partial(arguments: dict):
    """How the ranks' norms of their shards make the norm: the largest, the smallest, the
    count of nonzeros added, or DTensor's partial p-norm (x^p added, then x^(1/p)), as
    DTensor combines torch.linalg.vector_norm's; None on a torch without that placement."""
    from torch.distributed.tensor import Partial

    p = float(arguments["ord"])
    if math.isinf(p):
        return Partial("max" if p > 0 else "min")
    if p == 0:
        return Partial("sum")
    try:
        from torch.distributed.tensor._ops._math_ops import _NormPartial
    except ImportError:
        return None
    return _NormPartial(p)


COMBINE: Dict[str, Combine] = {
    "sum": Combine("sum", empty_shard_ok=True),
    "mean": Combine("sum", empty_shard_ok=True, local_part=_sum_over_count),
    "amax": Combine("max", empty_shard_ok=False),
    "amin": Combine("min", empty_shard_ok=False),
    "prod": Combine("product", empty_shard_ok=True),
    "any": Combine("max", empty_shard_ok=True),
    "all": Combine("min", empty_shard_ok=True),
    # ord < 0 and ord = +-inf raise on an empty reduction.
    "vector_norm": Combine(_norm_partial, empty_shard_ok=lambda arguments: 0 <= float(arguments["ord"]) < math.inf),
    # No placement combines the ranks' variances (each a mean and M2): a shard of a reduced
    # dim is gathered before the op.
    "var": Combine(lambda arguments: None, empty_shard_ok=True),
    "std": Combine(lambda arguments: None, empty_shard_ok=True),
    "var_mean": Combine(lambda arguments: None, empty_shard_ok=True),
    "std_mean": Combine(lambda arguments: None, empty_shard_ok=True),
    # Nor do they pick among their indices (each relative to its own shard).
    "argmax": Combine(lambda arguments: None, empty_shard_ok=False),
    "argmin": Combine(lambda arguments: None, empty_shard_ok=False),
    # Nor do they add their logsumexps (each a maximum and a scaled sum).
    "logsumexp": Combine(lambda arguments: None, empty_shard_ok=True),
}


def _overload(name: str):
    return getattr(torch.ops.torch_reduce, name).default


@dataclasses.dataclass(frozen=True)
class _Call:
    """One call of an op on a DTensor of `shape` and `dtype`, as its rule needs it."""

    name: str
    shape: Tuple[int, ...]
    reduced: Tuple[int, ...]  # ascending
    keepdim: bool
    result: torch.Tensor  # on the meta device: the result's shape, stride and dtype
    arguments: dict = dataclasses.field(compare=False)  # every argument after self, by name

    @classmethod
    def of(cls, name: str, shape: Sequence[int], dtype: torch.dtype, args: tuple, kwargs: dict) -> "_Call":
        op = _overload(name)
        # The op's fake kernel gives the result (and torch's errors for bad arguments).
        result = op(torch.empty(shape, dtype=dtype, device="meta"), *args, **kwargs)
        bound = bind_arguments(op, args, kwargs)
        ndim = len(shape)
        dims = bound["dim"]
        if reduces_no_dim(name, dims):
            reduced = ()
        else:
            reduced = range(ndim) if not dims else {d % ndim for d in dims} if ndim else ()
        return cls(name, tuple(shape), tuple(sorted(reduced)), bool(bound["keepdim"]), result, bound)

    @property
    def count(self) -> int:
        """The elements reduced into each output."""
        return math.prod(self.shape[d] for d in self.reduced)

    def rule(self, mesh_shape: Sequence[int]) -> List[tuple]:
        """(output placement, input placement) pairs the op takes on one mesh dim."""
        from torch.distributed.tensor import Partial, Replicate, Shard

        combine = COMBINE[self.name]
        partial = combine.partial(self.arguments) if callable(combine.partial) else Partial(combine.partial)
        empty_shard_ok = combine.empty_shard_ok
        if callable(empty_shard_ok):
            empty_shard_ok = empty_shard_ok(self.arguments)
        pairs = [(Replicate(), Replicate())]
        for d in range(len(self.shape)):
            if d not in self.reduced:
                pairs.append((Shard(d if self.keepdim else d - sum(r < d for r in self.reduced)), Shard(d)))
            elif partial is not None and (empty_shard_ok or _every_rank_holds_some(self.shape[d], mesh_shape)):
                pairs.append((partial, Shard(d)))
        return pairs


def _chunk_sizes(size: int, parts: int) -> List[int]:
    """torch.chunk's split, which Shard uses: pieces of ceil(size / parts), the last ones
    shorter or empty."""
    piece = -(-size // parts)
    return [max(0, min(piece, size - i * piece)) for i in range(parts)]


def _every_rank_holds_some(size: int, mesh_shape: Sequence[int]) -> bool:
    """Whether a dim of `size` leaves no rank an empty shard, whichever mesh dims shard it (a
    shard of a shard, in mesh dim order). DTensor itself shards no dim over more ranks than it
    has elements, so those shardings are not asked about."""
    for count in range(1, len(mesh_shape) + 1):
        for sharding in itertools.combinations(mesh_shape, count):
            if math.prod(sharding) > size:
                continue
            pieces = [size]
            for parts in sharding:
                pieces = [p for piece in pieces for p in _chunk_sizes(piece, parts)]
            if 0 in pieces:
                return False
    return True


def _acceptable_shardings(name: str) -> Callable:
    """The op's rule in register_sharding's form: (output placements, input placements) pairs."""

    results = len(_overload(name)._schema.returns)  # each takes the same placement (var_mean's two)

    def acceptable_shardings(self, *args, **kwargs):
        call = _Call.of(name, self.shape, self.tensor_meta.dtype, args, kwargs)
        return [([output] * results, [given]) for output, given in call.rule(self.mesh.shape)]

    return acceptable_shardings


def _dispatch_with_local_part(name: str) -> Callable:
    """A DTensor dispatcher handler for an op with a local part: the placements its rule
    gives, the local part where a reduced dim is sharded, the op itself elsewhere."""
    from torch.distributed.tensor import DTensor, Replicate

    local_part = COMBINE[name].local_part

    def handler(op_call, args, kwargs):
        x, rest = args[0], args[1:]
        mesh = x.device_mesh
        call = _Call.of(name, x.shape, x.dtype, rest, kwargs)
        output_of = {given: output for output, given in call.rule(mesh.shape)}
        placements = [p if p in output_of else Replicate() for p in x.placements]
        if placements != list(x.placements):
            x = x.redistribute(mesh, placements)
        outputs = [output_of[p] for p in placements]
        shard = x.to_local()
        if any(p.is_partial() for p in outputs):
            local = local_part(shard, *rest, count=call.count, out_dtype=call.result.dtype, **kwargs)
        else:
            local = op_call(shard, *rest, **kwargs)
        return DTensor.from_local(local, mesh, outputs, shape=call.result.shape, stride=call.result.stride())

    return handler


def _register() -> None:
    """Registers every op's rule with DTensor (those of ops missing from COMBINE are left
    out: tests/test_sharding.py names them)."""
    try:
        from torch.distributed.tensor import DTensor
        from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
        from torch.distributed.tensor.experimental import register_sharding
    except ImportError:
        return  # a torch without DTensor's registration API (before 2.5)
    dispatcher = DTensor._op_dispatcher
    propagator = dispatcher.sharding_propagator
    for name in OPS:
        if name not in COMBINE:
            continue
        op = _overload(name)
        register_sharding(op)(_acceptable_shardings(name))
        # register_sharding hashes a call's arguments into its cache key from the first int
        # argument on; ours have none before dtype, so dim and keepdim would be left out (a
        # sum over dim 1 would reuse the sharding of one over dim 0). The same strategy again,
        # with every argument after the tensor in the key:
        kwarg_only = [a.name for a in op._schema.arguments if a.kwarg_only]
        propagator.register_op_strategy(
            op, propagator.op_strategy_funcs[op], RuntimeSchemaInfo(1, kwarg_only or None, needs_pytree=True)
        )
        if COMBINE[name].local_part is not None:
            dispatcher._custom_op_handlers[op] = _dispatch_with_local_part(name)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Runs _register once torch.distributed.tensor has been imported, by whoever imports it."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "torch.distributed.tensor":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def exec_then_register(module):
                exec_module(module)
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                _register()

            spec.loader.exec_module = exec_then_register
        return spec


if "torch.distributed.tensor" in sys.modules:
    _register()
elif torch.distributed.is_available():
    sys.meta_path.insert(0, _RegisterOnImport())
