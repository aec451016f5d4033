"""Probe: the first level of long columns in inputs larger than the L2, which column_block_kernel
reads a tile a block (in waves of resident blocks) unless its items are narrow or its tiles fill
less than two thirds of more than one wave (block_tiles_keep_first_level in
csrc/cuda/launch_config.cuh), when column_short_kernel reads it. torch_reduce against torch, both
timed by benchmarks/timing.py (CUDA graphs), results checked by harness.check_result. The fill
is of the block kernel's tiles in waves of two blocks an SM (its occupancy on the H100), counted
in the items it would load.

Run from the repository root (the output is benchmarks/results/block_waves_h100.txt):
    python3 benchmarks/probes/block_waves.py
"""
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import torch  # noqa: E402
import harness  # noqa: E402
import timing  # noqa: E402

torch_reduce = harness.import_torch_reduce()
if not torch.cuda.is_available():
    sys.exit("block_waves.py times CUDA kernels: no GPU visible")
dev = torch.device("cuda")
CASES = [  # op, dtype, shape, dims
    ("amin", torch.int32, (5, 4, 755, 4238), (0, 1, 2)),
    ("sum", torch.float32, (16384, 9000), (0,)),
    ("sum", torch.float32, (16384, 10000), (0,)),
    ("sum", torch.float32, (65536, 2600), (0,)),
    ("sum", torch.float32, (16384, 11000), (0,)),
    ("sum", torch.float32, (16384, 12000), (0,)),
    ("sum", torch.float32, (65536, 3000), (0,)),
    ("sum", torch.float32, (65536, 7000), (0,)),
    ("sum", torch.float32, (16384, 16000), (0,)),
    ("sum", torch.bfloat16, (16384, 18000), (0,)),
    ("sum", torch.bfloat16, (16384, 20000), (0,)),
    ("sum", torch.bfloat16, (16384, 24000), (0,)),
    ("sum", torch.bfloat16, (16384, 28000), (0,)),
    ("sum", torch.bfloat16, (30000, 4238), (0,)),
    ("amax", torch.bfloat16, (30000, 4238), (0,)),
    ("amax", torch.bfloat16, (30000, 8000), (0,)),
]
SM_COUNT = torch.cuda.get_device_properties(dev).multi_processor_count
BLOCKS_PER_SM = 2


def block_fill(dtype, shape, dims):
    """The block kernel's tiles, as a fraction of the blocks of the waves they take."""
    reduce = math.prod(shape[d] for d in dims)
    columns = math.prod(shape[d] for d in range(len(shape)) if d not in dims)
    width = 16 // dtype.itemsize  # a 16-byte load, narrower where the columns do not align to it
    while columns % width:
        width //= 2
    units = math.ceil(columns / width / 32) * math.ceil(reduce / 64 / 64)
    resident = SM_COUNT * BLOCKS_PER_SM
    return units, width * dtype.itemsize, units / (math.ceil(units / resident) * resident)


print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; python3 benchmarks/probes/block_waves.py; us per call")
print("op   dtype     shape              tiles item_bytes  fill    ours_us  torch_us torch/ours check", flush=True)
for op, dtype, shape, dims in CASES:
    x = harness.random_tensor(shape, dtype, dev)
    ours, theirs = getattr(torch_reduce, op), getattr(torch, op)
    check = harness.checked_result(lambda: ours(x, dims), lambda: theirs(x, dims), x, op, dims)
    us = min(timing.time_call(lambda: ours(x, dims), dev).us_per_call for _ in range(2))
    torch_us = min(timing.time_call(lambda: theirs(x, dims), dev).us_per_call for _ in range(2))
    units, item_bytes, fill = block_fill(dtype, shape, dims)
    print(f"{op:4} {str(dtype)[6:]:9} {str(shape):18} {units:5d} {item_bytes:10d} {fill:5.0%} {us:10.2f} {torch_us:9.2f} "
          f"{torch_us / us:10.2f} {check}", flush=True)
    del x
    harness.release_memory(dev)
