"""Full reductions against every peer: torch_reduce.sum beside torch.sum, torch.compile(torch.sum)
and CUB's DeviceReduce (cub_reference.py, built at run time), with a plain read of the same bytes
as the floor (plain_read.py), all in one run.

    python benchmarks/bench_sum.py            # sizes 2^10..2^30 (every power of 4), all dtypes
    python benchmarks/bench_sum.py --quick    # a handful of sizes
    python benchmarks/bench_sum.py --dtypes float32,int32 --sizes 2^20,2^24 --no-compile

"vs best peer" is the time of the fastest of torch.sum, torch.compile and CUB over ours.
Without a GPU it measures the CPU path against torch.sum on the CPU (sizes up to 2^24).
Writes out/sum_<device>.json and .png; --save writes them to results/ (see README.md).
"""
import argparse

import torch

import cub_reference
import harness
import plain_read
import report
from timing import host_overhead_us

torch_reduce = harness.import_torch_reduce()

CUDA_SIZES = [2**k for k in range(10, 31, 2)]
CUDA_QUICK_SIZES = [2**12, 2**20, 2**24, 2**28]
CPU_SIZES = [2**k for k in range(10, 25, 2)]
CPU_QUICK_SIZES = [2**10, 2**16, 2**20]
HOST_OVERHEAD_ELEMENTS = 1024
# On the CPU a compile takes seconds a case, and the peers' targets are the GPU's: one dtype.
CPU_COMPILE_DTYPES = ("float32",)

TORCH, OURS, COMPILED, CUB = "torch.sum", "torch_reduce.sum", "torch.compile", "CUB"
PEERS = {TORCH: "torch", COMPILED: "compile", CUB: "cub"}  # name: its key in the JSON


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    parser.add_argument("--dtypes", type=harness.parse_dtypes, default=list(harness.DTYPES),
                        help="comma-separated, default: all of " + ",".join(harness.DTYPES))
    parser.add_argument("--sizes", type=harness.parse_sizes,
                        help="element counts, comma-separated, e.g. 2^20,1000000")
    parser.add_argument("--no-compile", action="store_true",
                        help="skip torch.compile(torch.sum) (a compile per case, every dtype on a GPU, "
                             "float32 on the CPU: most of the run)")
    return parser.parse_args()


def default_sizes(device: torch.device, quick: bool) -> list:
    if device.type == "cuda":
        return CUDA_QUICK_SIZES if quick else CUDA_SIZES
    return CPU_QUICK_SIZES if quick else CPU_SIZES


def compiled_sum():
    """A torch.compile(torch.sum) specialised to the next shape it sees: resetting dynamo
    avoids both the recompile limit and a dynamic-shape kernel after a few sizes."""
    torch._dynamo.reset()
    return torch.compile(torch.sum, dynamic=False)


def bench_case(dtype_name: str, elements: int, with_compile: bool, device, info) -> dict:
    dtype = harness.DTYPES[dtype_name]
    nbytes = elements * dtype.itemsize
    case = {"dtype": dtype_name, "elements": elements, "bytes": nbytes}
    if device.type == "cuda":
        case["memory"] = "L2" if info.l2_bytes and nbytes <= info.l2_bytes else "DRAM"
    shortfall = harness.memory_shortfall(nbytes, device)
    if shortfall:
        case["skipped"] = shortfall
        return case

    x = harness.random_tensor((elements,), dtype, device)
    case["check"] = harness.checked_result(lambda: torch_reduce.sum(x), lambda: torch.sum(x),
                                           x, "sum")
    candidates = {TORCH: lambda: torch.sum(x), OURS: lambda: torch_reduce.sum(x)}
    if with_compile:
        compiled = compiled_sum()
        candidates[COMPILED] = lambda: compiled(x)
    if cub_reference.available(device) is None:
        try:
            candidates[CUB] = cub_reference.summer(x)
            case["cub_check"] = harness.checked_result(
                lambda: candidates[CUB]().to(torch.sum(x).dtype), lambda: torch.sum(x), x, "sum")
        except Exception as error:  # no CUB column rather than no run
            case["cub_error"] = harness.error_text(error)
    case["timings"] = timings = harness.measure_rounds(candidates, device, nbytes, info)
    if plain_read.available(device) is None and nbytes >= plain_read.VECTOR_BYTES:
        case["plain_read"] = plain_read.measure(x, info)
    for peer, key in PEERS.items():
        if peer in timings:
            case["speedup_vs_" + key] = harness.speedup(timings[peer], timings[OURS])
    measured = [peer for peer in PEERS if timings.get(peer, {}).get("us")]
    if measured:
        case["best_peer"] = min(measured, key=lambda peer: timings[peer]["us"])
        case["speedup_vs_best_peer"] = harness.speedup(timings[case["best_peer"]], timings[OURS])
    return case


def bench_host_overhead(device) -> dict:
    x = harness.random_tensor((HOST_OVERHEAD_ELEMENTS,), torch.float32, device)
    return {
        "elements": HOST_OVERHEAD_ELEMENTS,
        "dtype": "float32",
        TORCH: host_overhead_us(lambda: torch.sum(x), device),
        OURS: host_overhead_us(lambda: torch_reduce.sum(x), device),
    }


