"""Layouts read in place: dim reductions whose input the kernels read without a copy give
torch's result, and the bits of the copy they replace.

Reduced dims that form several runs in memory (reduced in stages), kept dims out of memory order
(transposed and permuted tensors, their outputs written through the permutation or dense and
copied), dims read through their strides as rows or columns (gathered rows and columns, staged
rows), and expanded dims (stride 0, read once). On every device each gives torch's result
(dtype, shape, the float64 reference's value), contiguous, every output written (the
allocator's blocks hold NaN beforehand); on CUDA gathered rows and columns give the bits of
their copy, and the CUDA tests marked requires_cuda check that no copy of the input (or of a
permuted output) is allocated. Batch invariance of these layouts is test_batch_invariance.py's.
"""
import math

import pytest
import torch

import torch_reduce
from cases import ALL_DTYPES, OPS, _id
from layout_cases import rows_copy


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
    out = read_in_place(lambda: OPS[op].fn(x), x)
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
# The (op, dtype) pairs each of these layouts is reduced in.
STAGED_OPS = [("sum", torch.float32), ("sum", torch.bfloat16), ("sum", torch.int32), ("mean", torch.float16),
              ("mean", torch.float64), ("amax", torch.bfloat16), ("amin", torch.float32)]


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
    reduce = OPS[op].fn
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
# kept dims no longer merge reads as the whole does: test_batch_invariance.KEPT_SLICES.)
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
    reduce = OPS[op].fn
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
    reduce = OPS[op].fn
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
    reduce = OPS[op].fn
    poison(device, x.numel() * 8)
    out = reduce(x, dims)
    bitwise_equal(out, reduce(x.contiguous(), dims), "the copy's columns")
    assert_kept_slice_matches(reduce, x, dims, out, bitwise_equal)


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
    reduce = OPS[op].fn
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
    reduce = OPS[op].fn
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
