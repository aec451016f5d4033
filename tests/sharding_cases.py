"""The cases of tests/test_sharding.py, and what each one checks, on every rank of a process group.

A case is one call of an op on a DTensor: its placements (one per mesh dim: "S<d>" for Shard(d),
"R" for Replicate, "P" for a Partial("sum") input), shape, dims, keepdim, dtype and call form.
Every rank holds the same full tensor (seeded from the case id), distributes it, calls the op and
checks:
- "values": the result's placements are those the rules promise (a shard on a kept dim stays a
  shard, its index shifted where keepdim=False; a shard on a reduced dim gives Partial of the op's
  own reduction; replicated stays replicated), and its full_tensor() is torch's op on the full
  tensor (conftest.assert_matches_reference: exact for amax, amin and integers, a tolerance for
  floating sums and means); on the CPU, a result with no Partial has the bits the op gives on one
  device;
- "gradients": the gradient of a sharded call, through full_tensor() and backward, equals the
  gradient of torch's op on the full tensor.
"""
import dataclasses
import math
import zlib
from typing import Optional, Tuple

import torch
import torch.distributed as dist

from cases import GRAD_OPS, OPS, _id, raw_dims, reduce, torch_reference
from conftest import assert_matches_reference, make_tensor

#: The Partial each op's results over a sharded reduced dim are (mean: each rank's share of it;
#: the 2-norm: DTensor's partial norm, x^2 added, then the root); None: no collective combines
#: the ranks' results (var, std, logsumexp), and DTensor redistributes the input first.
PARTIAL_OF = {"sum": "sum", "mean": "sum", "amax": "max", "amin": "min", "prod": "product", "any": "max", "all": "min",
              "vector_norm": "2-norm", "vector_norm_inf": "max", "var": None, "std": None, "logsumexp": None,
              "var_mean": None, "std_mean_mean": None, "argmax": None, "argmin": None}


def _torch_takes(op, dtype, dtype_argument):
    """Whether torch's op takes an input of `dtype` with dtype=`dtype_argument` (mean takes int8
    with dtype=float64; vector_norm takes no integer input)."""
    try:
        torch_reference(op, torch.ones(2, 2, dtype=dtype), 0, dtype=dtype_argument)
    except RuntimeError:
        return False
    return True


def _partial(op):
    from torch.distributed.tensor import Partial

    if PARTIAL_OF[op] == "2-norm":
        from torch.distributed.tensor._ops._math_ops import _NormPartial

        return _NormPartial(2)
    return Partial(PARTIAL_OF[op])
#: dtype= arguments: (input dtype, dtype=) for the ops that take it.
DTYPE_ARGUMENTS = [(torch.float16, torch.float32), (torch.bfloat16, torch.float64), (torch.int8, torch.float64)]
#: Results no collective of gloo or NCCL carries (their full_tensor() cannot be gathered).
UNCARRIED_DTYPES = {torch.int16}


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    placements: Tuple[str, ...]
    shape: Tuple[int, ...] = (5, 4, 3)  # dim 0 splits 3/2 over 2 ranks, dim 1 2/2, dim 2 2/1
    dim: object = None
    keepdim: bool = False
    dtype: torch.dtype = torch.float32
    dtype_argument: Optional[torch.dtype] = None
    call: str = "wrapper"  # torch_reduce.<op>, or "torch.ops": torch.ops.torch_reduce.<op>
    kind: str = "values"  # or "gradients"
    mesh_shape: Tuple[int, ...] = (2,)

    def __str__(self) -> str:
        parts = [self.op, "x".join(self.placements), _id(self.shape), f"dim{_id(self.dim)}",
                 "keepdim" if self.keepdim else "nokeep", _id(self.dtype)]
        if self.dtype_argument is not None:
            parts.append(f"dtype={_id(self.dtype_argument)}")
        if self.call != "wrapper":
            parts.append(self.call)
        if self.mesh_shape != (2,):
            parts.insert(0, "mesh" + "x".join(map(str, self.mesh_shape)))
        return "-".join(parts)


def _carried(op, dtype):
    """Whether the collectives carry what a case of op on dtype moves: its result, and its input
    where DTensor gathers that first (an op without a partial result: logsumexp of int16)."""
    moved = {torch_reference(op, torch.ones(1, dtype=dtype)).dtype}
    if PARTIAL_OF[op] is None:
        moved.add(dtype)
    return not moved & UNCARRIED_DTYPES


