"""Reporting shared by the benchmark scripts: device description and peak bandwidth, run
metadata, progress bar, plain-text tables, JSON files and matplotlib figures."""
import datetime
import json
import platform
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

import torch

# A run writes to out/ (not tracked); --save writes to results/, the committed files.
DEFAULT_OUT_DIR = Path(__file__).resolve().parent / "out"
RESULTS_DIR = Path(__file__).resolve().parent / "results"

# Peak DRAM bandwidth (bytes/s) by words that start words of the device name, first match
# wins ("H200" is not "GH200"); other GPUs are computed from their memory clock and bus width
# where torch reports them.
PEAK_DRAM_BYTES_PER_S = (
    (("H100", "HBM3"), 3.35e12),
    (("H100", "SXM"), 3.35e12),
    (("H200",), 4.8e12),
    (("A100", "80GB"), 2.04e12),
)


@dataclass
class DeviceInfo:
    type: str  # "cuda" or "cpu"
    name: str
    kind: str  # short name for file names: "h100", "cpu", ...
    sm_count: Optional[int]
    l2_bytes: Optional[int]
    total_memory_bytes: Optional[int]
    peak_bytes_per_s: Optional[float]
    peak_source: str  # where peak_bytes_per_s comes from


def describe_device(device: torch.device) -> DeviceInfo:
    if device.type != "cuda":
        return DeviceInfo("cpu", _cpu_name(), "cpu", None, None, None, None, "n/a (CPU)")
    props = torch.cuda.get_device_properties(device)
    peak, source = _peak_bandwidth(props)
    return DeviceInfo("cuda", props.name, _device_kind(props.name), props.multi_processor_count,
                      getattr(props, "L2_cache_size", None), props.total_memory, peak, source)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _peak_bandwidth(props):
    for words, peak in PEAK_DRAM_BYTES_PER_S:
        if all(re.search(rf"\b{word}", props.name) for word in words):
            return peak, "table by device name"
    clock_khz = getattr(props, "memory_clock_rate", 0)
    bus_bits = getattr(props, "memory_bus_width", 0)
    if clock_khz and bus_bits:  # double data rate: two transfers per clock
        return 2 * clock_khz * 1e3 * bus_bits / 8, "memory clock x bus width (device properties)"
    return None, "n/a (unknown device)"


