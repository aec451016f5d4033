"""What the benchmark scripts share besides timing and reporting: importing torch_reduce from
the repository, command-line options, random inputs, memory checks, result checks, turning
a timing into the figures of a table row, and the kernels of a torch.profiler run."""
import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

import torch

import report
from report import DeviceInfo
from timing import REPLAYS, time_call

REPO_ROOT = Path(__file__).resolve().parents[1]

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


def import_torch_reduce():
    """torch_reduce as installed, else from this checkout (scripts run as benchmarks/x.py)."""
    try:
        import torch_reduce
    except ModuleNotFoundError as error:
        if error.name != "torch_reduce":
            raise
        sys.path.insert(0, str(REPO_ROOT))
        try:
            import torch_reduce
        except ImportError as inner:
            sys.exit(f"cannot import torch_reduce ({inner}); build it first: "
                     f"pip install --no-build-isolation -e {REPO_ROOT}")
    return torch_reduce


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a short run (fewer cases)")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="auto: the current CUDA device if there is one, else the CPU")
    parser.add_argument("--out", help="output directory (default: benchmarks/out/, not tracked by git)")
    parser.add_argument("--save", dest="out", action="store_const", const=str(report.RESULTS_DIR),
                        help="write to benchmarks/results/, the committed result files")


def pick_device(choice: str) -> torch.device:
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda":
        if not torch.cuda.is_available():
            sys.exit("--device cuda: no CUDA device available")
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def parse_dtypes(text: str) -> list:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DTYPES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown dtypes {unknown}; known: {', '.join(DTYPES)}")
    return names


def parse_sizes(text: str) -> list:
    """'2^20,1000' -> [1048576, 1000]."""
    sizes = []
    for token in text.split(","):
        token = token.strip()
        base, _, exponent = token.partition("^")
        sizes.append(int(base) ** int(exponent) if exponent else int(token))
    return sizes


def random_tensor(shape, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Fresh random data (never zeros, which some hardware reads or sums faster)."""
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, dtype=dtype, device=device)
    info = torch.iinfo(dtype)
    low, high = max(info.min, -2**20), min(info.max, 2**20)
    return torch.randint(low, high + 1, shape, dtype=dtype, device=device)


def memory_shortfall(nbytes: int, device: torch.device) -> Optional[str]:
    """Why an input of nbytes cannot be benchmarked on device, or None if it can. Room is kept
    for the input, one temporary of its size (the result check) and some slack."""
    if device.type != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info(device)
    needed = 2 * nbytes + 512 * 2**20
    if needed <= free:
        return None
    return f"needs {needed / 2**30:.1f} GiB of GPU memory, {free / 2**30:.1f} GiB free"


def check_result(ours: torch.Tensor, ref: torch.Tensor, x: torch.Tensor, op: str,
                 dim: Optional[int] = None) -> str:
    """'ok' or 'MISMATCH: ...' for ours against torch's result ref. Exact for integers, bools,
    amax and amin. A float product is compared with the float64 one, within 4 eps(accumulator)
    a factor. A float sum or mean is compared with the exact (float64) one: it may be off by
    4 eps(accumulator) * sum|x| (long sequential chains of additions reach about a third of
    that on random data) plus one ulp of the output dtype, or by as much as torch's own result
    is (torch's CPU half-precision sums are less exact)."""
    if op in ("var_mean", "std_mean"):
        # Two results: the variance (or its root) and the mean, each checked as its own op's.
        checks = [check_result(o, r, x, part, dim) for o, r, part in zip(ours, ref, (op[:3], "mean"))]
        return next((c for c in checks if c != "ok"), "ok")
    if ours.shape != ref.shape or ours.dtype != ref.dtype or ours.device != ref.device:
        return (f"MISMATCH: got {tuple(ours.shape)} {ours.dtype} on {ours.device}, expected "
                f"{tuple(ref.shape)} {ref.dtype} on {ref.device}")
    if op in ("amax", "amin") or not ref.dtype.is_floating_point:
        return "ok" if torch.equal(ours, ref) else "MISMATCH: values differ"
    count = x.numel() // max(1, ref.numel())
    if op == "vector_norm":
        # The 2-norm: the square root of a sum of squares, off by half the sum's relative bound.
        exact = torch.linalg.vector_norm(x.double(), 2, dim)
        magnitude = exact
    elif op in ("var", "std"):
        # Welford's fold rounds relative to the second moment, the mean of x^2 (halved over the
        # result for std's root), as the tests' tolerance does.
        wide = x.double()
        exact = getattr(wide, op)() if dim is None else getattr(wide, op)(dim)
        second = (wide * wide).mean() if dim is None else (wide * wide).mean(dim)
        magnitude = 4 * (second if op == "var" else second / (2 * exact))
    elif op == "logsumexp":
        # A sum of exp(x - max) in the accumulator: its relative error is the result's absolute
        # one, a few eps per level of the fold, beside the rounding of x - max.
        wide = x.double()
        exact = torch.logsumexp(wide, list(range(x.dim())) if dim is None else dim)
        magnitude = 4 * (wide.abs().amax() if dim is None else wide.abs().amax(dim)) + 16
    elif op == "prod":
        # Each factor rounds relative to the product: the bound grows with the count.
        exact = x.double().prod() if dim is None else x.double().prod(dim)
        magnitude = count * exact.abs() + torch.finfo(ref.dtype).tiny
    else:
        exact, magnitude = (
            (t.sum(dtype=torch.float64) if dim is None else t.sum(dim=dim, dtype=torch.float64))
            for t in (x, x.abs()))
    if op == "mean":
        exact, magnitude = exact / count, magnitude / count
    accumulator = torch.float64 if x.dtype == torch.float64 else torch.float32
    tolerance = (4 * torch.finfo(accumulator).eps * magnitude
                 + torch.finfo(ref.dtype).eps * exact.abs())
    ours_error = (ours.double() - exact).abs()
    torch_error = (ref.double() - exact).abs()
    bad = ~((ours_error <= torch.maximum(tolerance, torch_error)) | (ours == ref))
    if bad.any():
        return (f"MISMATCH: {int(bad.sum())} of {bad.numel()} values off; worst: ours "
                f"{ours_error[bad].max().item():.3g} from the exact value, torch "
                f"{torch_error[bad].max().item():.3g}")
    return "ok"


def checked_result(ours: Callable[[], torch.Tensor], reference: Callable[[], torch.Tensor],
                   x: torch.Tensor, op: str, dim: Optional[int] = None) -> str:
    """check_result of one call of each, or 'error: ...' when a call raises."""
    try:
        return check_result(ours(), reference(), x, op, dim)
    except Exception as error:
        return "error: " + error_text(error)


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200]}"


