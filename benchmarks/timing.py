"""Time per call of a benchmarked function: the one place where the benchmarks measure time.

GPU: a CUDA graph of R back-to-back calls (R chosen so that one replay takes about 1 ms, capped)
is warmed up and replayed 7 times; time per call = median replay time / R, from CUDA events. The
graph takes Python, the dispatcher and launch latency out of the figure, as in
../shared/ANCHORS.md. Every call reads the same input buffer, so an input that fits in L2 is
read from L2, for the competitors as well. If capture fails, back-to-back eager calls timed with
events stand in (method "cuda_eager", with a note); for small inputs they measure the host.

CPU: median over repeats of a loop timed with time.perf_counter, after warm-up.
"""
import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch

REPLAYS = 7
TARGET_SAMPLE_MS = 1.0  # one replay (or one CPU loop) should last at least this long
MAX_CALLS_PER_SAMPLE = 1000  # bounds capture time and graph size for the fastest calls


@dataclass
class Timing:
    us_per_call: float
    method: str  # "cuda_graph", "cuda_eager" or "cpu_loop"
    calls_per_sample: int
    samples: int
    note: str = ""


def time_call(fn: Callable[[], object], device: torch.device, replays: int = REPLAYS) -> Timing:
    """Time per call of fn() (which works on `device`). Fewer replays suit very slow calls."""
    if device.type == "cuda":
        return _time_cuda(fn, replays)
    return _time_cpu(fn, replays)


def host_overhead_us(fn: Callable[[], object], device: torch.device, calls: int = 2000,
                     repeats: int = 5) -> float:
    """Eager wall time per call, synchronizing only at the end of each loop: for a tiny input
    this is the host's cost (Python, dispatcher, launch), the GPU keeping up behind it."""
    fn()
    _synchronize(device)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        _synchronize(device)
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples) * 1e6


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _calls_for(ms_per_call: float) -> int:
    """Calls per sample so that a sample lasts TARGET_SAMPLE_MS, capped."""
    if ms_per_call <= 0:
        return MAX_CALLS_PER_SAMPLE
    return max(1, min(MAX_CALLS_PER_SAMPLE, math.ceil(TARGET_SAMPLE_MS / ms_per_call)))


def _time_cuda(fn, replays: int) -> Timing:
    fn()  # warm-up: lazy initialisation, compilation, allocator caching
    torch.cuda.synchronize()
    calls = _calls_for(_eager_ms_per_call(fn, 1))
    try:
        return _time_graph(fn, calls, replays)
    except Exception as error:  # anything that cannot be captured: time it eagerly instead
        torch.cuda.synchronize()
        timing = _time_eager(fn, calls, replays)
        timing.note = f"CUDA graph capture failed ({_first_line(error)}); eager calls timed"
        return timing


def _time_graph(fn, calls: int, replays: int) -> Timing:
    graph = _capture(fn, calls)
    # The first replay also uploads the graph: probing with it could take the upload for a
    # long sample and keep too few calls, whose samples then include the graph's launch.
    graph.replay()
    # The fastest of a few replays: after one slow probe replay, case 127 of the H100 sweep at
    # 8593429 (results/sweep_h100.json) kept 26 calls a sample, 0.12 ms of its 4.6 us calls,
    # where the target is 1 ms, and the graph's launch weighed on each call.
    probe_ms = min(_replay_ms(graph) for _ in range(3))
    # The eager estimate above includes launch latency, so small calls get too few at first.
    if probe_ms < TARGET_SAMPLE_MS / 2 and calls < MAX_CALLS_PER_SAMPLE:
        calls = _calls_for(probe_ms / calls)
        graph = _capture(fn, calls)
        graph.replay()
    samples = [_replay_ms(graph) for _ in range(replays)]
    return Timing(statistics.median(samples) * 1e3 / calls, "cuda_graph", calls, replays)


def _capture(fn, calls: int) -> torch.cuda.CUDAGraph:
    # capture_begin/end directly rather than torch.cuda.graph(), which runs gc.collect() and
    # empty_cache() on entry: too slow to pay hundreds of times per run.
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()  # capture is not allowed on the legacy default stream
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        graph.capture_begin()
        try:
            for _ in range(calls):
                fn()
        finally:
            graph.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
    return graph


def _replay_ms(graph: torch.cuda.CUDAGraph) -> float:
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _eager_ms_per_call(fn, calls: int) -> float:
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls


def _time_eager(fn, calls: int, samples: int) -> Timing:
    times = [_eager_ms_per_call(fn, calls) for _ in range(samples)]
    return Timing(statistics.median(times) * 1e3, "cuda_eager", calls, samples)


def _time_cpu(fn, repeats: int) -> Timing:
    fn()  # warm-up: allocator, thread pool, compilation
    calls = 1
    while True:  # the first calls are slow, so grow the loop until it lasts long enough
        elapsed_ms = _cpu_loop_s(fn, calls) * 1e3
        if elapsed_ms >= TARGET_SAMPLE_MS or calls >= MAX_CALLS_PER_SAMPLE:
            break
        calls = min(MAX_CALLS_PER_SAMPLE, max(2 * calls, _calls_for(elapsed_ms / calls)))
    samples = [_cpu_loop_s(fn, calls) / calls for _ in range(repeats)]
    return Timing(statistics.median(samples) * 1e6, "cpu_loop", calls, repeats)


def _cpu_loop_s(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - start


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:160]