def _device_kind(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100', 'NVIDIA A100-SXM4-80GB' -> 'a100',
    'NVIDIA GeForce RTX 3060' -> 'rtx3060'."""
    words = [w for w in re.split(r"[\s-]+", name)
             if w.lower() not in ("", "nvidia", "geforce", "tesla", "quadro")]
    if not words:
        return "gpu"
    kind = words[0].lower()
    if kind in ("rtx", "gtx") and len(words) > 1:
        kind += words[1].lower()
    return re.sub(r"[^a-z0-9]+", "_", kind).strip("_") or "gpu"


def run_metadata(info: DeviceInfo) -> dict:
    import torch_reduce

    return {
        "device": asdict(info),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "torch_reduce_built_with_cuda": torch_reduce.BUILT_WITH_CUDA,
        "cpu_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "host": platform.node(),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
    }


def print_header(title: str, info: DeviceInfo) -> None:
    print(f"== {title} ==")
    if info.type == "cuda":
        l2 = f"{info.l2_bytes / 2**20:.0f} MiB L2" if info.l2_bytes else "L2 size unknown"
        peak = f"{info.peak_bytes_per_s / 1e9:.0f} GB/s" if info.peak_bytes_per_s else "n/a"
        print(f"device: {info.name}, {info.sm_count} SMs, {l2}; "
              f"peak DRAM {peak} ({info.peak_source})")
        print("time: CUDA graph of back-to-back calls, median of 7 replays / calls per replay; "
              "inputs within L2 stay in L2 (mem = L2)")
    else:
        print(f"device: CPU ({info.name}, {torch.get_num_threads()} threads) -- no GPU: "
              "benchmarking the CPU path against torch on the CPU")
        print("time: median of 7 timed loops (time.perf_counter) after warm-up")
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}")
    print()


def output_paths(out_dir: Optional[str], script: str, info: DeviceInfo):
    """(json_path, png_path), e.g. out/sum_h100.json and out/sum_h100.png."""
    directory = Path(out_dir) if out_dir else DEFAULT_OUT_DIR
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / f"{script}_{info.kind}"
    return stem.with_suffix(".json"), stem.with_suffix(".png")


def write_json(path: Path, metadata: dict, results: list, **extra) -> None:
    with open(path, "w") as f:
        json.dump({"metadata": metadata, **extra, "results": results}, f, indent=1)
    print(f"wrote {path}")


class Progress:
    """tqdm on stderr when installed, else a one-line counter."""

    def __init__(self, total: int, description: str):
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        self._bar = (tqdm(total=total, desc=description, file=sys.stderr, leave=False)
                     if tqdm else None)
        self._total, self._done, self._description = total, 0, description

    def step(self, label: str) -> None:
        """Call after each unit of work, naming the one just done."""
        self._done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(label, refresh=False)
            self._bar.update()
        else:
            print(f"\r{self._description}: {self._done}/{self._total} {label:<40}", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        else:
            print(file=sys.stderr)


# --- formatting: None means "not available" and prints as n/a

def fmt(value, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def fmt_us(us: Optional[float]) -> str:
    if us is None:
        return "n/a"
    return f"{us:.3g}" if us < 100 else f"{us:.0f}"


def fmt_ratio(ratio: Optional[float]) -> str:
    return fmt(ratio, ".2f") + ("x" if ratio is not None else "")


def fmt_bytes(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes} B"


def fmt_count(n: int) -> str:
    """2^20 for powers of two, else the number."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


class Footnotes:
    """Long texts (errors, timing notes) printed under a table, referred to as [1], [2]..."""

    def __init__(self):
        self._texts = []

    def mark(self, text: str) -> str:
        if text not in self._texts:
            self._texts.append(text)
        return f"[{self._texts.index(text) + 1}]"

    def print(self) -> None:
        for number, text in enumerate(self._texts, 1):
            print(f"  [{number}] {text}")


def print_table(columns: Sequence[tuple], rows: Sequence[dict]) -> None:
    """columns: (key, header, align '<' or '>'); rows: dicts of already formatted strings.
    A missing key prints blank; a column blank in every row is left out."""
    columns = [c for c in columns if any(row.get(c[0]) for row in rows)]
    widths = [max([len(header)] + [len(row.get(key, "")) for row in rows])
              for key, header, _ in columns]
    print("  ".join(format(header, f"{align}{w}")
                    for (_, header, align), w in zip(columns, widths)).rstrip())
    for row in rows:
        line = "  ".join(format(row.get(key, ""), f"{align}{w}")
                         for (key, _, align), w in zip(columns, widths))
        print(line.rstrip())


def timing_columns(info: DeviceInfo, prefix: str = "", label: str = "") -> tuple:
    """The columns that timing_cells fills, headers led by label (e.g. "torch "); % of peak
    only where the device's peak bandwidth is known."""
    columns = ((prefix + "us", label + "us/call", ">"), (prefix + "gbps", label + "GB/s", ">"))
    if info.peak_bytes_per_s:
        columns += ((prefix + "pct_peak", label + "% peak", ">"),)
    return columns


def timing_cells(figures: dict, footnotes: Footnotes, prefix: str = "") -> dict:
    """Table cells for the figures of harness.measure (keys led by prefix); errors and notes
    become footnotes in the "notes" cell."""
    cells = {
        prefix + "us": fmt_us(figures.get("us")),
        prefix + "gbps": fmt(figures.get("gbps"), ".1f"),
        prefix + "pct_peak": fmt(figures.get("pct_peak"), ".1f"),
    }
    marks = [footnotes.mark(text) for text in (figures.get("error"), figures.get("note")) if text]
    if marks:
        cells["notes"] = " ".join(marks)
    return cells


def check_cell(check: str, footnotes: Footnotes) -> str:
    """'ok', or the verdict ('MISMATCH', 'error') with the details as a footnote."""
    verdict, _, details = check.partition(": ")
    return f"{verdict} {footnotes.mark(details)}" if details else verdict


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None (with a message) when not installed."""
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed: no plot written")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def panel_grid(plt, count: int, columns: int, panel_size: tuple):
    """A figure with `count` panels, at most `columns` a row; returns (figure, panels)."""
    columns = max(1, min(columns, count))
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(panel_size[0] * columns,
                                                     panel_size[1] * rows), squeeze=False)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def save_figure(fig, path: Path, title: str) -> None:
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def figure_title(what: str, info: DeviceInfo) -> str:
    return f"{what} -- {info.name}, torch {torch.__version__}"