def measure(fn: Callable[[], object], device: torch.device, nbytes: int, info: DeviceInfo,
            replays: int = REPLAYS) -> dict:
    """Times fn and returns the figures of a table row: us, GB/s (nbytes / time), % of the
    device's peak DRAM bandwidth, and how it was timed. A failure gives None figures and the
    error, so that one broken case does not end the run."""
    try:
        timing = time_call(fn, device, replays)
    except Exception as error:
        return {"us": None, "gbps": None, "pct_peak": None, "error": error_text(error)}
    bytes_per_s = nbytes / (timing.us_per_call * 1e-6)
    figures = {
        "us": timing.us_per_call,
        "gbps": bytes_per_s / 1e9,
        "pct_peak": 100 * bytes_per_s / info.peak_bytes_per_s if info.peak_bytes_per_s else None,
        "method": timing.method,
        "calls_per_sample": timing.calls_per_sample,
        "samples": timing.samples,
    }
    if timing.note:
        figures["note"] = timing.note
    return figures


def measure_rounds(fns: dict, device: torch.device, nbytes: int, info: DeviceInfo,
                   rounds: int = 2) -> dict:
    """measure() for each of fns ({name: fn}), in `rounds` rounds that take the competitors in
    turn, keeping each one's fastest round: a stall of the machine during one round (the H100
    gave one competitor 3x to 4x its time now and then) does not decide a comparison."""
    best = {}
    for _ in range(rounds):
        for name, fn in fns.items():
            figures = measure(fn, device, nbytes, info)
            if name not in best or (figures["us"] is not None and
                                    (best[name]["us"] is None or figures["us"] < best[name]["us"])):
                best[name] = figures
    for figures in best.values():
        figures["rounds"] = rounds
    return best


def speedup(baseline: dict, candidate: dict) -> Optional[float]:
    """How many times faster candidate is than baseline (time ratio baseline / candidate)."""
    if not baseline or not candidate or not baseline.get("us") or not candidate.get("us"):
        return None
    return baseline["us"] / candidate["us"]


def release_memory(device: torch.device) -> None:
    """Returns cached GPU blocks between inputs of different sizes so the next one fits."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def profiled_kernels(prof) -> list:
    """(launches, mean us of one launch, name) of each GPU kernel of a torch.profiler run (the
    device time's attribute is self_cuda_time_total in older torch releases)."""
    rows = []
    for event in prof.key_averages():
        total = getattr(event, "self_device_time_total", None) or getattr(event, "self_cuda_time_total", 0)
        if total > 0:
            rows.append((event.count, total / event.count, event.key))
    return rows
