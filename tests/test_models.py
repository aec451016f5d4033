"""torch_reduce in models: autograd (gradcheck, gradients equal to torch's, forward mode,
torch.func), torch.library.opcheck, torch.compile(fullgraph=True), autocast, CUDA graph capture,
and training a small MLP whose loss uses the ops, against the same model with torch's.
"""
import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_reduce
from cases import _id




def _cuda(*values):
    """A pytest.param for CUDA-only parameter sets (skipped with the reason without CUDA)."""
    return pytest.param(*values, marks=pytest.mark.requires_cuda, id="-".join(_id(v) for v in values))


def _cpu(*values):
    return pytest.param(*values, id="-".join(_id(v) for v in values))


# --------------------------------------------------------------------------- #
# Autograd
# --------------------------------------------------------------------------- #
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


def _reduce(fn, x, dim, keepdim):
    if dim is None and not keepdim:
        return fn(x)
    return fn(x, dim, keepdim)


def _extremum_or_random(op, shape, dtype, device):
    """Inputs for gradients: for amax/amin, values from a small set, so that several elements share the extremum."""
    if op in ("amax", "amin"):
        return torch.randint(-2, 3, shape).to(dtype).to(device)
    return torch.randn(shape, dtype=dtype, device=device)


def _torch_reduce(op, x, dim, keepdim):
    if op in ("amax", "amin"):
        return getattr(torch, op)(x, () if dim is None else dim, keepdim)
    return _reduce(getattr(torch, op), x, dim, keepdim)


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
def test_gradcheck_sum_mean(device, op, shape, dim, keepdim):
    fn = getattr(torch_reduce, op)
    x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: _reduce(fn, t, dim, keepdim), (x,), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(lambda t: _reduce(fn, t, dim, keepdim), (x,))


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=_id)
def test_gradient_equals_torch(device, op, shape, dim, keepdim, dtype):
    """The input gradient equals torch's (dtype and values), for a random upstream gradient."""
    base = _extremum_or_random(op, shape, dtype, device)
    x1 = base.clone().requires_grad_()
    x2 = base.clone().requires_grad_()
    y1 = _reduce(getattr(torch_reduce, op), x1, dim, keepdim)
    y2 = _torch_reduce(op, x2, dim, keepdim)
    assert y1.shape == y2.shape and y1.dtype == y2.dtype
    g = torch.randn(y2.shape, dtype=dtype, device=device)
    y1.backward(g)
    y2.backward(g)
    assert x1.grad.dtype == x2.grad.dtype and x1.grad.shape == x2.grad.shape
    tol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)
    torch.testing.assert_close(x1.grad, x2.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["amax", "amin"])
def test_extremum_gradient_split_evenly_among_ties(device, op):
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, 5.0, 4.0, 5.0]], dtype=torch.float64, device=device)
    if op == "amin":
        x = -x
    x.requires_grad_()
    getattr(torch_reduce, op)(x, 1).backward(torch.tensor([1.0, 1.0, 6.0], dtype=torch.float64, device=device))
    expected = torch.tensor([[0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25], [0, 3.0, 0, 3.0]], dtype=torch.float64)
    torch.testing.assert_close(x.grad.cpu(), expected)
    x.grad = None
    getattr(torch_reduce, op)(x).backward()  # full reduction: the 2 ties of 5 (or -5)
    expected = torch.zeros(3, 4, dtype=torch.float64)
    expected[2, 1] = expected[2, 3] = 0.5
    torch.testing.assert_close(x.grad.cpu(), expected)


@pytest.mark.parametrize("op", ["amax", "amin"])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)], ids=_id)
def test_gradcheck_extremum_without_ties(device, op, dim):
    x = (torch.randperm(20, dtype=torch.float64) / 7).view(4, 5).to(device).requires_grad_()
    fn = getattr(torch_reduce, op)
    assert torch.autograd.gradcheck(lambda t: fn(t) if dim is None else fn(t, dim), (x,), check_forward_ad=True)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("shape,dim,keepdim", GRAD_CASES, ids=GRAD_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=_id)
