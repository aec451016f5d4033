"""Dtypes: what each op gives for each input dtype and dtype= argument, at the edges of each dtype.

Every dtype= pair torch accepts gives torch's result, every pair it refuses torch's error;
mean of integers needs dtype=; half precision accumulates in float32 and rounds once; float
results beyond the dtype's range are infinite; integer sums accumulate in int64 and wrap around
as torch's do; each of the 65536 float16/bfloat16 values comes through exactly; extrema at the
dtype's limits, signed zeros and subnormals; unsupported dtypes are refused with an error naming
them.
"""
import re

import pytest
import torch

import torch_reduce
from cases import (ALL_DTYPES, ALL_OPS, DTYPE_OPS, FLOAT_DTYPES, INT_DTYPES, OPS, UNSUPPORTED_DTYPES, _id,
                   dtype_name_pattern, raw_dims, reduce, torch_reference, unsupported_input)

HALF_DTYPES = [torch.float16, torch.bfloat16]


# --------------------------------------------------------------------------- #
# The dtype= argument (sum, mean): whatever torch accepts must match
# --------------------------------------------------------------------------- #
def _input_for_cast(op, shape, in_dtype, out_dtype, device, make_input):
    if out_dtype.is_floating_point and not in_dtype.is_floating_point and in_dtype != torch.bool:
        if OPS[op].error_per_element:
            # A product of 1s and 2s (and -1s) stays finite in float16.
            lo = 1 if in_dtype == torch.uint8 else -1
            x = make_input(shape, in_dtype, device, low=lo, high=3)
            return torch.where(x == 0, torch.ones_like(x), x) if lo < 0 else x
        # Small integers, so that the cast to float16/bfloat16 is finite.
        lo = 0 if in_dtype == torch.uint8 else -100
        return make_input(shape, in_dtype, device, low=lo, high=100)
    return make_input(shape, in_dtype, device)


DTYPE_PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]


@pytest.mark.parametrize("op", DTYPE_OPS)
@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
@pytest.mark.parametrize("in_dtype,out_dtype", DTYPE_PAIRS, ids=[f"{_id(a)}->{_id(b)}" for a, b in DTYPE_PAIRS])
def test_dtype_argument(device, op, in_dtype, out_dtype, dim, make_input, check, raises_like_torch):
    """Every (input, dtype=) pair: torch's result where torch takes it, torch's error where not."""
    x = _input_for_cast(op, (10, 50), in_dtype, out_dtype, device, make_input)
    try:
        torch_reference(op, x, dim, dtype=out_dtype)
    except Exception:
        raises_like_torch(lambda: OPS[op].fn(x, dim, dtype=out_dtype),
                          lambda: torch_reference(op, x, dim, dtype=out_dtype))
        return
    check(OPS[op].fn(x, dim, dtype=out_dtype), x, op=op, dim=dim, dtype=out_dtype)


@pytest.mark.parametrize(
    "in_dtype,out_dtype",
    [
        (torch.float16, torch.float32),
        (torch.bfloat16, torch.float32),
        (torch.int32, torch.float32),
        (torch.float32, torch.float64),
        (torch.int32, torch.int8),
        (torch.int64, torch.int16),
        (torch.float32, torch.bool),
        (torch.int32, torch.bool),
    ],
    ids=lambda v: _id(v),
)
@pytest.mark.parametrize("size", [1025, 65537])
def test_sum_dtype_argument_on_long_inputs(device, in_dtype, out_dtype, size, make_input, check):
    x = _input_for_cast("sum", (size,), in_dtype, out_dtype, device, make_input)
    check(torch_reduce.sum(x, dtype=out_dtype), x, dtype=out_dtype)
    x2 = x[: size - size % 5].view(5, -1)
    check(torch_reduce.sum(x2, 1, dtype=out_dtype), x2, dim=1, dtype=out_dtype)
    check(torch_reduce.sum(x2, 0, dtype=out_dtype), x2, dim=0, dtype=out_dtype)


