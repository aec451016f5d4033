"""Probe: dim reductions read as gathered columns (one kernel, in place through their strides)
against the copy they would otherwise take (the input made contiguous, then reduced as columns),
and against torch, for inputs of about 2^14 to 2^24 elements. Views whose kept dims merge into
neither layout: x[..., :2] of (n, r, c, 3) reduced over dim 1 (columns of r rows, in runs of two)
and x[..., ::2] of (n, 16, 9, 8) (a strided innermost dim); sums and amax. Time per call from
benchmarks/timing.py (CUDA graphs).

Run from the repository root (the output is benchmarks/results/gathered_columns_h100.txt):
    python3 benchmarks/probes/gathered_columns.py
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import torch  # noqa: E402
import timing  # noqa: E402
import torch_reduce  # noqa: E402

if not torch.cuda.is_available():
    sys.exit("gathered_columns.py times CUDA kernels: no GPU visible")
dev = torch.device("cuda")
CASES = {  # name: (input shape for n, view of it)
    "r=4 c=1000 slice": (lambda n: (n, 4, 1000, 3), lambda t: t[..., :2]),
    "r=11 c=58 slice": (lambda n: (n, 11, 58, 3), lambda t: t[..., :2]),
    "r=32 c=500 slice": (lambda n: (n, 32, 500, 3), lambda t: t[..., :2]),
    "r=16 strided": (lambda n: (n, 16, 9, 8), lambda t: t[..., ::2]),
}
SIZES_LOG2 = (14, 18, 22, 24)
lines = ["case dtype op elements new_us copy_us torch_us copy/new torch/new"]
print(lines[0], flush=True)
for dtype, op in ((torch.float32, "sum"), (torch.bfloat16, "sum"), (torch.bfloat16, "amax")):
    ours, theirs = getattr(torch_reduce, op), getattr(torch, op)
    for name, (shape_of, view) in CASES.items():
        for log_e in SIZES_LOG2:
            one = view(torch.empty(shape_of(1), device="meta")).numel()
            x = view(torch.randn(shape_of(max(1, -(-2**log_e // one))), device=dev).to(dtype))
            gathered = lambda: ours(x, 1)  # noqa: E731
            copied = lambda: ours(x.contiguous(), 1)  # noqa: E731
            assert torch.equal(gathered(), copied()), name  # the same columns, the same order
            new = timing.time_call(gathered, dev).us_per_call
            old = timing.time_call(copied, dev).us_per_call
            th = timing.time_call(lambda: theirs(x, 1), dev).us_per_call
            lines.append(f"{name:18} {str(dtype)[6:]:8} {op:4} {x.numel():9d} {new:8.2f} {old:8.2f} {th:8.2f} "
                         f"{old / new:5.2f} {th / new:5.2f}")
            print(lines[-1], flush=True)
            del x
header = f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; python3 benchmarks/probes/gathered_columns.py; us per call"
path = os.path.join(ROOT, "benchmarks", "results", "gathered_columns_h100.txt")
with open(path, "w") as f:
    f.write("\n".join([header] + lines) + "\n")
print("wrote", path)
