"""A small workload that reaches every CUDA kernel of torch_reduce once, for
compute-sanitizer (memcheck, racecheck, synccheck, initcheck):

    compute-sanitizer --tool racecheck python scripts/sanitizer_workload.py

Sizes are small (the tools are slow) but cover every path: single-block and
split full reductions, misaligned heads and ragged tails, short and long rows
(vectorized, scalar, and several to a load), gathered rows (staged in shared
memory where small) and columns, the column kernels (short for
each rows-per-slot, chunk (also writing the output of columns of one chunk),
tile teams, wide, block and flat) over several passes, stages, permuted tensors
(their output copied, or written through the permutation), all four ops, every ladder
algorithm. Exits non-zero if a result is wrong.
"""
import sys

import torch

import torch_reduce

torch.manual_seed(0)
device = "cuda"
failures = []


def check(name, ours, ref, exact):
    """`ref` is torch's result on the CPU: ATen's own CUDA column kernel reads a staging buffer
    it has not written, which initcheck would report against this workload."""
    assert ref.device.type == "cpu", name
    ours = ours.cpu()
    tolerance = 1e-2 if ours.dtype in (torch.bfloat16, torch.float16) else 1e-3
    ok = torch.equal(ours, ref) if exact else torch.allclose(ours.double(), ref.double(), rtol=tolerance, atol=tolerance)
    if not ok:
        failures.append(name)


for dtype in (torch.float32, torch.bfloat16, torch.int32, torch.uint8):
    exact = not dtype.is_floating_point
    for n in (1, 33, 4099, 300_001):
        base = (torch.randn(n + 3, device=device) * 10).to(dtype) if not exact else torch.randint(0, 100, (n + 3,), device=device, dtype=dtype)
        x = base[3:]  # misaligned start
        check(f"sum {dtype} {n}", torch_reduce.sum(x), torch.sum(x.cpu()), exact)
    # (4100, 1027) over dim 0: items of one column, whose first level column_short_kernel reads;
    # such items several a thread in columns of 12 and 20 rows too (12 x 65539, 20 x 262147), and
    # one a thread in chunks of 5, 12, 24 and 48 rows (the last dim 1 shapes), in slot order or by
    # rows. Items of one column several chunks a step in column_block_kernel (300 x 4999) and two
    # rounds ahead in column_tile_kernel's teams (2500 x 5). Chunks of up to 2 and 4 rows, which read
    # only those slots, one wave of blocks: wide items (2 x 4096, 3 x 40000) and narrow (2 x 4099, 4 x 8193).
    for shape, dim in (((64, 7), -1), ((4099, 2), -1), ((1001, 4), -1), ((1001, 8), -1), ((1001, 16), -1), ((48, 32), -1), ((40, 1000), -1), ((60, 1505), -1), ((3, 70_000), -1), ((130, 9), 0), ((40, 300), 0), ((200, 64), 0),
                       ((5, 130, 12), 1), ((40, 33, 6), 1), ((5, 301), 0), ((12, 65539), 0), ((300, 4999), 0), ((4100, 1027), 0), ((4100, 1028), 0),
                       ((16, 262144), 0), ((20, 262147), 0), ((40, 65536), 0), ((600000, 3), 0),
                       ((64, 5, 7), 1), ((300, 12, 7), 1), ((300, 24, 7), 1), ((40, 24, 65), 1), ((40, 48, 7), 1), ((100_000, 7), -1), ((2500, 5), 0),
                       ((2, 4096), 0), ((3, 40_000), 0), ((2, 4099), 0), ((4, 8193), 0)):
        x = (torch.randn(shape, device=device) * 10).to(dtype) if not exact else torch.randint(0, 100, shape, device=device, dtype=dtype)
        cpu = x.cpu()
        check(f"sum {dtype} {shape} {dim}", torch_reduce.sum(x, dim), torch.sum(cpu, dim), exact)
        check(f"amax {dtype} {shape} {dim}", torch_reduce.amax(x, dim), torch.amax(cpu, dim), True)
        check(f"amin {dtype} {shape} {dim}", torch_reduce.amin(x, dim), torch.amin(cpu, dim), True)
        if not exact:
            check(f"mean {dtype} {shape} {dim}", torch_reduce.mean(x, dim), torch.mean(cpu, dim), False)

# Dense narrow columns of 4 MiB or more, whose first pass reads the rows as one flat run
# (column_flat_kernel): dense, a view one column into its frame, one whose last row ends before
# its run does (last chunks of 49, 1 and 33 rows), and batches of such views.
# Last, rows of a misaligned view read as aligned vectors around each item (row_reduce_kernel).
for base, view, dim in (((350001, 3), lambda t: t, 0), ((150001, 15), lambda t: t[:, 1:], 0),
                        ((150017, 16), lambda t: t[:, :-1], 0), ((4, 40033, 8), lambda t: t[..., 1:], 1),
                        ((300, 1002), lambda t: t[:, 1:-1], 1)):
    for dtype in (torch.float32, torch.bfloat16):
        x = view((torch.randn(base, device=device) * 10).to(dtype))
        cpu = x.cpu()
        check(f"sum flat {tuple(x.shape)} {dtype}", torch_reduce.sum(x, dim), torch.sum(cpu.double(), dim).to(dtype), False)
        check(f"amin flat {tuple(x.shape)} {dtype}", torch_reduce.amin(x, dim), torch.amin(cpu, dim), True)