def test_forward_ad_tangent_equals_torch(device, op, shape, dim, keepdim, dtype):
    """Forward mode (torch.autograd.forward_ad): the result's tangent equals torch's (ties of
    amax/amin share the tangent evenly), and its primal is the op's own result."""
    x = _extremum_or_random(op, shape, dtype, device)
    tangent = torch.randn(shape, dtype=dtype, device=device)
    with fwAD.dual_level():
        ours = fwAD.unpack_dual(_reduce(getattr(torch_reduce, op), fwAD.make_dual(x, tangent), dim, keepdim))
        theirs = fwAD.unpack_dual(_torch_reduce(op, fwAD.make_dual(x, tangent), dim, keepdim))
    assert ours.tangent is not None, "the tangent was dropped"
    assert ours.tangent.dtype == theirs.tangent.dtype and ours.tangent.shape == theirs.tangent.shape
    assert torch.equal(ours.primal, _reduce(getattr(torch_reduce, op), x, dim, keepdim))
    tol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)
    torch.testing.assert_close(ours.tangent, theirs.tangent, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_forward_and_backward_at_once(device, op):
    """A dual input that also requires grad: the result has torch's tangent and backward still
    reaches the input."""
    x = _extremum_or_random(op, (3, 4), torch.float64, device).requires_grad_()
    tangent = torch.randn(3, 4, dtype=torch.float64, device=device)
    with fwAD.dual_level():
        primal, ours = fwAD.unpack_dual(getattr(torch_reduce, op)(fwAD.make_dual(x, tangent), 1))
        theirs = fwAD.unpack_dual(getattr(torch, op)(fwAD.make_dual(x.detach(), tangent), 1)).tangent
    torch.testing.assert_close(ours, theirs)
    primal.sum().backward()
    x2 = x.detach().clone().requires_grad_()
    getattr(torch, op)(x2, 1).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)


@pytest.mark.filterwarnings("ignore:There is a performance drop")
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
def test_torch_func_jvp_and_vmap(device, op):
    """torch.func.jvp, jacfwd and vmap give torch's results (vmap through torch's per-sample
    fallback, which warns of it: the ops have no batching rule)."""
    x = torch.randn(3, 4, 5, dtype=torch.float64, device=device)
    tangent = torch.randn_like(x)
    ours_fn, torch_fn = getattr(torch_reduce, op), getattr(torch, op)
    ours = torch.func.jvp(lambda v: ours_fn(v, 1), (x,), (tangent,))
    theirs = torch.func.jvp(lambda v: torch_fn(v, 1), (x,), (tangent,))
    torch.testing.assert_close(ours, theirs)
    jacobian = torch.func.jacfwd(lambda v: ours_fn(v, 0))(x[0])
    torch.testing.assert_close(jacobian, torch.func.jacfwd(lambda v: torch_fn(v, 0))(x[0]))
    torch.testing.assert_close(torch.vmap(lambda v: ours_fn(v, 1))(x), torch_fn(x, 2))


def test_torch_func_grad_is_refused_with_an_error(device):
    """torch.func's reverse-mode transforms (grad, vjp, jacrev) cannot run the ops' C++ autograd
    Function: they raise rather than return a wrong gradient."""
    x = torch.randn(3, 4, dtype=torch.float64, device=device)
    with pytest.raises(RuntimeError, match="functorch transforms"):
        torch.func.grad(lambda v: torch_reduce.sum(v))(x)


@pytest.mark.parametrize("dtype_arg", [torch.float64, torch.float32], ids=_id)
def test_gradient_with_dtype_argument(device, dtype_arg):
    """sum/mean with dtype=: the gradient comes back in the input's dtype, like torch."""
    base = torch.randn(3, 4, dtype=torch.float32, device=device)
    for op in ("sum", "mean"):
        x1, x2 = base.clone().requires_grad_(), base.clone().requires_grad_()
        y1 = getattr(torch_reduce, op)(x1, 1, dtype=dtype_arg)
        y2 = getattr(torch, op)(x2, 1, dtype=dtype_arg)
        assert y1.dtype == y2.dtype
        y1.sum().backward()
        y2.sum().backward()
        assert x1.grad.dtype == x2.grad.dtype == torch.float32
        torch.testing.assert_close(x1.grad, x2.grad)


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_gradient_of_empty(device, op):
    x = torch.empty(0, 3, device=device, requires_grad=True)
    getattr(torch_reduce, op)(x, 0).sum().backward()
    assert x.grad.shape == (0, 3)


