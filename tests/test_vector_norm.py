"""torch_reduce.vector_norm: torch.linalg.vector_norm's semantics for every ord.

The suite's other files test the 2-norm and the inf-norm as ops of cases.OPS (layouts,
determinism, batch invariance, autograd, vmap, export, sharding); this file covers what sets
the ords apart: each kind of element step and projection, the stages that pass sums of powers
between them, expanded dims whose repeats weigh the elements, empty reductions, NaN and inf,
and each ord's gradient.
"""
import math

import pytest
import torch
from torch.autograd import forward_ad as fwAD

import torch_reduce
from cases import FLOAT_DTYPES, _id
from conftest import make_tensor

ORDS = [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1, -2.5, 2.5]
DIMS = [None, 1, -1, (0, 2), [], (2, 0)]


def _with_zeros(x):
    """x with about one element in five set to 0: the element steps' and gradients' edge."""
    return torch.where(torch.rand(x.shape, device=x.device) < 0.2, 0, x)


def assert_close_to_torch(ours, x, ord, dim=None, keepdim=False, dtype=None):
    """Our norm against torch's (dtype, shape, device) and the float64 norm, within a few roundings
    of the accumulator (float32 for half and bfloat16) and one of the result; the inf-norms and
    the 0-norm exactly but for the result's rounding. NaN and inf where the reference has them."""
    theirs = torch.linalg.vector_norm(x, ord, dim, keepdim, dtype=dtype)
    assert (ours.dtype, ours.shape, ours.device) == (theirs.dtype, theirs.shape, theirs.device)
    reference = torch.linalg.vector_norm((x if dtype is None else x.to(dtype)).double(), ord, dim, keepdim).cpu()
    got = ours.detach().double().cpu()
    assert torch.equal(got.isnan(), reference.isnan()), f"NaN: got {got}, reference {reference}"
    finite = ~reference.isnan()
    acc_eps = torch.finfo(torch.float64 if ours.dtype == torch.float64 else torch.float32).eps
    rounding = 0 if math.isinf(ord) or ord == 0 else 16 * acc_eps
    tol = (rounding + torch.finfo(ours.dtype).eps) * reference.abs()
    exact = got == reference  # infinities, zeros
    overflows = reference.abs() > torch.finfo(ours.dtype).max
    bad = finite & ~exact & ~((got - reference).abs() <= tol) & ~(overflows & got.isinf())
    assert not bad.any(), f"ord {ord}: got {got[bad][:4].tolist()}, float64 reference {reference[bad][:4].tolist()}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
@pytest.mark.parametrize("ord", ORDS, ids=_id)
@pytest.mark.parametrize("dim", DIMS, ids=_id)
def test_every_ord_matches_torch(device, dtype, ord, dim):
    x = _with_zeros(make_tensor((5, 37, 9), dtype, device))
    assert_close_to_torch(torch_reduce.vector_norm(x, ord, dim), x, ord, dim)
    assert_close_to_torch(torch_reduce.vector_norm(x, ord, dim, keepdim=True), x, ord, dim, keepdim=True)


@pytest.mark.parametrize("ord", ORDS, ids=_id)
def test_arguments_as_torch_takes_them(device, ord):
    """ord by position or name, dim as an int, a tuple or a list, on the wrapper and the
    dispatcher op; dtype= casts the input first, as torch's does."""
    x = make_tensor((6, 10), torch.float32, device)
    expected = torch.linalg.vector_norm(x, ord, 1)
    for ours in (
        torch_reduce.vector_norm(x, ord, 1),
        torch_reduce.vector_norm(x, ord=ord, dim=1),
        torch_reduce.vector_norm(x, ord, (1,), False),
        torch.ops.torch_reduce.vector_norm(x, ord, [1]),
        torch.ops.torch_reduce.vector_norm.default(x, ord, [1], False, dtype=None),
    ):
        assert_close_to_torch(ours, x, ord, 1)
    assert torch.ops.torch_reduce.vector_norm(x).shape == torch.linalg.vector_norm(x).shape
    assert_close_to_torch(torch_reduce.vector_norm(x, ord, 0, dtype=torch.float64), x, ord, 0, dtype=torch.float64)
    h = x.half()
    assert_close_to_torch(torch_reduce.vector_norm(h, ord, 1, dtype=torch.float32), h, ord, 1, dtype=torch.float32)
    assert expected.shape == (6,)


