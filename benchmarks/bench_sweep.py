"""Random reductions against torch: shapes of 1 to 4 dims, any set of reduced dims (or all),
five dtypes, four ops and three layouts, drawn from a fixed seed, so that the cases outside the
other benchmarks' shapes -- where users meet them -- are measured too.

    python benchmarks/bench_sweep.py                  # 400 cases (GPU), 100 (CPU)
    python benchmarks/bench_sweep.py --quick          # 60 cases
    python benchmarks/bench_sweep.py --cases 1000 --seed 1
    python benchmarks/bench_sweep.py --only 95,246   # those of the 400 cases alone

Each case: a shape with 2^10 to 2^26 elements (2^20 on the CPU), split over its dims at random
(sometimes one dim of 2 to 33); float32, bfloat16, float16, float64 or int32; sum, mean (floating
only), amax or amin; over all dims or a random set of them; the tensor contiguous, transposed
(dims 0 and -1 swapped) or sliced (x[..., 1:] of a tensor one longer). Timed and checked like
bench_dims.py. Prints the summary by layout and the slowest cases against torch; writes
out/sweep_<device>.json and .png; --save: to results/ (see README.md).
"""
import argparse
import math
import random

import torch

import harness
import report
import summarize

torch_reduce = harness.import_torch_reduce()

DTYPES = ["float32", "bfloat16", "float16", "float64", "int32"]
OPS = {  # name: (ours, torch's)
    "sum": (torch_reduce.sum, torch.sum),
    "mean": (torch_reduce.mean, torch.mean),
    "amax": (torch_reduce.amax, torch.amax),
    "amin": (torch_reduce.amin, torch.amin),
}
LAYOUTS = ["contiguous", "contiguous", "transposed", "sliced"]  # contiguous drawn twice as often
SMALL_DIMS = [2, 3, 4, 5, 7, 8, 16, 33]
MIN_ELEMENTS_LOG2 = 10
MAX_ELEMENTS_LOG2 = {"cuda": 26, "cpu": 20}
DEFAULT_CASES = {"cuda": 400, "cpu": 100}
QUICK_CASES = 60
SLOWEST_SHOWN = 25


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    parser.add_argument("--cases", type=int, help="how many cases (default: 400 on a GPU, 100 on the CPU)")
    parser.add_argument("--seed", type=int, default=0, help="the cases drawn (default 0)")
    parser.add_argument("--only", type=lambda text: {int(i) for i in text.split(",")},
                        help="comma-separated indices of drawn cases: time those alone, and write "
                             "out/sweep_only_<device>.json, leaving the whole sweep's file as it is")
    return parser.parse_args()


def draw_case(rng: random.Random, max_log2: int) -> dict:
    """One case: shape, dtype, op, reduced dims (None: all) and layout."""
    ndim = rng.randint(1, 4)
    total_log2 = rng.uniform(MIN_ELEMENTS_LOG2, max_log2)
    weights = [rng.random() + 0.05 for _ in range(ndim)]
    shape = [max(1, round(2 ** (total_log2 * w / sum(weights)))) for w in weights]
    if ndim > 1 and rng.random() < 0.3:
        shape[rng.randrange(ndim)] = rng.choice(SMALL_DIMS)
    dtype = rng.choice(DTYPES)
    floating = harness.DTYPES[dtype].is_floating_point
    op = rng.choice([name for name in OPS if floating or name != "mean"])
    layout = rng.choice(LAYOUTS if ndim > 1 else ["contiguous", "sliced"])
    dims = None if rng.random() < 0.15 else sorted(rng.sample(range(ndim), rng.randint(1, ndim)))
    return {"shape": shape, "dtype": dtype, "op": op, "dims": dims, "layout": layout}


def draw_cases(seed: int, count: int, max_log2: int) -> list:
    """The first `count` cases drawn from `seed` (the same seed gives the same cases whatever
    the count), each with its index."""
    rng = random.Random(seed)
    return [{**draw_case(rng, max_log2), "index": index} for index in range(count)]


def make_view(case: dict, device: torch.device) -> torch.Tensor:
    shape = list(case["shape"])
    if case["layout"] == "transposed":
        shape[0], shape[-1] = shape[-1], shape[0]
    if case["layout"] == "sliced":
        shape[-1] += 1
    x = harness.random_tensor(tuple(shape), harness.DTYPES[case["dtype"]], device)
    if case["layout"] == "transposed":
        return x.transpose(0, -1)
    if case["layout"] == "sliced":
        return x[..., 1:]
    return x


def case_calls(case: dict, x: torch.Tensor) -> tuple:
    """(ours, torch's): the case's op over its dims of x, as calls of no arguments."""
    ours, theirs = OPS[case["op"]]
    dims = case["dims"]
    if dims is None:
        return (lambda: ours(x)), (lambda: theirs(x))
    return (lambda: ours(x, dims)), (lambda: theirs(x, dims))