def test_no_gradient_for_integer_input(device):
    x = torch.randint(-5, 5, (3, 4), device=device)
    y = torch_reduce.sum(x, 1)
    assert not y.requires_grad and y.dtype == torch.int64


# --------------------------------------------------------------------------- #
# opcheck
# --------------------------------------------------------------------------- #
def _opcheck_cases():
    f = lambda *s: torch.randn(*s)  # noqa: E731
    return [
        ("sum", lambda: (f(3, 4, 5),), {}),
        ("sum", lambda: (f(3, 4, 5).requires_grad_(),), {"dim": [0, 2], "keepdim": True}),
        ("sum", lambda: (f(3, 4, 5).requires_grad_(),), {"dim": [-1]}),
        ("sum", lambda: (f(33, 65).t().requires_grad_(),), {"dim": [1]}),
        ("sum", lambda: (f(4, 5).half(),), {"dtype": torch.float32}),
        ("sum", lambda: (torch.randint(-100, 100, (4, 5), dtype=torch.int32),), {"dim": [1]}),
        ("sum", lambda: (torch.randint(0, 2, (4, 5)).bool(),), {}),
        ("sum", lambda: (torch.randn(()),), {}),
        ("sum", lambda: (f(0, 3),), {"dim": [0]}),
        ("mean", lambda: (f(3, 4, 5).requires_grad_(),), {}),
        ("mean", lambda: (f(3, 4, 5).requires_grad_(),), {"dim": [1], "keepdim": True}),
        ("mean", lambda: (f(4, 5).bfloat16(),), {"dim": [0], "dtype": torch.float32}),
        ("mean", lambda: (torch.randint(-9, 9, (4, 5)),), {"dtype": torch.float64}),
        ("amax", lambda: (f(3, 4, 5).requires_grad_(),), {}),
        ("amax", lambda: (f(3, 4, 5).requires_grad_(),), {"dim": [0, 2], "keepdim": True}),
        ("amax", lambda: (torch.randint(-100, 100, (4, 5), dtype=torch.int16),), {"dim": [1]}),
        ("amin", lambda: (f(3, 4, 5).requires_grad_(),), {"dim": [1]}),
        ("amin", lambda: (f(3, 4, 5).double().requires_grad_(),), {}),
        ("amin", lambda: (torch.randint(0, 2, (4, 5)).bool(),), {"dim": [0]}),
    ]


OPCHECK_CASES = _opcheck_cases()


