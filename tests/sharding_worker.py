"""One rank of a process group that tests/test_sharding.py starts:

    python tests/sharding_worker.py RANK WORLD BACKEND RENDEZVOUS_FILE RESULTS_FILE

BACKEND is gloo (CPU) or nccl (CUDA). The rank runs every case of sharding_cases.CASES[WORLD], in
order, each on a mesh of its shape; after each, the ranks gather their
failures, which keeps them in step, and rank 0 writes {case: failures, "" where it passed} to
RESULTS_FILE, plus the entry "registration": whether the rules were registered when
torch.distributed.tensor was imported after torch_reduce (a failure, or "").
"""
import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist

import torch_reduce  # noqa: F401  (first: the rules must be registered when DTensor is imported later)


def _registration_failure() -> str:
    """Whether importing torch.distributed.tensor after torch_reduce registered every op's rule."""
    if "torch.distributed.tensor" in sys.modules:
        return "torch.distributed.tensor was imported before torch_reduce: the lazy path went untested"
    from torch.distributed.tensor import DTensor

    strategies = DTensor._op_dispatcher.sharding_propagator.op_strategy_funcs
    missing = [name for name in torch_reduce.ops.OPS if getattr(torch.ops.torch_reduce, name).default not in strategies]
    return f"no rule registered for {missing}" if missing else ""


def main(rank: int, world: int, backend: str, rendezvous: str, results: str) -> None:
    registration = _registration_failure()
    from torch.distributed.device_mesh import init_device_mesh

    import sharding_cases

    torch.set_num_threads(1)  # the ranks share the machine's cores
    dist.init_process_group(backend, init_method=f"file://{rendezvous}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    meshes = {}
    failures = {"registration": registration}
    for case in sharding_cases.CASES[world]:
        if case.mesh_shape not in meshes:
            meshes[case.mesh_shape] = init_device_mesh(device, case.mesh_shape)
        try:
            sharding_cases.check(case, meshes[case.mesh_shape])
            failure = ""
        except Exception:
            failure = f"rank {rank}: {traceback.format_exc()}"
        every_rank = [None] * world
        dist.all_gather_object(every_rank, failure)
        failures[str(case)] = "\n".join(f for f in every_rank if f)
    if rank == 0:
        with open(results, "w") as f:
            json.dump(failures, f)
    dist.destroy_process_group()
    # Leave without the interpreter's finalisation: now and then, under load, a rank aborted in
    # gloo's teardown ("terminate called without an active exception"), and nothing is left to do.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    rank, world, backend, rendezvous, results = sys.argv[1:]
    main(int(rank), int(world), backend, rendezvous, results)
