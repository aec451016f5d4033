"""torch_reduce.mean / amax / amin against torch.mean / torch.amax / torch.amin,
and batch invariance of the dim reductions, on the CPU and CUDA.

mean: floating results compared with the float64 mean (tolerance scaled to the
dtype and to mean|x|); amax/amin: exactly torch's result (NaN propagates).
Errors: the exception types torch raises (mean of an integer tensor without
dtype=, amax/amin of an empty reduction, bad dims); unsupported dtypes refused
with an error naming the dtype.
"""
import re

import pytest
import torch

import torch_reduce
from cases import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, UNSUPPORTED_DTYPES, _id, dtype_name_pattern, unsupported_input

OPS = {"mean": torch_reduce.mean, "amax": torch_reduce.amax, "amin": torch_reduce.amin}
RAW = {"mean": torch.ops.torch_reduce.mean, "amax": torch.ops.torch_reduce.amax, "amin": torch.ops.torch_reduce.amin}
TORCH = {"mean": torch.mean, "amax": torch.amax, "amin": torch.amin}


def _dtypes_for(op):
    return FLOAT_DTYPES if op == "mean" else ALL_DTYPES


def _op_dtype_cases(ops=("mean", "amax", "amin")):
    return [pytest.param(op, dt, id=f"{op}-{_id(dt)}") for op in ops for dt in _dtypes_for(op)]


def _call(op, x, dim=None, keepdim=False):
    """torch_reduce.<op> with the dims in the form each op takes (None: all dims)."""
    if dim is None:
        return OPS[op](x, keepdim=keepdim) if keepdim else OPS[op](x)
    return OPS[op](x, dim, keepdim)


keepdims = pytest.mark.parametrize("keepdim", [False, True], ids=["nokeep", "keepdim"])


# --------------------------------------------------------------------------- #
# Full reductions
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op,dtype", _op_dtype_cases())
@pytest.mark.parametrize("size", [1, 31, 32, 33, 1023, 1025, 4099, 65537, 2**20 + 3])
def test_full_reduction_sizes(device, op, dtype, size, make_input, check):
    x = make_input(size, dtype, device)
    check(_call(op, x), x, op=op)


@pytest.mark.parametrize("op,dtype", _op_dtype_cases())
def test_full_reduction_keepdim_and_raw_op(device, op, dtype, make_input, check):
    x = make_input((5, 33, 7), dtype, device)
    check(_call(op, x, keepdim=True), x, op=op, keepdim=True)
    check(OPS[op](x, []), x, op=op, dim=[])
    check(OPS[op](x, ()), x, op=op, dim=())
    check(RAW[op](x), x, op=op)
    check(RAW[op](x, [0, 2], True), x, op=op, dim=(0, 2), keepdim=True)


# --------------------------------------------------------------------------- #
# Dims
# --------------------------------------------------------------------------- #
DIM_CASES = [
    ((5,), 0),
    ((5,), -1),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -2),
    ((3, 4), (0, 1)),
    ((3, 4), (-1, -2)),
    ((2, 3, 4), 1),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), [2, 0]),
    ((2, 3, 4, 5), (1, 3)),
    ((2, 3, 4, 5), (0, 2, 3)),
    ((7, 1, 5), 1),
    ((33, 1025), 0),
    ((33, 1025), 1),
    ((1025, 33), 0),
    ((1025, 33), 1),
    ((4099, 3), 0),
    ((3, 4099), 1),
    ((1000, 2), 1),
    ((17, 19, 23), 1),
]