def test_sum_accumulates_in_the_requested_dtype(device):
    """sum(x, dtype=float64) of float32 data is computed in float64 (not in float32 then cast)."""
    n = 4099
    x = torch.ones(n, dtype=torch.float32, device=device)
    x[0] = 2.0**25  # 2^25 + 1 is not representable in float32
    out = torch_reduce.sum(x, dtype=torch.float64)
    assert out.dtype == torch.float64
    assert out.item() == 2.0**25 + n - 1
    out = torch_reduce.sum(x.view(1, n), 1, dtype=torch.float64)
    assert out.item() == 2.0**25 + n - 1


@pytest.mark.parametrize("in_dtype", [torch.int32, torch.int8, torch.float32], ids=_id)
def test_sum_to_bool_is_any_nonzero(device, in_dtype):
    """sum(x, dtype=bool) is True when any element is nonzero, even if the values cancel."""
    x = torch.tensor([[1, -1, 0], [0, 0, 0]], dtype=in_dtype, device=device)
    for dim in (None, 1, 0):
        expected = torch.sum(x, dim, dtype=torch.bool)
        assert torch.equal(torch_reduce.sum(x, dim, dtype=torch.bool), expected), dim


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=_id)
@pytest.mark.parametrize("dim", [None, 0, (0, 1)], ids=_id)
def test_mean_of_integers_without_dtype_raises_like_torch(device, dtype, dim, make_input, raises_like_torch):
    x = make_input((4, 5), dtype, device)
    raises_like_torch(lambda: torch_reduce.mean(x, dim), lambda: torch.mean(x, dim), match="(?i)dtype")


@pytest.mark.parametrize("op", DTYPE_OPS)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=_id)
def test_complex_dtype_argument(device, op, dtype, make_input):
    """dtype=complex: either exactly torch's result, or refused naming the dtype."""
    x = make_input((4, 5), torch.float32, device)
    try:
        out = OPS[op].fn(x, dtype=dtype)
    except (RuntimeError, TypeError) as e:
        assert re.search(dtype_name_pattern(dtype), str(e)), f"error does not name {dtype}: {e}"
        return
    torch.testing.assert_close(out, torch_reference(op, x, dtype=dtype))


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES, ids=_id)
@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
def test_unsupported_dtype_refused_by_name(device, op, dtype, dim):
    """By the wrapper and by the torch.ops overload."""
    x = unsupported_input(dtype, device)
    with pytest.raises((RuntimeError, TypeError), match=dtype_name_pattern(dtype)):
        reduce(op, x, dim)
    with pytest.raises((RuntimeError, TypeError), match=dtype_name_pattern(dtype)):
        OPS[op].raw(x, raw_dims(op, dim))


