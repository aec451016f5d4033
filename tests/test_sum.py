"""torch_reduce.sum against torch.sum: the specification of the sum op.

Every result must equal torch.sum's in dtype, shape and device, and in value:
exactly for integer and bool results, within a tolerance of the float64
reduction for floating results (see conftest.assert_matches_reference).
Tests taking `device` run on cpu and cuda (cuda skipped, with the reason,
without a GPU or a CUDA build).
"""

import math
import re
import subprocess
import sys

import pytest
import torch

import torch_reduce
from cases import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, UNSUPPORTED_DTYPES, _id, dtype_name_pattern, unsupported_input

SIZES = [0, 1, 31, 32, 33, 1023, 1025, 4099, 65537, 2**20 + 3]


dtypes = pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_id)
float_dtypes = pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
keepdims = pytest.mark.parametrize("keepdim", [False, True], ids=["nokeep", "keepdim"])


# --------------------------------------------------------------------------- #
# Full reductions over sizes that straddle warp/block/vector boundaries
# --------------------------------------------------------------------------- #
@dtypes
@pytest.mark.parametrize("size", SIZES)
def test_full_sum_sizes(device, dtype, size, make_input, check):
    x = make_input(size, dtype, device)
    check(torch_reduce.sum(x), x)


@dtypes
@pytest.mark.parametrize("shape", [(1025, 33), (2, 3, 4, 5), (7, 1, 4099)], ids=_id)
def test_full_sum_multidim(device, dtype, shape, make_input, check):
    x = make_input(shape, dtype, device)
    check(torch_reduce.sum(x), x)
    check(torch_reduce.sum(x, keepdim=True), x, keepdim=True)  # dim=None, keepdim: all dims kept as 1


def test_call_forms(device, make_input, check):
    """The raw op and the wrapper accept torch.sum's argument forms."""
    x = make_input((3, 4, 5), torch.float32, device)
    ops = torch.ops.torch_reduce
    check(ops.sum(x), x)
    check(ops.sum(x, [0, 2], True), x, dim=(0, 2), keepdim=True)
    check(ops.sum(x, dtype=torch.float64), x, dtype=torch.float64)
    check(ops.sum.default(x, [1]), x, dim=1)
    check(torch_reduce.sum(x, 1), x, dim=1)
    check(torch_reduce.sum(x, dim=-1, keepdim=True), x, dim=-1, keepdim=True)
    check(torch_reduce.sum(x, (0, 2)), x, dim=(0, 2))
    check(torch_reduce.sum(x, [2, 0], keepdim=True), x, dim=[2, 0], keepdim=True)
    check(torch_reduce.sum(x, dtype=torch.float64), x, dtype=torch.float64)
    check(torch_reduce.sum(x, dim=None, keepdim=False, dtype=None), x)


# --------------------------------------------------------------------------- #
# Reductions over dims
# --------------------------------------------------------------------------- #
DIM_CASES = [
    ((5,), 0),
    ((5,), -1),
    ((5,), (0,)),
    ((3, 4), 0),
    ((3, 4), 1),
    ((3, 4), -1),
    ((3, 4), -2),
    ((3, 4), (0, 1)),
    ((3, 4), (-1, -2)),
    ((3, 4), []),
    ((3, 4), ()),
    ((2, 3, 4), 1),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), [2, 0]),
    ((2, 3, 4), (1, 2)),
    ((2, 3, 4), (0, 1)),
    ((2, 3, 4, 5), (1, 3)),
    ((2, 3, 4, 5), (0, 2, 3)),
    ((2, 3, 4, 5), -3),
    ((7, 1, 5), 1),
    ((7, 1, 5), (0, 2)),
    ((1, 1), 0),
    ((33, 1025), 0),
    ((33, 1025), 1),
    ((1025, 33), 0),
    ((1025, 33), 1),
    ((4099, 3), 0),
    ((3, 4099), 1),
    ((1000, 2), 1),
    ((2, 1000), 0),
    ((5, 31, 33), (0, 2)),
    ((17, 19, 23), 1),
]


@dtypes
@keepdims
@pytest.mark.parametrize("shape,dim", DIM_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in DIM_CASES])
def test_sum_dims(device, dtype, shape, dim, keepdim, make_input, check):
    x = make_input(shape, dtype, device)
    check(torch_reduce.sum(x, dim, keepdim), x, dim=dim, keepdim=keepdim)


# Widths around the CPU's special cases: rows shorter than its accumulator lanes (16 or 32) are
# folded in sequence, columns up to 8 wide eight blocks of 64 rows side by side. 1031 rows: many
# rows per call, and whole groups of eight blocks plus a ragged last block.
@dtypes
@pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33])
@pytest.mark.parametrize("dim", [0, 1])
def test_sum_short_rows_and_narrow_columns(device, dtype, width, dim, make_input, check):
    x = make_input((1031, width), dtype, device)
    check(torch_reduce.sum(x, dim), x, dim=dim)


# The CPU cuts each reduced dim into blocks and hands its threads spans of them, shorter the more
# threads it has, and folds narrow columns' whole blocks 8, 4 or 2 at a time as a span allows. Each
# block is folded alone and the blocks' results combine in one fixed tree, so the thread count
# never changes a bit: spans of 1 to 4 blocks, whole units, ragged last blocks.
THREAD_COUNT_CASES = [((1031, 3), 0), ((2, 700, 5), 1), ((4, 1200, 1), 1), ((16, 200, 8), 1), ((3, 33000), 1)]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=_id)
@pytest.mark.parametrize("shape,dim", THREAD_COUNT_CASES, ids=_id)
def test_cpu_thread_count_does_not_change_the_bits(dtype, shape, dim, make_input, bitwise_equal):
    x = make_input(shape, dtype, "cpu")
    threads = torch.get_num_threads()
    try:
        results = {}
        for n in (1, 2, 3, 8):
            torch.set_num_threads(n)
            results[n] = torch_reduce.sum(x, dim)
    finally:
        torch.set_num_threads(threads)
    for n in (2, 3, 8):
        bitwise_equal(results[n], results[1], f"{n} threads against 1")


# The CPU folds rows of up to 1 KiB eight to a call, each by the operations that fold it alone: a
# row's bits depend neither on its place among the eight nor on the rows around it. Lengths: around
# the accumulator lanes (16 or 32), a few vectors and a tail, 1 KiB of float32 and just over it.
@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int8, torch.bool], ids=_id
)
@pytest.mark.parametrize("length", [16, 33, 77, 256, 257])
@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_rows_folded_together_take_the_bits_of_each_row_alone(device, dtype, length, op, make_input, check,
                                                              bitwise_equal):
    x = make_input((203, length), dtype, device)
    fn = getattr(torch_reduce, op)
    rows = fn(x, 1)
    check(rows, x, op=op, dim=1)
    for k in (0, 1, 7, 8, 100, 201, 202):
        bitwise_equal(fn(x[k : k + 1], 1), rows[k : k + 1], f"row {k} alone")
    bitwise_equal(fn(x[3:], 1), rows[3:], "the rows from 3 on")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool], ids=_id)
@pytest.mark.parametrize(
    "shape,dim",
    [((300, 4099), 1), ((4099, 300), 0), ((65537, 2), 1), ((2, 65537), 0), ((64, 33, 257), (0, 2)), ((3, 2**20 + 3), 1)],
    ids=_id,
)
def test_sum_dims_large(device, dtype, shape, dim, make_input, check):
    x = make_input(shape, dtype, device)
    check(torch_reduce.sum(x, dim), x, dim=dim)


# --------------------------------------------------------------------------- #
# 0-dim and empty tensors
# --------------------------------------------------------------------------- #
@dtypes
@keepdims
@pytest.mark.parametrize("dim", [None, 0, -1, (0,), [], (-1,)], ids=_id)
def test_zero_dim_tensor(device, dtype, dim, keepdim, make_input, check):
    x = make_input((), dtype, device)
    check(torch_reduce.sum(x, dim, keepdim), x, dim=dim, keepdim=keepdim)


EMPTY_CASES = [
    ((0,), None),
    ((0,), 0),
    ((0, 3), None),
    ((0, 3), 0),
    ((0, 3), 1),
    ((3, 0), 0),
    ((3, 0), 1),
    ((3, 0), -1),
    ((2, 0, 4), (0, 2)),
    ((2, 0, 4), 1),
    ((2, 0, 4), []),
    ((0, 0), (0, 1)),
]