@pytest.mark.parametrize("case", range(len(OPCHECK_CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(OPCHECK_CASES)])
def test_opcheck(device, case):
    name, make_args, kwargs = OPCHECK_CASES[case]
    args = tuple(a.detach().to(device).requires_grad_(a.requires_grad) for a in make_args())
    op = getattr(torch.ops.torch_reduce, name).default
    torch.library.opcheck(op, args, kwargs)


# --------------------------------------------------------------------------- #
# torch.compile(fullgraph=True)
# --------------------------------------------------------------------------- #
@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _model_fn(reduce_sum, reduce_mean, reduce_amax, reduce_amin):
    def f(x):
        a = reduce_sum(x, 1)  # (B,)
        b = reduce_mean(x, dim=-1, keepdim=True)  # (B, 1)
        c = reduce_amax(x, 0)  # (N,)
        d = reduce_amin(x, (0, 1))
        e = reduce_sum(x * 2, dtype=torch.float64)
        return a * 0.5 + b.squeeze(1) + c[: x.shape[0]].sum() - d + e.float()

    return f


TORCH_FN = _model_fn(torch.sum, torch.mean, torch.amax, torch.amin)
OURS_FN = _model_fn(torch_reduce.sum, torch_reduce.mean, torch_reduce.amax, torch_reduce.amin)

COMPILE_CASES = [
    _cpu("cpu", "eager"),
    _cpu("cpu", "aot_eager"),
    _cuda("cuda", "aot_eager"),
    _cuda("cuda", "inductor"),
]


@pytest.mark.parametrize("device,backend", COMPILE_CASES)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compile_fullgraph(device, backend, dynamic, fresh_dynamo):
    compiled = torch.compile(OURS_FN, backend=backend, fullgraph=True, dynamic=dynamic)
    for shape in [(8, 33), (8, 33), (16, 65), (5, 1025)]:
        x = torch.randn(shape, device=device)
        torch.testing.assert_close(compiled(x), TORCH_FN(x), rtol=1e-5, atol=1e-4)
        x1 = x.clone().requires_grad_()
        x2 = x.clone().requires_grad_()
        compiled(x1).sum().backward()
        TORCH_FN(x2).sum().backward()
        torch.testing.assert_close(x1.grad, x2.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device,backend", COMPILE_CASES)
@pytest.mark.parametrize("dtype", [torch.int32, torch.bfloat16, torch.bool], ids=_id)
def test_compile_fullgraph_dtypes(device, backend, dtype, make_input, fresh_dynamo):
    def f(x):
        return torch_reduce.sum(x), torch_reduce.sum(x, 0, keepdim=True), torch_reduce.amax(x, 1)

    def g(x):
        return torch.sum(x), torch.sum(x, 0, keepdim=True), torch.amax(x, 1)

    compiled = torch.compile(f, backend=backend, fullgraph=True)
    x = make_input((33, 17), dtype, device)
    for ours, ref in zip(compiled(x), g(x)):
        assert ours.dtype == ref.dtype and ours.shape == ref.shape
        torch.testing.assert_close(ours, ref, rtol=1e-2 if dtype == torch.bfloat16 else 1e-5, atol=1e-2)


# --------------------------------------------------------------------------- #
# Autocast
# --------------------------------------------------------------------------- #
# (op, input dtype, dtype=): every op and input dtype it takes; sum and mean of floating inputs also
# with a dtype given.
AUTOCAST_CASES = [
    pytest.param(op, dtype, dtype_arg, id=f"{op}-{_id(dtype)}-dtype={_id(dtype_arg)}")
    for op in ("sum", "mean", "amax", "amin")
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32)
    for dtype_arg in (None, torch.float16)
    if (op != "mean" or dtype.is_floating_point)
    and (dtype_arg is None or (op in ("sum", "mean") and dtype.is_floating_point))
]


@pytest.mark.parametrize("op,dtype,dtype_arg", AUTOCAST_CASES)
def test_cuda_autocast_gives_torchs_dtypes(op, dtype, dtype_arg):
    """Under CUDA autocast each op's result has the dtype of torch's: sum of a float16 or bfloat16
    input is float32 unless dtype= says otherwise; mean, amax and amin keep the input's. Checked on
    fake CUDA tensors, so without a GPU too (autocast switched on directly: torch.autocast turns
    itself off where CUDA is not available)."""
    kwargs = {} if dtype_arg is None else {"dtype": dtype_arg}
    ours_fn, torch_fn = getattr(torch_reduce, op), getattr(torch, op)
    was_enabled = torch.is_autocast_enabled("cuda")
    with FakeTensorMode():
        x = torch.empty(4, 8, dtype=dtype, device="cuda")
        torch.set_autocast_enabled("cuda", True)
        try:
            ours, theirs = ours_fn(x, 1, **kwargs), torch_fn(x, 1, **kwargs)
        finally:
            torch.set_autocast_enabled("cuda", was_enabled)
    assert ours.dtype == theirs.dtype


@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=_id)
def test_cuda_autocast_sum_is_float32(cuda_device, dtype, make_input, bitwise_equal):
    """Under torch.autocast a half-precision sum is float32, like torch.sum's: 2^17 float16 ones sum
    to 131072, not inf; the bits are those of sum(dtype=torch.float32)."""
    ones = torch.ones(2**17, dtype=dtype, device=cuda_device)
    x = make_input((300, 1000), dtype, cuda_device)
    with torch.autocast("cuda", dtype=dtype):
        total, rows, theirs = torch_reduce.sum(ones), torch_reduce.sum(x, 1), torch.sum(x, 1)
    assert total.dtype == torch.float32 and total.item() == 2**17
    assert rows.dtype == theirs.dtype == torch.float32
    bitwise_equal(rows, torch_reduce.sum(x, 1, dtype=torch.float32), "autocast sum")
    torch.testing.assert_close(rows, theirs, rtol=1e-5, atol=1e-3)


