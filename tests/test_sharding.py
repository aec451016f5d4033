"""DTensor sharding of every op (torch_reduce/sharding.py, docs/SHARDING.md), on real process groups:
2 ranks on a 1-D mesh, and 4 on a 2x2 mesh and a 1-D one, with gloo on the CPU, and with NCCL on
CUDA where there are enough GPUs (skipped with the reason otherwise).

Starting processes is the expensive part, so each group starts once per module and runs all its
cases (tests/sharding_cases.py says what each one checks; tests/sharding_worker.py is a rank); each
test below reads its case's outcome, with every rank's failure.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import torch_reduce
from sharding_cases import CASES

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "tensor_parallel.py"


def _missing_api() -> str:
    if not dist.is_available():
        return "torch.distributed is not available in this torch build"
    try:
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F401
    except ImportError:
        return f"torch {torch.__version__} has no torch.distributed.tensor.experimental.register_sharding"
    return ""


MISSING_API = _missing_api()
pytestmark = pytest.mark.skipif(bool(MISSING_API), reason=MISSING_API or "available")


def _backend_missing(backend: str, world: int) -> str:
    if backend == "gloo":
        return "" if dist.is_gloo_available() else "torch.distributed has no gloo backend"
    if torch.cuda.device_count() < world:
        return f"NCCL test: {world} GPUs needed, {torch.cuda.device_count()} visible"
    if not dist.is_nccl_available():
        return "NCCL test: torch.distributed has no NCCL backend"
    if not torch.ops.torch_reduce.built_with_cuda():
        return "NCCL test: torch_reduce was built without CUDA"
    return ""


def _backends(world: int):
    params = []
    for backend in ("gloo", "nccl"):
        missing = _backend_missing(backend, world)
        params.append(pytest.param(backend, id=backend, marks=pytest.mark.skipif(bool(missing), reason=missing or "-")))
    return params


@pytest.fixture(scope="module")
def group_failures(tmp_path_factory):
    """failures(backend, world) -> {case: every rank's failure, "" where it passed}: each group's
    processes run once per module (and a group that fails fails each of its tests at once)."""
    runs = {}

    def failures(backend, world):
        if (backend, world) not in runs:
            runs[backend, world] = _run_group(backend, world, tmp_path_factory.mktemp("group"))
        if isinstance(runs[backend, world], str):
            pytest.fail(runs[backend, world])
        return runs[backend, world]

    return failures


def _run_group(backend, world, folder):
    """The group's failures by case, or what went wrong with the group itself."""
    results = folder / "results.json"
    ranks = [subprocess.Popen([sys.executable, str(HERE / "sharding_worker.py"), str(rank), str(world), backend,
                               str(folder / "rendezvous"), str(results)],
                              cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for rank in range(world)]
    try:
        outputs = [rank.communicate(timeout=300)[0] for rank in ranks]
    except subprocess.TimeoutExpired:
        for rank in ranks:
            rank.kill()
        return f"the {backend} group of {world} ranks did not finish in 300 s"
    codes = [rank.returncode for rank in ranks]
    if any(codes) or not results.exists():
        return (f"the {backend} group of {world} ranks failed (exit codes {codes}, results written: "
                f"{results.exists()}):\n" + "\n".join(f"rank {r}: {o[-4000:]}" for r, o in enumerate(outputs)))
    return json.loads(results.read_text())


def _assert_passed(failures, name):
    assert name in failures, f"{name}: not run by the group"
    assert not failures[name], failures[name]


def _cases(world, kind):
    return [pytest.param(str(case), id=str(case)) for case in CASES[world] if case.kind == kind]


def test_every_op_has_a_rule():
    """Each op of the op list has an entry in the one table, and DTensor has its rule (and mean
    its handler); a new op gets its rule from its entry alone."""
    from torch.distributed.tensor import DTensor

    from torch_reduce.sharding import COMBINE

    missing = sorted(set(torch_reduce.ops.OPS) - set(COMBINE))
    assert not missing, f"ops without an entry in torch_reduce.sharding.COMBINE: {missing}"
    dispatcher = DTensor._op_dispatcher
    for name in torch_reduce.ops.OPS:
        op = getattr(torch.ops.torch_reduce, name).default
        assert op in dispatcher.sharding_propagator.op_strategy_funcs, f"{name}: no sharding strategy registered"
        assert (op in dispatcher._custom_op_handlers) == (COMBINE[name].local_part is not None), name


@pytest.mark.parametrize("backend", _backends(2))
def test_rules_are_registered_when_dtensor_is_imported_after_torch_reduce(backend, group_failures):
    """torch_reduce does not import torch.distributed.tensor itself (half a second); its rules are
    registered as soon as anything does."""
    _assert_passed(group_failures(backend, 2), "registration")


@pytest.mark.parametrize("backend", _backends(2))
@pytest.mark.parametrize("case", _cases(2, "values"))
def test_sharded_call_gives_torchs_result_and_the_promised_placements(backend, case, group_failures):
    """A kept dim's shard stays a shard, a reduced dim's shard gives Partial of the op's own
    reduction (mean exact on uneven shards), replicated stays replicated; full_tensor() is torch's
    result: every op, placement, dim form, keepdim, dtype, dtype= and call form."""
    _assert_passed(group_failures(backend, 2), case)


@pytest.mark.parametrize("backend", _backends(2))
@pytest.mark.parametrize("case", _cases(2, "gradients"))
def test_gradients_of_a_sharded_call_equal_the_full_tensors(backend, case, group_failures):
    """Backward through DTensor: the input's gradient is torch's on the whole tensor (amax and
    amin share it among ties on different ranks, as torch does)."""
    _assert_passed(group_failures(backend, 2), case)


@pytest.mark.parametrize("backend", _backends(4))
@pytest.mark.parametrize("case", _cases(4, "values") + _cases(4, "gradients"))
def test_four_ranks_2d_mesh_and_empty_shards(backend, case, group_failures):
    """A 2x2 mesh (one dim sharded on both mesh dims too), and 5 rows over 4 ranks, one of which
    holds none: sum and mean take the empty shard, amax and amin have the dim gathered."""
    _assert_passed(group_failures(backend, 4), case)


@pytest.mark.skipif(bool(_backend_missing("gloo", 2)), reason=_backend_missing("gloo", 2) or "-")
def test_tensor_parallel_example_matches_one_device():
    """examples/tensor_parallel.py trains the same model on one device and tensor-parallel on 2
    ranks; it exits 0 only when every step's losses match."""
    run = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "losses match" in run.stdout, run.stdout