@dtypes
@keepdims
@pytest.mark.parametrize("shape,dim", EMPTY_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in EMPTY_CASES])
def test_empty(device, dtype, shape, dim, keepdim, make_input, check):
    """An empty reduction is 0 (an empty output is empty), with torch's dtype and shape."""
    x = make_input(shape, dtype, device)
    out = torch_reduce.sum(x, dim, keepdim)
    check(out, x, dim=dim, keepdim=keepdim)
    if out.numel():
        assert (out == 0).all()


# --------------------------------------------------------------------------- #
# Layouts: non-contiguous, transposed, sliced, misaligned, expanded, channels_last
# --------------------------------------------------------------------------- #
LAYOUTS = {
    "transposed": ((33, 65), lambda t: t.t()),
    "permuted_3d": ((4, 5, 6), lambda t: t.permute(2, 0, 1)),
    "column_step": ((64, 70), lambda t: t[:, ::3]),
    "row_step": ((70, 64), lambda t: t[::2]),
    "misaligned_1d": ((4100,), lambda t: t[1:]),
    "misaligned_1d_both_ends": ((1030,), lambda t: t[3:-2]),
    "misaligned_2d": ((33, 67), lambda t: t[1:, 1:]),
    "misaligned_large": ((2**17 + 9,), lambda t: t[5:]),
    "expanded_rows": ((1, 100), lambda t: t.expand(64, 100)),
    "expanded_cols": ((64, 1), lambda t: t.expand(64, 100)),
    "expanded_middle": ((5, 1, 7), lambda t: t.expand(5, 9, 7)),
    "expanded_scalar": ((), lambda t: t.expand(1025)),
    "channels_last": ((2, 3, 5, 7), lambda t: t.contiguous(memory_format=torch.channels_last)),
    "channels_last_3d": ((2, 3, 4, 5, 6), lambda t: t.contiguous(memory_format=torch.channels_last_3d)),
    "diagonal": ((50, 50), lambda t: t.diagonal()),
    "overlapping_windows": ((100,), lambda t: t.unfold(0, 10, 3)),
    "transposed_slice": ((40, 50), lambda t: t[2:, 3:].t()),
}


def _layout_dims(ndim):
    dims = [None, 0, -1]
    if ndim >= 2:
        dims.append((0, ndim - 1))
    if ndim >= 3:
        dims += [1, tuple(range(1, ndim))]
    return dims


LAYOUT_CASES = [(name, dim) for name, (shape, f) in LAYOUTS.items() for dim in _layout_dims(f(torch.empty(shape)).dim())]


@dtypes
@pytest.mark.parametrize("layout,dim", LAYOUT_CASES, ids=[f"{n}-dim{_id(d)}" for n, d in LAYOUT_CASES])
def test_layouts(device, dtype, layout, dim, make_input, check):
    shape, view = LAYOUTS[layout]
    x = view(make_input(shape, dtype, device))
    assert layout.startswith("channels_last") or not x.is_contiguous() or x.dim() == 1
    check(torch_reduce.sum(x, dim), x, dim=dim)
    check(torch_reduce.sum(x, dim, keepdim=True), x, dim=dim, keepdim=True)


def peak_allocation(call):
    """call()'s result, and the most CUDA memory it held at once beyond what was allocated before."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = call()
    torch.cuda.synchronize()
    return out, torch.cuda.max_memory_allocated() - before


def read_in_place(reduce, x):
    """reduce()'s result, asserting that it allocated no copy of x: its peak allocation stays
    under half of x's bytes."""
    out, peak = peak_allocation(reduce)
    assert peak < x.numel() * x.element_size() // 2
    return out


# Full reductions of tensors whose elements form one dense block in some other dim order.
DENSE_PERMUTATIONS = {
    "transposed": lambda t: t.transpose(0, 2),
    "permuted": lambda t: t.permute(1, 2, 0),
    "channels_last": lambda t: t.unsqueeze(0).contiguous(memory_format=torch.channels_last),
}


@pytest.mark.requires_cuda
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("view", list(DENSE_PERMUTATIONS), ids=_id)
def test_full_reductions_of_permuted_dense_tensors_read_in_place(cuda_device, op, view, make_input, check):
    """A full reduction of a transposed or permuted tensor whose elements are one dense block
    reads them in place, in memory order: it allocates no copy of the input (its peak allocation
    stays under half the input's bytes), and its result is the float64 reference's."""
    x = DENSE_PERMUTATIONS[view](make_input((64, 513, 130), torch.float32, cuda_device))
    assert not x.is_contiguous()
    out = read_in_place(lambda: getattr(torch_reduce, op)(x), x)
    check(out, x, op=op)


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
def test_permuted_dims_that_form_one_block_read_in_place(cuda_device, dtype, make_input, check, bitwise_equal):
    """A dim reduction of a permuted tensor whose reduced dims, taken in memory order, form one
    dense block and whose kept dims keep their order there, reads it in place (no copy: the peak
    allocation stays under half the input's bytes), gives the float64 reference's result, and
    stays batch invariant (a slice of the kept dim gives the same bits)."""
    x = make_input((40, 50, 4, 30), dtype, cuda_device).transpose(0, -1)  # strides (1, 160, 40, 8000)
    out = read_in_place(lambda: torch_reduce.sum(x, (1, 2, 3)), x)
    check(out, x, dim=(1, 2, 3))
    bitwise_equal(torch_reduce.sum(x[:7], (1, 2, 3)), out[:7], "first 7 outputs")


