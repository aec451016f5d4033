"""Markdown tables of committed benchmark results, for the README.

    python benchmarks/summarize.py [--kind h100]

Reads results/{sum,sum_peers,ladder,dims,sweep}_<kind>.json (written by bench_sum.py,
bench_ladder.py, bench_dims.py and bench_sweep.py) and results/full_combine_<kind>.txt
(written by probes/full_combine.cu), and prints the tables that the README
quotes, so that every figure there comes from a committed file.
"""
import argparse
import json
import math
import re
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def load(name, kind):
    path = RESULTS / f"{name}_{kind}.json"
    return json.loads(path.read_text()) if path.exists() else None


def exponent(n):
    return f"2^{int(math.log2(n))}" if n & (n - 1) == 0 else str(n)


def dtype_size_table(title, rows, sizes, cell):
    """A table of a dtype a row and a size a column; cell(rows of that dtype and size) gives a
    cell's text, or None for "-"."""
    print(title)
    print()
    print("| dtype | " + " | ".join(exponent(s) for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        cells = [cell([r for r in rows if r["dtype"] == dtype and r["elements"] == size]) for size in sizes]
        print(f"| {dtype} | " + " | ".join(c or "-" for c in cells) + " |")


def sum_tables(data):
    """Per dtype: ours vs torch.sum (time ratio ours/torch, below 1 = faster), GB/s."""
    rows = data["results"]
    sizes = sorted({r["elements"] for r in rows})

    def cell(match):
        if not match or "torch_reduce.sum" not in match[0]["timings"]:
            return None
        t = match[0]["timings"]
        ours, torch_ = t["torch_reduce.sum"], t["torch.sum"]
        text = f"{ours['us']:.3g} ({ours['us'] / torch_['us']:.2f})"
        return text + (f" {ours['gbps']:.0f}" if match[0]["elements"] >= 2**24 else "")

    dtype_size_table("Full reductions: time per call in us (ours / torch.sum; below 1 is faster); "
                     "GB/s of ours at >= 2^24", rows, sizes, cell)
    peers_table(rows, sizes)
    overhead = data.get("host_overhead")
    if overhead:
        print()
        print(f"Host overhead per eager call: {json.dumps(overhead)}")


PEER_LETTERS = {"torch.sum": "t", "torch.compile": "c", "CUB": "C"}


def peers_table(rows, sizes):
    """Per dtype: ours / the fastest peer's time (below 1 = faster), and which peer that was."""
    rows = [r for r in rows if "best_peer" in r]
    if not rows:
        return
    print()

    def cell(match):
        return f"{1 / match[0]['speedup_vs_best_peer']:.2f} {PEER_LETTERS[match[0]['best_peer']]}" if match else None

    dtype_size_table("Ours / the fastest peer (t: torch.sum, c: torch.compile, C: CUB); below 1 is faster",
                     rows, sizes, cell)


def ladder_tables(data):
    rows = data["results"]
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        print(f"\n{dtype}, {exponent(rows[0]['elements'])} elements")
        print()
        print("| step | algorithm | us | GB/s | step speedup | vs step 01 |")
        print("|---|---|---|---|---|---|")
        previous = None
        for r in (r for r in rows if r["dtype"] == dtype):
            step = "" if r.get("step") is None else f"{r['step']:02d}"
            step_speedup = f"{previous / r['us']:.2f}x" if previous and step else ""
            print(f"| {step} | {r['algorithm']} | {r['us']:.4g} | {r['gbps']:.0f} | {step_speedup} | "
                  f"{r.get('speedup_vs_step1', float('nan')):.2f}x |")
            if step:
                previous = r["us"]


def dims_tables(data):
    rows = data["results"]
    print("| dtype | shape | dim | op | torch us | ours us | ours/torch | ours GB/s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        shape = "x".join(str(s) for s in r["shape"])
        t, o = r["torch"], r["ours"]
        print(f"| {r['dtype']} | {shape} | {r['dim']} | {r['op']} | {t['us']:.3g} | {o['us']:.3g} | "
              f"{o['us'] / t['us']:.2f} | {o['gbps']:.0f} |")


def dims_sum_table(data):
    """The README's compact table: sum only, float32 and bfloat16 side by side; GB/s with its
    share of a plain read of the same bytes where the file has one."""
    cells = {(tuple(r["shape"]), r["dim"], r["dtype"]): r for r in data["results"] if r["op"] == "sum"}
    keys = list(dict.fromkeys((shape, dim) for shape, dim, _ in cells))
    has_read = any(r["ours"].get("pct_read") is not None for r in cells.values())
    has_floor = any(r["ours"].get("pct_read_write") is not None for r in cells.values())
    gbps = "GB/s (% of plain read; of read + write)" if has_floor else "GB/s (% of plain read)" if has_read else "GB/s"
    print(f"| shape | dim | float32 us (ours/torch) | float32 {gbps} | bfloat16 us (ours/torch) | bfloat16 {gbps} |")
    print("|---|---|---|---|---|---|")
    for shape, dim in keys:
        line = f"| {'x'.join(str(s) for s in shape)} | {dim} |"
        for dtype in ("float32", "bfloat16"):
            r = cells.get((shape, dim, dtype))
            if r is None:
                line += " | |"
                continue
            t, o = r["torch"], r["ours"]
            read = f" ({o['pct_read']:.0f}%)" if o.get("pct_read") is not None else ""
            if o.get("pct_read_write") is not None:
                read = f" ({o['pct_read']:.0f}%; {o['pct_read_write']:.0f}%)"
            line += f" {o['us']:.3g} ({o['us'] / t['us']:.2f}) | {o['gbps']:.0f}{read} |"
        print(line)


COMBINE_MODES = {0: "no combine (floor)", 1: "ticket, acq_rel", 2: "ticket, fence", 3: "flags, block 0 polls",
                 4: "flags, last block polls", 5: "one cluster, DSMEM", 6: "clusters + flags"}


def sweep_groups(cases):
    """(layout and reduction, cases, slower than torch, worst and median speedup) per group of
    bench_sweep.py's cases; speedup = torch's time / ours."""
    groups = []
    for layout in ("contiguous", "transposed", "sliced"):
        for full in (True, False):
            speedups = sorted(c["speedup_vs_torch"] for c in cases if c["layout"] == layout and c["speedup_vs_torch"]
                              and (c["dims"] is None or len(c["dims"]) == len(c["shape"])) == full)
            if speedups:
                groups.append((f"{layout}, {'all dims' if full else 'some dims'}", len(speedups),
                               sum(s < 1 for s in speedups), speedups[0], speedups[len(speedups) // 2]))
    return groups


def sweep_table(data):
    cases = data["results"]
    timed = [c for c in cases if c["speedup_vs_torch"]]
    print(f"{len(cases)} random cases (seed {data['metadata']['seed']}), {sum(c['check'] != 'ok' for c in cases)} failed "
          f"their check, {sum(c['speedup_vs_torch'] < 1 for c in timed)} slower than torch. Speedup = torch's time / ours")
    print()
    print("| layout, reduction | cases | slower than torch | worst speedup | median speedup |")
    print("|---|---|---|---|---|")
    for name, count, slower, worst, median in sweep_groups(cases):
        print(f"| {name} | {count} | {slower} | {worst:.2f} | {median:.2f} |")


def combine_table(kind):
    """probes/full_combine.cu: per size, the best time of each way to end the launch (us)."""
    path = RESULTS / f"full_combine_{kind}.txt"
    if not path.exists():
        return
    best, empty = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("empty "):
            empty = float(line.split()[1])
        m = re.match(r"(\d+) mode=(\d) .* us=([\d.]+) ok$", line)
        if m:
            key = (int(m.group(1)), int(m.group(2)))
            best[key] = min(best.get(key, math.inf), float(m.group(3)))
    sizes = sorted({size for size, _ in best})
    print(f"\n### full_combine ({path.name}; an empty kernel: {empty} us)\n")
    print("Best time per call over the launch shapes tried, us")
    print()
    print("| end of the launch | " + " | ".join(f"{s // 1024} KiB" if s < 2**20 else f"{s >> 20} MiB" for s in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for mode, name in COMBINE_MODES.items():
        print(f"| {mode} {name} | " + " | ".join(f"{best[(s, mode)]:.2f}" if (s, mode) in best else "-" for s in sizes) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="h100", help="device kind in the file names")
    kind = parser.parse_args().kind
    for name, table in (("sum", sum_tables), ("sum_peers", sum_tables), ("ladder", ladder_tables), ("dims", dims_sum_table), ("dims", dims_tables),
                        ("sweep", sweep_table)):
        data = load(name, kind)
        if data is None:
            continue
        print(f"\n### {name} ({data['metadata']['device']['name']}, torch {data['metadata']['torch_version']}, "
              f"{data['metadata']['date'][:10]}: `{data['metadata']['command']}`)\n")
        table(data)
    combine_table(kind)


if __name__ == "__main__":
    main()
