"""torch.func: every op under grad, vjp, jacrev, jvp, jacfwd, hessian and vmap gives what torch's own
op gives under the same transform.

Reverse mode runs the ops' C++ autograd node under functorch's levels; forward mode their
tangents; vmap their batching rules (torch_reduce/batching.py), one call on the batched tensor:
every test here turns torch's per-sample fallback warning into an error, and
test_vmap_makes_one_call counts the calls. amax/amin (ties included) are compared exactly,
sum/mean within a tolerance. A torch without torch.library.register_vmap (2.4) has no rules:
there the same results come through the fallback.
"""
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from cases import ALL_OPS, DTYPE_OPS, GRAD_OPS, OPS, _id, gradient_reference_dim, op_dtype_params, reduce, torch_reference

HAS_VMAP_RULES = hasattr(torch.library, "register_vmap")
pytestmark = pytest.mark.filterwarnings(f"{'error' if HAS_VMAP_RULES else 'ignore'}:There is a performance drop")

CASES = [
    ((3, 4), None, False),
    ((3, 4), None, True),
    ((3, 4), 0, False),
    ((3, 4), -1, True),
    ((2, 3, 4), (0, 2), False),
    ((2, 3, 4), [-1, 1], True),
    ((2, 3, 4), [], False),
    ((), None, False),
    ((), -1, True),
    ((5,), 0, False),
]
CASE_IDS = [f"{_id(s)}-dim{_id(d)}-{'keep' if k else 'nokeep'}" for s, d, k in CASES]
# Gradients and tangents: float32 and float64 (sum and mean within these tolerances).
GRAD_DTYPES = [torch.float64, torch.float32]
TOL = {torch.float64: 1e-10, torch.float32: 1e-5}


def _input(op, shape, dtype, device):
    """amax/amin: values from a small set, so that several elements share the extremum (ties)."""
    if OPS[op].exact:
        return torch.randint(-2, 3, shape).to(dtype).to(device)
    return torch.randn(shape, dtype=dtype, device=device)


def _pair(op, dim, keepdim):
    """The op and torch's, as functions of the input alone."""
    return (lambda v: reduce(op, v, dim, keepdim)), (lambda v: torch_reference(op, v, gradient_reference_dim(op, dim), keepdim))


def _assert_same(op, ours, theirs):
    """Equal structure, dtypes and shapes; values exact for amax/amin, within a tolerance otherwise."""
    ours, theirs = torch.utils._pytree.tree_leaves(ours), torch.utils._pytree.tree_leaves(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"
        tol = 0 if OPS[op].exact or not b.dtype.is_floating_point else TOL[b.dtype]
        torch.testing.assert_close(a, b, rtol=tol, atol=tol, equal_nan=True)


# --------------------------------------------------------------------------- #
# Reverse mode
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=_id)
def test_grad(device, op, shape, dim, keepdim, dtype):
    x = _input(op, shape, dtype, device)
    ours, theirs = _pair(op, dim, keepdim)
    weight = torch.randn(theirs(x).shape, dtype=dtype, device=device)
    _assert_same(op, torch.func.grad(lambda v: (ours(v) * weight).sum())(x),
                 torch.func.grad(lambda v: (theirs(v) * weight).sum())(x))


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
def test_vjp(device, op, shape, dim, keepdim):
    x = _input(op, shape, torch.float64, device)
    ours, theirs = _pair(op, dim, keepdim)
    out, pullback = torch.func.vjp(ours, x)
    expected_out, expected_pullback = torch.func.vjp(theirs, x)
    cotangent = torch.randn_like(expected_out)
    _assert_same(op, (out, pullback(cotangent)), (expected_out, expected_pullback(cotangent)))


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("jacobian", [torch.func.jacrev, torch.func.jacfwd], ids=["jacrev", "jacfwd"])
def test_jacobian(device, op, shape, dim, keepdim, jacobian):
    """jacrev (vmap over the backward node) and jacfwd (vmap over the tangent)."""
    x = _input(op, shape, torch.float64, device)
    ours, theirs = _pair(op, dim, keepdim)
    _assert_same(op, jacobian(ours)(x), jacobian(theirs)(x))


@pytest.mark.parametrize("op", GRAD_OPS)
def test_grad_with_has_aux_and_argnums(device, op):
    """grad over the second of two inputs, an auxiliary output beside: torch.func's bookkeeping
    around the op's node."""
    x, y = _input(op, (3, 4), torch.float64, device), torch.randn(3, 4, dtype=torch.float64, device=device)
    ours, theirs = _pair(op, 1, False)
    _assert_same(op, torch.func.grad(lambda a, b: (ours(a * b).sum(), ours(a)), argnums=1, has_aux=True)(x, y),
                 torch.func.grad(lambda a, b: (theirs(a * b).sum(), theirs(a)), argnums=1, has_aux=True)(x, y))