# Reduced dims that form several runs in memory, reduced in stages (largest run first) where each
# output has 1024 values or more (2^20 for a full reduction): (view of a fresh input, its shape,
# dims). Two runs either way round, batch-norm statistics over (0, 2, 3), full reductions and dim
# reductions of slices, the two inner dims of a slice, three runs.
STAGED_CASES = {
    "outer first": (lambda x: x, (40, 30, 30, 50), (0, 2)),
    "inner first": (lambda x: x, (4, 50, 6, 300), (1, 3)),
    "batch norm": (lambda x: x, (16, 24, 14, 14), (0, 2, 3)),
    "sliced full": (lambda x: x[:, :-1], (1100, 1001), None),
    "sliced rows": (lambda x: x[:, :, :-3], (20, 30, 103), (0, 2)),
    "sliced inner dims": (lambda x: x[..., :-1], (30, 50, 70), (1, 2)),
    "three runs": (lambda x: x, (6, 5, 7, 9, 30), (0, 2, 4)),
}
STAGED_OPS = [("sum", torch.float32), ("sum", torch.bfloat16), ("sum", torch.int32), ("mean", torch.float16),
              ("mean", torch.float64), ("amax", torch.bfloat16), ("amin", torch.float32)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
def test_reduced_dims_in_several_runs_are_batch_invariant(device, op, dtype, make_input, bitwise_equal):
    """A slice of a kept dim gives the same bits as the same outputs of the whole: channels of
    batch-norm statistics over (0, 2, 3) and rows of dims (0, 2) of a 3-D tensor (slices that
    take their stages on a copy), the first of dims (1, 3) of a 4-D tensor (read in place), and
    kept dims before and between two reduced runs, the one between cut to width 1 too, also in
    inputs too small for stages."""
    reduce = getattr(torch_reduce, op)
    z = make_input((12, 9, 10, 120), dtype, device)
    full = reduce(z, (1, 3))
    for k in (1, 5, 11):
        bitwise_equal(reduce(z[:k], (1, 3)), full[:k], f"first {k}")
    x = make_input((8, 37, 15, 15), dtype, device)
    full = reduce(x, (0, 2, 3))
    for k in (1, 5, 36):
        bitwise_equal(reduce(x[:, :k], (0, 2, 3)), full[:k], f"first {k} channels")
    y = make_input((33, 70, 129), dtype, device)
    full = reduce(y, (0, 2))
    for k in (1, 2, 69):
        bitwise_equal(reduce(y[:, :k], (0, 2)), full[:k], f"first {k} rows")
    w = make_input((12, 50, 51), dtype, device)[..., :-1]  # two equal runs: the inner first
    full = reduce(w, (1, 2))
    for k in (1, 5, 11):
        bitwise_equal(reduce(w[:k], (1, 2)), full[:k], f"first {k} of a slice's inner dims")
    # Kept dims before and between two reduced runs, cut (the reduced dims kept, so that a cut
    # applies to both): the inner run first as the larger, and (on a GPU) as a slice's rows. And
    # inputs too small for stages, whose rows are gathered (GPU) or copied: a cut to width 1 of the
    # kept dim between the runs must not merge them into columns in its copy.
    around = [lambda t: t[:1], lambda t: t[:4], lambda t: t[:, :, :1], lambda t: t[:, :, 1:2]]
    between = [lambda t: t[:, 6:7], lambda t: t[:, :1], lambda t: t[:, 2:5], lambda t: t[..., :1]]
    for shape, view, dims, cuts in [
        ((6, 90, 10, 120), lambda t: t, (1, 3), around),
        ((10, 100, 3, 65), lambda t: t[..., :-1], (1, 3), around),
        ((4, 7, 16, 8), lambda t: t, (0, 2), between),
        ((4, 7, 16, 11), lambda t: t[..., :8], (0, 2), between),
        ((4, 7, 17, 8), lambda t: t[:, :, :16], (0, 2), between),
    ]:
        v = view(make_input(shape, dtype, device))
        full = reduce(v, dims, keepdim=True)
        for i, cut in enumerate(cuts):
            bitwise_equal(reduce(cut(v), dims, keepdim=True), cut(full), f"{shape}: slice {i} of the kept dims")


def _both(stages):
    return {"cpu": stages, "cuda": stages}


# The order of stages, pinned where the accumulator is the input's dtype: (view of a fresh input,
# its shape, dims, the stages' dims in turn on the CPU and on a GPU). The larger run first, of
# equal ones the inner; on a GPU, a slice's innermost run first where it makes rows of 128 bytes
# or more and the larger run is more than 64 long (plan_stages).
STAGE_ORDERS = {
    "larger run first": (lambda x: x, (300, 20, 40), (0, 2), _both(((0,), (1,)))),
    "the larger of a slice's inner dims first": (lambda x: x[..., :-1], (6, 300, 21), (1, 2), _both(((1,), (1,)))),
    "a slice's inner rows of a line first on a GPU": (lambda x: x[..., :-1], (6, 300, 41), (1, 2),
                                                      {"cpu": ((1,), (1,)), "cuda": ((2,), (1,))}),
    "a slice's inner rows after a short larger run": (lambda x: x[..., :-1], (6, 60, 41), (1, 2),
                                                      _both(((1,), (1,)))),
    "of equal runs, the inner first": (lambda x: x[..., :-1], (6, 40, 41), (1, 2), _both(((2,), (1,)))),
}


@pytest.mark.parametrize("case", list(STAGE_ORDERS), ids=_id)
def test_stages_take_their_runs_in_order(device, case, make_input, bitwise_equal):
    """A float32 sum in stages gives the bits of the same stages taken one call at a time, each
    stage a contiguous partial."""
    view, shape, dims, stages_on = STAGE_ORDERS[case]
    stages = stages_on[torch.device(device).type]
    x = view(make_input(shape, torch.float32, device))
    partial = x
    for stage in stages:
        partial = torch_reduce.sum(partial, stage)
    bitwise_equal(torch_reduce.sum(x, dims), partial, "the stages one call at a time")


# Kept dims out of memory order (transposed and permuted tensors): the dims are taken in memory
# order, the output written in that order and copied into the result's. (view of a fresh input,
# its shape, dims), as in STAGED_CASES.
PERMUTED_CASES = {
    "columns": (lambda x: x.permute(3, 1, 2, 0), (25, 7, 175, 44), (1,)),  # kept (25)(175 x 44), reduced 7 between
    "rows": (lambda x: x.permute(1, 0, 2), (30, 12, 700), (2,)),  # rows of 700 under kept dims swapped
    "merged rows": (lambda x: x.permute(3, 2, 1, 0), (2, 5, 237, 301), (0, 2)),  # reduced 237 x 301 merge in memory
    "stages": (lambda x: x.permute(2, 1, 0, 3), (6, 40, 5, 64), (1, 3)),  # two reduced runs, kept dims swapped
    "transposed slice, full": (lambda x: x[:, :-1].t(), (1100, 1001), None),  # two runs
}


# Dims whose copy would be rows, read in place through their strides instead (gathered rows), in
# dim reductions of 2^20 elements or more: (view of a fresh input, its shape, dims), as in
# STAGED_CASES. Reduced dims on both sides of the kept ones with too few values an output for
# stages (rows of a warp, several a lane, one a lane), transposed, kept dims in two runs, kept
# dims out of memory order (the output written dense and copied into the result), a strided
# reduced dim (rows of a block).
GATHERED_CASES = {
    "reduced on both sides": (lambda x: x, (3, 8000, 44), (0, 2)),
    "short, reduced on both sides": (lambda x: x, (2, 180000, 3), (0, 2)),
    "long, reduced on both sides": (lambda x: x, (5, 1200, 181), (0, 2)),
    "transposed, reduced on both sides": (lambda x: x.transpose(0, 2), (15, 23400, 3), (0, 2)),
    "two kept runs": (lambda x: x[..., :3], (1010, 58, 6, 4), (1, 3)),
    "kept dims out of memory order": (lambda x: x.permute(0, 3, 2, 1), (6, 200, 5, 180), (0, 2)),
    "strided reduced dim": (lambda x: x[:, ::2], (60, 40000), (1,)),
}

# Gathered rows of inputs of fewer than 2^18 elements, each block's rows staged in shared memory
# (staged_rows_kernel on CUDA): as in GATHERED_CASES, and rows of a vector or less and of six
# elements, rows of more elements than a block stages at once (one row a block, staged in two
# rounds; a strided reduced dim, since reduced dims in two runs of 1024 values or more take
# stages), kept dims out of memory order (the output written through the permutation), a strided
# reduced dim, a single row (the kept dims of size 1), full reductions (one row, read by the
# split kernel: the bits of the copy's full reduction), and an input of 2^18 to 2^20 elements
# (gathered by the row kernels in 4-byte types, staged in the others).
SMALL_GATHERED_CASES = {
    "small, reduced on both sides": (lambda x: x, (3, 179, 44), (0, 2)),
    "small, rows shorter than a vector": (lambda x: x, (2, 3001, 2), (0, 2)),
    "small, rows of two rounds": (lambda x: x[:, ::2], (40, 4200), (1,)),
    "small, transposed": (lambda x: x.transpose(0, 2), (15, 234, 3), (0, 2)),
    "small, two kept runs": (lambda x: x[..., :3], (101, 58, 6, 4), (1, 3)),
    "small, kept dims out of memory order": (lambda x: x.permute(0, 3, 2, 1), (6, 20, 5, 18), (0, 2)),
    "small, strided reduced dim": (lambda x: x[:, ::2], (60, 4000), (1,)),
    "small, rows of six": (lambda x: x, (2, 2001, 3), (0, 2)),
    "small, one row": (lambda x: x[:, ::2], (1, 6000), (1,)),
    "small full reduction of a slice": (lambda x: x[:, 1:], (18, 194), None),
    "small full reduction, strided": (lambda x: x[::3], (3001,), None),
    "between the bounds, reduced on both sides": (lambda x: x, (3, 30000, 4), (0, 2)),
}

# Columns whose kept dims merge into neither layout, of at most 32 rows: read in place on CUDA
# (gathered columns), as in GATHERED_CASES. A slice of the innermost dim (small and of 2^20
# elements), a strided innermost dim, kept dims out of memory order (the output written through
# the permutation), an expanded kept dim, two reduced dims in one run.
GATHERED_COLUMNS_CASES = {
    "sliced inner dim": (lambda x: x[..., :2], (30, 11, 58, 3), (1,)),
    "sliced inner dim, 2^20 elements": (lambda x: x[..., :2], (64, 16, 512, 3), (1,)),
    "strided inner dim": (lambda x: x[..., ::2], (20, 32, 9, 8), (1,)),
    "kept dims out of memory order": (lambda x: x[..., :2].permute(0, 1, 3, 2), (30, 11, 58, 3), (1,)),
    "expanded kept dim": (lambda x: x[..., :2].expand(6, 11, 58, 2), (1, 11, 58, 3), (1,)),
    "two reduced dims in one run": (lambda x: x[..., :2], (12, 4, 7, 40, 3), (1, 2)),
}

# Expanded dims (stride 0) hold the same values at every index, which are read once: the
# outputs of a kept one are reduced at one index and expanded; the repeats along a reduced one
# leave extrema and means as they are and multiply sums.
EXPANDED_CASES = {
    "kept dim innermost": (lambda t: t.expand(40, 3, 65), (40, 3, 1), (0, 1)),
    "kept dim outermost": (lambda t: t.expand(9, 300, 7), (1, 300, 7), (1,)),
    "kept dim between reduced dims": (lambda t: t[..., :33].expand(3, 24, 33), (3, 1, 66), (0, 2)),
    "reduced dim between kept dims": (lambda t: t[..., :100].expand(6, 50, 100), (6, 1, 101), (1,)),
    "reduced dim innermost, full reduction": (lambda t: t.expand(300, 64), (300, 1), None),
    "reduced dim in the middle, full reduction": (lambda t: t.expand(10, 3, 50), (10, 1, 50), None),
    "kept and reduced dims": (lambda t: t.expand(8, 70, 30, 5), (1, 70, 1, 5), (0, 3)),
}

# The layouts that the kernels read without a copy of the input.
IN_PLACE_CASES = {**{f"several runs, {k}": v for k, v in STAGED_CASES.items()},
                  **{f"kept dims out of order, {k}": v for k, v in PERMUTED_CASES.items()},
                  **{f"gathered rows, {k}": v for k, v in {**GATHERED_CASES, **SMALL_GATHERED_CASES}.items()},
                  **{f"gathered columns, {k}": v for k, v in GATHERED_COLUMNS_CASES.items()},
                  **{f"expanded, {k}": v for k, v in EXPANDED_CASES.items()}}


@pytest.mark.parametrize("op,dtype", STAGED_OPS, ids=_id)
@pytest.mark.parametrize("case", list(IN_PLACE_CASES), ids=_id)
def test_reduced_without_copying_the_input(device, case, op, dtype, make_input, check):
    """Reduced dims that form several runs in memory, transposed or permuted tensors whose kept
    dims are out of memory order, and expanded tensors give torch's result (dtype, shape, the
    float64 reference's value), contiguous, with and without keepdim."""
    view, shape, dims = IN_PLACE_CASES[case]
    x = view(make_input(shape, dtype, device))
    reduce = getattr(torch_reduce, op)
    for keepdim in (False, True):
        out = reduce(x, keepdim=keepdim) if dims is None else reduce(x, dims, keepdim=keepdim)
        check(out, x, op=op, dim=dims, keepdim=keepdim)
        assert out.is_contiguous()


@pytest.mark.requires_cuda
@pytest.mark.parametrize("case", list(IN_PLACE_CASES), ids=_id)
def test_reduced_without_copying_the_input_read_in_place(cuda_device, case, make_input):
    """... and read the input in place: no copy of it is allocated (the peak allocation stays
    under half the input's bytes)."""
    view, shape, dims = IN_PLACE_CASES[case]
    x = view(make_input(shape, torch.bfloat16, cuda_device))
    read_in_place(lambda: torch_reduce.sum(x) if dims is None else torch_reduce.sum(x, dims), x)


# Gathered rows beside the copies they replace, and the cases still copied: small inputs of rows
# of 16 KiB or more (float64 rows of 2100 above, all of 8200), small full reductions of runs
# shorter than a vector, more runs than the kernels index (five reduced runs), reductions over
# dims of size 1 alone. (Columns are read as columns, gathered or copied, so that a slice whose
# kept dims no longer merge reads as the whole does: KEPT_SLICES.)
ROWS_CASES = {**GATHERED_CASES, **SMALL_GATHERED_CASES,
              "small, rows of 16 KiB or more, copied": (lambda x: x[:, ::2], (30, 16400), (1,)),
              "full reduction of a strided tensor": (lambda x: x[::2], (2**21 + 6,), None),
              "small full reduction of runs shorter than a vector, copied": (lambda x: x[..., 1:], (40, 30, 4), None),
              "five reduced runs, copied": (lambda x: x, (3, 2, 3, 2, 3, 2, 3, 2, 3, 2), (0, 2, 4, 6, 8)),
              "dims of size 1, copied": (lambda x: x[:, :-1:2].unsqueeze(1), (2100, 2101), (1,)),
              "small, dims of size 1, copied": (lambda x: x[:, :-1:2].unsqueeze(1), (60, 401), (1,))}


def assert_kept_slice_matches(reduce, x, dims, out, bitwise_equal):
    """The first kept dim of x with more than two elements, without its first and last, reduces to
    the same bits as those outputs of `out`, x reduced over `dims` (batch invariance). Nothing to
    compare where no kept dim is that long."""
    kept = next((d for d in range(x.dim()) if d not in dims and x.size(d) > 2), None)
    if kept is None:
        return
    n = x.size(kept) - 2
    bitwise_equal(reduce(x.narrow(kept, 1, n), dims), out.narrow(sum(d not in dims for d in range(kept)), 1, n),
                  "a slice of a kept dim")


def rows_copy(x, dims):
    """x with its kept dims first and its reduced dims after them in memory order, made
    contiguous (the copy that gathered rows replace), and the dims it reduces."""
    reduced = range(x.dim()) if dims is None else [d % x.dim() for d in dims]
    kept = [d for d in range(x.dim()) if d not in reduced]
    by_stride = sorted(reduced, key=lambda d: -x.stride(d))
    return x.permute(kept + by_stride).contiguous(), tuple(range(len(kept), x.dim()))


@pytest.mark.parametrize("op,dtype", STAGED_OPS, ids=_id)
@pytest.mark.parametrize("case", list(ROWS_CASES), ids=_id)
def test_gathered_rows_give_the_bits_of_their_copy(device, case, op, dtype, make_input, bitwise_equal, poison,
                                                   check):
    """Rows read in place through their strides give the bits of the same rows copied (kept dims
    first, reduced dims after them in memory order), every output written (the allocator's
    blocks hold NaN beforehand), and a slice of a kept dim gives the same bits as the same
    outputs of the whole (batch invariance) where there is one. (The CPU reads no rows through
    strides: it stages reduced dims in several runs, in an order of its own, and copies the rest.)"""
    view, shape, dims = ROWS_CASES[case]
    x = view(make_input(shape, dtype, device))
    reduce = getattr(torch_reduce, op)
    copy, copy_dims = rows_copy(x, dims)
    poison(device, copy.numel() * 8)
    out = reduce(x) if dims is None else reduce(x, dims)
    if x.is_cuda:
        bitwise_equal(out, reduce(copy, copy_dims), "the copy's rows")
    else:
        check(out, x, op=op, dim=dims)
    if dims is not None:
        assert_kept_slice_matches(reduce, x, dims, out, bitwise_equal)


# Small gathered rows whose reduced runs are whole vectors in every dtype (runs of 16 elements:
# one vector of one-byte elements, eight of float64), which CUDA stages a vector a load where they
# are aligned, and element by element one element off.
WHOLE_VECTOR_ROWS = {"aligned": lambda x: x[:-1].view(3, 150, 16), "one element off": lambda x: x[1:].view(3, 150, 16)}


@pytest.mark.parametrize("op", ["sum", "amax"])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=_id)
@pytest.mark.parametrize("view", list(WHOLE_VECTOR_ROWS))
def test_staged_rows_of_whole_vectors(device, view, dtype, op, make_input, bitwise_equal, poison, check):
    """Reduced over (0, 2), such rows give torch's result, every output written, and on CUDA the
    bits of their copy."""
    x = WHOLE_VECTOR_ROWS[view](make_input((3 * 150 * 16 + 1,), dtype, device))
    reduce = getattr(torch_reduce, op)
    poison(device, x.numel() * 8)
    out = reduce(x, (0, 2))
    check(out, x, op=op, dim=(0, 2))
    if x.is_cuda:
        copy, copy_dims = rows_copy(x, (0, 2))
        bitwise_equal(out, reduce(copy, copy_dims), "the copy's rows")


