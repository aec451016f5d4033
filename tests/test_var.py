"""torch_reduce.var and std: torch.var's and torch.std's semantics beyond what every op shares
(the suite's other files take them as ops of cases.OPS): correction, the arguments taken by
name, and a fold that keeps a small variance beside a large mean."""
import math

import pytest
import torch

import torch_reduce
from conftest import DEVICES

OPS = {"var": (torch_reduce.var, torch.var), "std": (torch_reduce.std, torch.std)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("correction", [0, 1, 2.5, -1, 7, 8])
def test_correction_as_torch(op, correction, device):
    """M2 / max(0, n - correction): a correction of n or more gives inf (or NaN), as torch."""
    ours, theirs = OPS[op]
    x = torch.randn(5, 7, device=device)
    for dim in (None, 1, (0, 1)):
        expected = theirs(x, dim, correction=correction)
        reference = theirs(x.double(), dim, correction=correction).to(x.dtype)
        actual = ours(x, dim, correction=correction)
        torch.testing.assert_close(actual, reference, rtol=1e-5, atol=1e-6, equal_nan=True)
        assert torch.equal(actual.isinf(), expected.isinf()) and torch.equal(actual.isnan(), expected.isnan())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_small_spread_beside_a_large_mean(op, device):
    """float32 of mean 1000 and spread 3: sums of x and x^2 would lose the variance."""
    ours, _ = OPS[op]
    x = (1000 + 3 * torch.randn(4, 1_000_003, dtype=torch.float64)).to(device)
    for dim in (1, None):
        actual = ours(x.float(), dim)
        expected = getattr(torch, op)(x, dim).float()
        torch.testing.assert_close(actual, expected, rtol=2e-5, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_a_first_element_far_from_the_rest(op, device):
    """A row and a column of zeros before float32 values near 1000 (spread 3): the first element
    a fold deviates from is far from the mean of the elements after it."""
    ours, _ = OPS[op]
    x = 1000 + 3 * torch.randn(4099, 257, dtype=torch.float64)
    x[0], x[:, 0] = 0, 0
    for dim in (0, 1, None):
        actual = ours(x.float().to(device), dim)
        expected = getattr(torch, op)(x, dim).float().to(device)
        torch.testing.assert_close(actual, expected, rtol=2e-5, atol=0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_infinities_and_nan_as_torch(op, device):
    ours, theirs = OPS[op]
    inf, nan = math.inf, math.nan
    x = torch.tensor([[inf, 1.0, 2.0], [-inf, inf, 0.0], [nan, 1.0, 1.0], [1.0, 2.0, 4.0]], device=device)
    torch.testing.assert_close(ours(x, 1), theirs(x, 1), equal_nan=True)
    single = torch.tensor([inf], device=device)
    torch.testing.assert_close(ours(single, correction=0), theirs(single, correction=0), equal_nan=True)


@pytest.mark.parametrize("op", OPS)
def test_keepdim_and_correction_by_name_only(op):
    """torch.var(x, 1, True) means unbiased=True: keepdim is taken by name, as in torch's
    correction overload, so that no positional call means something else here."""
    ours, theirs = OPS[op]
    x = torch.randn(3, 4)
    with pytest.raises(TypeError):
        ours(x, 1, True)
    assert ours(x, 1, keepdim=True).shape == theirs(x, 1, keepdim=True).shape == (3, 1)
    raw = getattr(torch.ops.torch_reduce, op)
    torch.testing.assert_close(raw(x, [1], keepdim=True, correction=0), theirs(x, 1, keepdim=True, correction=0))


@pytest.mark.parametrize("op", OPS)
def test_integer_inputs_raise_torch_error(op):
    ours, _ = OPS[op]
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ours(torch.arange(6))


@pytest.mark.parametrize("op", OPS)
def test_errors_name_the_op_called(op):
    """std runs var's kernels, but its errors name std."""
    ours, _ = OPS[op]
    with pytest.raises(RuntimeError, match=f"torch_reduce.{op}: unsupported input dtype ComplexFloat"):
        ours(torch.randn(3, dtype=torch.complex64))
