"""Determinism: the same input gives the same bits, and each kernel folds in its documented order.

Every op gives bitwise the same result on every call and for a copy of its input at another
address; on the CPU whatever the number of threads; on CUDA whatever the process reduced
before. The orders are pinned: stages of reduced dims in several runs are taken largest run
first (the stages one call at a time give the same bits), and CUDA's column reductions -- every
column kernel, the flat column pass too -- are, bit for bit, the fold64 order
(fold64_reference). That batch slices give the bits of the whole is test_batch_invariance.py's.
"""
import subprocess
import sys

import pytest
import torch

import torch_reduce
from cases import ALL_OPS, FLOAT_DTYPES, _id, reduce, shape_dim_ids
from layout_cases import FLAT_COLUMN_SHAPES, FLAT_VIEWS, flat_columns_input

# Full reductions, rows, columns, short rows and narrow columns, two reduced dims.
DETERMINISM_CASES = [
    ((2**20 + 3,), None),
    ((1024, 4099), 1),
    ((4099, 1024), 0),
    ((3, 500003), 1),
    ((500003, 3), 1),
    ((64, 33, 257), (0, 2)),
]


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("shape,dim", DETERMINISM_CASES, ids=shape_dim_ids(DETERMINISM_CASES))
def test_the_same_input_gives_the_same_bits(device, op, dtype, shape, dim, make_input, bitwise_equal):
    """The same input gives bitwise the same result on every call, and so does a copy of it at
    another address."""
    x = make_input(shape, dtype, device)
    first = reduce(op, x, dim)
    for i in range(5):
        bitwise_equal(reduce(op, x, dim), first, f"call {i + 1}")
    bitwise_equal(reduce(op, x.clone(), dim), first, "copy of the input")


# The CPU cuts each reduced dim into blocks and hands its threads spans of them, shorter the more
# threads it has, and folds narrow columns' whole blocks 8, 4 or 2 at a time as a span allows. Each
# block is folded alone and the blocks' results combine in one fixed tree, so the thread count
# never changes a bit: spans of 1 to 4 blocks, whole units, ragged last blocks.
THREAD_COUNT_CASES = [((1031, 3), 0), ((2, 700, 5), 1), ((4, 1200, 1), 1), ((16, 200, 8), 1), ((3, 33000), 1)]


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("shape,dim", THREAD_COUNT_CASES, ids=_id)
def test_cpu_thread_count_does_not_change_the_bits(op, dtype, shape, dim, make_input, bitwise_equal):
    x = make_input(shape, dtype, "cpu")
    threads = torch.get_num_threads()
    try:
        results = {}
        for n in (1, 2, 3, 8):
            torch.set_num_threads(n)
            results[n] = reduce(op, x, dim)
    finally:
        torch.set_num_threads(threads)
    for n in (2, 3, 8):
        bitwise_equal(results[n], results[1], f"{n} threads against 1")


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


# --------------------------------------------------------------------------- #
# The fold order of CUDA's column reductions: fold64
# --------------------------------------------------------------------------- #
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


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("shape", FLAT_COLUMN_SHAPES, ids=_id)
@pytest.mark.parametrize("view", list(FLAT_VIEWS))
def test_flat_columns_are_fold64(cuda_device, dtype, shape, view, make_input, bitwise_equal):
    """The flat run gives each column the bits of the documented fold64 order."""
    x = flat_columns_input(shape, view, dtype, cuda_device, make_input)
    columns = x.movedim(-2, 0).reshape(x.shape[-2], -1)  # the batches' columns side by side
    expected = fold64_reference(columns).to(dtype).view(x.shape[:-2] + x.shape[-1:])
    bitwise_equal(torch_reduce.sum(x, -2), expected, f"{shape} {view}")
