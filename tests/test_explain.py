"""torch_reduce.explain: the plan of a call, made by the front end itself on a meta tensor, for
every op and layout: the dtypes the call takes and returns, and one step per launch whose
outputs are the result's (or a stage's partial's) and whose reads add up; nothing runs. On a
GPU, the CUDA launches it lists are the ones the call makes, as the profiler sees them."""
import json
import re

import pytest
import torch

import cases
import torch_reduce
from cases import OPS, _id

LAYOUTS = {
    "contiguous": lambda: torch.randn(6, 10, 12),
    "transposed": lambda: torch.randn(12, 10, 6).permute(2, 1, 0),
    "sliced": lambda: torch.randn(6, 10, 13)[..., 1:],
    "strided": lambda: torch.randn(6, 20, 12)[:, ::2],
    "expanded": lambda: torch.randn(6, 1, 12).expand(6, 10, 12),
}
DIMS = [None, 0, -1, (0, 2), (1,)]


@pytest.mark.parametrize("op", cases.ALL_OPS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dim", DIMS, ids=_id)
def test_a_plan_for_every_op_and_layout(op, layout, dim):
    x = LAYOUTS[layout]()
    plan = torch_reduce.explain(x, dim, OPS[op].library_name)
    result = OPS[op].fn(x, dim)
    assert plan.device == "cpu" and plan.result_dtype == str(result.dtype).removeprefix("torch.")
    assert plan.steps, "a non-empty reduction launches at least once"
    last = plan.steps[-1]
    # The last launch writes the result, but where an expanded kept dim was cut to one.
    expanded_kept = layout == "expanded" and dim not in (None, (1,))
    if not expanded_kept:
        assert last["outputs"] == result.numel()
    for step in plan.steps:
        element_bytes = getattr(torch, step["dtype"]).itemsize  # a stage's partials: any's are bools
        assert step["bytes_read"] == step["batch"] * step["reduce"] * step["inner"] * element_bytes
        assert step["kernel"] in ("reduce_rows", "reduce_columns")
        assert step["launches"] is None, "the CPU backend plans no launches of its own"
    assert plan.bytes_read == sum(s["bytes_read"] for s in plan.steps)
    assert "1. " in str(plan) and "kernel: " in str(plan)


def test_a_contiguous_input_is_read_in_place_once():
    plan = torch_reduce.explain(torch.randn(64, 128), -1, "sum")
    (step,) = plan.steps
    assert step["reads"] == "input in place" and step["layout"] == "rows"
    assert (step["batch"], step["reduce"]) == (64, 128)


def test_a_cast_is_a_copy_and_dtypes_follow_the_op():
    plan = torch_reduce.explain(torch.randn(8, 8, dtype=torch.float16), None, "mean", dtype=torch.float64)
    assert (plan.input_dtype, plan.kernel_dtype, plan.result_dtype) == ("float64", "float64", "float64")
    assert plan.steps[0]["reads"] == "copy or partial"
    plan = torch_reduce.explain(torch.ones(5, dtype=torch.int32), None, "sum")
    assert (plan.kernel_dtype, plan.result_dtype) == ("int64", "int64")


def test_empty_inputs_plan_no_launch_and_raise_what_the_op_raises(raises_like_torch):
    assert torch_reduce.explain(torch.randn(0, 4), 0, "sum").steps == []
    raises_like_torch(lambda: torch_reduce.explain(torch.randn(0, 4), 0, "amax"), lambda: torch.amax(torch.randn(0, 4), 0))
    with pytest.raises(RuntimeError, match="unknown op 'median'"):
        torch_reduce.explain(torch.randn(3), None, "median")


@pytest.mark.skipif(not torch_reduce.BUILT_WITH_CUDA, reason="a CPU-only build has no CUDA backend to plan for")
def test_a_cuda_plan_needs_no_gpu():
    """device="cuda" plans a CPU tensor as the CUDA backend would read it: gathered rows of a
    slice, the kernel that reads each layout."""
    plan = torch_reduce.explain(torch.randn(64, 33, 17)[:, 1:, :], (0, 2), "sum", device="cuda")
    assert plan.device == "cuda"
    assert all("kernel" in s and s["kernel"] not in ("reduce_rows", "reduce_columns") for s in plan.steps)
    full = torch_reduce.explain(torch.randn(1 << 20), None, "sum", device="cuda")
    assert full.steps[0]["kernel"] == "split_row_reduce_kernel" and full.steps[0]["full"]
    if not torch.cuda.is_available():
        assert full.launches is None and "planned where a GPU is visible" in str(full)


# Inputs that reach every CUDA kernel family: rows short, packed, long and split; columns of one
# chunk, of many, narrow and flat; full reductions; gathered rows, staged rows, gathered columns
# and permuted outputs (name: (make an input on the device, dim)).
CUDA_LAYOUTS = {
    "rows": (lambda d, t: torch.randn(4096, 1000, device=d, dtype=t), -1),
    "packed rows": (lambda d, t: torch.randn(65536, 4, device=d, dtype=t), -1),
    "long rows": (lambda d, t: torch.randn(8, 1 << 20, device=d, dtype=t), -1),
    "full": (lambda d, t: torch.randn(3, 1000003, device=d, dtype=t), None),
    "short columns": (lambda d, t: torch.randn(48, 100000, device=d, dtype=t), 0),
    "long columns": (lambda d, t: torch.randn(1 << 16, 1024, device=d, dtype=t), 0),
    "narrow columns": (lambda d, t: torch.randn(1 << 20, 3, device=d, dtype=t), 0),
    "few long columns": (lambda d, t: torch.randn(1 << 22, 2, device=d, dtype=t), 0),
    "unaligned rows": (lambda d, t: torch.randn(3001, 999, device=d, dtype=t)[:, 1:], -1),
    "staged rows": (lambda d, t: torch.randn(40, 30, 20, device=d, dtype=t)[:, 1:].permute(1, 0, 2), (1, 2)),
    "gathered rows": (lambda d, t: torch.randn(512, 33, 300, device=d, dtype=t)[:, 1:, :], (0, 2)),
    "gathered columns": (lambda d, t: torch.randn(20, 64, 40, device=d, dtype=t)[:, :, 1:], (0,)),
    "permuted output": (lambda d, t: torch.randn(16, 64, 32, device=d, dtype=t).permute(2, 1, 0), 1),
}
OUR_KERNEL = re.compile(r"torch_reduce::cuda::(\w+)<")


def _kernels_launched(fn, tmp_path):
    """(kernel, grid) of each torch_reduce kernel fn launches, in order, from the profiler's trace."""
    fn()  # the first call's one-time work (workspaces, residency queries) is not what is compared
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = sorted((e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "kernel"),
                    key=lambda e: e["ts"])
    launched = []
    for event in events:
        name = OUR_KERNEL.search(event["name"])
        if name:
            grid, block = event["args"]["grid"], event["args"]["block"]
            launched.append((name.group(1), grid[0] * grid[1] * grid[2], block[0] * block[1] * block[2]))
    return launched


@pytest.mark.requires_cuda
@pytest.mark.parametrize("op", ["sum", "amax", "var", "argmax", "logsumexp"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=_id)
@pytest.mark.parametrize("layout", list(CUDA_LAYOUTS))
def test_a_cuda_plan_lists_the_launches_the_call_makes(op, dtype, layout, cuda_device, tmp_path):
    make, dim = CUDA_LAYOUTS[layout]
    if not OPS[op].takes(dim):
        pytest.skip(f"{op} reduces one dim or all")
    x = make(cuda_device, dtype)
    plan = torch_reduce.explain(x, dim, OPS[op].library_name)
    assert plan.launches is not None
    planned = [(l["kernel"], l["grid"], l["block"]) for l in plan.launches if not l["kernel"].startswith("copy")]
    assert planned, "a reduction launches a kernel of its own"
    assert _kernels_launched(lambda: OPS[op].fn(x, dim), tmp_path) == planned
    assert all(l["bytes_read"] > 0 and l["config"] for l in plan.launches if not l["kernel"].startswith("copy"))