# Gathered columns beside their copy, and the columns still copied: longer columns (33 rows), more
# runs of kept dims than the kernels index (five).
COLUMNS_CASES = {**GATHERED_COLUMNS_CASES,
                 "33 rows, copied": (lambda x: x[..., :2], (30, 33, 58, 3), (1,)),
                 "five kept runs, copied": (lambda x: x[:, :, :3, :3, :3, :3], (2, 11, 4, 4, 4, 4), (1,))}


@pytest.mark.parametrize("op,dtype", STAGED_OPS, ids=_id)
@pytest.mark.parametrize("case", list(COLUMNS_CASES), ids=_id)
def test_gathered_columns_give_the_bits_of_their_copy(device, case, op, dtype, make_input, bitwise_equal, poison):
    """Columns read in place through their strides give the bits of the same columns copied,
    every output written (the allocator's blocks hold NaN beforehand), and a slice of a kept dim
    gives the same bits as the same outputs of the whole (batch invariance)."""
    view, shape, dims = COLUMNS_CASES[case]
    x = view(make_input(shape, dtype, device))
    reduce = getattr(torch_reduce, op)
    poison(device, x.numel() * 8)
    out = reduce(x, dims)
    bitwise_equal(out, reduce(x.contiguous(), dims), "the copy's columns")
    assert_kept_slice_matches(reduce, x, dims, out, bitwise_equal)


