"""Tensor-parallel training with torch_reduce's ops on DTensors, checked against one device.

    python examples/tensor_parallel.py [--steps 5]

A small MLP block whose hidden layer is normalised by an RMSNorm built from torch_reduce.mean,
and a loss built from the ops: an MSE (torch_reduce.mean) plus a penalty on each row's largest
hidden activation (torch_reduce.amax). It trains a few SGD steps on one device, then
tensor-parallel on 2 processes (NCCL on 2 GPUs where there are, gloo on the CPU otherwise), the
hidden layer's 15 units split 8 and 7 between the ranks (Megatron style: `up` split by columns,
`down` by rows). The RMSNorm's mean and the penalty's amax reduce over that split dim: each rank
reduces its shard and DTensor combines the ranks' results (Partial), exactly even though the
shards are uneven (docs/SHARDING.md). It prints each step's losses and exits 1 unless they match.
"""
import argparse
import os
import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import torch_reduce

WORLD = 2
DIM, HIDDEN, BATCH = 8, 15, 16
LR = 0.1
RTOL, ATOL = 1e-5, 1e-6  # float32: the ranks add their partial sums in another order than one device


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(torch_reduce.mean(x * x, -1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(DIM, HIDDEN)
        self.norm = RMSNorm(HIDDEN)
        self.down = nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        hidden = self.norm(self.up(x))
        return self.down(torch.relu(hidden)), hidden


def loss_of(prediction, hidden, target):
    """MSE, plus a small penalty on the mean over rows of each row's largest |activation|."""
    return torch_reduce.mean((prediction - target) ** 2) + 0.01 * torch_reduce.mean(torch_reduce.amax(hidden.abs(), -1))


def batch(step: int, device: str):
    """The same (input, target) on every rank and on one device."""
    generator = torch.Generator().manual_seed(step)
    x, target = torch.randn(2, BATCH, DIM, generator=generator)
    return x.to(device), target.to(device)


def train(model: nn.Module, steps: int, device: str, to_input=lambda t: t) -> list:
    """`steps` SGD steps; each step's loss, as a float."""
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for step in range(steps):
        x, target = batch(step, device)
        prediction, hidden = model(to_input(x))
        loss = loss_of(prediction, hidden, to_input(target))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.full_tensor().item() if hasattr(loss, "full_tensor") else loss.item())
    return losses


def new_model(device: str) -> Block:
    torch.manual_seed(0)  # the same initial weights on one device and on every rank
    return Block().to(device)


def tensor_parallel(rank: int, steps: int, backend: str, rendezvous: str, results) -> None:
    """One rank: the model split across the mesh, trained on the same batches."""
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(rank)
    dist.init_process_group(backend, init_method=f"file://{rendezvous}", rank=rank, world_size=WORLD)
    mesh = init_device_mesh(device, (WORLD,))
    model = new_model(device)
    # use_local_output=False: the layers hand on DTensors, so that the norm and the loss see the
    # whole hidden dim (sharded) rather than each rank's slice of it as a plain tensor.
    parallelize_module(model, mesh, {
        "up": ColwiseParallel(use_local_output=False),
        "down": RowwiseParallel(input_layouts=Shard(-1), use_local_output=False),
    })
    model.norm.weight = nn.Parameter(distribute_tensor(model.norm.weight.detach(), mesh, [Shard(0)]))
    losses = train(model, steps, device, to_input=lambda t: distribute_tensor(t, mesh, [Replicate()]))
    if rank == 0:
        results.put(losses)
    dist.barrier()  # every rank's collectives are done before the group goes
    dist.destroy_process_group()
    # Leave without the interpreter's teardown: there, torch's gloo threads can still free
    # tensors and abort the process ("terminate called without an active exception").
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    steps = parser.parse_args().steps
    gpus = torch.cuda.device_count() >= WORLD and dist.is_nccl_available() and torch_reduce.BUILT_WITH_CUDA
    backend, device = ("nccl", "cuda") if gpus else ("gloo", "cpu")

    one_device = train(new_model(device), steps, device)

    folder = tempfile.mkdtemp()
    try:
        results = mp.get_context("spawn").SimpleQueue()
        mp.spawn(tensor_parallel, args=(steps, backend, os.path.join(folder, "rendezvous"), results), nprocs=WORLD)
        parallel = results.get()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    print(f"step  one {device:<10} tensor-parallel, {WORLD} ranks ({backend})")
    for step, (a, b) in enumerate(zip(one_device, parallel)):
        print(f"{step:>4}  {a:<14.8f} {b:.8f}")
    if all(abs(a - b) <= ATOL + RTOL * abs(a) for a, b in zip(one_device, parallel)):
        print(f"losses match (rtol {RTOL:g}, atol {ATOL:g})")
        return 0
    print("losses differ")
    return 1


if __name__ == "__main__":
    sys.exit(main())
