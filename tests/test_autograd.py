"""Autograd: every op's gradients are torch's, in reverse and forward mode (torch.func's
transforms: test_func.py).

gradcheck and gradgradcheck (forward mode too); input gradients equal torch's for every float
dtype and dim form, the gradient of amax/amin split evenly among ties; forward-mode tangents
equal torch's, with backward through the same call; dtype= gives the gradient in the input's
dtype; empty inputs and integer inputs.
"""
import pytest
import torch
import torch.autograd.forward_ad as fwAD

import torch_reduce
from cases import ALL_OPS, DTYPE_OPS, GRAD_OPS, FLOAT_DTYPES, OPS, _id, gradient_reference_dim, reduce, torch_reference

GRAD_CASES = [
    ((4, 5), None, False),
    ((4, 5), None, True),
    ((4, 5), 0, False),
    ((4, 5), 1, True),
    ((4, 5), -1, False),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), (0, 2), True),
    ((2, 3, 4), [-1, 1], True),
    ((2, 3, 4), [], False),
    ((), None, False),
    ((), 0, True),
    ((7,), 0, False),
]
GRAD_IDS = [f"{_id(s)}-dim{_id(d)}-{'keep' if k else 'nokeep'}" for s, d, k in GRAD_CASES]


def _extremum_or_random(op, shape, dtype, device):
    """Inputs for gradients: for amax/amin, values from a small set, so that several elements share the extremum."""
    if OPS[op].exact:
        return torch.randint(-2, 3, shape).to(dtype).to(device)
    return torch.randn(shape, dtype=dtype, device=device)


# Tolerances of gradients and tangents against torch's, by dtype.
GRAD_TOL = {torch.float16: 1e-3, torch.bfloat16: 1e-2}


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
def test_gradcheck_folds(device, op, shape, dim, keepdim):
    x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: reduce(op, t, dim, keepdim), (x,), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(lambda t: reduce(op, t, dim, keepdim), (x,))


@pytest.mark.parametrize("zeros", [1, 2], ids=["one-zero", "two-zeros"])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)], ids=_id)
def test_prod_gradient_with_zeros(device, zeros, dim):
    """A zero's gradient is the product of the others; with two zeros in an output, every gradient
    is 0 (torch's formula: the gradient is not result / x)."""
    x = torch.randn(3, 5, dtype=torch.float64, device=device)
    x[0, :zeros] = 0
    x[2, 3:3 + zeros] = 0
    x.requires_grad_()
    assert torch.autograd.gradcheck(lambda t: reduce("prod", t, dim), (x,), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(lambda t: reduce("prod", t, dim), (x,))
    ours = torch.autograd.grad(reduce("prod", x, dim).sum(), x)[0]
    theirs = torch.autograd.grad(torch_reference("prod", x, dim).sum(), x)[0]
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_gradient_equals_torch(device, op, shape, dim, keepdim, dtype):
    """The input gradient equals torch's (dtype and values), for a random upstream gradient. For
    float16 and bfloat16, torch's formula is evaluated in float64 and rounded once: torch's own
    half-precision gradient of a product rounds at each step (torch 2.4 on the CPU: 1.4e-3 off)."""
    base = _extremum_or_random(op, shape, dtype, device)
    wide = torch.float64 if dtype in (torch.float16, torch.bfloat16) else dtype
    x1 = base.clone().requires_grad_()
    x2 = base.to(wide).requires_grad_()
    y1 = reduce(op, x1, dim, keepdim)
    y2 = torch_reference(op, x2, gradient_reference_dim(op, dim), keepdim)
    assert y1.shape == y2.shape and y1.dtype == dtype
    g = torch.randn(y2.shape, dtype=dtype, device=device)
    y1.backward(g)
    y2.backward(g.to(wide))
    assert x1.grad.dtype == dtype and x1.grad.shape == x2.grad.shape
    tol = GRAD_TOL.get(dtype, 1e-6)
    torch.testing.assert_close(x1.grad, x2.grad.to(dtype), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_extremum_gradient_split_evenly_among_ties(device, op):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, 4.0, 5.0]], dtype=torch.float64, device=device)
    if op == "amin":
        x = -x
    x.requires_grad_()
    OPS[op].fn(x, 1).backward(torch.tensor([1.0, 1.0, 6.0], dtype=torch.float64, device=device))
    expected = torch.tensor([[0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25], [0, 3.0, 0, 3.0]], dtype=torch.float64)
    torch.testing.assert_close(x.grad.cpu(), expected)
    x.grad = None
    OPS[op].fn(x).backward()  # full reduction: the 2 ties of 5 (or -5)
    expected = torch.zeros(3, 4, dtype=torch.float64)
    expected[2, 1] = expected[2, 3] = 0.5
    torch.testing.assert_close(x.grad.cpu(), expected)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)], ids=_id)