def _value_cases():
    grid = [Case(op, (p,), dim=dim, keepdim=keepdim) for op in OPS for p in ("S0", "S1", "S2", "R")
            for dim in (None, 0, 1, -1, (0, 2)) for keepdim in (False, True)]
    dtypes = [Case(op, ("S0",), dim=dim, dtype=dtype) for op in OPS for dtype in OPS[op].dtypes for dim in (0, 1)
              if _carried(op, dtype)]
    dtype_arguments = [Case(op, ("S0",), dim=dim, dtype=dtype, dtype_argument=to) for op in OPS if OPS[op].takes_dtype
                       for dtype, to in DTYPE_ARGUMENTS for dim in (0, 1) if _torch_takes(op, dtype, to)]
    torch_ops = [Case(op, (p,), dim=dim, call="torch.ops") for op in OPS for p in ("S0", "S2")
                 for dim in (None, 0, (0, 2))]
    # Dim 0 is one element: DTensor gathers it (it shards no dim over more ranks than elements).
    short_dims = [Case(op, ("S0",), shape=(1, 4), dim=dim, keepdim=keepdim) for op in OPS for dim in (None, 0, 1)
                  for keepdim in (False, True)]
    partial_inputs = [Case(op, ("P",), dim=dim) for op in OPS for dim in (None, 0, (1, 2))]
    return grid + dtypes + dtype_arguments + torch_ops + short_dims + partial_inputs


def _gradient_cases():
    return [Case(op, (p,), dim=dim, dtype=torch.float64, call=call, kind="gradients") for op in GRAD_OPS
            for p in ("S0", "S1", "R") for dim in (None, 0, (0, 2)) for call in ("wrapper", "torch.ops")
            if call == "wrapper" or p == "S0"]


def _four_rank_cases():
    # On a 2x2 mesh: a dim sharded on both mesh dims (dim 0, of 3 elements, fewer than the 4
    # ranks: DTensor gathers it; dim 1 of 6), kept and reduced.
    placements = [("S0", "S1"), ("S1", "S1"), ("R", "S2"), ("S2", "R"), ("S0", "S0")]
    mesh_2d = [Case(op, p, shape=(3, 6, 5), dim=dim, mesh_shape=(2, 2)) for op in OPS for p in placements
               for dim in (None, 0, (1, 2))]
    gradients = [Case(op, ("S0", "S1"), shape=(3, 6, 5), dim=1, dtype=torch.float64, kind="gradients",
                      mesh_shape=(2, 2)) for op in GRAD_OPS]
    # 5 over 4 ranks splits 2, 2, 1, 0: rank 3 holds none of dim 0.
    empty_shards = [Case(op, ("S0",), shape=(5, 3), dim=dim, keepdim=keepdim, mesh_shape=(4,)) for op in OPS
                    for dim in (None, 0, 1) for keepdim in (False, True)]
    return mesh_2d + gradients + empty_shards


#: The cases of each process group, by its number of ranks.
CASES = {2: [c for c in _value_cases() + _gradient_cases() if OPS[c.op].takes(c.dim)],
         4: [c for c in _four_rank_cases() if OPS[c.op].takes(c.dim)]}


# --------------------------------------------------------------------------- #
# What a rank checks
# --------------------------------------------------------------------------- #
def _placement(name: str):
    from torch.distributed.tensor import Partial, Replicate, Shard

    return {"R": Replicate(), "P": Partial("sum")}.get(name) or Shard(int(name[1:]))


def _reduced_dims(case):
    ndim = len(case.shape)
    dims = range(ndim) if case.dim is None else [case.dim] if isinstance(case.dim, int) else case.dim
    return {d % ndim for d in dims}


def _shards(piece, parts):
    """torch.chunk's split, as Shard splits: `parts` pieces, the last ones short or empty."""
    chunks = list(piece.chunk(parts)) if len(piece) else []
    return chunks + [piece[:0]] * (parts - len(chunks))


def _some_rank_holds_none(case, dim):
    """Whether the mesh dims that shard `dim`, one after the other, leave a rank none of it."""
    pieces = [torch.arange(case.shape[dim])]
    for mesh_size, p in zip(case.mesh_shape, case.placements):
        if p == f"S{dim}":
            pieces = [shard for piece in pieces for shard in _shards(piece, mesh_size)]
    return any(len(piece) == 0 for piece in pieces)