@pytest.mark.parametrize("op,dtype", _op_dtype_cases())
@keepdims
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in DIM_CASES])
def test_dims(device, op, dtype, shape, dim, keepdim, make_input, check):
    x = make_input(shape, dtype, device)
    check(_call(op, x, dim, keepdim), x, op=op, dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("shape,dim", [((300, 4099), 1), ((4099, 300), 0), ((65537, 2), 1), ((2, 65537), 0), ((64, 33, 257), (0, 2))], ids=_id)
def test_dims_large(device, op, dtype, shape, dim, make_input, check):
    x = make_input(shape, dtype, device)
    check(_call(op, x, dim), x, op=op, dim=dim)


@pytest.mark.parametrize("op,dtype", _op_dtype_cases())
@keepdims
@pytest.mark.parametrize("dim", [None, 0, -1, (0,), []], ids=_id)
def test_zero_dim_tensor(device, op, dtype, dim, keepdim, make_input, check):
    x = make_input((), dtype, device)
    check(_call(op, x, dim, keepdim), x, op=op, dim=dim, keepdim=keepdim)


# --------------------------------------------------------------------------- #
# Layouts
# --------------------------------------------------------------------------- #
LAYOUTS = {
    "transposed": ((33, 65), lambda t: t.t()),
    "column_step": ((64, 70), lambda t: t[:, ::3]),
    "misaligned_1d": ((4100,), lambda t: t[1:]),
    "misaligned_2d": ((33, 67), lambda t: t[1:, 1:]),
    "expanded": ((1, 100), lambda t: t.expand(64, 100)),
    "channels_last": ((2, 3, 5, 7), lambda t: t.contiguous(memory_format=torch.channels_last)),
    "permuted_3d": ((4, 5, 6), lambda t: t.permute(2, 0, 1)),
}
LAYOUT_CASES = [
    (name, dim)
    for name, (shape, f) in LAYOUTS.items()
    for dim in ([None, 0, -1] + ([(0, -1)] if f(torch.empty(shape)).dim() > 1 else []) + ([1] if f(torch.empty(shape)).dim() > 2 else []))
]


@pytest.mark.parametrize("op,dtype", _op_dtype_cases())
@pytest.mark.parametrize("layout,dim", LAYOUT_CASES, ids=[f"{n}-dim{_id(d)}" for n, d in LAYOUT_CASES])
def test_layouts(device, op, dtype, layout, dim, make_input, check):
    shape, view = LAYOUTS[layout]
    x = view(make_input(shape, dtype, device))
    check(_call(op, x, dim), x, op=op, dim=dim)
    check(_call(op, x, dim, True), x, op=op, dim=dim, keepdim=True)


# --------------------------------------------------------------------------- #
# mean: dtype=, integers, empty
# --------------------------------------------------------------------------- #
MEAN_DTYPE_PAIRS = [(a, b) for a in ALL_DTYPES for b in FLOAT_DTYPES + [torch.int64, torch.int32]]


@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
@pytest.mark.parametrize("in_dtype,out_dtype", MEAN_DTYPE_PAIRS, ids=[f"{_id(a)}->{_id(b)}" for a, b in MEAN_DTYPE_PAIRS])
def test_mean_dtype_argument(device, in_dtype, out_dtype, dim, make_input, check, raises_like_torch):
    if in_dtype.is_floating_point or in_dtype == torch.bool:
        x = make_input((10, 50), in_dtype, device)
    else:
        x = make_input((10, 50), in_dtype, device, low=0 if in_dtype == torch.uint8 else -100, high=100)
    try:
        torch.mean(x, dim, dtype=out_dtype)
    except Exception:
        raises_like_torch(lambda: torch_reduce.mean(x, dim, dtype=out_dtype), lambda: torch.mean(x, dim, dtype=out_dtype))
        return
    check(torch_reduce.mean(x, dim, dtype=out_dtype), x, op="mean", dim=dim, dtype=out_dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=_id)
@pytest.mark.parametrize("dim", [None, 0, (0, 1)], ids=_id)
def test_mean_of_integers_without_dtype_raises_like_torch(device, dtype, dim, make_input, raises_like_torch):
    x = make_input((4, 5), dtype, device)
    raises_like_torch(lambda: torch_reduce.mean(x, dim), lambda: torch.mean(x, dim), match="(?i)dtype")


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize(
    "shape,dim", [((0,), None), ((0, 3), None), ((0, 3), 0), ((3, 0), 1), ((3, 0), 0), ((2, 0, 4), (0, 1)), ((0, 0), [])], ids=_id
)
@keepdims
def test_mean_of_empty_is_nan(device, dtype, shape, dim, keepdim, check):
    x = torch.empty(shape, dtype=dtype, device=device)
    out = torch_reduce.mean(x, dim, keepdim)
    check(out, x, op="mean", dim=dim, keepdim=keepdim)
    ref = torch.mean(x, dim, keepdim)
    assert torch.isnan(out).all() == torch.isnan(ref).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_mean_half_accumulates_in_float32(device, dtype):
    x = torch.ones(4096, dtype=dtype, device=device) * 3
    assert torch_reduce.mean(x).item() == 3.0
    assert torch_reduce.mean(x.view(2, 2048), 1).tolist() == [3.0, 3.0]


def test_mean_large_count(device, make_input, check):
    x = make_input((2**20 + 3,), torch.float32, device) + 5.0
    check(torch_reduce.mean(x), x, op="mean")
    check(torch_reduce.mean(x, dtype=torch.float64), x, op="mean", dtype=torch.float64)


# --------------------------------------------------------------------------- #
# amax / amin: extremes, NaN, empty
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
        check(_call(op, x), x, op=op)
        x2 = x.view(1, size)
        check(_call(op, x2, 1), x2, op=op, dim=1)
        check(_call(op, x2, 0), x2, op=op, dim=0)
    if not dtype.is_floating_point and dtype != torch.bool:
        lo_f, hi_f = lo, hi
    elif dtype == torch.bool:
        lo_f, hi_f = False, True
    else:
        lo_f, hi_f = torch.finfo(dtype).min, torch.finfo(dtype).max
    x = torch.full((size,), lo_f if op == "amax" else hi_f, dtype=dtype, device=device)
    x[size // 2] = hi_f if op == "amax" else lo_f
    check(_call(op, x), x, op=op)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("size", [33, 1025, 65537])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_extremum_nan_propagates(device, op, dtype, size, where, make_input, check):
    x = make_input(size, dtype, device)
    pos = {"first": 0, "middle": size // 2 + 1, "last": size - 1}[where]
    x[pos] = float("nan")
    out = _call(op, x)
    assert torch.isnan(out), f"{op} of a tensor holding NaN must be NaN, got {out.item()}"
    check(out, x, op=op)
    rows = x[: size - size % 3].view(3, -1)
    check(_call(op, rows, 1), rows, op=op, dim=1)
    check(_call(op, rows, 0), rows, op=op, dim=0)


@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_inf_and_nan_in_rows(device, op, dtype, make_input, check):
    x = make_input((6, 1025), dtype, device)
    x[1, 10] = float("nan")
    x[2, 5] = float("inf")
    x[3, 1000] = float("-inf")
    x[4, 0] = float("inf")
    x[4, 1] = float("-inf")
    check(_call(op, x, 1), x, op=op, dim=1)
    check(_call(op, x.t(), 0), x.t(), op=op, dim=0)
    check(_call(op, x), x, op=op)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bool], ids=_id)
@pytest.mark.parametrize(
    "shape,dim",
    [((0,), None), ((0,), 0), ((0, 3), None), ((0, 3), 0), ((3, 0), 1), ((3, 0), -1), ((2, 0, 4), (0, 1)), ((0, 3), []),
     # the output empty too: still an empty reduction
     ((0, 0), 0), ((0, 0, 2), -3), ((2, 0, 0), (2, -2)), ((0, 0, 2), (2, 1, 0))],
    ids=_id,
)
def test_extremum_of_empty_reduction_raises_like_torch(device, op, dtype, shape, dim, raises_like_torch):
    """The error and its message, which names the first empty reduced dim as the caller wrote it."""
    x = torch.empty(shape, dtype=dtype, device=device)
    args = () if dim is None else (dim,)
    raises_like_torch(lambda: OPS[op](x, *args), lambda: TORCH[op](x, *args), same_message=True)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=_id)
