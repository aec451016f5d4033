"""torch_reduce.var_mean and std_mean: torch's semantics for the pair, beyond what every op shares
(the suite's other files take var_mean's variance and std_mean's mean as ops of cases.OPS): two
separate contiguous results, each with the bits its own op gives, in one read of the input."""
import math

import pytest
import torch

import torch_reduce
from cases import FLOAT_DTYPES, _id
from conftest import make_tensor

PAIRS = {
    "var_mean": (torch_reduce.var_mean, torch.var_mean, torch_reduce.var),
    "std_mean": (torch_reduce.std_mean, torch.std_mean, torch_reduce.std),
}

#: (shape, dim) over rows, columns, several dims and every dim.
CASES = [((6, 1001), 1), ((1001, 6), 0), ((5, 7, 9), (0, 2)), ((5, 7, 9), None), ((5, 7, 9), [])]


def _layouts(x):
    """x, and views of it that read in other layouts: transposed, a slice, misaligned."""
    return {"contiguous": x, "transposed": x.transpose(0, -1).contiguous().transpose(0, -1),
            "sliced": x[..., 1:], "misaligned": torch.empty(x.numel() + 1, device=x.device)[1:].view(x.shape).copy_(x)}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("op", PAIRS)
@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
def test_two_contiguous_results_as_torch(op, dtype, keepdim, device):
    """A tuple of two new contiguous tensors of the input's dtype and torch's shape; the first has
    the bits of the op alone (var, std), the second the mean to within torch's tolerance."""
    ours, theirs, alone = PAIRS[op]
    for shape, dim in CASES:
        x = make_tensor(shape, dtype, device)
        result = ours(x, dim, keepdim=keepdim)
        expected = theirs(x, dim, keepdim=keepdim)
        assert type(result) is tuple and len(result) == 2
        first, mean = result
        for got, want in zip(result, expected):
            assert got.dtype == want.dtype and got.shape == want.shape and got.is_contiguous()
        assert first.data_ptr() != mean.data_ptr()
        torch.testing.assert_close(first, alone(x, dim, keepdim=keepdim), rtol=0, atol=0, equal_nan=True)
        reference = x.double().mean(dim if dim not in (None, []) else list(range(x.dim())), keepdim=keepdim)
        tol = 4 * torch.finfo(dtype).eps if dtype in (torch.float16, torch.bfloat16) else 1e-5
        torch.testing.assert_close(mean.double(), reference, rtol=tol, atol=tol)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "misaligned"])
def test_both_ops_share_a_mean(layout, device):
    """var_mean and std_mean run one fold: their means are the same bits, in every layout."""
    x = _layouts(make_tensor((33, 515), torch.float32, device))[layout]
    for dim in (0, -1, None):
        assert torch.equal(torch_reduce.var_mean(x, dim)[1], torch_reduce.std_mean(x, dim)[1])
        assert torch.equal(torch_reduce.var_mean(x, dim)[0], torch_reduce.var(x, dim))


