"""GPU time of each kernel that torch_reduce.sum(x, 0) launches, for column shapes, with torch.sum's.

    python benchmarks/profile_columns.py > benchmarks/results/column_passes_h100.txt
    python benchmarks/profile_columns.py --targets > benchmarks/results/column_passes_h200.txt

torch.profiler over 20 calls of each (after 5 warm-up calls): for each kernel, how many
launches and the mean time of one. A kernel that a call launches for several passes shows
as one row (2 or 3 launches per call), with the mean over its passes. --targets: the shapes of
bench_dims.py (the issue's targets), float32 and bfloat16, instead of the cases below. Needs a GPU.
"""
import argparse

import torch
from torch.profiler import ProfilerActivity, profile

import bench_dims
import harness

torch_reduce = harness.import_torch_reduce()

CASES = [((1000000, 2), torch.float32), ((1000000, 2), torch.bfloat16), ((1048576, 8), torch.float32),
         ((1048576, 8), torch.bfloat16), ((32768, 32), torch.float32), ((32, 1048576), torch.float32),
         ((8, 16777216), torch.float32), ((7840000, 4), torch.float32), ((7840000, 4), torch.bfloat16)]
CALLS = 20


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", action="store_true", help="bench_dims.py's shapes, float32 and bfloat16")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("profile_columns.py needs a GPU")
    cases = ([(shape, dtype) for dtype in (torch.float32, torch.bfloat16) for shape in bench_dims.SHAPES]
             if args.targets else CASES)
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for shape, dtype in cases:
        x = torch.randn(shape, device="cuda", dtype=dtype)
        for _ in range(5):
            torch_reduce.sum(x, 0)
            torch.sum(x, 0)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(CALLS):
                torch_reduce.sum(x, 0)
            torch.cuda.synchronize()
            for _ in range(CALLS):
                torch.sum(x, 0)
            torch.cuda.synchronize()
        print(f"== {shape} {dtype}")
        for count, us, kernel in harness.profiled_kernels(prof):
            print(f"  {count:4d} x {us:8.2f} us  {kernel[:110]}")


if __name__ == "__main__":
    main()