@pytest.mark.parametrize("shape,dim", [((0, 3), 1), ((3, 0), 0), ((2, 0, 4), 2), ((2, 0, 4), (0, 2))], ids=_id)
@keepdims
def test_extremum_of_empty_output(device, op, dtype, shape, dim, keepdim, check):
    """Reducing non-empty dims of a tensor with an empty other dim gives an empty result."""
    x = torch.empty(shape, dtype=dtype, device=device)
    out = OPS[op](x, dim, keepdim)
    check(out, x, op=op, dim=dim, keepdim=keepdim)
    assert out.numel() == 0


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_signed_zeros_and_subnormals(device, dtype, check):
    tiny = torch.finfo(dtype).tiny
    x = torch.tensor([-0.0, 0.0, tiny / 4, -tiny / 4, -tiny, tiny], dtype=torch.float64).to(dtype).to(device)
    for op in ("amax", "amin"):
        check(_call(op, x), x, op=op)
    check(torch_reduce.mean(x), x, op="mean")


HALF_BIT_PATTERN_CASES = [(8, 1), (16, 1), (2, 0), (8, 0), (100, 0)]  # (reduced length, dim)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("length,dim", HALF_BIT_PATTERN_CASES, ids=_id)
def test_every_half_bit_pattern_in_every_vector_lane(device, op, dtype, length, dim, bitwise_equal):
    """Each of the 65536 values of a 2-byte float comes out of amax/amin as it went in, at every
    place of a 16-byte vector (either half of each 32-bit word): each reduced run of `length`
    holds one of them, the rest the op's identity (-inf for amax). NaN patterns give NaN."""
    values = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
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
    out = _call(op, x.to(device), dim=dim).cpu()
    nan = expected.isnan()
    assert torch.equal(out.isnan(), nan)  # NaN payloads are not promised, only NaN
    bitwise_equal(out[~nan], expected[~nan], f"{op} {dtype} {length} dim {dim}")


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #
ERROR_CASES = [
    ((3, 4), 2),
    ((3, 4), -3),
    ((5,), 1),
    ((), 1),
    ((), -2),
    ((3, 4), (0, 0)),
    ((3, 4), (1, -1)),
    ((2, 3, 4), (2, 1, -1)),
]


@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("shape,dim", ERROR_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in ERROR_CASES])
def test_bad_dim_raises_like_torch(device, op, shape, dim, make_input, raises_like_torch):
    x = make_input(shape, torch.float32, device)
    raises_like_torch(lambda: OPS[op](x, dim), lambda: TORCH[op](x, dim))


@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES, ids=_id)
@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
def test_unsupported_dtype_refused_by_name(device, op, dtype, dim):
    x = unsupported_input(dtype, device)
    with pytest.raises((RuntimeError, TypeError), match=dtype_name_pattern(dtype)):
        _call(op, x, dim)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=_id)