def bench_case(case: dict, device, info) -> dict:
    x = make_view(case, device)
    dims = case["dims"]
    ours_call, torch_call = case_calls(case, x)
    nbytes = x.numel() * x.element_size()
    result = {**case, "stride": list(x.stride()), "bytes": nbytes}
    result["check"] = harness.checked_result(ours_call, torch_call, x, case["op"], dims)
    result.update(harness.measure_rounds({"torch": torch_call, "ours": ours_call}, device, nbytes, info))
    result["speedup_vs_torch"] = harness.speedup(result["torch"], result["ours"])
    return result


def print_summary(cases: list) -> None:
    """Cases, and those slower than torch, by layout and by full or dim reduction."""
    print("ours vs torch: time of torch / time of torch_reduce; <1 = ours slower")
    columns = (("group", "layout, reduction", "<"), ("cases", "cases", ">"), ("slower", "slower than torch", ">"),
               ("worst", "worst ours vs torch", ">"), ("median", "median ours vs torch", ">"))
    rows = [{"group": name, "cases": str(count), "slower": str(slower), "worst": report.fmt_ratio(worst),
             "median": report.fmt_ratio(median)} for name, count, slower, worst, median in summarize.sweep_groups(cases)]
    report.print_table(columns, rows)


def print_slowest(cases: list, info) -> None:
    columns = (("dtype", "dtype", "<"), ("op", "op", "<"), ("shape", "shape", "<"), ("stride", "stride", "<"),
               ("dims", "dims", "<"), *report.timing_columns(info, "torch_", "torch "),
               *report.timing_columns(info, "ours_", "ours "), ("vs_torch", "ours vs torch", ">"),
               ("check", "check", "<"))
    footnotes = report.Footnotes()
    timed = sorted((c for c in cases if c["speedup_vs_torch"]), key=lambda c: c["speedup_vs_torch"])
    rows = [{"dtype": c["dtype"], "op": c["op"], "shape": str(tuple(c["shape"])), "stride": str(tuple(c["stride"])),
             "dims": "all" if c["dims"] is None else str(tuple(c["dims"])),
             **report.timing_cells(c["torch"], footnotes, "torch_"), **report.timing_cells(c["ours"], footnotes, "ours_"),
             "vs_torch": report.fmt_ratio(c["speedup_vs_torch"]), "check": report.check_cell(c["check"], footnotes)}
            for c in timed[:SLOWEST_SHOWN]]
    print(f"\nthe {len(rows)} cases slowest against torch")
    report.print_table(columns, rows)
    footnotes.print()
    failed = [c for c in cases if c["check"] != "ok"]
    print(f"\n{len(failed)} of {len(cases)} cases failed their check")


def plot(cases: list, info, path) -> None:
    """torch's time against ours, log-log, one colour per layout: points above the line lose."""
    plt = report.pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(7, 6))
    for layout in ("contiguous", "transposed", "sliced"):
        group = [c for c in cases if c["layout"] == layout and c["speedup_vs_torch"]]
        ax.scatter([c["torch"]["us"] for c in group], [c["ours"]["us"] for c in group], s=10, label=layout)
    times = [c[who]["us"] for c in cases if c["speedup_vs_torch"] for who in ("torch", "ours")]
    if times:
        low, high = min(times), max(times)
        ax.plot([low, high], [low, high], color="gray", linestyle=":", label="as fast as torch")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("torch, us per call")
    ax.set_ylabel("torch_reduce, us per call")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    report.save_figure(fig, path, report.figure_title("random reductions: time per call", info))


def main():
    args = parse_args()
    device = harness.pick_device(args.device)
    info = report.describe_device(device)
    count = QUICK_CASES if args.quick else args.cases or DEFAULT_CASES[device.type]
    if args.only is not None:
        count = max(args.only) + 1  # the draws are the same whatever the count
    torch.manual_seed(args.seed)
    report.print_header("random reductions: torch_reduce vs torch", info)
    cases = []
    progress = report.Progress(count if args.only is None else len(args.only), "sweep")
    for case in draw_cases(args.seed, count, MAX_ELEMENTS_LOG2[device.type]):
        if args.only is not None and case["index"] not in args.only:
            continue
        nbytes = math.prod(case["shape"]) * harness.DTYPES[case["dtype"]].itemsize
        shortfall = harness.memory_shortfall(2 * nbytes, device)
        if shortfall:
            print(f"skipping {case}: {shortfall}")
        else:
            cases.append(bench_case(case, device, info))
        harness.release_memory(device)
        progress.step(f"{case['dtype']} {case['op']} {tuple(case['shape'])}")
    progress.close()

    print_summary(cases)
    print_slowest(cases, info)
    json_path, png_path = report.output_paths(args.out, "sweep" if args.only is None else "sweep_only", info)
    metadata = report.run_metadata(info)
    metadata["seed"] = args.seed
    report.write_json(json_path, metadata, cases)
    if args.only is None:
        plot(cases, info, png_path)


if __name__ == "__main__":
    main()
