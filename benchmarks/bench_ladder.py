"""The classic reduction ladder: every algorithm of torch_reduce.algorithms() on a full sum,
with torch.sum as the reference row.

    python benchmarks/bench_ladder.py                 # 2^22 int32 and float32 elements
    python benchmarks/bench_ladder.py --sizes 2^20,2^24 --dtypes float32

Speedups are time ratios: step = previous ladder step / this one; cumulative = serial / this
one, and step 01 / this one (Harris's 30x is counted from step 1, interleaved_divergent).
The ladder runs on CUDA tensors only: on the CPU its rows are n/a. Writes
out/ladder_<device>.json and .png; --save: to results/ (see README.md).
"""
import argparse
import math

import torch

import harness
import report
from timing import REPLAYS

torch_reduce = harness.import_torch_reduce()

DEFAULT_SIZES = [2**22]
DEFAULT_DTYPES = ["int32", "float32"]
QUICK_DTYPES = ["float32"]
SERIAL = "serial"  # one GPU thread: milliseconds per call, so few replays
SERIAL_REPLAYS = 3
TORCH = "torch.sum"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    parser.add_argument("--dtypes", type=harness.parse_dtypes,
                        help=f"comma-separated, default: {','.join(DEFAULT_DTYPES)} "
                             f"({','.join(QUICK_DTYPES)} with --quick)")
    parser.add_argument("--sizes", type=harness.parse_sizes, default=DEFAULT_SIZES,
                        help="element counts, comma-separated, default: 2^22")
    args = parser.parse_args()
    args.dtypes = args.dtypes or (QUICK_DTYPES if args.quick else DEFAULT_DTYPES)
    return args


def bench_size(dtype_name: str, elements: int, device, info) -> list:
    """One row per ladder step in order, then "default" and torch.sum, speedups filled in."""
    dtype = harness.DTYPES[dtype_name]
    nbytes = elements * dtype.itemsize
    x = harness.random_tensor((elements,), dtype, device)
    reference = torch.sum(x)
    default, *ladder = torch_reduce.algorithms()
    rows = []
    for algorithm in ladder + [default]:
        row = {"dtype": dtype_name, "elements": elements, "bytes": nbytes, "algorithm": algorithm}
        if algorithm in ladder:
            row["step"] = ladder.index(algorithm)
        row["check"] = harness.checked_result(
            lambda: torch_reduce.sum(x, algorithm=algorithm), lambda: reference, x, "sum")
        replays = SERIAL_REPLAYS if algorithm == SERIAL else REPLAYS
        row.update(harness.measure(lambda: torch_reduce.sum(x, algorithm=algorithm), device,
                                   nbytes, info, replays))
        rows.append(row)
    rows.append({"dtype": dtype_name, "elements": elements, "bytes": nbytes, "algorithm": TORCH,
                 **harness.measure(lambda: torch.sum(x), device, nbytes, info)})
    add_speedups(rows[:len(ladder)], rows)
    return rows


def add_speedups(ladder_rows: list, rows: list) -> None:
    """Step speedups along the ladder; cumulative ones (vs serial, vs step 01) for all rows."""
    for previous, row in zip(ladder_rows, ladder_rows[1:]):
        row["step_speedup"] = harness.speedup(previous, row)
    serial = ladder_rows[0] if ladder_rows else None
    step1 = ladder_rows[1] if len(ladder_rows) > 1 else None
    for row in rows:
        row["speedup_vs_serial"] = harness.speedup(serial, row)
        row["speedup_vs_step1"] = harness.speedup(step1, row)


