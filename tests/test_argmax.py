"""torch_reduce.argmax and argmin: torch's results exactly, in every dtype torch takes and every
layout: the first index of the largest (smallest) value, NaN counting as the largest and the
smallest, however the kernels split and order the fold."""
import math

import pytest
import torch

import torch_reduce
from cases import _id

OPS = {"argmax": (torch_reduce.argmax, torch.argmax), "argmin": (torch_reduce.argmin, torch.argmin)}
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64]
#: Rows, columns and full reductions, short and long, of prime lengths too: the CPU's lanes and
#: blocks, and on CUDA the row, split-row, packed-row and column kernels and their passes.
SHAPES = [(7,), (3, 5), (33, 1000), (1000, 33), (5, 7, 9), (2, 100_003), (100_003, 3), (4099, 257), (9, 2, 6151)]


def _with_ties(shape, dtype, device):
    """Values drawn from few levels, so that every output has ties (and integers wrap nothing)."""
    levels = torch.randint(-6, 7, shape)
    x = levels.to(dtype) if dtype.is_floating_point else levels.clamp(min=0 if dtype == torch.uint8 else -6).to(dtype)
    return x.to(device)


def _check(op, x, dim, keepdim=False):
    ours, theirs = OPS[op]
    actual = ours(x, dim, keepdim) if dim is not None else ours(x, keepdim=keepdim)
    expected = theirs(x, dim, keepdim) if dim is not None else theirs(x, keepdim=keepdim)
    assert actual.dtype == torch.int64 and actual.shape == expected.shape
    assert torch.equal(actual.cpu(), expected.cpu()), f"{op} over {dim} of {tuple(x.shape)} {x.dtype}"


@pytest.mark.parametrize("dtype", DTYPES, ids=_id)
@pytest.mark.parametrize("op", OPS)
def test_first_index_of_ties_as_torch(op, dtype, device):
    for shape in SHAPES:
        x = _with_ties(shape, dtype, device)
        for dim in [None] + list(range(len(shape))) + [-1]:
            _check(op, x, dim)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8, torch.int64], ids=_id)
@pytest.mark.parametrize("op", OPS)
def test_first_of_two_equal_extremes_as_torch(op, dtype, device):
    """Each output's extreme appears exactly twice, at random places: whichever thread, accumulator,
    block or pass meets the later one first, the earlier index wins."""
    generator = torch.Generator().manual_seed(63)
    for shape in SHAPES + [(3_000_017,), (4, 1_000_003)]:
        for dim in range(len(shape)):
            length = shape[dim]
            if length < 2:
                continue
            moved = list(shape)
            moved.append(moved.pop(dim))
            x = torch.randint(-50, 50, moved, generator=generator)
            extreme = 100 if op == "argmax" else -100
            rows = x.view(-1, length)
            places = torch.rand(rows.shape[0], length, generator=generator).argsort(dim=1)[:, :2]
            rows.scatter_(1, places, extreme)
            x = x.movedim(-1, dim).to(dtype).to(device)
            _check(op, x, dim)
            _check(op, x.contiguous(), dim)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "misaligned", "strided"])
def test_layouts_as_torch(op, layout, device):
    """Views read in place (or copied) give the indices of the view's own order."""
    base = _with_ties((61, 1031), torch.float32, device)
    x = {
        "transposed": base.t(),
        "sliced": base[3:, 5:900],
        "expanded": base[:, :1].expand(61, 1031),
        "misaligned": base.flatten()[1:62 * 1000 + 1].view(62, 1000),
        "strided": base[:, ::3],
    }[layout]
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            _check(op, x, dim, keepdim)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=_id)
@pytest.mark.parametrize("op", OPS)
def test_nan_and_infinities_as_torch(op, dtype, device):
    """The first NaN wins for both ops; infinities are values like any other."""
    x = torch.randn(6, 5003, dtype=torch.float64)
    x[1, 4000], x[1, 17] = math.nan, math.nan
    x[2, 9], x[2, 5000] = math.inf, -math.inf
    x[3, :] = math.inf
    x[4, ::2] = -math.inf
    x = x.to(dtype).to(device)
    for dim in (None, 0, 1):
        _check(op, x, dim)


@pytest.mark.parametrize("op", OPS)
def test_results_do_not_depend_on_the_batch(op, device, bitwise_equal):
    """op(x[:k], 1) is op(x, 1)[:k], and every call gives the same indices."""
    x = _with_ties((64, 70_001), torch.bfloat16, device)
    ours, _ = OPS[op]
    whole = ours(x, 1)
    for k in (1, 3, 63):
        bitwise_equal(ours(x[:k], 1), whole[:k])
    bitwise_equal(ours(x, 1), whole)


@pytest.mark.parametrize("op", OPS)
def test_scalars_and_empty_outputs_as_torch(op, device):
    _check(op, torch.tensor(3.5, device=device), None)
    _check(op, torch.tensor(3.5, device=device), 0)
    _check(op, torch.empty(3, 0, device=device), 0)


@pytest.mark.parametrize("op", OPS)
def test_errors_as_torch(op, device):
    ours, theirs = OPS[op]
    with pytest.raises((IndexError, RuntimeError), match="Expected reduction dim"):
        ours(torch.empty(0, device=device))
    with pytest.raises((IndexError, RuntimeError), match="Expected reduction dim 1 to have non-zero size"):
        ours(torch.empty(3, 0, device=device), 1)
    with pytest.raises(RuntimeError, match=f"{op}\\(\\): does not support bool input"):
        ours(torch.ones(3, dtype=torch.bool, device=device))
    with pytest.raises(TypeError, match="dim"):
        ours(torch.ones(3, 4, device=device), (0, 1))
    with pytest.raises(IndexError):
        ours(torch.ones(3, 4, device=device), 2)
