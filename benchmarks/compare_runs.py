"""torch_reduce's time in one result file against another's, case by case: two builds timed
by the same benchmark on the same machine (bench_sum.py or bench_dims.py, --out of each).

    python benchmarks/compare_runs.py BEFORE.json AFTER.json [--worst 8]

Prints the geometric mean of after / before over the cases both hold, the cases that moved
most each way, and torch's own ratio over the same cases (the run-to-run spread of the machine).
To time an older commit beside this one: build it into a folder of its own
(pip install --no-build-isolation --no-deps --target DIR .), run the benchmark with
PYTHONPATH=DIR, then without.
"""
import argparse
import json
import statistics


def _cases(path):
    """{case key: (ours us, torch us)} of a bench_sum or bench_dims result file."""
    cases = {}
    for row in json.load(open(path))["results"]:
        if "timings" in row:  # bench_sum.py
            key = (row["dtype"], row["elements"])
            ours, torch = row["timings"]["torch_reduce.sum"], row["timings"]["torch.sum"]
        else:  # bench_dims.py
            key = (row["dtype"], "x".join(map(str, row["shape"])), str(row["dim"]), row["op"])
            ours, torch = row["ours"], row["torch"]
        if ours.get("us") and torch.get("us"):
            cases[key] = (ours["us"], torch["us"])
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--worst", type=int, default=8, help="cases to list each way")
    args = parser.parse_args()
    before, after = _cases(args.before), _cases(args.after)
    common = sorted(set(before) & set(after))
    ratios = sorted((after[k][0] / before[k][0], k) for k in common)
    torch_ratios = [after[k][1] / before[k][1] for k in common]
    print(f"{len(common)} cases in both; torch_reduce after / before: geometric mean "
          f"{statistics.geometric_mean(r for r, _ in ratios):.3f}, "
          f"{ratios[0][0]:.3f} to {ratios[-1][0]:.3f}; torch's own: geometric mean "
          f"{statistics.geometric_mean(torch_ratios):.3f}, {min(torch_ratios):.3f} to {max(torch_ratios):.3f}")
    for title, rows in (("faster after", ratios[:args.worst]), ("slower after", ratios[::-1][:args.worst])):
        print(f"\n{title}: ratio, before us -> after us, case")
        for ratio, key in rows:
            print(f"  {ratio:.3f}  {before[key][0]:8.2f} -> {after[key][0]:8.2f}  {key}")


if __name__ == "__main__":
    main()