def test_half_accumulates_in_float(device):
    """A float16 vector of 4096 x 300.0: its squares overflow float16, its norm (19200) does not."""
    x = torch.full((4096,), 300.0, dtype=torch.float16, device=device)
    assert torch_reduce.vector_norm(x).item() == torch.linalg.vector_norm(x).item() == 19200.0
    b = torch.full((4096,), 300.0, dtype=torch.bfloat16, device=device)
    assert torch_reduce.vector_norm(b, 3).isfinite().item()


@pytest.mark.parametrize("ord", ORDS, ids=_id)
def test_stages_pass_sums_of_powers(device, ord):
    """Dims that do not merge are reduced in stages (or read as gathered rows): the stages
    between pass sums of |x|^p, so that each element is mapped once and the norm taken once."""
    x = _with_zeros(make_tensor((7, 300, 5, 11), torch.float32, device))
    for dim in ((0, 2), (1, 3), (0, 1, 3)):
        assert_close_to_torch(torch_reduce.vector_norm(x, ord, dim), x, ord, dim)
        y = x.permute(2, 0, 3, 1)
        assert_close_to_torch(torch_reduce.vector_norm(y, ord, dim), y, ord, dim)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, -math.inf], ids=_id)
@pytest.mark.parametrize("shape", [(5000, 3), (20000, 40), (3000, 300), (262144, 16)], ids=_id)
def test_long_columns_map_each_element_once(device, dtype, ord, shape):
    """Columns of many chunks take several passes on CUDA (the first writes partials, the later
    ones read them, whichever column kernel runs each): each element is mapped once."""
    x = make_tensor(shape, dtype, device)
    assert_close_to_torch(torch_reduce.vector_norm(x, ord, 0), x, ord, 0)


@pytest.mark.parametrize("ord", ORDS, ids=_id)
def test_expanded_dims_weigh_each_value_by_its_repeats(device, ord):
    """A stride-0 reduced dim is read once, each value weighed by its repeats."""
    base = _with_zeros(make_tensor((6, 1, 7), torch.float32, device))
    x = base.expand(6, 1000, 7)
    for dim in (1, (0, 1), None, (1, 2)):
        assert_close_to_torch(torch_reduce.vector_norm(x, ord, dim), x.contiguous(), ord, dim)


@pytest.mark.parametrize("ord", ORDS, ids=_id)
def test_empty_reductions(device, ord, raises_like_torch):
    """0 for the norms with an identity (0 <= ord < inf); torch's error for the others."""
    x = torch.empty(0, 3, device=device)
    for dim in (None, 0):
        if ord < 0 or math.isinf(ord):
            raises_like_torch(lambda: torch_reduce.vector_norm(x, ord, dim),
                              lambda: torch.linalg.vector_norm(x, ord, dim), same_message=True)
        else:
            assert torch.equal(torch_reduce.vector_norm(x, ord, dim), torch.linalg.vector_norm(x, ord, dim))
    # Nothing reduced from an empty kept dim: an empty result, for every ord.
    assert torch_reduce.vector_norm(x, ord, 1).shape == (0,)


@pytest.mark.parametrize("ord", ORDS, ids=_id)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=_id)
def test_nan_and_inf(device, ord, dtype):
    x = make_tensor((4, 50), dtype, device)
    x[0, 7] = math.nan
    x[1, 3] = math.inf
    x[2, 9] = -math.inf
    x[2, 11] = math.nan
    assert_close_to_torch(torch_reduce.vector_norm(x, ord, 1), x, ord, 1)


def test_large_values_do_not_overflow_the_accumulator(device):
    x = torch.full((1000,), 1e19, device=device)
    assert_close_to_torch(torch_reduce.vector_norm(x, 1), x, 1)
    assert torch.isinf(torch_reduce.vector_norm(x)).item() == torch.isinf(torch.linalg.vector_norm(x)).item()


