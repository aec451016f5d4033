"""Shapes that take each kernel path: every op gives torch's result for rows and columns around
the kernels' widths and lengths, on the CPU and on CUDA.

Short rows and narrow columns around the CPU's accumulator lanes, large dim reductions, narrow
columns (the column kernels' narrow items, read several to a thread), the flat column pass of
dense narrow columns, and NaN and infinities in each of them reaching their own outputs alone.
Contiguous inputs and views one element off; memory layouts are test_layouts.py's.
"""
import pytest
import torch

import torch_reduce
from cases import ALL_DTYPES, ALL_OPS, _id, op_dtype_params, reduce
from layout_cases import FLAT_COLUMN_SHAPES, FLAT_VIEWS, flat_columns_input

HALF_AND_SINGLE = [torch.float32, torch.bfloat16, torch.float16]


# Widths around the CPU's special cases: rows shorter than its accumulator lanes (16 or 32) are
# folded in sequence, columns up to 8 wide eight blocks of 64 rows side by side. 1031 rows: many
# rows per call, and whole groups of eight blocks plus a ragged last block.
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_id)
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33])
@pytest.mark.parametrize("dim", [0, 1])
def test_sum_of_short_rows_and_narrow_columns(device, dtype, width, dim, make_input, check):
    x = make_input((1031, width), dtype, device)
    check(torch_reduce.sum(x, dim), x, dim=dim)


LARGE_DIM_CASES = [((300, 4099), 1), ((4099, 300), 0), ((65537, 2), 1), ((2, 65537), 0), ((64, 33, 257), (0, 2)),
                   ((3, 2**20 + 3), 1)]


@pytest.mark.parametrize("op,dtype", op_dtype_params(dtypes=[torch.float32, torch.bfloat16, torch.int32, torch.bool]))
@pytest.mark.parametrize("shape,dim", LARGE_DIM_CASES, ids=_id)
def test_large_dim_reductions(device, op, dtype, shape, dim, make_input, check):
    x = make_input(shape, dtype, device)
    check(reduce(op, x, dim), x, op=op, dim=dim)


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


@pytest.mark.parametrize("op,dtype", op_dtype_params())
@pytest.mark.parametrize("shape,dim", NARROW_COLUMN_CASES, ids=_id)
@pytest.mark.parametrize("view", ["contiguous", "misaligned"])
def test_narrow_columns(device, op, dtype, shape, dim, view, make_input, check):
    if view == "contiguous":
        x = make_input(shape, dtype, device)
    else:
        x = make_input(shape[:-1] + (shape[-1] + 1,), dtype, device)[..., 1:]
    check(reduce(op, x, dim), x, op=op, dim=dim)


@pytest.mark.parametrize("op,dtype", op_dtype_params(
    dtypes=[torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int16]))
@pytest.mark.parametrize("shape", FLAT_COLUMN_SHAPES, ids=_id)
@pytest.mark.parametrize("view", list(FLAT_VIEWS))
def test_flat_columns(device, op, dtype, shape, view, make_input, check, poison):
    """Dense narrow columns of 4 MiB or more (layout_cases.FLAT_COLUMN_SHAPES), every output
    written (the allocator's blocks hold NaN beforehand)."""
    x = flat_columns_input(shape, view, dtype, device, make_input)
    poison(device, x.numel() * 4)
    check(reduce(op, x, -2), x, op=op, dim=-2)


# --------------------------------------------------------------------------- #
# NaN and infinities in column kernels
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=_id)
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
    out = reduce(op, x, 0)
    assert out.isnan().tolist() == [c in nan_columns for c in range(width)]
    check(out, x, op=op, dim=0)


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=_id)
@pytest.mark.parametrize("op", ALL_OPS)
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
    out = reduce(op, x, 0)
    assert out[5].isnan() or not out.dtype.is_floating_point
    check(out, x, op=op, dim=0)


@pytest.mark.parametrize("dtype", HALF_AND_SINGLE, ids=_id)
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_flat_columns_propagate_nan(device, op, dtype, make_input, check):
    """A NaN in a whole chunk and one in the last, ragged chunk reach their own columns alone."""
    x = make_input((700001, 7), dtype, device)
    x[100, 2] = float("nan")
    x[700000, 5] = float("nan")
    out = reduce(op, x, 0)
    assert out.isnan().tolist() == [c in (2, 5) for c in range(7)]
    check(out, x, op=op, dim=0)