def test_mean_complex_dtype_argument(device, dtype, make_input):
    """dtype=complex: either exactly torch.mean's result, or refused naming the dtype."""
    x = make_input((4, 5), torch.float32, device)
    try:
        out = torch_reduce.mean(x, dtype=dtype)
    except (RuntimeError, TypeError) as e:
        assert re.search(dtype_name_pattern(dtype), str(e)), f"error does not name {dtype}: {e}"
        return
    torch.testing.assert_close(out, torch.mean(x, dtype=dtype))


# --------------------------------------------------------------------------- #
# Determinism and poisoned memory
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("shape,dim", [((2**20 + 3,), None), ((1024, 4099), 1), ((4099, 1024), 0), ((3, 500003), 1)], ids=_id)
def test_deterministic(device, op, shape, dim, make_input, bitwise_equal):
    x = make_input(shape, torch.float32, device)
    first = _call(op, x, dim)
    for i in range(3):
        bitwise_equal(_call(op, x, dim), first, f"call {i + 1}")


@pytest.mark.parametrize("op", ["mean", "amax", "amin"])
@pytest.mark.parametrize("shape,dim", [((65537,), None), ((4099, 33), 1), ((33, 4099), 0), ((3, 2**18 + 1), 1)], ids=_id)
def test_poisoned_memory(device, op, shape, dim, make_input, check, poison):
    x = make_input(shape, torch.float32, device)
    ref = torch.sum(x, dim)
    for nbytes in (ref.numel() * 4, ref.numel() * 8, 2**20, x.numel() * 4):
        poison(device, nbytes)
        check(_call(op, x, dim), x, op=op, dim=dim)


