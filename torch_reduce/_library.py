"""Loads the compiled library so that its op registrations run, after checking
that it was built for the torch that is running (an extension built against
another torch release fails with undefined symbols, or worse, if loaded)."""
import warnings
from typing import Optional

import torch

try:
    from ._build_info import BUILD
except ImportError:  # a source tree that was never built
    raise ImportError(
        "torch_reduce is not built: run `pip install --no-build-isolation -e .` in its source tree "
        "(or `bash scripts/test.sh`), or install a wheel"
    ) from None

REBUILD = "pip install --no-build-isolation --force-reinstall --no-deps <torch_reduce's source folder or sdist>"


def _release(version: str) -> str:
    """'2.14.1+cu130' -> '2.14'."""
    return ".".join(version.split("+")[0].split(".")[:2])


def torch_mismatch(build: dict, torch_version: str, torch_cuda: Optional[str]) -> Optional[str]:
    """Why a library built as `build` says cannot load beside this torch, or None."""
    if _release(build["torch"]) != _release(torch_version):
        return (
            f"torch_reduce {build['version']} was built against torch {build['torch']}, but torch "
            f"{torch_version} is installed: a compiled extension only loads beside the torch release "
            f"it was built for. Install torch {_release(build['torch'])}.*, or rebuild torch_reduce "
            f"against this torch: {REBUILD}"
        )
    if build["cuda"] is not None and torch_cuda is None:
        return (
            f"torch_reduce {build['version']} has CUDA kernels (built against torch {build['torch']}), "
            f"but the installed torch {torch_version} is a CPU-only build. Install a CUDA build of torch, "
            f"or rebuild torch_reduce for the CPU: TORCH_REDUCE_CUDA=0 {REBUILD}"
        )
    if build["cuda"] is not None and build["cuda"].split(".")[0] != torch_cuda.split(".")[0]:
        return (
            f"torch_reduce {build['version']} was built with CUDA {build['cuda']}, but torch {torch_version} "
            f"uses CUDA {torch_cuda}. Rebuild torch_reduce against this torch: {REBUILD}"
        )
    return None


_mismatch = torch_mismatch(BUILD, torch.__version__, torch.version.cuda)
if _mismatch:
    raise ImportError(_mismatch)

from . import _C  # noqa: E402,F401  (registers torch.ops.torch_reduce.*)

BUILT_WITH_CUDA = bool(torch.ops.torch_reduce.built_with_cuda())

# A CPU-only build beside a CUDA-capable torch is worth saying out loud: CUDA
# tensors would be refused. (Beside a CPU-only torch it is the expected build.)
if not BUILT_WITH_CUDA and torch.version.cuda is not None:
    warnings.warn(
        "torch_reduce was built without CUDA (no nvcc at build time, or TORCH_REDUCE_CUDA=0): "
        "only CPU tensors are supported. Rebuild with TORCH_REDUCE_CUDA=1 to require CUDA.",
        stacklevel=2,
    )