_FULL_SUM_CHILD = """
import sys
sys.path[:0] = sys.argv[2:]
import torch
import torch_reduce
torch.manual_seed(0)
x = torch.randn(2**23 + 3, device="cuda")
if sys.argv[1] == "gathered first":
    torch_reduce.sum(torch.randn(2**22, device="cuda")[::2])
print(torch_reduce.sum(x).item().hex())
"""


@pytest.mark.requires_cuda
def test_full_reduction_bits_do_not_depend_on_earlier_calls(cuda_device):
    """A contiguous full reduction of many tiles gives the same bits in a fresh process and in one
    that reduced a strided tensor first: the blocks it is split into come from the contiguous
    kernel's residency alone (the gathered kernel, of more registers, holds fewer blocks an SM,
    and a count cached for both by whichever asked first split one process's sums otherwise)."""
    runs = [subprocess.run([sys.executable, "-c", _FULL_SUM_CHILD, first, *sys.path], capture_output=True,
                           text=True, check=True).stdout for first in ("fresh", "gathered first")]
    assert runs[0] == runs[1]


# Kept dims out of memory order, one case for each kernel that writes outputs: on CUDA, small
# outputs of rows of a warp or less and of columns of one chunk are written straight into the
# result, through the permutation; the others, outputs of more dims than the kernels index and
# large ones are written dense and copied (as on the CPU). (view of a fresh input, its shape,
# dims), as in STAGED_CASES.
PERMUTED_OUTPUT_CASES = {
    "several rows a lane": (lambda x: x.transpose(0, -1), (6, 46, 1, 7), (0, 2)),
    "one row a lane": (lambda x: x.permute(1, 0, 2), (30, 12, 700), (2,)),
    "rows of two": (lambda x: x.permute(1, 0, 2), (30, 12, 2), (2,)),  # packed where the output is dense
    "long rows, copied": (lambda x: x.permute(1, 0, 2), (20, 8, 8200), (2,)),
    "columns of one chunk": (lambda x: x.permute(2, 1, 0), (5, 40, 36), (1,)),
    "long columns, copied": (lambda x: x.permute(2, 1, 0), (5, 1000, 36), (1,)),
    "long odd columns, copied": (lambda x: x.permute(2, 1, 0), (3, 1000, 33), (1,)),
    "narrow items in blocks, copied": (lambda x: x.permute(2, 1, 0), (2, 1000, 2113), (1,)),
    "three kept dims": (lambda x: x.permute(3, 1, 2, 0), (5, 7, 75, 44), (1,)),
    "stages": (lambda x: x.permute(2, 1, 0, 3), (6, 40, 5, 64), (1, 3)),
    "five kept dims, copied": (lambda x: x.permute(4, 3, 2, 1, 0, 5), (2, 3, 2, 3, 2, 9), (5,)),
    "large output, copied": (lambda x: x.permute(2, 1, 0), (1000, 3, 1500), (1,)),
}
# The cases written through the permutation, whose outputs are large enough for the allocator to
# show a copy (over 512 bytes of float32).
ONE_KERNEL_OUTPUTS = ["several rows a lane", "one row a lane", "rows of two", "columns of one chunk", "three kept dims"]


@pytest.mark.parametrize("op,dtype", STAGED_OPS, ids=_id)
@pytest.mark.parametrize("case", list(PERMUTED_OUTPUT_CASES), ids=_id)
def test_permuted_outputs(device, case, op, dtype, make_input, check, poison):
    """Transposed and permuted tensors give torch's result (dtype, shape, the float64 reference's
    value), contiguous, with and without keepdim, every output written (the allocator's blocks
    hold NaN beforehand)."""
    view, shape, dims = PERMUTED_OUTPUT_CASES[case]
    x = view(make_input(shape, dtype, device))
    reduce = getattr(torch_reduce, op)
    for keepdim in (False, True):
        poison(device, math.prod(s for d, s in enumerate(x.shape) if d not in dims) * 8)
        out = reduce(x, dims, keepdim=keepdim)
        check(out, x, op=op, dim=dims, keepdim=keepdim)
        assert out.is_contiguous()


@pytest.mark.requires_cuda
@pytest.mark.parametrize("case", ONE_KERNEL_OUTPUTS, ids=_id)
def test_permuted_outputs_written_in_place(cuda_device, case, make_input, check):
    """... and on CUDA those are written into the result itself: the call allocates its result
    and no dense copy of it (its peak allocation stays under twice the result's bytes)."""
    view, shape, dims = PERMUTED_OUTPUT_CASES[case]
    x = view(make_input(shape, torch.float32, cuda_device))
    torch_reduce.sum(x, dims)  # the stream's workspace, once
    out, peak = peak_allocation(lambda: torch_reduce.sum(x, dims))
    assert peak < 2 * out.numel() * out.element_size()
    check(out, x, dim=dims)