def expected_placements(case):
    """The result's placement on each mesh dim, or None where DTensor picks how the input is
    redistributed first: a Partial input, a dim shorter than the ranks sharding it (DTensor
    shards none), amax/amin of a reduced dim a rank would hold none of (the rule asks for it
    whole), a sharded reduced dim of an op without a partial result (var)."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    reduced = _reduced_dims(case)
    expected = []
    for p in case.placements:
        if p == "R":
            expected.append(Replicate())
            continue
        if p == "P":
            return None
        d = int(p[1:])
        ranks = math.prod(size for size, q in zip(case.mesh_shape, case.placements) if q == p)
        if case.shape[d] < ranks:
            return None
        if d not in reduced:
            expected.append(Shard(d if case.keepdim else d - sum(r < d for r in reduced)))
        elif OPS[case.op].empty_raises and _some_rank_holds_none(case, d):
            return None
        elif PARTIAL_OF[case.op] is None:
            return None  # no partial result: DTensor picks which dim to gather or move
        else:
            expected.append(_partial(case.op))
    return expected


def _distribute(x, mesh, case):
    from torch.distributed.tensor import DTensor, distribute_tensor

    if case.placements == ("P",):  # rank 0 holds the whole tensor, the others zeros: their sum is x
        local = x if dist.get_rank() == 0 else torch.zeros_like(x)
        return DTensor.from_local(local, mesh, [_placement("P")])
    # Every rank holds the same x: no scatter from rank 0 (which gloo cannot do for int16).
    return distribute_tensor(x, mesh, [_placement(p) for p in case.placements], src_data_rank=None)


def _call(case, x):
    kwargs = {} if case.dtype_argument is None else {"dtype": case.dtype_argument}
    if case.call == "torch.ops":
        return OPS[case.op].raw(x, raw_dims(case.op, case.dim), case.keepdim, **kwargs)
    return reduce(case.op, x, case.dim, case.keepdim, **kwargs)


def check(case, mesh):
    """Raises on the first thing that differs from the case's promise on this rank."""
    torch.manual_seed(zlib.crc32(str(case).encode()))
    device = mesh.device_type
    if case.kind == "gradients" and OPS[case.op].exact:  # ties, spread over both ranks
        x = torch.randint(0, 3, case.shape).to(case.dtype)
    else:
        x = make_tensor(case.shape, case.dtype)
    x = x.to(device)
    sharded = _distribute(x, mesh, case)
    if case.kind == "values":
        result = _call(case, sharded)
        expected = expected_placements(case)
        placements = list(result.placements)
        assert expected is None or placements == expected, f"placements {placements}, expected {expected}"
        # Each rank's part of a Partial is rounded to the result's dtype before the collective
        # adds them up: one more rounding per rank, of at most the reduction of |x|.
        rel_factor = 8.0
        if result.dtype.is_floating_point and any(p.is_partial() for p in placements):
            accumulate = torch.float64 if result.dtype == torch.float64 else torch.float32
            rel_factor += math.prod(case.mesh_shape) * torch.finfo(result.dtype).eps / torch.finfo(accumulate).eps
        whole = result.full_tensor()
        assert_matches_reference(whole, x, case.op, case.dim, case.keepdim, case.dtype_argument, rel_factor=rel_factor)
        # A reduced dim that DTensor gathers first (var's) may come back as a view of another
        # layout, whose bits are the op's on that layout.
        gathered = PARTIAL_OF[case.op] is None and any(p[0] == "S" and int(p[1:]) in _reduced_dims(case)
                                                       for p in case.placements)
        if device == "cpu" and not any(p.is_partial() for p in placements) and not gathered:
            # Batch invariance: each rank reduces its shard's rows as one device reduces them.
            # (On CUDA, rows also keep their alignment's vectorisation, which a shard may shift.)
            torch.testing.assert_close(whole, _call(case, x), rtol=0, atol=0, equal_nan=True,
                                       msg="not the bits of the op on the whole tensor")
    else:
        sharded.requires_grad_()
        result = _call(case, sharded)
        weights = make_tensor(result.shape, result.dtype, device)
        (result.full_tensor() * weights).sum().backward()
        full = x.clone().requires_grad_()
        (torch_reference(case.op, full, case.dim, case.keepdim) * weights).sum().backward()
        torch.testing.assert_close(sharded.grad.full_tensor(), full.grad)