def print_results(cases: list, dtypes: list, info) -> None:
    columns = (
        ("elements", "elements", "<"), ("bytes", "bytes", ">"), ("memory", "mem", "<"),
        ("impl", "implementation", "<"), *report.timing_columns(info),
        ("vs_torch", "ours vs torch.sum", ">"), ("vs_best", "ours vs best peer", ">"),
        ("check", "check", "<"), ("notes", "notes", "<"),
    )
    print("speedups: time of torch.sum (or of the fastest of torch.sum, torch.compile and CUB) / "
          "time of torch_reduce.sum; >1 = ours faster")
    for dtype_name in dtypes:
        footnotes = report.Footnotes()
        rows = []
        for case in (c for c in cases if c["dtype"] == dtype_name):
            size = {"elements": report.fmt_count(case["elements"]),
                    "bytes": report.fmt_bytes(case["bytes"]), "memory": case.get("memory", "")}
            if "skipped" in case:
                rows.append({**size, "impl": "skipped: " + case["skipped"]})
                continue
            contenders = dict(case["timings"])
            if "plain_read" in case:
                contenders["plain read"] = case["plain_read"]
            for name, figures in contenders.items():
                row = {**size, "impl": name, **report.timing_cells(figures, footnotes)}
                if name == OURS:
                    row["vs_torch"] = report.fmt_ratio(case["speedup_vs_torch"])
                    if "best_peer" in case:
                        row["vs_best"] = (f"{report.fmt_ratio(case['speedup_vs_best_peer'])} "
                                          f"({case['best_peer']})")
                    row["check"] = report.check_cell(case["check"], footnotes)
                if name == CUB and "cub_check" in case:
                    row["check"] = report.check_cell(case["cub_check"], footnotes)
                rows.append(row)
                size = {}  # print the size once per case
            if "cub_error" in case:
                rows.append({"impl": CUB, "notes": footnotes.mark(case["cub_error"])})
        print(f"\n{dtype_name} ({harness.DTYPES[dtype_name].itemsize} B/element)")
        report.print_table(columns, rows)
        footnotes.print()


def plot(cases: list, dtypes: list, info, path) -> None:
    plt = report.pyplot()
    if plt is None:
        return
    fig, panels = report.panel_grid(plt, len(dtypes), 3, (5.5, 4))
    for ax, dtype_name in zip(panels, dtypes):
        measured = [c for c in cases if c["dtype"] == dtype_name and "timings" in c]
        for name, style in ((TORCH, "o-"), (OURS, "s-"), (COMPILED, "^--"), (CUB, "v--")):
            points = [(c["elements"], c["timings"][name]["gbps"]) for c in measured
                      if c["timings"].get(name, {}).get("gbps")]
            if points:
                ax.plot(*zip(*points), style, label=name, markersize=4)
        reads = [(c["elements"], c["plain_read"]["gbps"]) for c in measured
                 if c.get("plain_read", {}).get("gbps")]
        if reads:
            ax.plot(*zip(*reads), ":", color="gray", label="plain read")
        if info.peak_bytes_per_s:
            ax.axhline(info.peak_bytes_per_s / 1e9, color="gray", linestyle=":",
                       label="peak DRAM")
        if info.l2_bytes:
            ax.axvline(info.l2_bytes / harness.DTYPES[dtype_name].itemsize, color="gray",
                       linestyle="-.", linewidth=0.8, label="L2 size")
        ax.set_xscale("log", base=2)
        ax.set_title(dtype_name)
        ax.set_xlabel("elements")
        ax.set_ylabel("GB/s (input bytes / time)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    report.save_figure(fig, path, report.figure_title("full sum: GB/s vs size", info))


def main():
    args = parse_args()
    device = harness.pick_device(args.device)
    info = report.describe_device(device)
    sizes = args.sizes or default_sizes(device, args.quick)
    torch.manual_seed(0)
    report.print_header("full reduction: torch_reduce.sum vs torch.sum, torch.compile and CUB", info)

    cases = []
    progress = report.Progress(len(args.dtypes) * len(sizes), "sum")
    for dtype_name in args.dtypes:
        for elements in sizes:
            with_compile = not args.no_compile and (device.type == "cuda" or dtype_name in CPU_COMPILE_DTYPES)
            cases.append(bench_case(dtype_name, elements, with_compile, device, info))
            harness.release_memory(device)
            progress.step(f"{dtype_name} {report.fmt_count(elements)}")
    host_overhead = bench_host_overhead(device)
    progress.close()

    print_results(cases, args.dtypes, info)
    print(f"\nhost overhead, eager wall time per call, {HOST_OVERHEAD_ELEMENTS} float32 elements: "
          f"torch.sum {host_overhead[TORCH]:.2f} us, torch_reduce.sum {host_overhead[OURS]:.2f} us "
          f"({host_overhead[OURS] / host_overhead[TORCH]:.2f}x torch's)")

    json_path, png_path = report.output_paths(args.out, "sum", info)
    report.write_json(json_path, report.run_metadata(info), cases, host_overhead=host_overhead)
    plot(cases, args.dtypes, info, png_path)


if __name__ == "__main__":
    main()
