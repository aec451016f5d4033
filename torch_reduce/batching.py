"""vmap batching rules: under torch.vmap each op makes one call on the batched
tensor, where torch's per-sample fallback would call it once per sample (and
warn of the cost).

Every op of the op list gets its rule from its schema: its arguments are
bound by name, dim and keepdim read, the rest (dtype, sum's algorithm,
vector_norm's ord) passed through. The rule
reduces the sample's dims as dims of the batch, the batch dim put first.
Registered from Python: a rule is entered only under vmap, so a plain call
costs no more. torch releases without torch.library.register_vmap (2.4) keep
the per-sample fallback."""
from typing import Callable, List, Optional, Sequence

import torch

from .ops import OPS, ONE_DIM_OPS, bind_arguments, reduces_no_dim


def _wrap_dim(dim: int, rank: int) -> int:
    """dim in [0, rank), with torch's error; a 0-dim sample takes 0 and -1, as torch's reductions do."""
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], but got {dim})")
    return dim % bound


def _batch_dims(dim: Optional[Sequence[int]], rank: int) -> List[int]:
    """The sample's reduced dims (every dim for None or []) as dims of the batch, whose dim 0 is the batch dim."""
    if not dim:
        return list(range(1, rank + 1))
    wrapped = [_wrap_dim(d, rank) for d in dim]
    for i, d in enumerate(wrapped):
        if d in wrapped[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return [d + 1 for d in wrapped]


def _make_rule(op: torch._ops.OpOverload, name: str) -> Callable:
    # An op that takes one dim (argmax: `int[1]?` with its kernels' rule) reduces every dim as
    # the flattened sample.
    one_dim = name in ONE_DIM_OPS
    # The batch dim of each result: a tuple for an op of several (var_mean's).
    results = len(op._schema.returns)
    batched, unbatched = (0 if results == 1 else (0,) * results), (None if results == 1 else (None,) * results)

    def rule(info, in_dims, self, *args, **named):
        kwargs = bind_arguments(op, args, named)
        dim, keepdim = kwargs.pop("dim"), kwargs.pop("keepdim")
        batch_dim = in_dims[0]
        if batch_dim is None:
            return op(self, dim=dim, keepdim=keepdim, **kwargs), unbatched
        batch = self.movedim(batch_dim, 0)
        if kwargs.get("algorithm") not in (None, "default"):
            # A ladder step reduces all of one tensor (csrc/cuda/ladder/): it has no batched form.
            return torch.stack([op(sample, dim=dim, keepdim=keepdim, **kwargs) for sample in batch.unbind(0)]), 0
        if reduces_no_dim(name, dim):
            # Each element on its own (any, all): the batch as it is.
            return op(batch, dim=dim, keepdim=keepdim, **kwargs), batched
        rank = batch.dim() - 1
        if one_dim and not dim and rank > 1:
            # Every dim of an op of one dim (argmax): the sample's elements in their order, as one.
            result = op(batch.flatten(1), dim=[1], keepdim=keepdim, **kwargs)
            return (result.view([batch.shape[0]] + [1] * rank) if keepdim else result), batched
        dims = _batch_dims(dim, rank)
        if rank == 0:
            # Each sample is one element: reduce it over a dim of size 1, so
            # that it still gets the op's result dtype (an int64 sum of int8).
            batch, dims, keepdim = batch.unsqueeze(1), [1], False
        return op(batch, dim=dims, keepdim=keepdim, **kwargs), batched

    return rule


_register_vmap = getattr(torch.library, "register_vmap", None)
if _register_vmap is not None:
    for _name in OPS:
        _op = getattr(torch.ops.torch_reduce, _name).default
        _register_vmap(_op, _make_rule(_op, _name))
