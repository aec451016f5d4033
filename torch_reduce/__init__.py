"""torch_reduce: fast, deterministic reductions for PyTorch.

    import torch_reduce
    torch_reduce.sum(x)                      # like torch.sum(x)
    torch_reduce.sum(x, dim=(0, 2), keepdim=True, dtype=torch.float32)
    torch_reduce.sum(x, algorithm="sequential_addressing")   # a step of the classic ladder (CUDA)

The ops (torch_reduce.ops.OPS) are also reachable as torch.ops.torch_reduce.<name>.
"""
from . import _library
from ._build_info import BUILD as _BUILD
from .selection import algorithms, get_default_algorithm, set_default_algorithm, use_algorithm
from .ops import OPS as _OPS
from .ops import WRAPPERS as _WRAPPERS
from .ops import sum
from . import batching as _batching  # noqa: F401 (registers the ops' vmap rules)
from . import sharding as _sharding  # noqa: F401 (registers the ops' DTensor sharding rules)
from .explain import Plan, explain

# One wrapper per op of the op list (csrc/op_list.h): torch_reduce.mean, .amax, ...
globals().update(_WRAPPERS)

BUILT_WITH_CUDA = _library.BUILT_WITH_CUDA

#: The release, with a local tag naming the torch and CUDA the library was
#: built for, e.g. "0.2.0+torch2.14.cu130".
__version__ = _BUILD["version"]


def build_info() -> dict:
    """What this library was built with: its version, the torch and CUDA it was
    compiled against, the CUDA architectures it has code for ("9.0+PTX": also
    PTX, compiled by the driver for newer GPUs), and the C++ and CUDA compilers."""
    return dict(_BUILD, cuda_archs=list(_BUILD["cuda_archs"]))


__all__ = list(_OPS) + [
    "explain",
    "Plan",
    "algorithms",
    "use_algorithm",
    "get_default_algorithm",
    "set_default_algorithm",
    "BUILT_WITH_CUDA",
    "build_info",
    "__version__",
]
