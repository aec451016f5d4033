"""Batch invariance: an output's bits depend on its own input values alone -- not on how many
other outputs are computed beside it, where they lie in memory, or which kernel reads them.

A slice of the rows (columns, tokens, channels, any kept dim) gives the same bits as the same
outputs of the whole; a row gives the same bits alone, among the rows folded beside it, at any
offset from a 16-byte vector, read packed or gapped, and as a strided view or its contiguous
copy; short rows whatever the kernel that reads them; inputs read under the evict-first L2
policy as a small slice of them. Checked bit for bit (conftest.assert_bitwise_equal), on the CPU
and on CUDA; the order each kernel folds in is test_determinism.py's.
"""
import pytest
import torch

import torch_reduce
from cases import OPS, _id, op_dtype_params

ROW_SHAPES = [(4099, n) for n in (2, 3, 4, 5, 7, 8, 16, 17, 31, 32)] + [(4099, 33), (1024, 1025), (300, 100000)]
COL_SHAPES = [(n, 4099) for n in (2, 3, 4, 5, 7, 8, 16, 17, 31, 32)] + [(33, 4099), (1025, 1024), (100000, 300)]
BATCH_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _ks(total):
    return sorted({1, 2, 7, 33, total // 2 + 1, total - 1} & set(range(1, total)))


@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("shape", ROW_SHAPES, ids=_id)
def test_batch_invariance_rows(device, op, dtype, shape, make_input, bitwise_equal):
    """op(x[:k], dim=1) == op(x, dim=1)[:k] bitwise, for every k (the slice and its copy)."""
    fn = OPS[op].fn
    x = make_input(shape, dtype, device)
    full = fn(x, dim=1)
    for k in _ks(shape[0]):
        part = x[:k]
        bitwise_equal(fn(part, dim=1), full[:k], f"{op} k={k}")
        bitwise_equal(fn(part.clone(), dim=1), full[:k], f"{op} k={k} (copy)")


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("dtype", BATCH_DTYPES, ids=_id)
@pytest.mark.parametrize("shape", COL_SHAPES, ids=_id)
def test_batch_invariance_columns(device, op, dtype, shape, make_input, bitwise_equal):
    """op(x[:, :k], 0) == op(x, 0)[:k] bitwise, for every k (strided slice and contiguous copy)."""
    fn = OPS[op].fn
    x = make_input(shape, dtype, device)
    full = fn(x, 0)
    for k in _ks(shape[1]):
        part = x[:, :k]
        bitwise_equal(fn(part, 0), full[:k], f"{op} k={k}")
        bitwise_equal(fn(part.contiguous(), 0), full[:k], f"{op} k={k} (contiguous copy)")


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
    reduce = OPS[op].fn
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


@pytest.mark.parametrize("op,dtype", op_dtype_params(
    ["sum", "mean", "amax"], BATCH_DTYPES + [torch.float64, torch.int32, torch.uint8]))
@pytest.mark.parametrize("length", [1, 2, 3, 4, 8, 16, 32], ids=_id)
def test_short_rows_read_packed_or_not(device, dtype, length, op, make_input, check, bitwise_equal):
    """Rows of at most a 16-byte vector (float64 2, float32 4, half precision 8, uint8 16
    elements) or of exactly two, back to back and aligned, are read one or more to a load, or a
    vector a lane, on the GPU, and back to back rows of 1 to 4 or 8 elements as interleaved
    vectors on the CPU; a row gives the same bits
    read that way, from rows with a gap between them, or from a misaligned start (4099 rows: the
    last ones are not a whole vector)."""
    rows = 4099
    reduce = OPS[op].fn
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
    reduce = OPS[op].fn
    x = make_input((200_003, length + 1), dtype, device)[:, :length]
    for view in (x, x.contiguous()):
        full = reduce(view, 1)
        for k in (1, 1000, 70_001):
            bitwise_equal(reduce(view[:k], 1), full[:k], f"first {k} rows")


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
    fn = OPS[op].fn
    rows = fn(x, 1)
    check(rows, x, op=op, dim=1)
    for k in (0, 1, 7, 8, 100, 201, 202):
        bitwise_equal(fn(x[k : k + 1], 1), rows[k : k + 1], f"row {k} alone")
    bitwise_equal(fn(x[3:], 1), rows[3:], "the rows from 3 on")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
def test_reduced_dims_in_several_runs_are_batch_invariant(device, op, dtype, make_input, bitwise_equal):
    """A slice of a kept dim gives the same bits as the same outputs of the whole: channels of
    batch-norm statistics over (0, 2, 3) and rows of dims (0, 2) of a 3-D tensor (slices that
    take their stages on a copy), the first of dims (1, 3) of a 4-D tensor (read in place), and
    kept dims before and between two reduced runs, the one between cut to width 1 too, also in
    inputs too small for stages."""
    reduce = OPS[op].fn
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
    reduce = OPS[op].fn
    x = view(make_input(shape, dtype, device))
    whole = reduce(x, dim, keepdim=True)  # the reduced dim kept (size 1), so that a cut applies to both
    for i, cut in enumerate(slices):
        bitwise_equal(reduce(cut(x), dim, keepdim=True), cut(whole), f"slice {i}")


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
    reduce = OPS[op].fn
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
