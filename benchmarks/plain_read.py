"""The bandwidth of a plain read: how fast the GPU reads a buffer of so many bytes when it does
nothing else with them. The issue's dims target is a fraction of this (85%), measured in the same
run and the same way (timing.py) as the reductions it judges.

A reduction must also write its output, and where the output is a good part of the input (rows of
3 or 4 elements, 3 x 5000000 over dim 0) that write alone keeps it from 85% of a plain read.
measure_read_write times a kernel that moves what such a reduction must: the same read, plus a
plain write of the output's bytes, spread over the read as a reduction's are: of the groups of 32 loaded
vectors (a warp's load), every 2^k-th (2^k the largest power of two with 2^k times the output's
groups at most the input's), group g, is copied whole to group g / 2^k of a buffer of the output's
size, so that the writes are whole lines and span at least half the read. It is a reference, not
a bound: on the H200 some of our reductions beat it (results/dims_h200.json at 7a99368: bfloat16
1000000 x 2 over rows by 19%, 32 x 1048576 over dim 0 by 5%), as they beat the plain read on
inputs of a few MB.

The kernel reads every 16-byte vector of the buffer once, four loads in flight per thread, over a
grid-stride loop, and folds them with XOR into a value it stores only if it equals a constant, so
that the loads cannot be dropped and nothing is written. It is compiled at run time with NVRTC
(torch.cuda._compile_kernel, torch 2.8 and newer); where that is missing, or on the CPU, there is
no figure. Several grids are timed (a few blocks per SM, looping, or one thread per four vectors);
the fastest counts, as in ../shared/ANCHORS.md's "read roof". A tail shorter than a vector is left
unread: its bytes are not counted.
"""
from typing import Optional

import torch

import harness
from report import DeviceInfo

THREADS = 256
LOADS_IN_FLIGHT = 4
VECTOR_BYTES = 16
BLOCKS_PER_SM = (2, 4, 8)  # looping grids; the one-pass grid is tried as well
SOURCE = r"""
extern "C" __global__ void plain_read(const uint4* __restrict__ data, int vectors,
                                      unsigned int* __restrict__ sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int folded = 0;
  for (; i + 3 * stride < vectors; i += 4 * stride) {
    const uint4 a = data[i], b = data[i + stride], c = data[i + 2 * stride], d = data[i + 3 * stride];
    folded ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < vectors; i += stride) {
    const uint4 a = data[i];
    folded ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (folded == 0x9e3779b9u) sink[0] = folded;
}

extern "C" __global__ void plain_read_write(const uint4* __restrict__ data, int vectors,
                                            uint4* __restrict__ out, int out_vectors, int shift,
                                            unsigned int* __restrict__ sink) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int folded = 0;
  // Group g of 32 vectors (a warp's load) is written where g is a multiple of 2^shift, to group
  // g >> shift of out: whole lines, as a reduction's coalesced stores write them.
  auto write = [&](long long at, const uint4& v) {
    const long long g = at >> 5;
    const long long to = ((g >> shift) << 5) | (at & 31);
    if ((g & ((1ll << shift) - 1)) == 0 && to < out_vectors) out[to] = v;
  };
  for (; i + 3 * stride < vectors; i += 4 * stride) {
    const uint4 a = data[i], b = data[i + stride], c = data[i + 2 * stride], d = data[i + 3 * stride];
    write(i, a);
    write(i + stride, b);
    write(i + 2 * stride, c);
    write(i + 3 * stride, d);
    folded ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < vectors; i += stride) {
    const uint4 a = data[i];
    write(i, a);
    folded ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (folded == 0x9e3779b9u) sink[0] = folded;
}
"""

_kernels = {}
_figures_by_bytes = {}


def _compiled(name: str):
    if name not in _kernels:
        _kernels[name] = torch.cuda._compile_kernel(SOURCE, name)
    return _kernels[name]


def available(device: torch.device) -> Optional[str]:
    """None if plain reads can be measured on device, else why not."""
    if device.type != "cuda":
        return "plain read: GPU only"
    if not hasattr(torch.cuda, "_compile_kernel"):
        return f"plain read: torch {torch.__version__} has no torch.cuda._compile_kernel (NVRTC)"
    return None


def measure(x: torch.Tensor, info: DeviceInfo) -> dict:
    """harness.measure's figures for a plain read of x's bytes (x contiguous and 16-byte
    aligned, as a fresh tensor is), the fastest grid's, with "grid" (blocks) and "bytes" (the
    bytes counted) added. Inputs of the same size share one measurement per run."""
    return _measure(x, 0, info)


def measure_read_write(x: torch.Tensor, out_bytes: int, info: DeviceInfo) -> dict:
    """measure's figures for a plain read of x's bytes plus a plain write of out_bytes (rounded
    up to whole vectors, at most x's), with "bytes" counting both."""
    return _measure(x, out_bytes, info)


def _grids(vectors: int, info: DeviceInfo) -> list:
    sms = info.sm_count or 1
    grids = {sms * k for k in BLOCKS_PER_SM}
    grids.add(max(1, -(-vectors // (THREADS * LOADS_IN_FLIGHT))))
    return sorted(grids)


def _measure(x: torch.Tensor, out_bytes: int, info: DeviceInfo) -> dict:
    vectors = x.numel() * x.element_size() // VECTOR_BYTES
    out_vectors = min(vectors, -(-out_bytes // VECTOR_BYTES))
    nbytes = (vectors + out_vectors) * VECTOR_BYTES
    key = (vectors, out_vectors)
    if key in _figures_by_bytes:
        return _figures_by_bytes[key]
    if vectors >= 2**31:
        raise ValueError(f"plain read: {vectors} vectors do not fit the kernel's int count")
    sink = torch.empty(1, dtype=torch.int32, device=x.device)
    if out_vectors:
        try:
            kernel = _compiled("plain_read_write")
        except Exception as error:  # no figure rather than no run: the plain read still counts
            return {"us": None, "gbps": None, "error": harness.error_text(error)}
        out = torch.empty(out_vectors * VECTOR_BYTES, dtype=torch.uint8, device=x.device)
        groups, out_groups = -(-vectors // 32), -(-out_vectors // 32)  # of a warp's 32 vectors
        shift = (groups // out_groups).bit_length() - 1
        args = [x, vectors, out, out_vectors, shift, sink]
    else:
        kernel = _compiled("plain_read")
        args = [x, vectors, sink]
    best = None
    for grid in _grids(vectors, info):
        figures = harness.measure(
            lambda: kernel(grid=(grid, 1, 1), block=(THREADS, 1, 1), args=args), x.device, nbytes, info)
        if figures["us"] is not None and (best is None or figures["us"] < best["us"]):
            best = dict(figures, grid=grid)
    if best is None:
        best = dict(figures)  # every grid failed: keep the last error
    best["bytes"] = nbytes
    _figures_by_bytes[key] = best
    return best