def test_gradcheck_extremum_without_ties(device, op, dim):
    x = (torch.randperm(20, dtype=torch.float64) / 7).view(4, 5).to(device).requires_grad_()
    fn = OPS[op].fn
    assert torch.autograd.gradcheck(lambda t: fn(t) if dim is None else fn(t, dim), (x,), check_forward_ad=True)


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=_id)
def test_forward_ad_tangent_equals_torch(device, op, shape, dim, keepdim, dtype):
    """Forward mode (torch.autograd.forward_ad): the result's tangent equals torch's (ties of
    amax/amin share the tangent evenly), and its primal is the op's own result. For float16 and
    bfloat16, torch's formula is evaluated in float64 and rounded once: torch's own half-precision
    tangent of a product rounds at each step (a few ulps on the GPU), ours accumulates in float."""
    x = _extremum_or_random(op, shape, dtype, device)
    tangent = torch.randn(shape, dtype=dtype, device=device)
    wide = torch.float64 if dtype in (torch.float16, torch.bfloat16) else dtype
    with fwAD.dual_level():
        ours = fwAD.unpack_dual(reduce(op, fwAD.make_dual(x, tangent), dim, keepdim))
        theirs = fwAD.unpack_dual(
            torch_reference(op, fwAD.make_dual(x.to(wide), tangent.to(wide)), gradient_reference_dim(op, dim), keepdim))
    assert ours.tangent is not None, "the tangent was dropped"
    assert ours.tangent.dtype == dtype and ours.tangent.shape == theirs.tangent.shape
    torch.testing.assert_close(ours.primal, reduce(op, x, dim, keepdim), rtol=0, atol=0, equal_nan=True)
    tol = GRAD_TOL.get(dtype, 1e-6)
    torch.testing.assert_close(ours.tangent, theirs.tangent.to(dtype), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("op", GRAD_OPS)
def test_forward_and_backward_at_once(device, op):
    """A dual input that also requires grad: the result has torch's tangent and backward still
    reaches the input."""
    x = _extremum_or_random(op, (3, 4), torch.float64, device).requires_grad_()
    tangent = torch.randn(3, 4, dtype=torch.float64, device=device)
    with fwAD.dual_level():
        primal, ours = fwAD.unpack_dual(OPS[op].fn(fwAD.make_dual(x, tangent), 1))
        theirs = fwAD.unpack_dual(OPS[op].reference(fwAD.make_dual(x.detach(), tangent), 1)).tangent
    torch.testing.assert_close(ours, theirs)
    primal.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    OPS[op].reference(x2, 1).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)


@pytest.mark.parametrize("op", DTYPE_OPS)
@pytest.mark.parametrize("dtype_arg", [torch.float64, torch.float32], ids=_id)
def test_gradient_with_dtype_argument(device, op, dtype_arg):
    """With dtype=, the gradient comes back in the input's dtype, like torch."""
    base = torch.randn(3, 4, dtype=torch.float32, device=device)
    x1, x2 = base.clone().requires_grad_(), base.clone().requires_grad_()
    y1 = OPS[op].fn(x1, 1, dtype=dtype_arg)
    y2 = torch_reference(op, x2, 1, dtype=dtype_arg)
    assert y1.dtype == y2.dtype
    y1.sum().backward()
    y2.sum().backward()
    assert x1.grad.dtype == x2.grad.dtype == torch.float32
    torch.testing.assert_close(x1.grad, x2.grad)


@pytest.mark.parametrize("op", [op for op in GRAD_OPS if not OPS[op].empty_raises])
def test_gradient_of_empty(device, op):
    """The ops with a value for an empty reduction (sum, mean) give an empty gradient."""
    x = torch.empty(0, 3, device=device, requires_grad=True)
    OPS[op].fn(x, 0).sum().backward()
    assert x.grad.shape == (0, 3)


@pytest.mark.parametrize("op", [op for op in ALL_OPS if op not in GRAD_OPS])
def test_no_gradient_for_bool_results(device, op):
    """any and all (bool results), argmax and argmin (int64) of an input that requires grad: a
    result without a gradient or a tangent, as torch's."""
    x = torch.randn(3, 4, device=device, requires_grad=True)
    y = OPS[op].fn(x, 1)
    assert not y.requires_grad and y.dtype == torch_reference(op, x.detach(), 1).dtype
    with fwAD.dual_level():
        dual = OPS[op].fn(fwAD.make_dual(x.detach(), torch.randn(3, 4, device=device)), 1)
        assert fwAD.unpack_dual(dual).tangent is None
    assert torch.equal(dual, torch_reference(op, x.detach(), 1))


def test_no_gradient_for_integer_input(device):
    x = torch.randint(-5, 5, (3, 4), device=device)
    y = torch_reduce.sum(x, 1)
    assert not y.requires_grad and y.dtype == torch.int64