@pytest.mark.parametrize("op", PAIRS)
@pytest.mark.parametrize("correction", [0, 1, 2.5, 7, 8])
def test_correction_as_torch(op, correction, device):
    """The correction moves the first result alone: n or more gives inf or NaN, as torch."""
    ours, theirs, _ = PAIRS[op]
    x = torch.randn(5, 7, device=device)
    for dim in (None, 1):
        first, mean = ours(x, dim, correction=correction)
        want_first, want_mean = theirs(x.double(), dim, correction=correction)
        torch.testing.assert_close(first, want_first.float(), rtol=1e-5, atol=1e-6, equal_nan=True)
        torch.testing.assert_close(mean, want_mean.float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", PAIRS)
def test_small_spread_beside_a_large_mean(op, device):
    """float32 of mean 1000 and spread 3 keeps both the variance and the mean."""
    ours, theirs, _ = PAIRS[op]
    x = (1000 + 3 * torch.randn(4, 1_000_003, dtype=torch.float64)).to(device)
    for dim in (1, None):
        for got, want in zip(ours(x.float(), dim), theirs(x, dim)):
            torch.testing.assert_close(got, want.float(), rtol=2e-5, atol=0)


@pytest.mark.parametrize("op", PAIRS)
def test_infinities_and_nan(op, device):
    """An infinity makes the variance NaN, as torch's, and the mean torch.mean's, wherever it lies:
    the infinity, or NaN for both signs. (torch.var_mean's mean is NaN unless the infinity comes
    last in its fold.)"""
    ours, theirs, _ = PAIRS[op]
    inf, nan = math.inf, math.nan
    rows = [[inf, 1.0, 2.0], [1.0, 2.0, -inf], [-inf, inf, 0.0], [inf, inf, 1.0], [nan, 1.0, 1.0], [1.0, 2.0, 4.0]]
    for x in (torch.tensor(rows, device=device), torch.tensor(rows, device=device).flip(1)):
        first, mean = ours(x, 1)
        torch.testing.assert_close(first, theirs(x, 1)[0], equal_nan=True)
        torch.testing.assert_close(mean, x.mean(1), equal_nan=True)
    long_row = torch.randn(3, 100_003, device=device)
    long_row[0, 17], long_row[1, 50_000], long_row[2, 17:19] = inf, -inf, torch.tensor([inf, -inf])
    torch.testing.assert_close(ours(long_row, 1)[1], torch.tensor([inf, -inf, nan], device=device), equal_nan=True)


@pytest.mark.parametrize("op", PAIRS)
def test_empty_inputs_as_torch(op, device):
    """No elements: NaN for both; an empty output: two empty tensors of its shape."""
    ours, theirs, _ = PAIRS[op]
    for shape, dim in [((0,), None), ((0, 3), 0), ((3, 0), 0), ((2, 0, 3), (0, 2))]:
        x = torch.empty(shape, device=device)
        for got, want in zip(ours(x, dim), theirs(x, dim)):
            assert got.shape == want.shape
            torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("op", PAIRS)
@pytest.mark.parametrize("used", ["first", "mean", "both"])
def test_gradient_of_either_result(op, used, device):
    """The input's gradient sums those of the results that are used: either alone, or both."""
    ours, theirs, _ = PAIRS[op]
    x = torch.randn(4, 6, dtype=torch.float64, device=device)
    weights = {"first": (1.0, 0.0), "mean": (0.0, 1.0), "both": (0.5, 2.0)}[used]

    def loss(fn, t):
        first, mean = fn(t, 1)
        parts = [w * r.sum() for w, r in zip(weights, (first, mean)) if w]
        return sum(parts)

    ours_x, theirs_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    loss(ours, ours_x).backward()
    loss(theirs, theirs_x).backward()
    torch.testing.assert_close(ours_x.grad, theirs_x.grad)
    assert torch.autograd.gradcheck(lambda t: ours(t, 1), (x.clone().requires_grad_(),))


@pytest.mark.parametrize("op", PAIRS)
def test_vmap_batches_both_results(op, device):
    ours, _, _ = PAIRS[op]
    x = torch.randn(3, 4, 5, device=device)
    first, mean = torch.vmap(lambda v: ours(v, 1))(x)
    for got, want in zip((first, mean), ours(x, 2)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("op", PAIRS)
def test_keepdim_by_name_only(op):
    """torch.var_mean(x, 1, True) means unbiased=True: keepdim is taken by name, as in torch's
    correction overload."""
    ours, theirs, _ = PAIRS[op]
    x = torch.randn(3, 4)
    with pytest.raises(TypeError):
        ours(x, 1, True)
    raw = getattr(torch.ops.torch_reduce, op)
    for got, want in zip(raw(x, [1], keepdim=True, correction=0), theirs(x, 1, keepdim=True, correction=0)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("op", PAIRS)
def test_errors_name_the_op_called(op):
    ours, _, _ = PAIRS[op]
    with pytest.raises(RuntimeError, match=f"{op} only support floating point and complex dtypes"):
        ours(torch.arange(6))
    with pytest.raises(RuntimeError, match=f"torch_reduce.{op}: unsupported input dtype ComplexFloat"):
        ours(torch.randn(3, dtype=torch.complex64))
