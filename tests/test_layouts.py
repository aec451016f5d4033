"""Layouts: every op gives torch's result for views of every memory layout, and for tensors of
more than 2^31 elements.

Transposed, permuted, strided (column and row steps), misaligned (heads that are not 16-byte
aligned, tails that are not whole vectors), expanded (stride 0), channels_last, diagonal and
overlapping windows, over every dim form. The layouts the kernels read without a copy (reduced
dims in several runs, kept dims out of memory order, gathered rows and columns) are
test_layouts_in_place.py's. Tensors of more than 2^31 elements (indices beyond 32 bits) are
CUDA tests marked ``slow``.
"""
import pytest
import torch

import torch_reduce
from cases import _id, op_dtype_params, reduce

# name: (shape of a fresh input, the view of it)
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
    """Every dim, the first and the last, the first and last together (counted from either end),
    and for 3 dims or more the second and all but the first."""
    dims = [None, 0, -1]
    if ndim >= 2:
        dims += [(0, ndim - 1), (0, -1)]
    if ndim >= 3:
        dims += [1, tuple(range(1, ndim))]
    return dims


LAYOUT_CASES = [(name, dim) for name, (shape, f) in LAYOUTS.items() for dim in _layout_dims(f(torch.empty(shape)).dim())]


@pytest.mark.parametrize("op,dtype", op_dtype_params())
@pytest.mark.parametrize("layout,dim", LAYOUT_CASES, ids=[f"{n}-dim{_id(d)}" for n, d in LAYOUT_CASES])
def test_layouts(device, op, dtype, layout, dim, make_input, check):
    shape, view = LAYOUTS[layout]
    x = view(make_input(shape, dtype, device))
    assert layout.startswith("channels_last") or not x.is_contiguous() or x.dim() == 1
    check(reduce(op, x, dim), x, op=op, dim=dim)
    check(reduce(op, x, dim, keepdim=True), x, op=op, dim=dim, keepdim=True)


@pytest.mark.parametrize("offset", range(1, 9))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool], ids=_id)
def test_sum_at_every_misalignment(device, dtype, offset, make_input, check):
    """Heads that are not 16-byte aligned and tails that are not a multiple of the vector width."""
    base = make_input(4099 + 16, dtype, device)
    x = base[offset : offset + 4099 - offset]
    check(torch_reduce.sum(x), x)
    rows = base[offset : offset + 16 * 255].view(16, 255)
    check(torch_reduce.sum(rows, 1), rows, dim=1)


# --------------------------------------------------------------------------- #
# More than 2^31 elements (CUDA, slow)
# --------------------------------------------------------------------------- #
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
