"""The bandwidth of a plain read: how fast the GPU reads a buffer of so many bytes when it does
nothing else with them. The issue's dims target is a fraction of this (85%), measured in the same
run and the same way (timing.py) as the reductions it judges.

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
"""

_kernel = None
_figures_by_bytes = {}


def _compiled():
    global _kernel
    if _kernel is None:
        _kernel = torch.cuda._compile_kernel(SOURCE, "plain_read")
    return _kernel


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
    vectors = x.numel() * x.element_size() // VECTOR_BYTES
    nbytes = vectors * VECTOR_BYTES
    if nbytes in _figures_by_bytes:
        return _figures_by_bytes[nbytes]
    if vectors >= 2**31:
        raise ValueError(f"plain read: {vectors} vectors do not fit the kernel's int count")
    kernel = _compiled()
    sink = torch.empty(1, dtype=torch.int32, device=x.device)
    sms = info.sm_count or 1
    grids = {sms * k for k in BLOCKS_PER_SM}
    grids.add(max(1, -(-vectors // (THREADS * LOADS_IN_FLIGHT))))
    best = None
    for grid in sorted(grids):
        figures = harness.measure(
            lambda: kernel(grid=(grid, 1, 1), block=(THREADS, 1, 1), args=[x, vectors, sink]),
            x.device, nbytes, info)
        if figures["us"] is not None and (best is None or figures["us"] < best["us"]):
            best = dict(figures, grid=grid)
    if best is None:
        best = dict(figures)  # every grid failed: keep the last error
    best["bytes"] = nbytes
    _figures_by_bytes[nbytes] = best
    return best
