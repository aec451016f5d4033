"""Per-kernel GPU time of bench_sweep.py's cases, ours and torch's.

Which kernels a case slower than torch spends its time in:

    python benchmarks/profile_sweep.py                # the cases slower than torch in results/sweep_<device>.json
    python benchmarks/profile_sweep.py --only 36,218  # those of the sweep's cases

The cases are drawn as bench_sweep.py draws them (the same seed gives the same cases).
torch.profiler over 20 calls of each, after 5 warm-up calls: for each kernel, its launches per
call and the mean time of one. Needs a GPU.
"""
import argparse
import json

import torch
from torch.profiler import ProfilerActivity, profile

import bench_sweep
import harness
import report

CALLS = 20
WARMUP = 5


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", type=lambda text: sorted({int(i) for i in text.split(",")}),
                        help="comma-separated indices of the sweep's cases (default: those slower than torch "
                             "in the sweep's result file)")
    parser.add_argument("--seed", type=int, default=0, help="the cases drawn (default 0, as bench_sweep.py)")
    parser.add_argument("--sweep", help="the sweep's result file (default: results/sweep_<device>.json)")
    return parser.parse_args()


def slower_cases(path) -> list:
    with open(path) as f:
        cases = json.load(f)["results"]
    slower = [c for c in cases if c["speedup_vs_torch"] and c["speedup_vs_torch"] < 1]
    return [c["index"] for c in sorted(slower, key=lambda c: c["speedup_vs_torch"])]


def kernel_times(fn) -> list:
    """(launches per call, mean us of one launch, name) for each kernel of CALLS calls of fn."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    return [(count / CALLS, us, kernel) for count, us, kernel in harness.profiled_kernels(prof)]


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("profile_sweep.py needs a GPU")
    device = torch.device("cuda")
    info = report.describe_device(device)
    indices = args.only
    if indices is None:
        indices = slower_cases(args.sweep or report.output_paths(None, "sweep", info)[0])
    torch.manual_seed(args.seed)
    drawn = bench_sweep.draw_cases(args.seed, max(indices, default=-1) + 1, bench_sweep.MAX_ELEMENTS_LOG2["cuda"])
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for index in indices:
        case = drawn[index]
        x = bench_sweep.make_view(case, device)
        dims = case["dims"]
        calls = dict(zip(("ours", "torch"), bench_sweep.case_calls(case, x)))
        print(f"== case {index}: {case['dtype']} {case['op']} over {'all dims' if dims is None else tuple(dims)} "
              f"of {case['layout']} {tuple(x.shape)}, stride {x.stride()}")
        for name, fn in calls.items():
            for per_call, us, kernel in kernel_times(fn):
                print(f"  {name:5} {per_call:4.1f} x {us:8.2f} us  {kernel[:110]}")
        harness.release_memory(device)


if __name__ == "__main__":
    main()
