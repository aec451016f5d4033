"""The runtime: memory, streams, synchronisation, devices and CUDA graphs.

No op reads memory it has not written: the caching allocator's blocks are filled with NaN
bytes before each call (on the CPU as on CUDA), of the output's size and of larger workspaces.
On CUDA the kernels run on the current stream, in stream order (a column reduction's passes
launched early too), with no host synchronisation, on the input's device; they capture into
CUDA graphs and replay with the inputs copied in, replays bitwise stable. CUDA-only tests are
marked requires_cuda (skipped, with the reason, without a GPU or a CUDA build).
"""
import pytest
import torch

import torch_reduce
from cases import ALL_OPS, OPS, _id, reduce, torch_reference

# (shape, dim, dtype): full reductions (of one block and split), rows and columns, long rows and
# long columns (one pass and several), two reduced dims.
POISON_CASES = [
    ((2**20 + 3,), None, torch.float32),
    ((1025,), None, torch.float16),
    ((65537,), None, torch.int32),
    ((65537,), None, torch.float32),
    ((4099, 33), 1, torch.float32),
    ((33, 4099), 0, torch.float32),
    ((3, 2**18 + 1), 1, torch.bfloat16),
    ((3, 2**18 + 1), 1, torch.float32),
    ((2**18 + 1, 3), 0, torch.float32),
    ((257, 255), 1, torch.int8),
    ((64, 33, 257), (0, 2), torch.float32),
]
POISON_PARAMS = [pytest.param(op, shape, dim, dtype, id=f"{op}-{_id(shape)}-dim{_id(dim)}-{_id(dtype)}")
                 for op in ALL_OPS for shape, dim, dtype in POISON_CASES if dtype in OPS[op].dtypes]


@pytest.mark.parametrize("op,shape,dim,dtype", POISON_PARAMS)
def test_poisoned_memory(device, op, shape, dim, dtype, make_input, check, poison):
    """Outputs and temporaries never read uninitialised memory: the caching allocator is
    filled with NaN (all-ones) bytes of the output's size, and of larger workspaces, first."""
    x = make_input(shape, dtype, device)
    n = max(torch_reference(op, x, dim).numel(), 1)
    for nbytes in (4 * n, 8 * n, 32 * n, 2**20, 2**22, x.numel() * x.element_size()):
        poison(device, nbytes)
        out = reduce(op, x, dim)
        check(out, x, op=op, dim=dim)


# --------------------------------------------------------------------------- #
# Streams, synchronisation, devices (CUDA)
# --------------------------------------------------------------------------- #
@pytest.mark.requires_cuda
@pytest.mark.parametrize("dim", [None, 1, 0], ids=["full", "dim1", "dim0"])
def test_runs_on_current_stream(cuda_device, dim, make_input, check, poison):
    """The kernels run on the current (non-default) stream: the input is written on a
    side stream behind a long sleep, and the reduction, queued on the same stream,
    must see the written data (a launch on another stream would read poison)."""
    src = make_input((512, 4099), torch.float32, cuda_device)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        poison(cuda_device, src.numel() * 4)  # the side stream's pool now holds NaN blocks
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time
        x = src * 1.0  # allocated now, written after the sleep
        out = torch_reduce.sum(x, dim)
        assert torch.cuda.current_stream() == s
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    check(out, src, dim=dim)


@pytest.mark.requires_cuda
def test_no_host_synchronisation(cuda_device, make_input):
    """No synchronising CUDA call on the host (torch's sync debug mode raises on one)."""
    x = make_input((1024, 1025), torch.float32, cuda_device)
    torch.cuda.synchronize()
    prev = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        torch_reduce.sum(x)
        torch_reduce.sum(x, 1)
        torch_reduce.sum(x, 0, keepdim=True)
        torch_reduce.sum(x.half(), dtype=torch.float32)
        torch_reduce.sum(x.to(torch.int8))
        torch_reduce.sum(x.t())
    finally:
        torch.cuda.set_sync_debug_mode(prev)


@pytest.mark.requires_cuda
def test_runs_on_the_tensors_device(cuda_device, make_input, check):
    """With several GPUs, the op runs on the input's device, not the current one."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 GPUs (device guard test)")
    x = make_input((4099, 33), torch.float32, "cuda:1")
    with torch.cuda.device(0):
        out = torch_reduce.sum(x)
        out1 = torch_reduce.sum(x, 1)
    assert out.device == x.device and out1.device == x.device
    check(out, x)
    check(out1, x, dim=1)


# Column reductions of two and three passes, whose first passes take each column kernel (the short
# one as the first level of a 128 MiB input and of narrow items, whose later passes must fold mean's
# values unscaled).
MULTI_PASS_COLUMN_SHAPES = [(1000000, 2), (300001, 3), (32768, 32), (70000, 33), (540000, 6), (4160, 16384),
                            (262144, 128), (4200, 1025)]


@pytest.mark.requires_cuda
@pytest.mark.parametrize("op", ["sum", "mean", "amax"])
def test_column_passes_keep_stream_order(cuda_device, op, make_input, check):
    """A column reduction's passes are launched before the kernel ahead of them has finished
    (programmatic dependent launch; the first pass after whatever the stream ran last) but still
    read and write in stream order: each input written by a copy kernel right before its reduction
    and overwritten right after, reductions queued back to back, nothing synchronised in between,
    each give the result of their own input."""
    originals, outs = [], []
    for shape in MULTI_PASS_COLUMN_SHAPES:
        original = make_input(shape, torch.float32, cuda_device)
        x = torch.empty_like(original).copy_(original)
        outs.append(OPS[op].fn(x, 0))
        x.uniform_(-1e6, 1e6)
        originals.append(original)
    for x, out in zip(originals, outs):
        check(out, x, op=op, dim=0)


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
        OPS[op].fn(static_x, 0)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = OPS[op].fn(static_x, 0)
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
