"""torch_reduce: fast, deterministic reductions for PyTorch.

    import torch_reduce
    torch_reduce.sum(x)                      # like torch.sum(x)
    torch_reduce.sum(x, dim=(0, 2), keepdim=True, dtype=torch.float32)
    torch_reduce.sum(x, algorithm="sequential_addressing")   # a step of the classic ladder (CUDA)

The ops are also reachable as torch.ops.torch_reduce.{sum,mean,amax,amin}.
"""
from . import _library
from .selection import algorithms, get_default_algorithm, set_default_algorithm, use_algorithm
from .ops import amax, amin, mean, sum

BUILT_WITH_CUDA = _library.BUILT_WITH_CUDA

__all__ = [
    "sum",
    "mean",
    "amax",
    "amin",
    "algorithms",
    "use_algorithm",
    "get_default_algorithm",
    "set_default_algorithm",
    "BUILT_WITH_CUDA",
]
