"""Reductions over one dimension: torch_reduce's ops (sum, mean, amax, amin, prod, any, all, var,
std, var_mean, std_mean, logsumexp, argmax, argmin, vector_norm) against torch's (vector_norm: the 2-norm, against
torch.linalg.vector_norm), on 2-D shapes from square to very short or very long rows, over
dim=-1 (rows) and dim=0 (columns), and on request over every dim.

    python benchmarks/bench_dims.py                   # all shapes, float32 and bfloat16, every op
    python benchmarks/bench_dims.py --quick           # four shapes
    python benchmarks/bench_dims.py --ops sum --dtypes float32
    python benchmarks/bench_dims.py --compile          # and torch.compile of torch's op
    python benchmarks/bench_dims.py --dims=-1,0,all   # and full reductions

GB/s counts input bytes only. On a GPU each shape's bytes are also read plainly (plain_read.py),
and "% read" is GB/s as a share of that: the issue's target is 85%. "% r+w" is the time of a plain
read of the input plus a plain write of the output's bytes as a share of ours: what any reduction
must move, well above a plain read where the output is a good part of the input (a reference,
not a bound: see plain_read.py).
Without a GPU the shapes are scaled down and run on the CPU.
Writes out/dims_<device>.json and .png (--name: another name); --save writes them to results/
(see README.md).
"""
import argparse
from typing import Optional

import torch

import harness
import plain_read
import report

torch_reduce = harness.import_torch_reduce()

SHAPES = [
    (4096, 4096), (65536, 1024), (1048576, 32), (32, 1048576), (16384, 16384), (8, 16777216),
    (1048576, 8), (3, 5000000), (7840000, 4), (1000000, 2), (262144, 128), (32768, 32),
]
QUICK_SHAPES = [(4096, 4096), (1048576, 32), (32, 1048576), (1000000, 2)]
CPU_MAX_ELEMENTS = 2**22  # CPU runs shrink each shape to at most this many elements
CPU_QUICK_MAX_ELEMENTS = 2**20
DIMS = (-1, 0)
DEFAULT_DTYPES = ["float32", "bfloat16"]


def _torch_prod(x, dim):  # torch.prod takes no dim=None
    return torch.prod(x) if dim is None else torch.prod(x, dim)


# name: (ours, torch's), for the ops the imported library has (an older build, timed
# against this one, has fewer). vector_norm is the 2-norm (ord comes before dim). torch's
# logsumexp requires dims: the package's reference of it reads dim=None as every dim.
TORCH_OPS = {"prod": _torch_prod, "logsumexp": getattr(torch_reduce.ops, "_logsumexp", None)}
OPS = {name: (getattr(torch_reduce, name), TORCH_OPS.get(name, getattr(torch, name)))
       for name in ("sum", "mean", "amax", "amin", "prod", "any", "all", "var", "std", "var_mean", "std_mean",
                    "logsumexp", "argmax", "argmin")
       if hasattr(torch_reduce, name)}
if hasattr(torch_reduce, "vector_norm"):
    OPS["vector_norm"] = (lambda x, dim: torch_reduce.vector_norm(x, 2, dim),
                          lambda x, dim: torch.linalg.vector_norm(x, 2, dim))


#: The ops that return two results an output: the variance (or its root) and the mean.
PAIRS = ("var_mean", "std_mean")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_common_args(parser)
    parser.add_argument("--dtypes", type=harness.parse_dtypes, default=DEFAULT_DTYPES,
                        help="comma-separated, default: " + ",".join(DEFAULT_DTYPES))
    parser.add_argument("--ops", type=parse_ops, default=list(OPS),
                        help="comma-separated, default: " + ",".join(OPS))
    parser.add_argument("--dims", type=parse_dims, default=list(DIMS),
                        help="comma-separated dims, 'all' for a full reduction (default: -1,0)")
    parser.add_argument("--name", default="dims", help="the result files' name: <name>_<device>.json and .png")
    parser.add_argument("--compile", action="store_true",
                        help="also time torch.compile of torch's op, one compile a case (minutes on a GPU)")
    return parser.parse_args()


def parse_ops(text: str) -> list:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in OPS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown ops {unknown}; known: {', '.join(OPS)}")
    return names


def parse_dims(text: str) -> list:
    return [None if d.strip() == "all" else int(d) for d in text.split(",") if d.strip()]


def shapes_for(device: torch.device, quick: bool) -> list:
    shapes = QUICK_SHAPES if quick else SHAPES
    if device.type == "cuda":
        return shapes
    limit = CPU_QUICK_MAX_ELEMENTS if quick else CPU_MAX_ELEMENTS
    return [shrink(shape, limit) for shape in shapes]


