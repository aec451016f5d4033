"""The CPU kernels are compiled for the baseline ISA, AVX2 and AVX-512, and run the widest the
processor has (ATEN_CPU_CAPABILITY=default|avx2 caps it, as for torch's own kernels). Vector
width may change how many lanes one instruction updates, and half may be widened by F16C rather
than by integer arithmetic, but never a result: every path gives the same bits.

Each capped path runs in a child process (the cap is read once, at load) on inputs saved by this
one, and its results are compared bitwise with this process's (the widest path here).
"""
import os
import platform
import subprocess
import sys

import pytest
import torch

import cases

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="ISA caps only exist on x86-64"
)

# (name, shape, dims): full reductions and rows long enough for the lanes, short rows of a
# compile-time length (5; 3, 4 and 8, read back to back as interleaved vectors) and a run-time
# length, wide columns (the column tiles and their remainder), columns
# of a tile, whole vectors and part of one (float16: tiles of four vectors, then one, the last one
# in part), columns of part of a vector, narrow columns (side by side), rows of a few vectors (eight
# to a call, then the rest one by one), and such rows and narrow columns (three vectors and part of
# one), with zeros of both signs and NaNs (amax and amin on AVX-512 take vector max/min instructions, and
# columns a mask for the NaNs; float16 NaNs with payloads, which F16C's conversion of the results
# would keep and c10's does not), and columns whose results are float16's edge cases (HALF_EDGES).
# Results are compared bit for bit.
LAYOUTS = [
    ("full", (70001,), None),
    ("long rows", (3, 5000), (1,)),
    ("rows of a few vectors", (4001, 77), (1,)),
    ("rows of a few vectors, NaNs and signed zeros", (1001, 77), (1,)),
    ("short rows, length 5", (4001, 5), (1,)),
    ("short rows, length 3", (4001, 3), (1,)),
    ("short rows, length 4", (4001, 4), (1,)),
    ("short rows, length 8, NaNs and signed zeros", (4001, 8), (1,)),
    ("short rows, length 21", (4001, 21), (1,)),
    ("wide columns", (300, 1030), (0,)),
    ("columns of a tile, vectors and part of one", (300, 93), (0,)),
    ("columns of part of a vector", (1000, 13), (0,)),
    ("columns of three float32 vectors and part of one, NaNs and signed zeros", (300, 61), (0,)),
    ("columns of three float64 vectors and part of one, NaNs and signed zeros", (300, 29), (0,)),
    ("narrow columns", (1000, 5), (0,)),
    ("columns of pairs whose results are float16's edge cases", (2, 77), (0,)),
]
# (a, b) whose sum or mean, rounded to float16, overflows or ties (to even), is subnormal, or is a
# NaN: the float16 results of float accumulators are converted a vector at a time on the wider
# paths (F16C), one by one on the baseline.
HALF_EDGES = [(65504.0, 16.0), (65504.0, 8.0), (-65504.0, -16.0), (65504.0, 65504.0), (2.0**-24, 0.0),
              (3 * 2.0**-24, 0.0), (2.0**-14, 2.0**-24), (1.0, 2.0**-11), (1.0, 3 * 2.0**-11),
              (float("inf"), float("-inf")), (float("nan"), 1.0), (-0.0, -0.0)]
# float16 NaNs with payloads (a quiet one, and a signalling one with its sign set), as int16 bits.
HALF_PAYLOAD_NANS = [0x7E01, 0xFC05 - 0x10000]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32]
#: Every op of the table, each on the dtypes it takes (var: floating ones).
OPS = cases.ALL_OPS


def _inputs():
    gen = torch.Generator().manual_seed(0)
    inputs = {}
    for dtype in DTYPES:
        for name, shape, _ in LAYOUTS:
            if dtype.is_floating_point:
                x = torch.randn(shape, generator=gen, dtype=torch.float64) * 100
                if "edge cases" in name:
                    for c in range(shape[1]):
                        x[:, c] = torch.tensor(HALF_EDGES[c % len(HALF_EDGES)], dtype=torch.float64)
                if "NaNs" in name:
                    # Where an extremum's vector and scalar forms could differ: which zero (rows and
                    # columns of zeros of both signs), and a NaN's place and payload (the sign).
                    x[::3] = x[::3].sign() * 0.0
                    x[:, ::5] = x[:, ::5].sign() * 0.0
                    x[::7, -17 % shape[-1]] = float("nan")
                    x[2::9, ::4] = -float("nan")
            else:
                x = torch.randint(-(2**31), 2**31 - 1, shape, generator=gen, dtype=torch.int64)
            x = x.to(dtype)
            if dtype == torch.float16 and ("NaNs" in name or "edge cases" in name):
                bits = x.view(torch.int16)
                bits[1::11, ::6] = HALF_PAYLOAD_NANS[0]
                bits[5::13, 1::6] = HALF_PAYLOAD_NANS[1]
            inputs[(str(dtype), name)] = x
    return inputs


def _results(inputs):
    results = {}
    for (dtype, name), x in inputs.items():
        dims = next(d for n, _, d in LAYOUTS if n == name)
        for op in OPS:
            if x.dtype in cases.OPS[op].dtypes:
                results[(dtype, name, op)] = cases.OPS[op].fn(x, dims)
    return results


_CHILD = """
import sys, torch
sys.path[:0] = sys.argv[3:]
import test_cpu_vector_paths as t
torch.save(t._results(torch.load(sys.argv[1])), sys.argv[2])
"""


@pytest.mark.parametrize("cap", ["default", "avx2"])
def test_capped_isa_gives_the_same_bits(cap, tmp_path, bitwise_equal):
    inputs = _inputs()
    torch.save(inputs, tmp_path / "inputs.pt")
    env = dict(os.environ, ATEN_CPU_CAPABILITY=cap)
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(
        [sys.executable, "-c", _CHILD, str(tmp_path / "inputs.pt"), str(tmp_path / "out.pt"), here, *sys.path],
        env=env,
        check=True,
    )
    capped = torch.load(tmp_path / "out.pt")
    widest = _results(inputs)
    assert capped.keys() == widest.keys()
    for key, expected in widest.items():
        got = capped[key]
        if not cases.OPS[key[2]].exact and expected.is_floating_point():
            # Which of two NaNs an add returns follows the operand order the compiler chose (x86
            # returns the first's): a sum's NaN is compared as a NaN, an extremum's bit for bit.
            got, expected = (torch.where(t.isnan(), torch.full_like(t, float("nan")), t) for t in (got, expected))
        bitwise_equal(got, expected, str(key))
