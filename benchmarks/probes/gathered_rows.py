"""Probe: dim reductions read as gathered rows (one kernel, in place through their strides)
against the copy they would otherwise take (kept dims first, reduced dims after them in memory
order, made contiguous, then reduced as rows), and against torch.sum, for inputs of 2^20 to 2^22
elements (the row kernels' gathered loads) or, with --small, of just under 2^10 to 2^20 elements
(staged_rows_kernel, but float32 from 2^18 elements reads as gathered rows again:
small_gather_elements in csrc/reduce_front_end.h). Sums; the cases are named by their runs in memory order (R reduced,
K kept; c: the innermost reduced run's length). Time per call from benchmarks/timing.py (CUDA
graphs).

Run from the repository root (the outputs are benchmarks/results/gathered_rows_h100.txt and
benchmarks/results/staged_rows_h100.txt):
    python3 benchmarks/probes/gathered_rows.py
    python3 benchmarks/probes/gathered_rows.py --small
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402
import timing  # noqa: E402
import torch_reduce  # noqa: E402
from layout_cases import rows_copy  # noqa: E402  (the copy that gathered rows replace)

if not torch.cuda.is_available():
    sys.exit("gathered_rows.py times CUDA kernels: no GPU visible")
dev = torch.device("cuda")
CASES = {  # name: (input shape for n, view of it, dims)
    "RKR c=3": (lambda n: (4, n, 3), lambda t: t, (0, 2)),
    "RKR c=40": (lambda n: (16, n, 40), lambda t: t, (0, 2)),
    "RKR transposed": (lambda n: (15, n, 3), lambda t: t.transpose(0, 2), (0, 2)),
    "RKR c=44 a=2": (lambda n: (2, n, 44), lambda t: t, (0, 2)),
    "RKRK sliced": (lambda n: (n, 58, 6, 4), lambda t: t[..., :3], (1, 3)),
    "strided 100": (lambda n: (n, 200), lambda t: t[:, ::2], (1,)),
    "strided 10000": (lambda n: (n, 20000), lambda t: t[:, ::2], (1,)),
}
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--small", action="store_true", help="inputs of just under 2^10 to 2^20 elements")
small = parser.parse_args().small
SIZES_LOG2 = (10, 13, 16, 19, 20) if small else (20, 21, 22)

print("case dtype elements new_us copy_us torch_us copy/new torch/new", flush=True)
for dtype in (torch.float32, torch.bfloat16):
    for name, (shape_of, view, dims) in CASES.items():
        for log_e in SIZES_LOG2:
            one = view(torch.empty(shape_of(1), device="meta")).numel()
            # The least n that gives 2^log_e elements or more; with --small, the most n that
            # gives fewer (at least 1).
            n = max(1, (2**log_e - 1) // one) if small else -(-2**log_e // one)
            x = view(torch.randn(shape_of(n), device=dev).to(dtype))

            def gathered():
                return torch_reduce.sum(x, dims)

            def copied():
                c, c_dims = rows_copy(x, dims)
                return torch_reduce.sum(c, c_dims)

            torch.testing.assert_close(gathered().float(), copied().float(), rtol=1e-2, atol=1e-2)
            new = timing.time_call(gathered, dev).us_per_call
            old = timing.time_call(copied, dev).us_per_call
            th = timing.time_call(lambda: torch.sum(x, dims), dev).us_per_call
            print(f"{name:18} {str(dtype)[6:]:8} {x.numel():9d} {new:8.2f} {old:8.2f} {th:8.2f} "
                  f"{old / new:5.2f} {th / new:5.2f}", flush=True)
            del x