# Slices of a kept dim, among them the innermost kept dim cut to width 1, which leaves columns of
# width 1 that must be summed as the wider columns are: (shape of a fresh input, view, dims,
# slices of the view's kept dims).
KEPT_SLICES = {
    "middle dim": ((12, 300, 9), lambda t: t, 1,
                   [lambda y: y[..., :1], lambda y: y[..., 4:5], lambda y: y[..., :5], lambda y: y[:3]]),
    "middle dim of 4": ((6, 300, 5, 9), lambda t: t, 1,
                        [lambda y: y[..., :1], lambda y: y[..., :4], lambda y: y[:, :, 1:3], lambda y: y[:2]]),
    "strided columns": ((300, 27), lambda t: t[:, ::3], 0, [lambda y: y[:, :1], lambda y: y[:, 2:7]]),
    "transposed": ((300, 9), lambda t: t.t(), 1, [lambda y: y[:1], lambda y: y[3:4], lambda y: y[:5]]),
    "permuted": ((25, 7, 175, 44), lambda t: t.permute(3, 1, 2, 0), 1,
                 [lambda y: y[:1], lambda y: y[:, :, :1], lambda y: y[..., 2:3], lambda y: y[:5, :, :7]]),
    # Kept dims of width 1 that are not slices of columns (a transposed tensor's rows, rows over
    # an expanded kept dim) and ones that are (of a strided inner dim, over an expanded dim).
    "transposed rows": ((8, 64), lambda t: t.t(), 0, [lambda y: y[:, :1], lambda y: y[:, 5:6], lambda y: y[:, 2:5]]),
    "strided inner dim": ((31, 3, 65, 26), lambda t: t[..., ::2], 2,
                          [lambda y: y[..., 11:12], lambda y: y[..., :1], lambda y: y[:2]]),
    "expanded reduced dim": ((1, 9), lambda t: t.expand(129, 9), 0, [lambda y: y[:, 5:6], lambda y: y[:, :3]]),
    "expanded kept dim": ((100, 1), lambda t: t.expand(100, 65), 0, [lambda y: y[:, 25:26], lambda y: y[:, :4]]),
    # The reduced dim outermost, the kept dims after it: columns whose batch dim is inside the
    # reduced dim's step, plain and over an expanded reduced dim.
    "outer reduced dim": ((300, 12, 9), lambda t: t, 0,
                          [lambda y: y[..., :1], lambda y: y[..., 4:5], lambda y: y[:, :3]]),
    "expanded outer reduced dim": ((1, 65, 4), lambda t: t[..., :3].expand(64, 65, 3), 0,
                                   [lambda y: y[..., :1], lambda y: y[..., 2:3], lambda y: y[:, 7:9]]),
    # Kept dims that merge into neither layout (gathered columns on CUDA), cut in each.
    "kept dims that do not merge": ((30, 11, 58, 3), lambda t: t[..., :2], 1,
                                    [lambda y: y[..., :1], lambda y: y[:, :, 5:6], lambda y: y[:4],
                                     lambda y: y[:, :, 3:40]]),
    # Rows of a batch cut to one, with a kept dim of size 1 after the reduced run: rows, as the
    # whole reads them, not a column of one (plain and of rows of a slice).
    "batch of rows cut to one": ((5, 33, 1), lambda t: t, 1, [lambda y: y[:1], lambda y: y[3:4], lambda y: y[1:3]]),
    "batch of sliced rows cut to one": ((9, 130, 1), lambda t: t[:, :65], 1, [lambda y: y[8:9], lambda y: y[:2]]),
    # A permuted view whose kept dim lies between the reduced dims in memory, cut to one.
    "kept dim inside the reduced dims' memory": ((64, 17, 65), lambda t: t.permute(1, 0, 2)[:16], (1, 2),
                                                [lambda y: y[14:15], lambda y: y[:5]]),
    # Expanded dims are cut to width one before the reduction (kept ones innermost in memory,
    # reduced ones between kept dims).
    "expanded kept dim innermost": ((3, 1, 66), lambda t: t[..., :33].expand(3, 2, 33), (0, 2),
                                    [lambda y: y[:, :1], lambda y: y[:, 1:2]]),
    "expanded reduced dim between kept dims": ((1, 4, 101), lambda t: t[..., :100].expand(5, 4, 100), (0, 2),
                                               [lambda y: y[:, 1:2], lambda y: y[:, :3]]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("case", list(KEPT_SLICES), ids=_id)
def test_kept_dim_slices_are_batch_invariant(device, case, op, dtype, make_input, bitwise_equal):
    """A slice of any kept dim gives the same bits as the same outputs of the whole, the
    innermost kept dim cut to width 1 included (x[..., :1])."""
    shape, view, dim, slices = KEPT_SLICES[case]
    reduce = getattr(torch_reduce, op)
    x = view(make_input(shape, dtype, device))
    whole = reduce(x, dim, keepdim=True)  # the reduced dim kept (size 1), so that a cut applies to both
    for i, cut in enumerate(slices):
        bitwise_equal(reduce(cut(x), dim, keepdim=True), cut(whole), f"slice {i}")


def expanded_kept_dims(case):
    """The kept dims of EXPANDED_CASES[case] that are expanded."""
    view, shape, dims = EXPANDED_CASES[case]
    x = view(torch.empty(shape))
    return [d for d in range(x.dim()) if x.stride(d) == 0 and dims is not None and d not in dims]


@pytest.mark.parametrize("op,dtype", STAGED_OPS, ids=_id)
@pytest.mark.parametrize("case", [k for k in EXPANDED_CASES if expanded_kept_dims(k)], ids=_id)
def test_expanded_kept_dims_give_the_bits_of_one_index(device, case, op, dtype, make_input, bitwise_equal):
    """An expanded kept dim's outputs are, bit for bit, those of any one index of it."""
    view, shape, dims = EXPANDED_CASES[case]
    x = view(make_input(shape, dtype, device))
    reduce = getattr(torch_reduce, op)
    whole = reduce(x, dims, keepdim=True)
    for d in expanded_kept_dims(case):
        one = reduce(x.narrow(d, x.size(d) - 1, 1), dims, keepdim=True)
        bitwise_equal(whole, one.expand(whole.shape), f"dim {d} at its last index")


@pytest.mark.parametrize("dtype,out_dtype", [(torch.int64, None), (torch.int32, torch.int8)], ids=_id)
def test_integer_sums_over_an_expanded_dim_wrap_as_torch_does(device, dtype, out_dtype):
    """Integer sums over repeats wrap around as torch's do (int64 accumulation, then the cast)."""
    big = torch.iinfo(dtype).max // 2
    x = torch.tensor([[big + 3, -big - 5, 7]], dtype=dtype, device=device).expand(6, 3)
    for dim in (0, None):
        assert torch.equal(torch_reduce.sum(x, dim, dtype=out_dtype), torch.sum(x, dim, dtype=out_dtype))


@pytest.mark.parametrize("offset", range(1, 9))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool], ids=_id)
def test_every_misalignment(device, dtype, offset, make_input, check):
    """Heads that are not 16-byte aligned and tails that are not a multiple of the vector width."""
    base = make_input(4099 + 16, dtype, device)
    x = base[offset : offset + 4099 - offset]
    check(torch_reduce.sum(x), x)
    rows = base[offset : offset + 16 * 255].view(16, 255)
    check(torch_reduce.sum(rows, 1), rows, dim=1)


# --------------------------------------------------------------------------- #
# The dtype= argument: whatever torch.sum accepts must match
# --------------------------------------------------------------------------- #
def _input_for_cast(shape, in_dtype, out_dtype, device, make_input):
    if out_dtype.is_floating_point and not in_dtype.is_floating_point and in_dtype != torch.bool:
        # Small integers, so that the cast to float16/bfloat16 is finite.
        lo = 0 if in_dtype == torch.uint8 else -100
        return make_input(shape, in_dtype, device, low=lo, high=100)
    return make_input(shape, in_dtype, device)


DTYPE_PAIRS = [(a, b) for a in ALL_DTYPES for b in ALL_DTYPES]


@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
@pytest.mark.parametrize("in_dtype,out_dtype", DTYPE_PAIRS, ids=[f"{_id(a)}->{_id(b)}" for a, b in DTYPE_PAIRS])
def test_dtype_argument(device, in_dtype, out_dtype, dim, make_input, check, raises_like_torch):
    x = _input_for_cast((10, 50), in_dtype, out_dtype, device, make_input)
    try:
        torch.sum(x, dim, dtype=out_dtype)
    except Exception:
        raises_like_torch(lambda: torch_reduce.sum(x, dim, dtype=out_dtype), lambda: torch.sum(x, dim, dtype=out_dtype))
        return
    check(torch_reduce.sum(x, dim, dtype=out_dtype), x, dim=dim, dtype=out_dtype)


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
def test_dtype_argument_large(device, in_dtype, out_dtype, size, make_input, check):
    x = _input_for_cast((size,), in_dtype, out_dtype, device, make_input)
    check(torch_reduce.sum(x, dtype=out_dtype), x, dtype=out_dtype)
    x2 = x[: size - size % 5].view(5, -1)
    check(torch_reduce.sum(x2, 1, dtype=out_dtype), x2, dim=1, dtype=out_dtype)
    check(torch_reduce.sum(x2, 0, dtype=out_dtype), x2, dim=0, dtype=out_dtype)


