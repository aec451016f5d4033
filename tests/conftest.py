"""Shared pieces of the torch_reduce test suite.

* Devices: every test that takes a ``device`` argument runs on "cpu" and on "cuda".
  The cuda parameter is skipped, with the reason, when no GPU is visible or when
  torch_reduce was built without CUDA; it is never silently passed.
* ``requires_cuda``: a marker for CUDA-only tests (``@pytest.mark.requires_cuda``);
  they are skipped with the same reason. ``-m "not requires_cuda"`` deselects
  every CUDA test, cuda device parameters included.
* ``slow``: a marker for the CUDA tests on tensors of more than 2^31 elements.
* Input factories (``make_tensor``) give fresh random data, never zeros:
  randn for floats, the whole range (negatives included) for signed integers,
  random bools. Every test is seeded from its own id, so a failure reproduces.
* ``assert_matches_reference`` compares a result with the reference: floats
  against the float64 reduction with a tolerance scaled to the dtype and to the
  sum of |x|; integers and bools, and the ops marked exact in cases.OPS (amax,
  amin), exactly against torch's own reduction; dtype, shape and device always
  against torch's.
* What differs between the ops (torch's function, dtype=, empty reductions,
  exactness) is in cases.OPS; tests of a property of every op take an ``op``
  parameter.
"""
import math
import re
import zlib

import pytest
import torch

import torch_reduce  # noqa: F401  (an import error here is a real failure, never a skip)
from cases import OPS, torch_reference

# --------------------------------------------------------------------------- #
# CUDA availability
# --------------------------------------------------------------------------- #
_TORCH_HAS_GPU = torch.cuda.is_available()
_BUILT_WITH_CUDA = bool(torch.ops.torch_reduce.built_with_cuda())
CUDA_OK = _TORCH_HAS_GPU and _BUILT_WITH_CUDA
if not _TORCH_HAS_GPU:
    CUDA_SKIP_REASON = "CUDA test: torch.cuda.is_available() is False (no GPU visible)"
elif not _BUILT_WITH_CUDA:
    CUDA_SKIP_REASON = (
        "CUDA test: torch_reduce was built without CUDA "
        "(torch.ops.torch_reduce.built_with_cuda() is False)"
    )
else:
    CUDA_SKIP_REASON = ""

skip_unless_cuda = pytest.mark.skipif(not CUDA_OK, reason=CUDA_SKIP_REASON or "CUDA available")

#: Device parameters: use ``@pytest.mark.parametrize("device", DEVICES)`` or just
#: take a ``device`` argument (see pytest_generate_tests).
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=[pytest.mark.requires_cuda, skip_unless_cuda]),
]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_cuda: needs a GPU and a CUDA build of torch_reduce (skipped otherwise, with the reason)"
    )
    config.addinivalue_line(
        "markers", "slow: CUDA tests on tensors of more than 2^31 elements (several GB of GPU memory)"
    )
    # torch's var and std, the references, warn of a correction >= the count (one element).
    config.addinivalue_line("filterwarnings", "ignore:.*degrees of freedom is <= 0:UserWarning")


def pytest_generate_tests(metafunc):
    # Any test that takes `device` (and does not parametrize it itself) runs on both devices.
    if "device" in metafunc.fixturenames and not any(
        "device" in m.args[0] for m in metafunc.definition.iter_markers("parametrize")
    ):
        metafunc.parametrize("device", DEVICES)


def pytest_collection_modifyitems(config, items):
    """An op of one dim (argmax: cases.Op.one_dim) is not called with several: the tests that
    take a dim parameter leave those cases out (tests/test_argmax.py checks its TypeError)."""
    kept, left_out = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        op = params.get("op")
        taken = not (isinstance(op, str) and op in OPS) or OPS[op].takes(params.get("dim"))
        (kept if taken else left_out).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_cuda") is not None and not CUDA_OK:
        pytest.skip(CUDA_SKIP_REASON)


@pytest.fixture(autouse=True)
def _seed_from_test_id(request):
    """Fresh, reproducible random data per test: the seed is a hash of the test id."""
    seed = zlib.crc32(request.node.nodeid.encode())
    torch.manual_seed(seed)
    yield seed


@pytest.fixture
def cuda_device():
    """'cuda' for tests marked requires_cuda (skipped with the reason otherwise)."""
    if not CUDA_OK:
        pytest.skip(CUDA_SKIP_REASON)
    return "cuda"