# Kept dims out of memory order: reduced in the input's memory order; a large output written
# dense and copied, small ones written through the permutation (rows one and several a lane,
# columns of one chunk).
x = torch.randn(25, 7, 175, 44, device=device).permute(3, 1, 2, 0)
check("sum permuted (44, 7, 175, 25) 1", torch_reduce.sum(x, 1), torch.sum(x.cpu(), 1), False)
for base, perm, dims in (((5, 7, 75, 44), (3, 1, 2, 0), (1,)), ((30, 12, 700), (1, 0, 2), (2,)),
                         ((6, 46, 1, 7), (3, 1, 2, 0), (0, 2))):
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(base, device=device).to(dtype).permute(perm)
        check(f"sum permuted {tuple(x.shape)} {dims} {dtype}", torch_reduce.sum(x, dims),
              torch.sum(x.cpu().double(), dims).to(dtype), False)

# Rows read through their strides (gathered): several rows a lane, one row a lane, transposed, a
# strided reduced dim in split rows, a small full reduction of a slice (one row, split kernel);
# small inputs staged in shared memory (staged_rows_kernel): many rows a block (runs of whole
# vectors in both dtypes are staged a vector a load), one row a block staged in two rounds, the
# output written through a permutation. Columns read through their strides (gathered columns),
# into a dense output and through a permutation.
for base, view, dims in (((2, 180000, 3), lambda t: t, (0, 2)), ((5, 1200, 181), lambda t: t, (0, 2)),
                         ((18, 194), lambda t: t[:, 1:], None),
                         ((15, 23400, 3), lambda t: t.transpose(0, 2), (0, 2)), ((60, 40002), lambda t: t[:, ::2], (1,)),
                         ((3, 179, 44), lambda t: t, (0, 2)), ((3, 150, 16), lambda t: t, (0, 2)),
                         ((3, 7, 701), lambda t: t, (0, 2)),
                         ((6, 20, 5, 18), lambda t: t.permute(0, 3, 2, 1), (0, 2)),
                         ((30, 11, 58, 3), lambda t: t[..., :2], (1,)),
                         ((30, 11, 58, 3), lambda t: t[..., :2].permute(0, 1, 3, 2), (1,))):
    for dtype in (torch.float32, torch.bfloat16):
        x = view(torch.randn(base, device=device).to(dtype))
        ours = torch_reduce.sum(x) if dims is None else torch_reduce.sum(x, dims)
        ref = torch.sum(x.cpu().double()) if dims is None else torch.sum(x.cpu().double(), dims)
        check(f"sum gathered {tuple(x.shape)} {dims} {dtype}", ours, ref.to(dtype), False)

# Reduced dims in several runs, reduced in stages that pass float partials, the last writing half
# or bfloat16 from them: rows then columns, and a full reduction of a slice (rows, then one row).
for base, view, dims in (((40, 300, 64), lambda t: t, (0, 2)), ((1100, 1001), lambda t: t[:, 1:], None)):
    for dtype in (torch.float16, torch.bfloat16):
        x = view(torch.randn(base, device=device).to(dtype))
        cpu = x.cpu().double()
        for op in ("sum", "mean"):
            ours, theirs = getattr(torch_reduce, op), getattr(torch, op)
            ref = theirs(cpu) if dims is None else theirs(cpu, dims)
            check(f"{op} staged {tuple(x.shape)} {dims} {dtype}", ours(x) if dims is None else ours(x, dims),
                  ref.to(dtype), False)

# column_tile_kernel over 16 MiB; column_block_kernel once a tile per block fills the GPU;
# column_short_kernel as the first level of 128 MiB, then single chunks of its chunk values.
for shape in ((4100, 1024), (65536, 4096), (262144, 128)):
    x = torch.randn(shape, device=device)
    check(f"sum {shape} 0", torch_reduce.sum(x, 0), torch.sum(x.cpu(), 0), False)
    del x

# Inputs larger than the L2, read evict-first: column_short_kernel's one level (and, for 32 rows,
# its looping grid of a few blocks an SM: wave_balanced_grid), row_reduce_kernel's one row a lane,
# packed_row_reduce_kernel.
for dtype, shape, dim in ((torch.float32, (3, 5_000_000), 0), (torch.bfloat16, (32, 1_048_576), 0),
                          (torch.float32, (1_048_576, 32), 1), (torch.bfloat16, (7_840_000, 4), 1)):
    x = torch.randn(shape, device=device).to(dtype)
    check(f"sum {dtype} {shape} {dim}", torch_reduce.sum(x, dim), torch.sum(x.cpu(), dim), False)
    del x

for algorithm in torch_reduce.algorithms():
    for dtype in (torch.float32, torch.int32):
        exact = not dtype.is_floating_point
        n = 5000 if algorithm == "serial" else 70_001
        x = (torch.randn(n + 1, device=device)).to(dtype)[1:] if not exact else torch.randint(-50, 50, (n + 1,), device=device, dtype=dtype)[1:]
        check(f"ladder {algorithm} {dtype}", torch_reduce.sum(x, algorithm=algorithm), torch.sum(x.cpu()), exact)

torch.cuda.synchronize()
print("sanitizer workload:", "FAILED " + ", ".join(failures) if failures else "all results correct")
sys.exit(1 if failures else 0)