# --------------------------------------------------------------------------- #
# Accumulation and overflow of floats
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_id)
@pytest.mark.parametrize("fill", [1.0, 3.0])
def test_half_precision_accumulates_in_float32(device, op, dtype, fill):
    """float16/bfloat16 are accumulated in float32 (like torch) and rounded once: 4096 equal
    values, where a half accumulator sticks (at 2048 ones in float16, 256 in bfloat16)."""
    n = 4096
    x = torch.full((n,), fill, dtype=dtype, device=device)
    exact = (lambda k: fill * k) if op == "sum" else (lambda k: fill)
    out = reduce(op, x)
    assert out.dtype == dtype
    assert out.item() == float(torch_reference(op, x).item()) == exact(n)
    assert reduce(op, x.view(2, n // 2), 1).tolist() == [exact(n // 2)] * 2
    assert reduce(op, x, dtype=torch.float32).item() == exact(n)


def test_float16_sum_overflows_to_inf(device, check):
    """A float16 sum beyond 65504 is inf like torch.sum; dtype=float32 gives the finite value."""
    x = torch.full((1025,), 100.0, dtype=torch.float16, device=device)
    out = torch_reduce.sum(x)
    assert torch.isinf(out) and out > 0 and torch.isinf(torch.sum(x))
    check(torch_reduce.sum(x, dtype=torch.float32), x, dtype=torch.float32)
    assert torch_reduce.sum(x, dtype=torch.float32).item() == 102500.0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_float_sum_beyond_the_range_is_inf(device, dtype, check):
    """A sum beyond the output dtype's range is +-inf, like torch.sum."""
    big = torch.finfo(dtype).max / 2
    x = torch.full((1025,), big, dtype=dtype, device=device)
    x[::2] *= 0.75
    check(torch_reduce.sum(x), x)
    assert torch.isposinf(torch_reduce.sum(x)) and torch.isneginf(torch_reduce.sum(-x))
    check(torch_reduce.sum(x.view(5, 205), 1), x.view(5, 205), dim=1)


# --------------------------------------------------------------------------- #
# Every float16 / bfloat16 value
# --------------------------------------------------------------------------- #
def every_half_value(dtype):
    """The 65536 values of a 2-byte float (subnormals, infinities, NaNs included), in bit order."""
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_id)
def test_every_half_value_is_widened_exactly_by_sum(device, dtype):
    """All 65536 float16 / bfloat16 values are widened exactly: rows [x, -0.0] summed into
    float32 give x itself, and back in the input dtype x again (the sign of a zero aside:
    0.0 + -0.0 is +0.0, as in torch)."""
    x = every_half_value(dtype).to(device)
    rows = torch.stack([x, torch.full_like(x, -0.0)], 1)
    exact = dict(rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(torch_reduce.sum(rows, 1, dtype=torch.float32), x.float(), **exact)
    torch.testing.assert_close(torch_reduce.sum(rows, 1), x, **exact)
    torch.testing.assert_close(torch_reduce.sum(x.view(-1, 1), 1, dtype=torch.float32), x.float(), **exact)
    torch.testing.assert_close(torch_reduce.sum(rows.t(), 0, dtype=torch.float32), x.float(), **exact)
    # Each value alone among -0.0s in rows of 21 and of 64 and in columns of 64: the vector
    # conversions (F16C on the CPU) of the short-row, row and column folds.
    for width in (21, 64):
        padded = torch.full((x.numel(), width), -0.0, dtype=dtype, device=device)
        padded[:, 0] = x
        torch.testing.assert_close(torch_reduce.sum(padded, 1, dtype=torch.float32), x.float(), **exact)
    torch.testing.assert_close(torch_reduce.sum(padded.t().contiguous(), 0, dtype=torch.float32), x.float(), **exact)
    # Subnormals only: their float32 sum is exact.
    sub = x[(x.abs() < torch.finfo(dtype).tiny) & (x != 0)]
    assert torch_reduce.sum(sub, dtype=torch.float32).item() == sub.double().sum().item()


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=_id)
@pytest.mark.parametrize("length,dim", [(8, 1), (16, 1), (2, 0), (8, 0), (100, 0)], ids=_id)  # (reduced length, dim)
def test_every_half_value_in_every_vector_lane_of_an_extremum(device, op, dtype, length, dim, bitwise_equal):
    """Each of the 65536 values of a 2-byte float comes out of amax/amin as it went in, at every
    place of a 16-byte vector (either half of each 32-bit word): each reduced run of `length`
    holds one of them, the rest the op's identity (-inf for amax). NaN patterns give NaN."""
    values = every_half_value(dtype)
    filler = float("-inf") if op == "amax" else float("inf")
    if dim == 1:  # rows: value v sits at place p of row v * length + p, for every p
        expected = values.repeat_interleave(length)
        x = torch.full((expected.numel(), length), filler, dtype=dtype)
        row = torch.arange(x.shape[0])
        x[row, row % length] = expected
    else:  # columns: adjacent columns fill a vector's places; row 1 (or 0) holds the values
        x = torch.full((length, values.numel()), filler, dtype=dtype)
        x[min(1, length - 1)] = values
        expected = values
    out = reduce(op, x.to(device), dim=dim).cpu()
    nan = expected.isnan()
    assert torch.equal(out.isnan(), nan)  # NaN payloads are not promised, only NaN
    bitwise_equal(out[~nan], expected[~nan], f"{op} {dtype} {length} dim {dim}")


# --------------------------------------------------------------------------- #
# Integer sums: int64 accumulation and wrap-around
# --------------------------------------------------------------------------- #
def _wrap64(v):
    v %= 2**64
    return v - 2**64 if v >= 2**63 else v


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=_id)
@pytest.mark.parametrize("size", [1025, 65537])
def test_integer_sum_is_int64_without_overflow(device, dtype, size):
    """Integral inputs sum in int64: no wrap at the input's width."""
    top = True if dtype == torch.bool else torch.iinfo(dtype).max
    x = torch.full((size,), top, dtype=dtype, device=device)
    out = torch_reduce.sum(x)
    assert out.dtype == torch.int64
    assert out.item() == _wrap64(int(top) * size)  # int64 itself wraps
    out = torch_reduce.sum(x.view(1, size), 1)
    assert out.dtype == torch.int64 and out.item() == _wrap64(int(top) * size)
    if dtype != torch.bool and torch.iinfo(dtype).min < 0:
        low = torch.iinfo(dtype).min
        y = torch.full((size,), low, dtype=dtype, device=device)
        assert torch_reduce.sum(y).item() == _wrap64(low * size)