# --------------------------------------------------------------------------- #
# CUDA graphs
# --------------------------------------------------------------------------- #
@pytest.mark.requires_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32], ids=_id)
@pytest.mark.parametrize("shape", [(4099, 1025), (2**20 + 3,), (3, 500003), (500003, 3)], ids=_id)
def test_cuda_graph_capture_and_replay(cuda_device, dtype, shape, make_input, check):
    static_x = make_input(shape, dtype, cuda_device)
    dim = -1 if len(shape) > 1 else 0

    def body():
        return (
            torch_reduce.sum(static_x),
            torch_reduce.sum(static_x, dim),
            torch_reduce.sum(static_x, 0, keepdim=True),
            torch_reduce.amax(static_x, dim),
            torch_reduce.amin(static_x),
        ) + ((torch_reduce.mean(static_x, 0),) if dtype.is_floating_point else ())

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outs = body()
    for replay in range(4):  # several replays: any counters must be reset by the kernels
        new = make_input(shape, dtype, cuda_device)
        static_x.copy_(new)
        graph.replay()
        torch.cuda.synchronize()
        check(outs[0], new)
        check(outs[1], new, dim=dim)
        check(outs[2], new, dim=0, keepdim=True)
        check(outs[3], new, op="amax", dim=dim)
        check(outs[4], new, op="amin")
        if dtype.is_floating_point:
            check(outs[5], new, op="mean", dim=0)


@pytest.mark.requires_cuda
@pytest.mark.parametrize("op", ["sum", "mean"])
def test_cuda_graph_of_one_early_launched_reduction(cuda_device, op, make_input, check):
    """A graph whose first node is a pass launched early (the first pass of a column reduction of
    several passes, dependent_launch.cuh) captures and replays, each replay reading the input just
    copied in."""
    static_x = make_input((300001, 3), torch.float32, cuda_device)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        getattr(torch_reduce, op)(static_x, 0)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = getattr(torch_reduce, op)(static_x, 0)
    for replay in range(3):
        new = make_input((300001, 3), torch.float32, cuda_device)
        static_x.copy_(new)
        graph.replay()
        check(out.clone(), new, op=op, dim=0)


@pytest.mark.requires_cuda
def test_cuda_graph_replays_are_deterministic(cuda_device, make_input, bitwise_equal):
    x = make_input((2**22 + 7,), torch.float32, cuda_device)
    eager = torch_reduce.sum(x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch_reduce.sum(x)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(graph):
        out = torch_reduce.sum(x)
    for i in range(10):
        graph.replay()
        bitwise_equal(out, eager, f"replay {i}")


# --------------------------------------------------------------------------- #
# Training a small MLP: same trajectory as with torch's reductions
# --------------------------------------------------------------------------- #
def _train(device, dtype, sum_fn, mean_fn, amax_fn, steps=8):
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4)).to(device, dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(99)
    data = torch.randn(256, 16, generator=gen).to(device, dtype)
    target = torch.randn(256, 4, generator=gen).to(device, dtype)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        pred = model(data)
        per_sample = sum_fn((pred - target) ** 2, dim=1)  # (256,)
        loss = mean_fn(per_sample)
        loss = loss + 1e-3 * sum_fn(torch.stack([sum_fn(p**2) for p in model.parameters()]))
        loss = loss + 1e-2 * mean_fn(amax_fn(pred.abs(), 1))
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=_id)
def test_mlp_training_matches_torch(device, dtype):
    ours = _train(device, dtype, torch_reduce.sum, torch_reduce.mean, torch_reduce.amax)
    ref = _train(device, dtype, torch.sum, torch.mean, torch.amax)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(ours[0], ref[0], **tol)
    assert ours[0][-1] < ours[0][0], "the loss went down"
    for p_ours, p_ref in zip(ours[1], ref[1]):
        torch.testing.assert_close(p_ours, p_ref, **tol)


@pytest.mark.parametrize("device,backend", COMPILE_CASES[1:3])
def test_compiled_training_step(device, backend, fresh_dynamo):
    """A compiled (fullgraph) forward+loss whose backward runs through the registered autograd."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    ref_model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    ref_model.load_state_dict(model.state_dict())
    x, y = torch.randn(64, 8, device=device), torch.randn(64, 1, device=device)

    @torch.compile(backend=backend, fullgraph=True)
    def loss_fn(m, x, y):
        return torch_reduce.mean(torch_reduce.sum((m(x) - y) ** 2, dim=1))

    loss = loss_fn(model, x, y)
    loss.backward()
    ref_loss = torch.mean(torch.sum((ref_model(x) - y) ** 2, dim=1))
    ref_loss.backward()
    torch.testing.assert_close(loss, ref_loss)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