@pytest.mark.parametrize(
    "call",
    [
        lambda f, x: f(x.long()),
        lambda f, x: f(x.bool()),
        lambda f, x: f(x, dtype=torch.int64),
        lambda f, x: f(x, dtype=torch.float16),
        lambda f, x: f(x.double(), dtype=torch.float32),
        lambda f, x: f(x, 2, 5),
        lambda f, x: f(x, 2, (0, 0)),
        lambda f, x: f(x, 1j),
    ],
    ids=["int64", "bool", "dtype-int64", "dtype-narrower", "dtype-float64-to-32", "dim-out-of-range", "dim-repeated",
         "complex-ord"],
)
def test_errors_are_torchs(device, call, raises_like_torch):
    x = make_tensor((3, 4), torch.float32, device)
    raises_like_torch(lambda: call(torch_reduce.vector_norm, x), lambda: call(torch.linalg.vector_norm, x))


@pytest.mark.parametrize("ord", ORDS, ids=_id)
@pytest.mark.parametrize("dim", [None, 1, (0, 2)], ids=_id)
def test_gradient_is_torchs(device, ord, dim):
    """Each ord's gradient (torch's formulas: zeros in the input, rows whose norm is 0, ties of
    the inf-norms split evenly), backward and forward mode."""
    x = _with_zeros(make_tensor((4, 9, 5), torch.float64, device))
    x[1] = 0  # a norm of 0
    x[2, 3, :] = x[2, 3, 0]  # ties
    ours_x, theirs_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    grad = torch.rand_like(torch.linalg.vector_norm(x, ord, dim))
    torch_reduce.vector_norm(ours_x, ord, dim).backward(grad)
    torch.linalg.vector_norm(theirs_x, ord, dim).backward(grad)
    torch.testing.assert_close(ours_x.grad, theirs_x.grad, equal_nan=True)
    tangent = torch.randn_like(x)
    with fwAD.dual_level():
        ours = fwAD.unpack_dual(torch_reduce.vector_norm(fwAD.make_dual(x, tangent), ord, dim)).tangent
        theirs = fwAD.unpack_dual(torch.linalg.vector_norm(fwAD.make_dual(x, tangent), ord, dim)).tangent
    torch.testing.assert_close(ours, theirs, equal_nan=True)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, math.inf], ids=_id)
def test_gradcheck(device, ord):
    """First and second derivatives, away from zeros and ties."""
    x = (torch.rand(3, 6, dtype=torch.float64, device=device) + 0.5).requires_grad_()
    torch.autograd.gradcheck(lambda t: torch_reduce.vector_norm(t, ord, 1), (x,))
    if not math.isinf(ord):
        torch.autograd.gradgradcheck(lambda t: torch_reduce.vector_norm(t, ord, 1), (x,))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_half_gradient_in_the_input_dtype(device, dtype):
    x = make_tensor((8, 33), dtype, device).requires_grad_()
    torch_reduce.vector_norm(x, 3, 1).sum().backward()
    y = x.detach().float().requires_grad_()
    torch.linalg.vector_norm(y, 3, 1).sum().backward()
    assert x.grad.dtype == dtype
    torch.testing.assert_close(x.grad.float(), y.grad, rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, 3], ids=_id)
def test_vmap_runs_one_batched_call(device, ord):
    x = make_tensor((5, 6, 7), torch.float32, device)
    ours = torch.vmap(lambda v: torch_reduce.vector_norm(v, ord, 1))(x)
    torch.testing.assert_close(ours, torch.linalg.vector_norm(x, ord, 2))


@pytest.mark.parametrize("ord", [2, 1, math.inf, 3], ids=_id)
def test_compile_fullgraph(ord):
    x = make_tensor((16, 40), torch.float32)
    compiled = torch.compile(lambda t: torch_reduce.vector_norm(t, ord, 1) * 2, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(x), torch.linalg.vector_norm(x, ord, 1) * 2)


def test_opcheck():
    x = make_tensor((5, 7), torch.float32).requires_grad_()
    for args, kwargs in [((x, 2, [1]), {}), ((x, 3.0, None, True), {}), ((x, math.inf), {}),
                         ((x.detach().half(), 1, [0]), {"dtype": torch.float32})]:
        torch.library.opcheck(torch.ops.torch_reduce.vector_norm.default, args, kwargs)