# --------------------------------------------------------------------------- #
# Forward mode, and both
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=_id)
def test_jvp(device, op, shape, dim, keepdim, dtype):
    x = _input(op, shape, dtype, device)
    tangent = torch.randn(shape, dtype=dtype, device=device)
    ours, theirs = _pair(op, dim, keepdim)
    _assert_same(op, torch.func.jvp(ours, (x,), (tangent,)), torch.func.jvp(theirs, (x,), (tangent,)))


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
def test_hessian(device, op, shape, dim, keepdim):
    """Forward over reverse (jacfwd of jacrev), through a function with second derivatives."""
    x = torch.randn(shape, dtype=torch.float64, device=device)
    ours, theirs = _pair(op, dim, keepdim)
    _assert_same(op, torch.func.hessian(lambda v: (ours(v * v.sin()) ** 2).sum())(x),
                 torch.func.hessian(lambda v: (theirs(v * v.sin()) ** 2).sum())(x))


# --------------------------------------------------------------------------- #
# vmap
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("shape,dim,keepdim", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_vmap(device, op, shape, dim, keepdim, in_dim):
    """The batch dim first, inside or last; the sample's dims as given (None, [], single, several,
    negative), keepdim or not."""
    in_dim = in_dim if in_dim < 0 else in_dim % (len(shape) + 1)  # a 0-dim sample's batch has one dim
    batch_shape = list(shape)
    batch_shape.insert(in_dim % (len(shape) + 1), 3)
    x = _input(op, batch_shape, torch.float64, device)
    ours, theirs = _pair(op, dim, keepdim)
    # What vmap means: the op on each sample, stacked (torch's own rule for any/all takes dim=[]
    # as every dim, where torch.any(sample, []) reduces none).
    per_sample = torch.stack([theirs(sample) for sample in x.unbind(in_dim)])
    _assert_same(op, torch.vmap(ours, in_dims=in_dim)(x), per_sample)


@pytest.mark.parametrize("op,dtype", op_dtype_params())
@pytest.mark.parametrize("dim,batch_dims", [(None, (1, 2)), (1, 2), ((0, -1), (1, -1))], ids=_id)
def test_vmap_dtypes(device, op, dtype, dim, batch_dims, make_input, check):
    """Every input dtype an op takes: the result is torch's reduction of the batch over the
    samples' dims, its dtype too (an int64 sum of int8 samples)."""
    x = make_input((4, 3, 5), dtype, device)
    if OPS[op].one_dim and dim is None:  # every dim of an op of one dim: the flattened sample
        check(torch.vmap(lambda v: reduce(op, v, dim))(x), x.flatten(1), op, 1)
        return
    check(torch.vmap(lambda v: reduce(op, v, dim))(x), x, op, batch_dims)


@pytest.mark.parametrize("op", DTYPE_OPS)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=_id)
def test_vmap_with_dtype_argument(device, op, dtype):
    x = torch.randn(4, 3, 5, dtype=torch.float32, device=device)
    ours = torch.vmap(lambda v: OPS[op].fn(v, 1, dtype=dtype))(x)
    _assert_same(op, ours, torch.vmap(lambda v: torch_reference(op, v, 1, dtype=dtype))(x))


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dim", [None, 0, -1], ids=_id)
def test_vmap_of_the_dispatcher_op(device, op, dim):
    """torch.ops.torch_reduce.<op> (arguments by position and by name) under vmap, not only the wrapper."""
    x = _input(op, (3, 4, 5), torch.float64, device)
    dims = OPS[op].all_dims if dim is None else [dim]
    ours = torch.vmap(lambda v: OPS[op].raw(v, dims, keepdim=True), in_dims=2)(x)
    if OPS[op].one_dim and dim is None:
        # torch's own vmap rule for argmax(v, None, keepdim=True) drops a dim that its call on each
        # sample keeps: the reference is that call, stacked.
        _assert_same(op, ours, torch.stack([torch_reference(op, v, dim, True) for v in x.unbind(2)]))
        return
    _assert_same(op, ours, torch.vmap(lambda v: torch_reference(op, v, dim, True), in_dims=2)(x))


@pytest.mark.parametrize("op", ALL_OPS)
def test_nested_vmap(device, op):
    x = _input(op, (3, 4, 5, 6), torch.float64, device)
    ours, theirs = _pair(op, -1 if OPS[op].one_dim else [0, -1], False)
    _assert_same(op, torch.vmap(torch.vmap(ours, in_dims=1), in_dims=2)(x),
                 torch.vmap(torch.vmap(theirs, in_dims=1), in_dims=2)(x))
    ours, theirs = _pair(op, None, True)
    _assert_same(op, torch.vmap(torch.vmap(torch.vmap(ours)))(x), torch.vmap(torch.vmap(torch.vmap(theirs)))(x))