def shrink(shape: tuple, max_elements: int) -> tuple:
    """Halves the longest dimension until the shape fits, keeping the short one as it is."""
    shape = list(shape)
    while shape[0] * shape[1] > max_elements:
        longest = shape.index(max(shape))
        shape[longest] = -(-shape[longest] // 2)
    return tuple(shape)


def compiled(fn, dim):
    """torch.compile(fn(x, dim)) specialised to the next shape it sees (see bench_sum.compiled_sum)."""
    torch._dynamo.reset()
    return torch.compile(lambda x: fn(x, dim), dynamic=False)


def bench_shape(shape: tuple, dtype_name: str, ops: list, dims: list, device, info,
                with_compile: bool = False) -> list:
    x = harness.random_tensor(shape, harness.DTYPES[dtype_name], device)
    nbytes = x.numel() * x.element_size()
    read = plain_read.measure(x, info) if plain_read.available(device) is None else None
    cases = []
    for dim in dims:
        read_writes = {}  # by output bytes (any and all write bools)
        for op in ops:
            ours, theirs = OPS[op]
            outputs = 1 if dim is None else x.numel() // shape[dim]
            # any and all write bools, argmax and argmin int64.
            element = 1 if op in ("any", "all") else 8 if op in ("argmax", "argmin") else x.element_size()
            out_bytes = outputs * element * (2 if op in PAIRS else 1)
            if read is not None and out_bytes not in read_writes:
                read_writes[out_bytes] = plain_read.measure_read_write(x, out_bytes, info)
            read_write = read_writes.get(out_bytes)
            case = {"shape": list(shape), "dtype": dtype_name, "dim": dim, "op": op,
                    "bytes": nbytes}
            case["check"] = harness.checked_result(lambda: ours(x, dim), lambda: theirs(x, dim),
                                                   x, op, dim)
            candidates = {"torch": lambda: theirs(x, dim), "ours": lambda: ours(x, dim)}
            if with_compile:
                peer = compiled(theirs, dim)
                candidates["compile"] = lambda: peer(x)
            case.update(harness.measure_rounds(candidates, device, nbytes, info))
            case["speedup_vs_torch"] = harness.speedup(case["torch"], case["ours"])
            if with_compile:
                case["speedup_vs_compile"] = harness.speedup(case["compile"], case["ours"])
            if read is not None:
                case["plain_read"] = read
                case["plain_read_write"] = read_write
                for who in ("torch", "ours"):
                    case[who]["pct_read"] = pct_of(case[who], read)
                    case[who]["pct_read_write"] = pct_of_time(case[who], read_write)
            cases.append(case)
    return cases


def pct_of(figures: dict, read: dict) -> Optional[float]:
    """figures' GB/s as a percentage of the plain read's."""
    if figures.get("gbps") is None or read.get("gbps") is None:
        return None
    return 100 * figures["gbps"] / read["gbps"]


def pct_of_time(figures: dict, floor: dict) -> Optional[float]:
    """floor's time as a percentage of figures' (for figures that count other bytes)."""
    if not figures.get("us") or not floor.get("us"):
        return None
    return 100 * floor["us"] / figures["us"]


def shape_label(shape) -> str:
    return "x".join(str(n) for n in shape)


def print_results(cases: list, dtypes: list, info) -> None:
    columns = (
        ("shape", "shape", "<"), ("dim", "dim", ">"), ("op", "op", "<"),
        *report.timing_columns(info, "torch_", "torch "),
        *report.timing_columns(info, "ours_", "ours "),
        ("read_gbps", "plain read GB/s", ">"), ("ours_pct_read", "ours % read", ">"),
        ("ours_pct_read_write", "ours % r+w", ">"),
        ("vs_torch", "ours vs torch", ">"),
        *((("compile_us", "compile us/call", ">"), ("vs_compile", "ours vs compile", ">"))
          if any("compile" in c for c in cases) else ()),
        ("check", "check", "<"), ("notes", "notes", "<"),
    )
    print("ours vs torch (or torch.compile): their time / time of torch_reduce; >1 = ours faster")
    for dtype_name in dtypes:
        footnotes = report.Footnotes()
        rows = []
        previous_shape = None
        for case in (c for c in cases if c["dtype"] == dtype_name):
            label = shape_label(case["shape"])
            row = {
                "shape": label if label != previous_shape else "",
                "dim": str(case["dim"]),
                "op": case["op"],
                **report.timing_cells(case["torch"], footnotes, "torch_"),
                **report.timing_cells(case["ours"], footnotes, "ours_"),
                "read_gbps": report.fmt(case.get("plain_read", {}).get("gbps"), ".1f"),
                "ours_pct_read": report.fmt(case["ours"].get("pct_read"), ".1f"),
                "ours_pct_read_write": report.fmt(case["ours"].get("pct_read_write"), ".1f"),
                "vs_torch": report.fmt_ratio(case["speedup_vs_torch"]),
                "compile_us": report.fmt_us(case.get("compile", {}).get("us")),
                "vs_compile": report.fmt_ratio(case.get("speedup_vs_compile")),
                "check": report.check_cell(case["check"], footnotes),
            }
            previous_shape = label
            rows.append(row)
        print(f"\n{dtype_name}")
        report.print_table(columns, rows)
        footnotes.print()


def plot(cases: list, dtypes: list, ops: list, dims: list, info, path) -> None:
    """One panel per op (rows) and dtype x dim (columns): GB/s per shape, torch vs ours."""
    plt = report.pyplot()
    if plt is None:
        return
    panels = [(dtype_name, dim) for dtype_name in dtypes for dim in dims]
    fig, axes = plt.subplots(len(ops), len(panels), figsize=(5 * len(panels), 3.6 * len(ops)),
                             squeeze=False)
    for op, ax_row in zip(ops, axes):
        for ax, (dtype_name, dim) in zip(ax_row, panels):
            panel = [c for c in cases if (c["op"], c["dtype"], c["dim"]) == (op, dtype_name, dim)]
            positions = range(len(panel))
            for offset, (who, label) in ((-0.2, ("torch", f"torch.{op}")),
                                         (0.2, ("ours", f"torch_reduce.{op}"))):
                ax.bar([p + offset for p in positions], [c[who]["gbps"] or 0 for c in panel],
                       width=0.4, label=label)
            reads = [c["plain_read"]["gbps"] for c in panel if c.get("plain_read", {}).get("gbps")]
            if len(reads) == len(panel):
                ax.scatter(list(positions), reads, marker="_", s=200, color="black", zorder=3,
                           label="plain read")
            # The read and write floor, in the panel's units: input bytes over its time.
            floors = [c["bytes"] / c["plain_read_write"]["us"] / 1e3 for c in panel
                      if (c.get("plain_read_write") or {}).get("us")]
            if len(floors) == len(panel):
                ax.scatter(list(positions), floors, marker="x", s=30, color="black", zorder=3,
                           label="plain read + write of the output")
            if info.peak_bytes_per_s:
                ax.axhline(info.peak_bytes_per_s / 1e9, color="gray", linestyle=":",
                           label="peak DRAM")
            ax.set_xticks(list(positions), [shape_label(c["shape"]) for c in panel],
                          rotation=60, ha="right", fontsize=7)
            ax.set_title(f"{op}, {dtype_name}, dim={dim}", fontsize=10)
            ax.set_ylabel("GB/s (input bytes / time)")
            ax.grid(True, axis="y", alpha=0.3)
            ax.legend(fontsize=7)
    report.save_figure(fig, path, report.figure_title("reductions over one dim: GB/s", info))


def main():
    args = parse_args()
    device = harness.pick_device(args.device)
    info = report.describe_device(device)
    shapes = shapes_for(device, args.quick)
    torch.manual_seed(0)
    report.print_header("reductions over one dim: torch_reduce vs torch", info)
    if device.type != "cuda":
        largest = max(rows * columns for rows, columns in shapes)
        print(f"no GPU: shapes scaled down to at most {largest} elements\n")

    cases = []
    progress = report.Progress(len(args.dtypes) * len(shapes), "dims")
    for dtype_name in args.dtypes:
        for shape in shapes:
            nbytes = shape[0] * shape[1] * harness.DTYPES[dtype_name].itemsize
            shortfall = harness.memory_shortfall(nbytes, device)
            if shortfall:
                print(f"skipping {dtype_name} {shape_label(shape)}: {shortfall}")
            else:
                cases += bench_shape(shape, dtype_name, args.ops, args.dims, device, info, args.compile)
            harness.release_memory(device)
            progress.step(f"{dtype_name} {shape_label(shape)}")
    progress.close()

    print_results(cases, args.dtypes, info)
    json_path, png_path = report.output_paths(args.out, args.name, info)
    metadata = report.run_metadata(info)
    metadata["plain_read"] = plain_read.available(device) or "measured per input size, see plain_read.py"
    report.write_json(json_path, metadata, cases)
    plot(cases, args.dtypes, args.ops, args.dims, info, png_path)


if __name__ == "__main__":
    main()