@pytest.mark.parametrize(
    "values",
    [
        [2**62] * 5 + [-3],
        [2**63 - 1, 1],
        [-(2**63), -1],
        [2**63 - 1] * 1025,
        [-(2**63)] * 33 + [7] * 4099,
    ],
    ids=["5x2^62", "max+1", "min-1", "1025xmax", "33xmin"],
)
def test_int64_sum_wraps_around(device, values):
    x = torch.tensor(values, dtype=torch.int64, device=device)
    out = torch_reduce.sum(x)
    assert out.item() == _wrap64(sum(values)) == torch.sum(x).item()
    out = torch_reduce.sum(x.view(1, -1), 1)
    assert out.item() == _wrap64(sum(values))


def test_int64_sum_of_the_full_range(device, make_input, check):
    """Full-range int64 values: the exact modular sum, in any order."""
    x = make_input((65537,), torch.int64, device)
    check(torch_reduce.sum(x), x)
    y = x[:65536].view(256, 256)
    check(torch_reduce.sum(y, 0), y, dim=0)
    check(torch_reduce.sum(y, 1), y, dim=1)


# --------------------------------------------------------------------------- #
# Extrema at the dtype's limits, signed zeros, subnormals
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_id)
@pytest.mark.parametrize("size", [33, 4099])
def test_extremum_at_dtype_limits(device, op, dtype, size, check):
    """The identity is not a real value: a tensor that is all dtype-min (max) reduces to it."""
    if dtype == torch.bool:
        lo, hi = False, True
    elif dtype.is_floating_point:
        lo, hi = float("-inf"), float("inf")
    else:
        lo, hi = torch.iinfo(dtype).min, torch.iinfo(dtype).max
    for fill in (lo, hi):
        x = torch.full((size,), fill, dtype=dtype, device=device)
        check(reduce(op, x), x, op=op)
        x2 = x.view(1, size)
        check(reduce(op, x2, 1), x2, op=op, dim=1)
        check(reduce(op, x2, 0), x2, op=op, dim=0)
    if not dtype.is_floating_point and dtype != torch.bool:
        lo_f, hi_f = lo, hi
    elif dtype == torch.bool:
        lo_f, hi_f = False, True
    else:
        lo_f, hi_f = torch.finfo(dtype).min, torch.finfo(dtype).max
    x = torch.full((size,), lo_f if op == "amax" else hi_f, dtype=dtype, device=device)
    x[size // 2] = hi_f if op == "amax" else lo_f
    check(reduce(op, x), x, op=op)


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_signed_zeros_and_subnormals(device, op, dtype, check):
    tiny = torch.finfo(dtype).tiny
    x = torch.tensor([-0.0, 0.0, tiny / 4, -tiny / 4, -tiny, tiny], dtype=torch.float64).to(dtype).to(device)
    check(reduce(op, x), x, op=op)
