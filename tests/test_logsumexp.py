"""torch_reduce.logsumexp: torch.logsumexp's semantics beyond what every op shares (the suite's
other files take it as an op of cases.OPS): values far beyond exp's range, infinities and NaN,
integer inputs, the dims torch takes, and the rescaling of a one-pass fold."""
import math

import pytest
import torch

import torch_reduce
from cases import FLOAT_DTYPES, _id
from conftest import make_tensor


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("offset", [1000.0, -1000.0])
def test_values_beyond_exp_range_do_not_overflow(device, dtype, offset):
    """exp(1000) overflows every dtype and exp(-1000) underflows to 0; the fold subtracts its
    running maximum first, so logsumexp(x + c) is logsumexp(x) + c."""
    x = make_tensor((7, 4099), torch.float64) + offset
    expected = torch.logsumexp(x, 1).to(dtype)
    actual = torch_reduce.logsumexp(x.to(dtype).to(device), 1)
    assert actual.dtype == dtype and torch.isfinite(actual).all()
    # The input's rounding to dtype moves each element by up to half an ulp of 1000.
    tol = torch.finfo(dtype).eps * abs(offset)
    torch.testing.assert_close(actual.cpu(), expected, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_growing_maximum_rescales_the_sum(device, dtype):
    """Ascending elements raise the maximum at every step: each rescales the sum so far. Descending
    ones never do. Both give the float64 result."""
    ramp = torch.linspace(-30, 30, 50_001, dtype=torch.float64)
    for x in (ramp, ramp.flip(0)):
        expected = torch.logsumexp(x.to(dtype).double(), 0)
        actual = torch_reduce.logsumexp(x.to(dtype).to(device), 0)
        torch.testing.assert_close(actual.double().cpu(), expected, rtol=torch.finfo(dtype).eps, atol=1e-5)


def test_infinities_and_nan_as_torch(device):
    inf, nan = math.inf, math.nan
    x = torch.tensor([[inf, 1.0], [-inf, -inf], [inf, inf], [nan, inf], [-inf, 1.0], [inf, -inf], [-inf, nan],
                      [2.0, 3.0]], device=device)
    torch.testing.assert_close(torch_reduce.logsumexp(x, 1), torch.logsumexp(x, 1), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64, torch.bool], ids=_id)
@pytest.mark.parametrize("default", [torch.float32, torch.float64], ids=_id)
def test_integer_inputs_give_the_default_dtype(device, dtype, default):
    x = make_tensor((5, 33), dtype, device, low=-50 if dtype.is_signed else None,
                    high=50 if dtype not in (torch.bool, torch.uint8) else None)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        actual, expected = torch_reduce.logsumexp(x, 1), torch.logsumexp(x, 1)
    finally:
        torch.set_default_dtype(previous)
    assert actual.dtype == expected.dtype == default
    torch.testing.assert_close(actual, expected)


def test_dim_forms(device):
    """dim as torch takes it (an int, a tuple, a list); torch requires one, and here dim=[] (the
    default) reduces every dim, as amax's: torch's own raises on it for a tensor of a dim or more."""
    x = make_tensor((3, 4, 5), torch.float32, device)
    every = torch.logsumexp(x, (0, 1, 2))
    for actual in (torch_reduce.logsumexp(x), torch_reduce.logsumexp(x, []), torch_reduce.logsumexp(x, ()),
                   torch.ops.torch_reduce.logsumexp(x), torch.ops.torch_reduce.logsumexp(x, [])):
        torch.testing.assert_close(actual, every)
    torch.testing.assert_close(torch_reduce.logsumexp(x, (2, 0), True), torch.logsumexp(x, (2, 0), True))
    torch.testing.assert_close(torch_reduce.logsumexp(x, dim=-1, keepdim=True), torch.logsumexp(x, -1, True))


def test_unsupported_dtypes_raise():
    with pytest.raises(RuntimeError, match="torch_reduce.logsumexp: unsupported input dtype ComplexFloat"):
        torch_reduce.logsumexp(torch.randn(3, dtype=torch.complex64), 0)
