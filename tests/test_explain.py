"""torch_reduce.explain: the plan of a call, made by the front end itself on a meta tensor, for
every op and layout: the dtypes the call takes and returns, and one step per launch whose
outputs are the result's (or a stage's partial's) and whose reads add up; nothing runs."""
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
    assert plan.bytes_read == sum(s["bytes_read"] for s in plan.steps)
    assert "launch" in str(plan)


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