def test_dtype_argument_accumulates_in_requested_dtype(device):
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
def test_dtype_bool_is_any_nonzero(device, in_dtype):
    """sum(x, dtype=bool) is True when any element is nonzero, even if the values cancel."""
    x = torch.tensor([[1, -1, 0], [0, 0, 0]], dtype=in_dtype, device=device)
    for dim in (None, 1, 0):
        expected = torch.sum(x, dim, dtype=torch.bool)
        assert torch.equal(torch_reduce.sum(x, dim, dtype=torch.bool), expected), dim


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_half_accumulates_in_float32(device, dtype):
    """float16/bfloat16 are accumulated in float32 (like torch.sum) and rounded once."""
    n = 4096
    x = torch.ones(n, dtype=dtype, device=device)  # a half accumulator sticks at 2048 (fp16) / 256 (bf16)
    out = torch_reduce.sum(x)
    assert out.dtype == dtype
    assert out.item() == float(torch.sum(x).item()) == 4096.0
    assert torch_reduce.sum(x.view(2, n // 2), 1).tolist() == [2048.0, 2048.0]
    assert torch_reduce.sum(x, dtype=torch.float32).item() == 4096.0


def test_half_overflow(device, check):
    """A float16 sum beyond 65504 is inf like torch.sum; dtype=float32 gives the finite value."""
    x = torch.full((1025,), 100.0, dtype=torch.float16, device=device)
    out = torch_reduce.sum(x)
    assert torch.isinf(out) and out > 0 and torch.isinf(torch.sum(x))
    check(torch_reduce.sum(x, dtype=torch.float32), x, dtype=torch.float32)
    assert torch_reduce.sum(x, dtype=torch.float32).item() == 102500.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_every_half_bit_pattern_converts_exactly(device, dtype):
    """All 65536 float16 / bfloat16 values (subnormals, infinities, NaNs included) are
    widened exactly: rows [x, -0.0] summed into float32 give x itself, and back in the
    input dtype x again (the sign of a zero aside: 0.0 + -0.0 is +0.0, as in torch)."""
    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype).to(device)
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


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_float_overflow_is_inf(device, dtype, check):
    """A sum beyond the output dtype's range is +-inf, like torch.sum."""
    big = torch.finfo(dtype).max / 2
    x = torch.full((1025,), big, dtype=dtype, device=device)
    x[::2] *= 0.75
    check(torch_reduce.sum(x), x)
    assert torch.isposinf(torch_reduce.sum(x)) and torch.isneginf(torch_reduce.sum(-x))
    check(torch_reduce.sum(x.view(5, 205), 1), x.view(5, 205), dim=1)


# --------------------------------------------------------------------------- #
# Integer results: int64 accumulation and wrap-around
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
def test_int64_wraps_around(device, values):
    x = torch.tensor(values, dtype=torch.int64, device=device)
    out = torch_reduce.sum(x)
    assert out.item() == _wrap64(sum(values)) == torch.sum(x).item()
    out = torch_reduce.sum(x.view(1, -1), 1)
    assert out.item() == _wrap64(sum(values))


def test_int64_random_full_range(device, make_input, check):
    """Full-range int64 values: the exact modular sum, in any order."""
    x = make_input((65537,), torch.int64, device)
    check(torch_reduce.sum(x), x)
    y = x[:65536].view(256, 256)
    check(torch_reduce.sum(y, 0), y, dim=0)
    check(torch_reduce.sum(y, 1), y, dim=1)


# --------------------------------------------------------------------------- #
# NaN and Inf
# --------------------------------------------------------------------------- #
@float_dtypes
@pytest.mark.parametrize("size", [33, 1025, 65537])
@pytest.mark.parametrize("special", ["nan", "inf", "-inf", "inf-inf", "nan+inf"])
def test_nan_inf_propagation(device, dtype, size, special, make_input, check):
    x = make_input(size, dtype, device)
    pos = torch.randperm(size)[:2].tolist()
    first, second = {
        "nan": (float("nan"), None),
        "inf": (float("inf"), None),
        "-inf": (float("-inf"), None),
        "inf-inf": (float("inf"), float("-inf")),
        "nan+inf": (float("nan"), float("inf")),
    }[special]
    x[pos[0]] = first
    if second is not None:
        x[pos[1]] = second
    out = torch_reduce.sum(x)
    check(out, x)
    # The same in a dim reduction: only the row holding the special value is affected.
    rows = x[: size - size % 3].view(3, -1)
    check(torch_reduce.sum(rows, 1), rows, dim=1)
    check(torch_reduce.sum(rows, 0), rows, dim=0)


@float_dtypes
def test_nan_in_one_output_only(device, dtype, make_input, check):
    x = make_input((8, 1025), dtype, device)
    x[3, 700] = float("nan")
    x[5, 0] = float("inf")
    out = torch_reduce.sum(x, 1)
    check(out, x, dim=1)
    assert torch.isnan(out[3]) and torch.isinf(out[5]) and torch.isfinite(out[[0, 1, 2, 4, 6, 7]]).all()


# --------------------------------------------------------------------------- #
# Errors: like torch.sum's
# --------------------------------------------------------------------------- #
ERROR_CASES = [
    ((3, 4), 2),
    ((3, 4), -3),
    ((3, 4), (0, 2)),
    ((5,), 1),
    ((5,), -2),
    ((), 1),
    ((), -2),
    ((0, 3), 2),
    ((3, 4), (0, 0)),
    ((3, 4), (0, -2)),
    ((3, 4), [1, 1]),
    ((2, 3, 4), (2, 1, -1)),
    ((), (0, 0)),
    ((), (0, -1)),
]


@pytest.mark.parametrize("shape,dim", ERROR_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in ERROR_CASES])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=_id)
def test_bad_dim_raises_like_torch(device, dtype, shape, dim, make_input, raises_like_torch):
    """Out-of-range dims raise IndexError, repeated dims RuntimeError: torch.sum's errors."""
    x = make_input(shape, dtype, device)
    raises_like_torch(lambda: torch_reduce.sum(x, dim), lambda: torch.sum(x, dim))
    raises_like_torch(lambda: torch.ops.torch_reduce.sum(x, list(dim) if isinstance(dim, tuple) else [dim]), lambda: torch.sum(x, dim))


@pytest.mark.parametrize("dtype", UNSUPPORTED_DTYPES, ids=_id)
@pytest.mark.parametrize("dim", [None, 1], ids=["full", "dim1"])
def test_unsupported_dtype_refused_by_name(device, dtype, dim):
    x = unsupported_input(dtype, device)
    with pytest.raises((RuntimeError, TypeError), match=dtype_name_pattern(dtype)):
        torch_reduce.sum(x, dim)
    with pytest.raises((RuntimeError, TypeError), match=dtype_name_pattern(dtype)):
        torch.ops.torch_reduce.sum(x, None if dim is None else [dim])


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=_id)
def test_complex_dtype_argument(device, dtype, make_input):
    """dtype=complex: either exactly torch.sum's result, or refused naming the dtype."""
    x = make_input((4, 5), torch.float32, device)
    try:
        out = torch_reduce.sum(x, dtype=dtype)
    except (RuntimeError, TypeError) as e:
        assert re.search(dtype_name_pattern(dtype), str(e)), f"error does not name {dtype}: {e}"
        return
    torch.testing.assert_close(out, torch.sum(x, dtype=dtype))


# --------------------------------------------------------------------------- #
# Result properties
# --------------------------------------------------------------------------- #
@dtypes
def test_result_is_a_new_tensor(device, dtype, make_input):
    """Output dtype/shape/device are torch's; the input is left untouched."""
    x = make_input((6, 7), dtype, device)
    before = x.clone()
    for dim in (None, 0, 1):
        out = torch_reduce.sum(x, dim)
        ref = torch.sum(x, dim)
        assert (out.dtype, out.shape, out.device) == (ref.dtype, ref.shape, ref.device)
        if out.numel() > 0 and x.numel() > 0:
            assert out.data_ptr() != x.data_ptr()
    assert torch.equal(x, before)


# --------------------------------------------------------------------------- #
# Determinism, poisoned memory (cpu and cuda)
# --------------------------------------------------------------------------- #
DETERMINISM_CASES = [
    ((2**20 + 3,), None),
    ((1024, 4099), 1),
    ((4099, 1024), 0),
    ((3, 500003), 1),
    ((500003, 3), 1),
    ((64, 33, 257), (0, 2)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64], ids=_id)
@pytest.mark.parametrize("shape,dim", DETERMINISM_CASES, ids=[f"{_id(s)}-dim{_id(d)}" for s, d in DETERMINISM_CASES])
def test_deterministic(device, dtype, shape, dim, make_input, bitwise_equal):
    """The same input gives bitwise the same result on every call."""
    x = make_input(shape, dtype, device)
    first = torch_reduce.sum(x, dim)
    for i in range(5):
        bitwise_equal(torch_reduce.sum(x, dim), first, f"call {i + 1}")
    # A copy of the input at another address gives the same bits too.
    bitwise_equal(torch_reduce.sum(x.clone(), dim), first, "copy of the input")


POISON_CASES = [
    ((2**20 + 3,), None, torch.float32),
    ((1025,), None, torch.float16),
    ((65537,), None, torch.int32),
    ((4099, 33), 1, torch.float32),
    ((33, 4099), 0, torch.float32),
    ((3, 2**18 + 1), 1, torch.bfloat16),
    ((2**18 + 1, 3), 0, torch.float32),
    ((257, 255), 1, torch.int8),
    ((64, 33, 257), (0, 2), torch.float32),
]


@pytest.mark.parametrize(
    "shape,dim,dtype", POISON_CASES, ids=[f"{_id(s)}-dim{_id(d)}-{_id(t)}" for s, d, t in POISON_CASES]
)
def test_poisoned_memory(device, shape, dim, dtype, make_input, check, poison):
    """Outputs and temporaries never read uninitialised memory: the caching allocator is
    filled with NaN (all-ones) bytes of the output's size, and of larger workspaces, first."""
    x = make_input(shape, dtype, device)
    ref = torch.sum(x, dim)
    out_bytes = max(ref.numel(), 1) * 8
    for nbytes in (out_bytes, 4 * out_bytes, 2**20, 2**22, x.numel() * x.element_size()):
        poison(device, nbytes)
        out = torch_reduce.sum(x, dim)
        check(out, x, dim=dim)