# --------------------------------------------------------------------------- #
# Input factories
# --------------------------------------------------------------------------- #
def make_tensor(shape, dtype, device="cpu", *, low=None, high=None):
    """Fresh random data of `dtype` on `device` (generated on the CPU, then moved,
    so that both devices see the same values for the same seed).

    floats: standard normal (never all zeros); signed ints: uniform over the whole
    range of the dtype (negatives included) unless low/high are given (high
    exclusive); uint8: 0..255; bool: random True/False.
    """
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(shape)
    if dtype.is_floating_point:
        if low is not None or high is not None:
            lo = -1.0 if low is None else low
            hi = 1.0 if high is None else high
            t = torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo
        else:
            t = torch.randn(shape, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
        t = t.to(dtype)
    elif dtype == torch.bool:
        t = torch.randint(0, 2, shape, dtype=torch.uint8).bool()
    else:
        info = torch.iinfo(dtype)
        lo = info.min if low is None else low
        hi = info.max if high is None else high - 1  # inclusive
        if dtype == torch.int64 and hi == info.max:
            # randint's high is exclusive and cannot exceed int64: the largest value
            # is left out, the whole range otherwise covered.
            t = torch.randint(lo, hi, shape, dtype=dtype)
        else:
            t = torch.randint(lo, hi + 1, shape, dtype=dtype)
    return t.to(device)


def make_factor_tensor(shape, dtype, device="cpu", **kwargs):
    """`make_tensor`, with floats of random sign and magnitude exp(N(0, 0.05^2)) (1 +- 5%): their
    products stay finite and normal over millions of elements, where randn's underflow."""
    if not dtype.is_floating_point or kwargs:
        return make_tensor(shape, dtype, device, **kwargs)
    sign = torch.sign(make_tensor(shape, torch.float64))
    return (sign * torch.exp(0.05 * torch.randn(sign.shape, dtype=torch.float64))).to(dtype).to(device)


@pytest.fixture
def make_input(request):
    """The `make_tensor` factory as a fixture; for a test of an op marked error_per_element in
    cases.OPS (prod), `make_factor_tensor`."""
    params = getattr(request.node, "callspec", None)
    op = params.params.get("op") if params else None
    return make_factor_tensor if op in OPS and OPS[op].error_per_element else make_tensor


# --------------------------------------------------------------------------- #
# Reference comparison
# --------------------------------------------------------------------------- #
def _accumulation_eps(out_dtype):
    # Half and bfloat16 (and float32) accumulate in float32, float64 in float64.
    return torch.finfo(torch.float64 if out_dtype == torch.float64 else torch.float32).eps


def _two_pass_variance(op, x, dim, keepdim):
    """var (or std) of float64 `x`, correction 1, as the sum of squared deviations from the mean:
    torch's own float64 var is off by thousands of ulps over a million elements."""
    if x.dim() == 0 or dim is None or dim in ([], ()):
        dims = list(range(x.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    count = math.prod(x.shape[d] for d in dims)
    m2 = (x - x.mean(dims, keepdim=True)).square().sum(dims, keepdim=keepdim)
    var = m2 / max(count - 1, 0)
    return var.sqrt() if OPS[op].root else var


def assert_matches_reference(actual, x, op="sum", dim=None, keepdim=False, dtype=None, *, rel_factor=8.0):
    """Checks `actual` == op(x, dim, keepdim, dtype=dtype) with torch's semantics.

    dtype, shape and device must equal those of torch's result. Floating results
    are compared with the float64 reduction of the (cast) input:
        |actual - ref| <= eps(out) * |ref| + rel_factor * eps(acc) * red(|x|) + tiny
    (red = the op itself; times the count for ops marked error_per_element in cases.OPS (prod);
    the mean of x^2 for ops marked second_moment (var; over twice the result for std);
    acc = float32 for half/bfloat16/float32, float64 for
    float64); NaN where the reference is NaN, the same infinities. Integer and
    bool results, and amax/amin, must equal torch's exactly.
    """
    expected = torch_reference(op, x, dim, keepdim, dtype)
    assert isinstance(actual, torch.Tensor), f"expected a Tensor, got {type(actual)}"
    assert actual.dtype == expected.dtype, f"dtype: got {actual.dtype}, torch gives {expected.dtype}"
    assert actual.shape == expected.shape, f"shape: got {tuple(actual.shape)}, torch gives {tuple(expected.shape)}"
    assert actual.device == expected.device, f"device: got {actual.device}, torch gives {expected.device}"

    if OPS[op].exact or not expected.dtype.is_floating_point:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)
        return

    out_dtype = expected.dtype
    xc = (x if dtype is None else x.to(dtype)).to(torch.float64)
    ref = (_two_pass_variance(op, xc, dim, keepdim) if OPS[op].second_moment else torch_reference(op, xc, dim, keepdim)).cpu()
    if OPS[op].second_moment:
        mag = torch.mean(xc * xc, dim, keepdim).cpu()
        if OPS[op].root:
            mag = mag / (2 * ref)
    else:
        mag = torch_reference(op, xc.abs(), dim, keepdim).cpu()
        if OPS[op].error_per_element:
            mag = mag * (x.numel() // max(expected.numel(), 1))
    got = actual.detach().cpu().to(torch.float64)

    # NaN / Inf exactly where the reference has them.
    nan_ref, nan_got = torch.isnan(ref), torch.isnan(got)
    if not torch.equal(nan_ref, nan_got):
        i = tuple((nan_ref != nan_got).nonzero()[0].tolist())
        raise AssertionError(f"{op}: NaN mismatch at {list(i)}: got {got[i].item()!r}, reference {ref[i].item()!r}")
    inf_ref = torch.isinf(ref)
    if inf_ref.any():
        assert torch.equal(got[inf_ref], ref[inf_ref]), "infinities differ from the reference"
    finite = ~(nan_ref | inf_ref)
    if not finite.any():
        return
    # Values whose float64 reference overflows the output dtype must be infinite.
    big = finite & (ref.abs() > torch.finfo(out_dtype).max)
    finite &= ~big
    if big.any():
        assert torch.isinf(got[big]).all(), "values beyond the output dtype's range should overflow to inf"
    eps_out = torch.finfo(out_dtype).eps
    eps_acc = _accumulation_eps(out_dtype)
    tiny = torch.finfo(out_dtype).tiny
    tol = eps_out * ref.abs() + rel_factor * OPS[op].rounding_budgets * eps_acc * mag + tiny
    err = (got - ref).abs()
    # As close as torch's own value, or twice as close, always passes (a norm: its sum of
    # squares has no cancellation to give the tolerance slack; a 2-norm of subnormals, whose
    # squares underflow the accumulator, is 0 in torch too).
    theirs = expected.detach().cpu().to(torch.float64)
    tol = torch.maximum(tol, torch.where(theirs.isfinite(), 2 * (theirs - ref).abs(), 0))
    viol = finite & ~(err <= tol) & ~(got == theirs)
    if viol.any():
        idx = viol.nonzero()[0]
        i = tuple(idx.tolist())
        raise AssertionError(
            f"{op}: {int(viol.sum())} of {viol.numel()} value(s) out of tolerance; first at {list(i)}: "
            f"got {got[i].item()!r}, float64 reference {ref[i].item()!r}, |err| {err[i].item():.3g} > "
            f"tol {tol[i].item():.3g} (out dtype {out_dtype}, tolerance scale {mag[i].item():.3g})"
        )


@pytest.fixture
def check():
    """`assert_matches_reference` as a fixture."""
    return assert_matches_reference


def assert_raises_like_torch(ours, theirs, match=None, same_message=False):
    """`theirs()` (torch) must raise; `ours()` must raise the same exception type (and, with
    same_message, torch's message word for word)."""
    with pytest.raises(Exception) as torch_err:
        theirs()
    if same_message:
        match = re.escape(str(torch_err.value))
    with pytest.raises(torch_err.type, match=match):
        ours()


@pytest.fixture
def raises_like_torch():
    return assert_raises_like_torch


def assert_bitwise_equal(a, b, msg=""):
    """Same dtype, shape and bits (NaNs with the same payload compare equal)."""
    assert a.dtype == b.dtype and a.shape == b.shape, f"{msg}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
    a, b = a.detach().contiguous().cpu(), b.detach().contiguous().cpu()
    if a.dtype.is_floating_point:
        view = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[a.element_size()]
        a, b = a.view(view), b.view(view)
    if not torch.equal(a, b):
        diff = (a != b).nonzero()
        raise AssertionError(f"{msg}: not bitwise equal, {diff.shape[0]} element(s) differ, first at {diff[0].tolist()}")


@pytest.fixture
def bitwise_equal():
    return assert_bitwise_equal


def cuda_free_bytes():
    free, _total = torch.cuda.mem_get_info()
    return free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()


def require_cuda_memory(nbytes):
    """Skips (with the reason) when the GPU cannot hold `nbytes` more."""
    torch.cuda.empty_cache()
    free = cuda_free_bytes()
    if free < nbytes:
        pytest.skip(f"needs {nbytes / 2**30:.1f} GiB of free GPU memory, {free / 2**30:.1f} GiB free")


@pytest.fixture
def need_cuda_memory():
    yield require_cuda_memory
    # Hand the test's gigabytes back to the driver: test processes (pytest-xdist workers) share the
    # GPU, and the caching allocator would otherwise keep them from the others.
    torch.cuda.empty_cache()


def poison_allocator(device, nbytes):
    """Fills then frees a block of `nbytes` NaN bytes, so that the caching allocator's
    next blocks of that size hold NaN (0xFF...) bit patterns rather than zeros."""
    n = max(1, math.ceil(nbytes / 4))
    t = torch.full((n,), float("nan"), dtype=torch.float32, device=device)
    t2 = torch.full((n,), -1, dtype=torch.int32, device=device)  # all ones: a NaN in every float width
    del t, t2


@pytest.fixture
def poison():
    return poison_allocator
