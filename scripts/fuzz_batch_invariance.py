"""Random checks of batch invariance: a slice of a kept dim reduces to the same bits as the same
outputs of the whole. Prints each case that differs and a count; exits 1 if any did.

    python scripts/fuzz_batch_invariance.py                    # 1500 cases on the CPU, seed 0
    python scripts/fuzz_batch_invariance.py --device cuda --seed 3 --cases 4000

Each case: a float32 tensor of 2 to 5 dims (sizes from a list of edge sizes, at most 2^18
elements), plain (a slice of a larger one), permuted, strided along one dim, or expanded along
one; sum, mean, amax or amin over a random proper subset of its dims, kept; one kept dim of
size 2 or more then cut (a contiguous slice, often of width 1).
"""
import argparse
import math
import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import harness  # noqa: E402

torch_reduce = harness.import_torch_reduce()

SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 31, 33, 40, 64, 65, 100, 129]
MAX_ELEMENTS = 1 << 18


def draw_view(rng: random.Random, device: str) -> tuple:
    ndim = rng.randint(2, 5)
    shape = [rng.choice(SIZES) for _ in range(ndim)]
    while math.prod(shape) > MAX_ELEMENTS:
        shape = [max(1, s // 2) for s in shape]
    kind = rng.choice(["plain", "permuted", "strided", "expanded"])
    d = rng.randrange(ndim)
    if kind == "strided":
        wide = torch.randn([s * (2 if i == d else 1) for i, s in enumerate(shape)], device=device)
        return kind, wide[tuple(slice(None, None, 2) if i == d else slice(None) for i in range(ndim))]
    padded = [s + rng.choice([0, 0, 1, 3]) for s in shape]
    x = torch.randn(padded, device=device)[tuple(slice(0, s) for s in shape)]
    if kind == "permuted":
        order = list(range(ndim))
        rng.shuffle(order)
        x = x.permute(order)
    elif kind == "expanded":
        x = x.narrow(d, 0, 1).expand(x.shape)
    return kind, x


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=1500)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    checked = differ = 0
    for _ in range(args.cases):
        kind, x = draw_view(rng, args.device)
        ndim = x.dim()
        dims = sorted(rng.sample(range(ndim), rng.randint(1, ndim - 1)))
        kept = [d for d in range(ndim) if d not in dims and x.size(d) > 1]
        if not kept:
            continue
        op = rng.choice(["sum", "mean", "amax", "amin"])
        reduce = getattr(torch_reduce, op)
        whole = reduce(x, dims, keepdim=True)
        d = rng.choice(kept)
        start = rng.randrange(x.size(d))
        stop = rng.choice([start + 1, rng.randint(start + 1, x.size(d))])
        cut = tuple(slice(start, stop) if i == d else slice(None) for i in range(ndim))
        part = reduce(x[cut], dims, keepdim=True)
        checked += 1
        if not torch.equal(part, whole[cut]):
            differ += 1
            print(f"differs: {op} of {kind} {tuple(x.shape)} strides {x.stride()} over {dims}, "
                  f"dim {d} cut to {start}:{stop}, by up to {(part - whole[cut]).abs().max().item():.3g}")
    print(f"{differ} of {checked} cases differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