# --------------------------------------------------------------------------- #
# CUDA only: streams, no host sync, > 2^31 elements
# --------------------------------------------------------------------------- #
@pytest.mark.requires_cuda
@pytest.mark.parametrize("dim", [None, 1, 0], ids=["full", "dim1", "dim0"])
def test_runs_on_current_stream(cuda_device, dim, make_input, check, poison):
    """The kernels run on the current (non-default) stream: the input is written on a
    side stream behind a long sleep, and the reduction, queued on the same stream,
    must see the written data (a launch on another stream would read poison)."""
    src = make_input((512, 4099), torch.float32, cuda_device)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        poison(cuda_device, src.numel() * 4)  # the side stream's pool now holds NaN blocks
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time
        x = src * 1.0  # allocated now, written after the sleep
        out = torch_reduce.sum(x, dim)
        assert torch.cuda.current_stream() == s
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    check(out, src, dim=dim)


@pytest.mark.requires_cuda
def test_no_host_synchronisation(cuda_device, make_input):
    """No synchronising CUDA call on the host (torch's sync debug mode raises on one)."""
    x = make_input((1024, 1025), torch.float32, cuda_device)
    torch.cuda.synchronize()
    prev = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        torch_reduce.sum(x)
        torch_reduce.sum(x, 1)
        torch_reduce.sum(x, 0, keepdim=True)
        torch_reduce.sum(x.half(), dtype=torch.float32)
        torch_reduce.sum(x.to(torch.int8))
        torch_reduce.sum(x.t())
    finally:
        torch.cuda.set_sync_debug_mode(prev)


@pytest.mark.requires_cuda
def test_runs_on_the_tensors_device(cuda_device, make_input, check):
    """With several GPUs, the op runs on the input's device, not the current one."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (device guard test)")
    x = make_input((4099, 33), torch.float32, "cuda:1")
    with torch.cuda.device(0):
        out = torch_reduce.sum(x)
        out1 = torch_reduce.sum(x, 1)
    assert out.device == x.device and out1.device == x.device
    check(out, x)
    check(out1, x, dim=1)


def _chunked_reference(x, chunk=2**28):
    """(sum, sum|x|) of a huge 1-D tensor, as float64 (floats) or int64 (integers)."""
    acc = torch.float64 if x.dtype.is_floating_point else torch.int64
    total = torch.zeros((), dtype=acc, device=x.device)
    mag = torch.zeros((), dtype=acc, device=x.device)
    for i in range(0, x.numel(), chunk):
        c = x[i : i + chunk].to(acc)
        total += c.sum()
        mag += c.abs().sum()
    return total.item(), mag.item()


HUGE = 2**31 + 5


@pytest.mark.requires_cuda
@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.int8, torch.bool, torch.uint8], ids=_id)
def test_more_than_2_31_elements_integral(cuda_device, dtype, need_cuda_memory):
    need_cuda_memory(HUGE * 3 + 2**30)
    if dtype == torch.bool:
        x = torch.randint(0, 2, (HUGE,), dtype=torch.bool, device=cuda_device)
    elif dtype == torch.uint8:
        x = torch.randint(0, 256, (HUGE,), dtype=torch.uint8, device=cuda_device)
    else:
        x = torch.randint(-128, 128, (HUGE,), dtype=torch.int8, device=cuda_device)
    x[-1] = 1  # the last element, beyond 2^31, is counted
    expected, _ = _chunked_reference(x)
    out = torch_reduce.sum(x)
    assert out.dtype == torch.int64 and out.item() == expected
    x[-1] = 0 if dtype == torch.bool else 100
    expected2, _ = _chunked_reference(x)
    assert torch_reduce.sum(x).item() == expected2 != expected


@pytest.mark.requires_cuda
@pytest.mark.slow
def test_more_than_2_31_elements_float16(cuda_device, need_cuda_memory):
    need_cuda_memory(HUGE * 6 + 2**31)
    # Small values so that the total stays far inside float16's range.
    r = torch.rand(HUGE, device=cuda_device, dtype=torch.float32)
    x = r.sub_(0.5).mul_(0.25).half()
    del r
    x[-1] = 1000.0
    ref, mag = _chunked_reference(x)
    out = torch_reduce.sum(x)
    assert out.dtype == torch.float16
    tol = torch.finfo(torch.float16).eps * abs(ref) + 8 * torch.finfo(torch.float32).eps * mag
    assert abs(out.item() - ref) <= tol, f"got {out.item()}, float64 reference {ref}, tol {tol}"
    out32 = torch_reduce.sum(x, dtype=torch.float32)
    assert abs(out32.item() - ref) <= 8 * torch.finfo(torch.float32).eps * mag + 1e-3


@pytest.mark.requires_cuda
@pytest.mark.slow
def test_more_than_2_31_reduced_dim(cuda_device, need_cuda_memory):
    """A reduced dim longer than 2^31 (2 rows of 2^31+5 int8)."""
    need_cuda_memory(2 * HUGE * 2 + 2**30)
    x = torch.randint(-128, 128, (2, HUGE), dtype=torch.int8, device=cuda_device)
    expected = [_chunked_reference(x[i])[0] for i in range(2)]
    out = torch_reduce.sum(x, 1)
    assert out.dtype == torch.int64 and out.tolist() == expected
    out0 = torch_reduce.sum(x.t(), 0)  # the same, seen as columns
    assert out0.tolist() == expected


@pytest.mark.requires_cuda
@pytest.mark.slow
def test_more_than_2_31_elements_in_narrow_columns(cuda_device, need_cuda_memory):
    """Seven int16 columns of 2^31 / 7 rows and more, summed and maxed over dim 0: the flat
    column pass (column_flat_kernel) indexes its runs and partials past 2^31 elements."""
    rows = HUGE // 7 + 1
    need_cuda_memory(rows * 7 * 2 + 2**31)
    x = torch.randint(-2**15, 2**15, (rows, 7), dtype=torch.int16, device=cuda_device)
    x[-1, 3] = 2**15 - 1  # the last row, beyond 2^31 elements, is counted
    chunk = 2**24
    sums = sum(x[i : i + chunk].long().sum(0) for i in range(0, rows, chunk))
    maxes = torch.stack([x[i : i + chunk].amax(0) for i in range(0, rows, chunk)]).amax(0)
    assert torch.equal(torch_reduce.sum(x, 0), sums)
    assert torch.equal(torch_reduce.amax(x, 0), maxes)


@pytest.mark.requires_cuda
@pytest.mark.slow
def test_more_than_2_31_outputs(cuda_device, need_cuda_memory):
    """Outputs of more than 2^31 elements: int8 pairs summed along the last dim (rows),
    and a (2, 2^31+5) tensor summed over dim 0 (columns)."""
    need_cuda_memory(HUGE * 2 + HUGE * 8 + 2**33)
    chunk = 2**28
    x = torch.randint(-128, 128, (HUGE, 2), dtype=torch.int8, device=cuda_device)
    out = torch_reduce.sum(x, 1)
    assert out.dtype == torch.int64 and out.shape == (HUGE,)
    for i in range(0, HUGE, chunk):
        assert torch.equal(out[i : i + chunk], x[i : i + chunk].long().sum(1)), f"rows {i}.."
    del x, out
    y = torch.randint(-128, 128, (2, HUGE), dtype=torch.int8, device=cuda_device)
    out = torch_reduce.sum(y, 0)
    assert out.dtype == torch.int64 and out.shape == (HUGE,)
    for i in range(0, HUGE, chunk):
        assert torch.equal(out[i : i + chunk], y[:, i : i + chunk].long().sum(0)), f"columns {i}.."


# --------------------------------------------------------------------------- #
# The process-wide default algorithm never changes the semantics
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", torch_reduce.algorithms())
def test_default_algorithm_keeps_torch_semantics(device, name, make_input, check, raises_like_torch):
    """Under use_algorithm(name): full reductions of CUDA tensors may take that kernel,
    everything else (CPU tensors, dim reductions) the default path; the results and
    errors stay torch.sum's, and the setting is restored on exit."""
    before = torch_reduce.get_default_algorithm()
    x = make_input((33, 1025), torch.float32, device)
    xi = make_input((4099,), torch.int8, device)
    with torch_reduce.use_algorithm(name):
        assert torch_reduce.get_default_algorithm() == name
        check(torch_reduce.sum(x), x)
        check(torch_reduce.sum(x, (0, 1)), x, dim=(0, 1))
        check(torch_reduce.sum(x, [-1, 0], keepdim=True), x, dim=[-1, 0], keepdim=True)
        check(torch_reduce.sum(x, 1), x, dim=1)
        check(torch_reduce.sum(xi), xi)
        for bad in [(0, 1, 1), (0, -2, 1), 2, (0, 2)]:
            raises_like_torch(lambda: torch_reduce.sum(x, bad), lambda: torch.sum(x, bad))
    assert torch_reduce.get_default_algorithm() == before