def print_results(rows: list, info) -> None:
    columns = (
        ("step", "step", ">"), ("algorithm", "algorithm", "<"), *report.timing_columns(info),
        ("step_speedup", "step speedup", ">"), ("vs_serial", "vs serial", ">"),
        ("vs_step1", "vs step 01", ">"), ("check", "check", "<"), ("notes", "notes", "<"),
    )
    print("speedups: time of the other / time of this row; >1 = this row faster")
    for key in dict.fromkeys((row["dtype"], row["elements"]) for row in rows):
        dtype_name, elements = key
        footnotes = report.Footnotes()
        table = []
        for row in (r for r in rows if (r["dtype"], r["elements"]) == key):
            cells = {
                "step": f"{row['step']:02d}" if "step" in row else "",
                "algorithm": row["algorithm"],
                **report.timing_cells(row, footnotes),
                "vs_serial": report.fmt_ratio(row["speedup_vs_serial"]),
                "vs_step1": report.fmt_ratio(row["speedup_vs_step1"]),
            }
            if "step_speedup" in row:
                cells["step_speedup"] = report.fmt_ratio(row["step_speedup"])
            if "check" in row:
                cells["check"] = report.check_cell(row["check"], footnotes)
            table.append(cells)
        print(f"\n{dtype_name}, {report.fmt_count(elements)} elements "
              f"({report.fmt_bytes(elements * harness.DTYPES[dtype_name].itemsize)})")
        report.print_table(columns, table)
        footnotes.print()


def plot(rows: list, info, path) -> None:
    plt = report.pyplot()
    if plt is None:
        return
    groups = list(dict.fromkeys((row["dtype"], row["elements"]) for row in rows))
    fig, panels = report.panel_grid(plt, len(groups), 2, (7, 5))
    for ax, (dtype_name, elements) in zip(panels, groups):
        group = [r for r in rows if (r["dtype"], r["elements"]) == (dtype_name, elements)
                 and r["us"]]  # failed algorithms (n/a) get no bar
        labels = [f"{r['step']:02d} {r['algorithm']}" if "step" in r else r["algorithm"]
                  for r in group]
        times = [r["us"] for r in group]
        colors = ["tab:blue" if "step" in r else "tab:gray" if r["algorithm"] == TORCH
                  else "tab:orange" for r in group]
        bars = ax.bar(range(len(group)), times, color=colors)
        ax.bar_label(bars, labels=[report.fmt_us(t) for t in times], fontsize=7)
        ax.set_xticks(range(len(group)), labels, rotation=60, ha="right", fontsize=8)
        if times:  # whole decades around the bars, room above for the labels
            ax.set_ylim(10 ** math.floor(math.log10(min(times) / 2)),
                        10 ** (math.ceil(math.log10(max(times))) + 0.3))
        ax.set_yscale("log")
        ax.set_ylabel("us per call (log)")
        ax.set_title(f"{dtype_name}, {report.fmt_count(elements)} elements")
        ax.grid(True, axis="y", alpha=0.3)
    report.save_figure(fig, path, report.figure_title("reduction ladder: time per full sum", info))


def main():
    args = parse_args()
    device = harness.pick_device(args.device)
    info = report.describe_device(device)
    torch.manual_seed(0)
    report.print_header("reduction ladder: torch_reduce.sum(x, algorithm=...)", info)
    if device.type != "cuda":
        print("no GPU: the ladder algorithms are CUDA-only, their rows will be n/a\n")

    rows = []
    progress = report.Progress(len(args.dtypes) * len(args.sizes), "ladder")
    for dtype_name in args.dtypes:
        for elements in args.sizes:
            shortfall = harness.memory_shortfall(elements * harness.DTYPES[dtype_name].itemsize,
                                                 device)
            if shortfall:
                print(f"skipping {dtype_name} {report.fmt_count(elements)}: {shortfall}")
            else:
                rows += bench_size(dtype_name, elements, device, info)
            harness.release_memory(device)
            progress.step(f"{dtype_name} {report.fmt_count(elements)}")
    progress.close()

    print_results(rows, info)
    json_path, png_path = report.output_paths(args.out, "ladder", info)
    report.write_json(json_path, report.run_metadata(info), rows)
    plot(rows, info, png_path)


if __name__ == "__main__":
    main()
