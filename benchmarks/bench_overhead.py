"""Host cost of one call, by the way a call enters the op: what a library
built for several Pythons and torch releases would give up (docs/INSTALL.md).

- torch.sum: the reference.
- torch_reduce.sum: the wrapper and its fast path, a C function of the
  CPython-specific module _C (a Python-free, abi3 library would lack it).
- torch.ops.torch_reduce.sum: the dispatcher's Python binding, what the
  wrapper falls back to without the fast path; torch.ops.aten.sum is torch's
  own op through the same binding, so the two rows' gap is our op's and the
  gap to torch.sum is the binding's (".default": without the packet's
  choice of overload).
- custom_op + register_autograd: the op reached through torch.library's Python
  custom op, its autograd formula registered from Python, as a library on
  the LibTorch stable ABI must (it cannot register C++ autograd kernels). Its
  kernel calls ours, so this is an upper bound of that design's cost;
  custom_op alone (no formula) separates the two.
- torch.ops, autograd from Python: our op with its C++ autograd kernel
  replaced by register_autograd's (measured last, since it changes the op
  for the rest of the process): the stable-ABI design's cost itself, a C++
  kernel under a Python autograd kernel that every call enters.

Each row: median over 7 repeats of the mean time of N calls on a 16-element
tensor (the host's cost; on a GPU the kernel runs behind it), with and
without requires_grad. Writes out/overhead_<device>.json (--save: results/).
"""
import argparse
import statistics
import time
from typing import List, Optional

import torch

import harness
import report

CALLS = 2000
REPEATS = 7


@torch.library.custom_op("torch_reduce_overhead::sum", mutates_args=())
def _python_autograd_sum(x: torch.Tensor, dim: Optional[List[int]] = None, keepdim: bool = False) -> torch.Tensor:
    return torch.ops.torch_reduce.sum.default(x, dim, keepdim)


@_python_autograd_sum.register_fake
def _(x, dim=None, keepdim=False):
    return torch.sum(x, dim, keepdim)


def _setup_context(ctx, inputs, output, keyword_only_inputs=None):
    ctx.shape = inputs[0].shape


def _backward(ctx, grad):
    return grad.expand(ctx.shape), None, None


_python_autograd_sum.register_autograd(_backward, setup_context=_setup_context)


# The same custom op without the autograd formula: what torch.library's Python
# op costs by itself.
@torch.library.custom_op("torch_reduce_overhead::sum_no_autograd", mutates_args=())
def _python_sum(x: torch.Tensor, dim: Optional[List[int]] = None, keepdim: bool = False) -> torch.Tensor:
    return torch.ops.torch_reduce.sum.default(x, dim, keepdim)


def per_call_us(function, x, synchronize):
    for _ in range(200):
        function(x)
    synchronize()
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(CALLS):
            function(x)
        synchronize()
        samples.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    args = parser.parse_args()
    device = harness.pick_device(args.device)
    torch_reduce = harness.import_torch_reduce()
    info = report.describe_device(device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    ways = {
        "torch.sum": torch.sum,
        "torch_reduce.sum (fast path)": torch_reduce.sum,
        "torch.ops.torch_reduce.sum": torch.ops.torch_reduce.sum,
        "torch.ops.aten.sum": torch.ops.aten.sum,
        "torch.ops.torch_reduce.sum.default": torch.ops.torch_reduce.sum.default,
        "torch.ops.aten.sum.default": torch.ops.aten.sum.default,
        "custom_op": _python_sum,
        "custom_op + register_autograd": _python_autograd_sum,
    }
    rows = []
    print(f"host cost per call (us), 16 elements, {info.name}; median of {REPEATS} x {CALLS} calls")
    print(f"{'way in':36s} {'no grad':>9s} {'grad':>9s}")

    def measure(name, function):
        row = {"way": name}
        for key, requires_grad in (("no_grad_us", False), ("grad_us", True)):
            x = torch.randn(16, device=device, requires_grad=requires_grad)
            row[key] = per_call_us(function, x, synchronize)
        rows.append(row)
        print(f"{name:36s} {row['no_grad_us']:9.2f} {row['grad_us']:9.2f}")

    for name, function in ways.items():
        measure(name, function)
    torch.library.register_autograd("torch_reduce::sum", _backward, setup_context=_setup_context)
    measure("torch.ops, autograd from Python", torch.ops.torch_reduce.sum)
    json_path, _ = report.output_paths(args.out, "overhead", info)
    report.write_json(json_path, report.run_metadata(info), rows)


if __name__ == "__main__":
    main()
