"""Loads the compiled library so that its op registrations run."""
import warnings

import torch

from . import _C  # noqa: F401  (registers torch.ops.torch_reduce.*)

BUILT_WITH_CUDA = bool(torch.ops.torch_reduce.built_with_cuda())

# A CPU-only build beside a CUDA-capable torch is worth saying out loud: CUDA
# tensors would be refused. (Beside a CPU-only torch it is the expected build.)
if not BUILT_WITH_CUDA and torch.version.cuda is not None:
    warnings.warn(
        "torch_reduce was built without CUDA (no nvcc at build time, or TORCH_REDUCE_CUDA=0): "
        "only CPU tensors are supported. Rebuild with TORCH_REDUCE_CUDA=1 to require CUDA.",
        stacklevel=2,
    )