# --------------------------------------------------------------------------- #
# Batch invariance: each output is computed independently of the others
# --------------------------------------------------------------------------- #
ROW_SHAPES = [(4099, n) for n in (2, 3, 4, 5, 7, 8, 16, 17, 31, 32)] + [(4099, 33), (1024, 1025), (300, 100000)]
COL_SHAPES = [(n, 4099) for n in (2, 3, 4, 5, 7, 8, 16, 17, 31, 32)] + [(33, 4099), (1025, 1024), (100000, 300)]
BATCH_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _ks(total):
    return sorted({1, 2, 7, 33, total // 2 + 1, total - 1} & set(range(1, total)))


@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=_id)
def test_batch_invariance_rows(device, dtype, shape, make_input, bitwise_equal):
    """sum(x[:k], dim=1) == sum(x, dim=1)[:k] bitwise, for every k (also mean and amax)."""
    x = make_input(shape, dtype, device)
    full = {
        "sum": torch_reduce.sum(x, dim=1),
        "mean": torch_reduce.mean(x, dim=1),
        "amax": torch_reduce.amax(x, dim=1),
    }
    for k in _ks(shape[0]):
        part = x[:k]
        bitwise_equal(torch_reduce.sum(part, dim=1), full["sum"][:k], f"sum k={k}")
        bitwise_equal(torch_reduce.sum(part.clone(), dim=1), full["sum"][:k], f"sum k={k} (copy)")
        bitwise_equal(torch_reduce.mean(part, dim=1), full["mean"][:k], f"mean k={k}")
        bitwise_equal(torch_reduce.amax(part, dim=1), full["amax"][:k], f"amax k={k}")


@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("width,used", [(9, 8), (33, 32), (1027, 1024)], ids=_id)
def test_batch_invariance_rows_of_a_strided_view(device, dtype, width, used, make_input, bitwise_equal):
    """Rows whose stride breaks 16-byte alignment: one row alone (which is aligned) is
    summed in the same order as the same row among all the others."""
    x = make_input((64, width), dtype, device)[:, :used]
    full = torch_reduce.sum(x, dim=1)
    for k in (1, 2, 5):
        bitwise_equal(torch_reduce.sum(x[:k], dim=1), full[:k], f"k={k}")
        bitwise_equal(torch_reduce.sum(x[k : k + 1], dim=1), full[k : k + 1], f"row {k} alone")


@pytest.mark.parametrize("dtype", BATCH_DTYPES + [torch.float64, torch.int32, torch.int8, torch.bool], ids=_id)
@pytest.mark.parametrize("length", [7, 24, 37, 1000], ids=_id)
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_rows_at_every_offset_give_the_bits_of_an_aligned_copy(device, dtype, length, op, make_input, bitwise_equal):
    """Rows that start at any element of a 16-byte vector -- back to back (each row its own
    offset, unless the length is a multiple of the vector) or one row past a 16-byte stride
    -- are summed in the order of the same rows aligned. On the GPU their items are read
    element by element, or (2-byte elements, one row a lane) as the two aligned vectors that
    hold each item, shifted into place; short rows come 100000 at once, for the several-rows
    kernel."""
    rows = 100000 if length < 32 else 300
    width = 16 // dtype.itemsize
    reduce = getattr(torch_reduce, op)
    x = make_input((rows, length), dtype, device)
    aligned = reduce(x, 1)
    padded = -(-length // width) * width + width
    for offset in range(width):
        back_to_back = torch.empty(rows * length + width, dtype=dtype, device=device)[offset:]
        back_to_back = back_to_back[: rows * length].view(rows, length)
        strided = torch.empty((rows, padded), dtype=dtype, device=device)[:, offset : offset + length]
        for name, view in (("back to back", back_to_back), ("strided", strided)):
            view.copy_(x)
            bitwise_equal(reduce(view, 1), aligned, f"{name}, offset {offset}")


@pytest.mark.parametrize("dtype", BATCH_DTYPES + [torch.float64, torch.int32, torch.uint8], ids=_id)
@pytest.mark.parametrize("length", [1, 2, 3, 4, 8, 16, 32], ids=_id)
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
def test_short_rows_read_packed_or_not(device, dtype, length, op, make_input, check, bitwise_equal):
    """Rows of at most a 16-byte vector (float64 2, float32 4, half precision 8, uint8 16
    elements) or of exactly two, back to back and aligned, are read one or more to a load, or a
    vector a lane, on the GPU, and back to back rows of 1 to 4 or 8 elements as interleaved
    vectors on the CPU; a row gives the same bits
    read that way, from rows with a gap between them, or from a misaligned start (4099 rows: the
    last ones are not a whole vector)."""
    if op == "mean" and not dtype.is_floating_point:
        pytest.skip("torch.mean takes floating inputs only")
    rows = 4099
    reduce = getattr(torch_reduce, op)
    x = make_input((rows, length), dtype, device)
    packed = reduce(x, 1)
    check(packed, x, op=op, dim=1)
    gapped = torch.empty((rows, length + 1), dtype=dtype, device=device)[:, :length]
    misaligned = torch.empty(rows * length + 1, dtype=dtype, device=device)[1:].view(rows, length)
    for name, view in (("gapped", gapped), ("misaligned", misaligned)):
        view.copy_(x)
        bitwise_equal(reduce(view, 1), packed, name)
    for k in (1, 3, 9):
        bitwise_equal(reduce(x[:k], 1), packed[:k], f"first {k} rows")


@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("length", [3, 5, 13], ids=_id)
@pytest.mark.parametrize("op", ["sum", "amax"])
def test_short_rows_give_the_same_bits_however_many_a_lane_reads(device, dtype, length, op, make_input,
                                                                  bitwise_equal):
    """Short rows are read several to a lane when there are many of them, and one to a lane when
    there are few (on the GPU, by another kernel: the one that reads longer rows): a row gives the
    same bits either way (also as a strided view)."""
    reduce = getattr(torch_reduce, op)
    x = make_input((200_003, length + 1), dtype, device)[:, :length]
    for view in (x, x.contiguous()):
        full = reduce(view, 1)
        for k in (1, 1000, 70_001):
            bitwise_equal(reduce(view[:k], 1), full[:k], f"first {k} rows")


@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("shape", COL_SHAPES, ids=_id)
def test_batch_invariance_columns(device, dtype, shape, make_input, bitwise_equal):
    """sum(x[:, :k], 0) == sum(x, 0)[:k] bitwise, for every k (strided slice and contiguous copy)."""
    x = make_input(shape, dtype, device)
    full = torch_reduce.sum(x, 0)
    full_mean = torch_reduce.mean(x, 0)
    for k in _ks(shape[1]):
        part = x[:, :k]
        bitwise_equal(torch_reduce.sum(part, 0), full[:k], f"sum k={k}")
        bitwise_equal(torch_reduce.sum(part.contiguous(), 0), full[:k], f"sum k={k} (contiguous copy)")
        bitwise_equal(torch_reduce.mean(part, 0), full_mean[:k], f"mean k={k}")


def fold64_reference(x):
    """The order in which the CUDA kernels reduce a column (csrc/cuda/column_fold.cuh), with
    float32 additions on x's device: a level folds each run of 64 values -- slot s folds values
    s, s + 8, ..., s + 56 in order, then ((p0 + p4) + (p2 + p6)) + ((p1 + p5) + (p3 + p7)) -- and
    levels repeat until one value is left. Reduces dim 0 of a 2-D tensor."""
    v = x.float()
    while v.shape[0] > 1:
        chunks = -(-v.shape[0] // 64)
        padded = v.new_zeros(chunks * 64, v.shape[1])  # adding 0.0 leaves any nonzero sum as it is
        padded[: v.shape[0]] = v
        rows = padded.view(chunks, 8, 8, v.shape[1])  # [chunk, k, slot, column]: row 8k + slot
        p = v.new_zeros(chunks, 8, v.shape[1])
        for k in range(8):
            p = p + rows[:, k]
        v = ((p[:, 0] + p[:, 4]) + (p[:, 2] + p[:, 6])) + ((p[:, 1] + p[:, 5]) + (p[:, 3] + p[:, 7]))
    return v[0]


# (rows, columns): one level and several, ragged chunks and tiles, narrow and wide outputs, vector
# and scalar loads: column_short_kernel (eight rows a step, for chunks of up to 8, 16, 32 and 64
# rows: 5 x 3, 9 x 300, 16 x 262144, 20 x 300000 with ragged slots, 40 x 524288; chunks of up to 2
# and 4 rows read only their slots: 2 x 4096, 3 x 40000, 4 x 8192),
# column_chunk_kernel (one level a pass), column_tile_kernel (two: the passes of at most 64 chunks
# with few columns -- 63 x 7, 64 x 1, ..., the last passes of longer columns), column_wide_kernel
# (two, a block a tile: 600000 x 3 with a ragged last tile, 540000 x 6, 1000000 x 2, 1048576 x 8
# bfloat16, and single tiles of few items: 4000 x 2, 2000 x 8), column_block_kernel (one level for a single chunk of more than 16 rows and fewer columns
# than column_short_kernel wants -- 24 x 2048, 63 x 33, 64 x 8192 -- and two levels a pass: 65536 x
# 4096, and 5000 x 65536 with a ragged last tile), column_short_kernel as the first level of inputs
# larger than the L2 of an H100 (262144 x 128 in both dtypes, whose 4096 chunk values then take
# single chunks; 65536 x 1024 in both dtypes; and where the block kernel's tiles would leave most of
# an H100 idle in their last wave, float32 16384 x 9000, or its items would be narrow, bfloat16 30000 x
# 4238, and every misaligned view of both), and later passes of single chunks (bfloat16 200000 x 64).
# Items too narrow for the tile kernel's loads (one column: an odd count or a misaligned view) go to
# the block kernel where a column group is one tile and the tiles fill the GPU (500 x 4999), to
# column_short_kernel's first level where the columns are longer and its threads many (4200 x 1025:
# 66 chunks, a ragged last one), to the tile kernel otherwise (300 x 77, 70000 x 33).
# column_short_kernel reads narrow items several to a thread where a pass has enough of them (the
# misaligned 7 x 70001, 16 x 262144, 20 x 300000, 40 x 524288, and 4200 x 1025), and items of one
# column in chunks of 17 to 32 rows, all their rows loaded ahead (29 x 885, the misaligned 24 x 2048).
# Narrow items keep more chunks in flight (chunks_per_step): the block kernel's steps of 4 chunks of
# one column over a tile of 5, a ragged last step (300 x 4999), and of two bfloat16 columns (300 x
# 8450); the tile kernel's teams two rounds ahead over a tile of 5 rounds, a ragged last pair (2500 x 5).
# Passes of one chunk whose blocks would not fill their waves loop on a few blocks an SM
# (wave_balanced_grid, on a GPU of 132 SMs: bfloat16 32 x 1048576 and 16 x 1200000, float32
# 32 x 600000).
COLUMN_ORDER_CASES = [(1, 7), (5, 3), (8, 2), (9, 300), (24, 2048), (29, 885), (63, 7), (63, 33), (64, 1), (64, 8192),
                      (65, 4), (4095, 3), (4097, 8), (16, 262144), (20, 300000), (40, 524288), (300001, 2),
                      (600000, 3), (540000, 6), (70000, 33), (33000, 512), (65536, 4096), (5000, 65536),
                      (1000000, 2), (1048576, 8), (4000, 2), (2000, 8), (262144, 128), (65536, 1024), (200000, 64),
                      (500, 4999), (4200, 1025), (300, 77), (7, 70001), (16384, 9000), (30000, 4238), (24, 7), (30, 31),
                      (30, 33), (300, 4999), (300, 8450), (2500, 5),
                      (2, 4096), (3, 40000), (4, 8192), (32, 1048576), (32, 600000), (16, 1200000)]


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("rows,columns", COLUMN_ORDER_CASES, ids=_id)
@pytest.mark.parametrize("view", ["contiguous", "misaligned"])
def test_column_order_is_fold64(cuda_device, dtype, rows, columns, view, make_input, bitwise_equal):
    """sum over dim 0 is, bit for bit, the documented fold64 order, whatever the number of
    columns or the alignment (which is what makes the column reductions batch invariant)."""
    if view == "contiguous":
        x = make_input((rows, columns), dtype, cuda_device)
    else:
        x = make_input((rows, columns + 1), dtype, cuda_device)[:, 1:]
    bitwise_equal(torch_reduce.sum(x, 0), fold64_reference(x).to(dtype), f"{rows}x{columns} {view}")


# column_short_kernel reads narrow items (one or two columns: an odd column count or a misaligned
# view) of 16- and 32-bit elements several to a thread, a warp's width apart, where a pass has
# enough of them to stream (one-byte elements, and 12 x 4125, one a thread, are checked alike):
# chunks of one, two, four and eight steps (3, 12, 24 and 40 rows), a last warp of a batch that
# reads again items the warp before it read (no column count here is a multiple of a warp's
# items), and the first level of long columns (4200 x 1025). One a thread, in slot order or by
# rows (narrow_chunk_by_rows): chunks of 5, 12, 24 and 48 rows of fewer items than a warp reads,
# rows of 7 and 9 columns (shorter than a line) and of 65 (longer, in 32-bit elements). Narrow
# items of the block kernel and the tile kernel's teams, several chunks in flight
# (chunks_per_step), are checked alike (300 x 4999, 2500 x 5).
NARROW_COLUMN_CASES = [((3, 70001), 0), ((12, 65537), 0), ((12, 4125), 0), ((128, 24, 1025), 1), ((128, 40, 1027), 1),
                       ((4200, 1025), 0), ((700, 5, 7), 1), ((500, 12, 9), 1), ((2000, 24, 7), 1), ((300, 24, 65), 1),
                       ((300, 48, 7), 1), ((300, 4999), 0), ((2500, 5), 0)]


@pytest.mark.parametrize("op,dtype", _op_dtype_cases(("sum", "mean", "amax", "amin")))
@pytest.mark.parametrize("shape,dim", NARROW_COLUMN_CASES, ids=_id)
@pytest.mark.parametrize("view", ["contiguous", "misaligned"])
def test_narrow_columns(device, op, dtype, shape, dim, view, make_input, check):
    if view == "contiguous":
        x = make_input(shape, dtype, device)
    else:
        x = make_input(shape[:-1] + (shape[-1] + 1,), dtype, device)[..., 1:]
    check(getattr(torch_reduce, op)(x, dim), x, op=op, dim=dim)


# Dense narrow columns of 4 MiB or more, whose first pass reads the rows as one flat run
# (column_flat_kernel.cuh): odd column counts (items of one or two 16- or 32-bit elements), rows
# padded by less than a vector (x[..., 1:] and x[..., :-1] of a tensor one column wider; the first
# also starts the run before the view), batches of such rows, and last chunks of 33 rows
# (700001), one (160001, 40001), none (65536) and 63 (65599). Layouts the kernel does not take (a batch stride of no whole vectors, items of 8 bytes,
# rows of one item, one-byte and 8-byte elements) give the same results.
FLAT_COLUMN_SHAPES = [(700001, 3), (160001, 15), (65536, 49), (65599, 33), (8, 40001, 7)]
FLAT_COLUMN_OPS = [pytest.param(op, dt, id=f"{op}-{_id(dt)}") for op in ("sum", "mean", "amax", "amin")
                   for dt in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int16)
                   if op != "mean" or dt.is_floating_point]
FLAT_VIEWS = {"dense": lambda t: t, "first column cut": lambda t: t[..., 1:], "last column cut": lambda t: t[..., :-1]}


def _flat_columns_input(shape, view, dtype, device, make_input):
    wider = shape[:-1] + (shape[-1] + (view != "dense"),)
    return FLAT_VIEWS[view](make_input(wider, dtype, device))


@pytest.mark.parametrize("op,dtype", FLAT_COLUMN_OPS)
@pytest.mark.parametrize("shape", FLAT_COLUMN_SHAPES, ids=_id)
@pytest.mark.parametrize("view", list(FLAT_VIEWS))
def test_flat_columns(device, op, dtype, shape, view, make_input, check, poison):
    x = _flat_columns_input(shape, view, dtype, device, make_input)
    poison(device, x.numel() * 4)
    check(getattr(torch_reduce, op)(x, -2), x, op=op, dim=-2)


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("shape", FLAT_COLUMN_SHAPES, ids=_id)
@pytest.mark.parametrize("view", list(FLAT_VIEWS))
def test_flat_columns_are_fold64(cuda_device, dtype, shape, view, make_input, bitwise_equal):
    """The flat run gives each column the bits of the documented fold64 order."""
    x = _flat_columns_input(shape, view, dtype, cuda_device, make_input)
    columns = x.movedim(-2, 0).reshape(x.shape[-2], -1)  # the batches' columns side by side
    expected = fold64_reference(columns).to(dtype).view(x.shape[:-2] + x.shape[-1:])
    bitwise_equal(torch_reduce.sum(x, -2), expected, f"{shape} {view}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=_id)
@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("width", [13, 24, 93, 1030])
def test_extremum_columns_propagate_nan(device, op, dtype, width, make_input, check):
    """A NaN in the first, a middle and the last row reaches its own column alone, in columns of
    part of a vector, of whole vectors, of tiles (the CPU folds 2-byte columns in tiles) and of
    the last part of a vector after tiles."""
    x = make_input((1000, width), dtype, device)
    nan_columns = {0: 0, width // 2: 517, width - 1: 999}
    for column, row in nan_columns.items():
        x[row, column] = float("nan")
    out = getattr(torch_reduce, op)(x, 0)
    assert out.isnan().tolist() == [c in nan_columns for c in range(width)]
    check(out, x, op=op, dim=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=_id)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("rows", [2, 3, 4, 7])
@pytest.mark.parametrize("width", [4096, 4099])
def test_short_columns_special_values(device, op, dtype, rows, width, make_input, check):
    """Columns of 2 to 7 rows (chunks of up to 2, 4 and 8 rows, whose kernels read only those
    slots), in wide items and in narrow ones: a NaN, an infinity of each sign, and infinities of both
    signs in one column reach their own columns, as torch computes them."""
    x = make_input((rows, width), dtype, device)
    x[rows - 1, 5] = float("nan")
    x[0, 100] = float("inf")
    x[rows // 2, 200] = float("-inf")
    x[0, 300], x[rows - 1, 300] = float("-inf"), float("inf")
    out = getattr(torch_reduce, op)(x, 0)
    assert out[5].isnan()
    check(out, x, op=op, dim=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=_id)
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_flat_columns_propagate_nan(device, op, dtype, make_input, check):
    """A NaN in a whole chunk and one in the last, ragged chunk reach their own columns alone."""
    x = make_input((700001, 7), dtype, device)
    x[100, 2] = float("nan")
    x[700000, 5] = float("nan")
    out = getattr(torch_reduce, op)(x, 0)
    assert out.isnan().tolist() == [c in (2, 5) for c in range(7)]
    check(out, x, op=op, dim=0)


# Column reductions of two and three passes, whose first passes take each column kernel (the short
# one as the first level of a 128 MiB input and of narrow items, whose later passes must fold mean's
# values unscaled).
MULTI_PASS_COLUMN_SHAPES = [(1000000, 2), (300001, 3), (32768, 32), (70000, 33), (540000, 6), (4160, 16384),
                            (262144, 128), (4200, 1025)]


@pytest.mark.requires_cuda
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
def test_column_passes_keep_stream_order(cuda_device, op, make_input, check):
    """A column reduction's passes are launched before the kernel ahead of them has finished
    (programmatic dependent launch; the first pass after whatever the stream ran last) but still
    read and write in stream order: each input written by a copy kernel right before its reduction
    and overwritten right after, reductions queued back to back, nothing synchronised in between,
    each give the result of their own input."""
    originals, outs = [], []
    for shape in MULTI_PASS_COLUMN_SHAPES:
        original = make_input(shape, torch.float32, cuda_device)
        x = torch.empty_like(original).copy_(original)
        outs.append(getattr(torch_reduce, op)(x, 0))
        x.uniform_(-1e6, 1e6)
        originals.append(original)
    for x, out in zip(originals, outs):
        check(out, x, op=op, dim=0)


# Inputs larger than the L2 of an H100 (50 MB), which the kernels read evict-first where what they
# write fits in half of it: column_short_kernel's one level (3 x 5000000, 32 x 1048576) and first
# level (65536 x 1024), row_reduce_kernel's one row a lane (1048576 x 32) and
# packed_row_reduce_kernel (bfloat16 7840000 x 4, two rows a vector; float32 4000000 x 4, one;
# float32 4000000 x 8, a vector a lane).
STREAMED_CASES = [(torch.float32, (3, 5000000), 0), (torch.float32, (32, 1048576), 0),
                  (torch.float32, (65536, 1024), 0), (torch.float32, (1048576, 32), 1),
                  (torch.bfloat16, (7840000, 4), 1), (torch.float32, (4000000, 4), 1),
                  (torch.float32, (4000000, 8), 1)]


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype,shape,dim", STREAMED_CASES, ids=_id)
@pytest.mark.parametrize("op", ["sum", "amax"])
def test_streamed_inputs_give_the_same_bits(cuda_device, dtype, shape, dim, op, make_input, check, bitwise_equal):
    """An input read under the evict-first L2 policy gives the float64-checked result, and the
    same bits as a small slice of it, which is read under the normal policy."""
    x = make_input(shape, dtype, cuda_device)
    reduce = getattr(torch_reduce, op)
    full = reduce(x, dim)
    check(full, x, op=op, dim=dim)
    k = 1000
    part = (x[:, :k] if dim == 0 else x[:k]).contiguous()
    bitwise_equal(reduce(part, dim), full[:k], f"first {k} outputs")


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
def test_batch_invariance_3d(cuda_device, dtype, make_input, bitwise_equal):
    """A (batch, tokens, hidden) activation reduced over hidden: per-token results do not depend on the batch size."""
    x = make_input((16, 77, 4096), dtype, cuda_device)
    full = torch_reduce.sum(x, -1)
    full_mean = torch_reduce.mean(x, -1, keepdim=True)
    for b in (1, 3, 8, 15):
        bitwise_equal(torch_reduce.sum(x[:b], -1), full[:b], f"batch {b}")
        bitwise_equal(torch_reduce.mean(x[:b], -1, keepdim=True), full_mean[:b], f"mean batch {b}")
    bitwise_equal(torch_reduce.sum(x[:, :5], -1), full[:, :5], "first 5 tokens")
