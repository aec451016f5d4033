"""torch_reduce inside models and PyTorch's subsystems: torch.library.opcheck,
torch.compile(fullgraph=True) with eager, aot_eager and inductor (static and dynamic shapes,
gradients through the compiled graph, compiled autograd), the result dtypes under CUDA autocast, and a small MLP
trained with the ops against the same model trained with torch's reductions, eager and compiled.
Gradients of the ops themselves are test_autograd.py's; CUDA graphs test_cuda_runtime.py's.
"""
import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensorMode

import torch_reduce
from cases import ALL_OPS, GRAD_OPS, OPS, _id, reduce


def _cuda(*values):
    """A pytest.param for CUDA-only parameter sets (skipped with the reason without CUDA)."""
    return pytest.param(*values, marks=pytest.mark.requires_cuda, id="-".join(_id(v) for v in values))


def _cpu(*values):
    return pytest.param(*values, id="-".join(_id(v) for v in values))


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
    for op in ALL_OPS
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32)
    for dtype_arg in (None, torch.float16)
    if dtype in OPS[op].dtypes
    and (dtype_arg is None or (op in ("sum", "mean") and dtype.is_floating_point))
]


@pytest.mark.parametrize("op,dtype,dtype_arg", AUTOCAST_CASES)
def test_cuda_autocast_gives_torchs_dtypes(op, dtype, dtype_arg):
    """Under CUDA autocast each op's result has the dtype of torch's: sum of a float16 or bfloat16
    input is float32 unless dtype= says otherwise; mean, amax and amin keep the input's. Checked on
    fake CUDA tensors, so without a GPU too (autocast switched on directly: torch.autocast turns
    itself off where CUDA is not available)."""
    kwargs = {} if dtype_arg is None else {"dtype": dtype_arg}
    ours_fn, torch_fn = OPS[op].fn, OPS[op].reference
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


_COMPILED_AUTOGRAD = torch.torch_version.TorchVersion(torch.__version__) >= "2.13"


@pytest.mark.skipif(not _COMPILED_AUTOGRAD, reason="the ops' backward nodes take compiled autograd from torch 2.13")
@pytest.mark.parametrize("op", GRAD_OPS)
@pytest.mark.parametrize("device,backend", COMPILE_CASES[1:3])
def test_compiled_autograd(device, backend, op, fresh_dynamo):
    """Compiled autograd (the backward traced into a graph) takes the ops' backward nodes and gives
    eager's gradients: of an eager forward, and of a compiled one."""
    x = torch.randn(6, 7, 5, device=device)
    g = torch.randn(6, 5, device=device)
    x_eager = x.clone().requires_grad_()
    reduce(op, x_eager, 1).backward(g)
    forward = torch.compile(lambda t: reduce(op, t, 1), backend=backend, fullgraph=True)
    for f in (lambda t: reduce(op, t, 1), forward):
        x_traced = x.clone().requires_grad_()
        with torch._dynamo.compiled_autograd._enable(torch.compile(backend=backend)):
            f(x_traced).backward(g)
        torch.testing.assert_close(x_traced.grad, x_eager.grad)