@pytest.mark.parametrize("op", ALL_OPS)
def test_vmap_out_dims_and_unbatched_input(device, op):
    """out_dims moves the result's batch dim; an input that is not batched (in_dims None) is
    reduced once and broadcast against the batched one."""
    x, w = _input(op, (3, 4, 5), torch.float64, device), torch.randn(6, 5, dtype=torch.float64, device=device)
    ours, theirs = _pair(op, 0, False)
    _assert_same(op, torch.vmap(ours, out_dims=1)(x), torch.vmap(theirs, out_dims=1)(x))
    _assert_same(op, torch.vmap(lambda v, b: ours(v) * b, in_dims=(None, 0))(x, w),
                 torch.vmap(lambda v, b: theirs(v) * b, in_dims=(None, 0))(x, w))


@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("dim", [None, 1], ids=_id)
def test_vmap_of_grad_and_grad_of_vmap(device, op, dim):
    x = _input(op, (3, 4, 5), torch.float64, device)
    ours, theirs = _pair(op, dim, False)
    _assert_same(op, torch.vmap(torch.func.grad(lambda v: (ours(v) ** 2).sum()))(x),
                 torch.vmap(torch.func.grad(lambda v: (theirs(v) ** 2).sum()))(x))
    _assert_same(op, torch.func.grad(lambda v: (torch.vmap(ours, in_dims=1)(v) ** 2).sum())(x),
                 torch.func.grad(lambda v: (torch.vmap(theirs, in_dims=1)(v) ** 2).sum())(x))


@pytest.mark.parametrize("op", ALL_OPS)
def test_vmap_of_empty_samples(device, op):
    """Samples with no elements to reduce: torch's value (sum, mean) or torch's error type (amax, amin)."""
    x = torch.randn(3, 0, 4, dtype=torch.float64, device=device)
    ours, theirs = _pair(op, 0, False)
    if OPS[op].empty_raises:
        with pytest.raises(Exception) as expected:
            torch.vmap(theirs)(x)
        with pytest.raises(expected.type):
            torch.vmap(ours)(x)
    else:
        _assert_same(op, torch.vmap(ours)(x), torch.vmap(theirs)(x))


@pytest.mark.parametrize("op", ALL_OPS)
@pytest.mark.parametrize("dim", [2, -3, [0, -2]], ids=_id)
def test_vmap_dim_errors(device, op, dim, raises_like_torch):
    """Dims are the sample's: out of range or repeated in it, torch's error type."""
    x = torch.randn(3, 4, 5, dtype=torch.float64, device=device)
    ours, theirs = _pair(op, dim, False)
    raises_like_torch(lambda: torch.vmap(ours)(x), lambda: torch.vmap(theirs)(x))


@pytest.mark.parametrize("algorithm", ["default", "warp_shuffle"])
def test_vmap_sum_algorithm(device, algorithm, bitwise_equal):
    """sum's algorithm: "default" batches; a ladder step reduces all of one tensor, so each
    sample is its own call, with the bits (on CUDA) or the error (elsewhere) of that call."""
    x = torch.randn(3, 4, 5, dtype=torch.float32, device=device)

    def batched():
        return torch.vmap(lambda v: OPS["sum"].fn(v, algorithm=algorithm))(x)

    def per_sample():
        return torch.stack([OPS["sum"].fn(v, algorithm=algorithm) for v in x])

    if algorithm == "default":
        _assert_same("sum", batched(), x.sum((1, 2)))
    elif device == "cuda":
        bitwise_equal(batched(), per_sample())
    else:
        with pytest.raises(RuntimeError, match="is a CUDA kernel"):
            per_sample()
        with pytest.raises(RuntimeError, match="is a CUDA kernel"):
            batched()


class _CountCalls(TorchDispatchMode):
    """The shapes of the torch_reduce calls below functorch's layers."""

    def __init__(self):
        super().__init__()
        self.shapes = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.namespace == "torch_reduce":
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


@pytest.mark.skipif(not HAS_VMAP_RULES, reason="torch.library.register_vmap is missing: torch's fallback runs")
@pytest.mark.parametrize("op", ALL_OPS)
def test_vmap_makes_one_call(device, op):
    """One call on the batched tensor, the batch dim first, not one call per sample."""
    x = _input(op, (4, 3, 5), torch.float64, device)
    with _CountCalls() as calls:
        torch.vmap(lambda v: reduce(op, v, -1), in_dims=1)(x)
    assert calls.shapes == [(3, 4, 5)]
