"""Loads the compiled library so that its op registrations run."""
import warnings

import torch

from . import _C  # noqa: F401  (registers torch.ops.torch_reduce.*)

BUILT_WITH_CUDA = bool(torch.ops.torch_reduce.built_with_cuda())

if not BUILT_WITH_CUDA and torch.cuda.is_available():
    warnings.warn(
        "torch_reduce was built without CUDA (no nvcc or a CPU-only torch at build time): "
        "CUDA tensors are not supported. Rebuild with TORCH_REDUCE_CUDA=1 to require CUDA.",
        stacklevel=2,
    )
