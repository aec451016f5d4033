"""Choosing the reduction algorithm of torch_reduce.sum.

"default" is the fast path. The other names are the classic reduction ladder
(CUDA only, full reductions only), kept so that each step can be measured.

Precedence: the `algorithm=` argument of a call, then `use_algorithm(...)` /
`set_default_algorithm(...)` in this process, then the TORCH_REDUCE_ALGORITHM
environment variable (also honoured by raw torch.ops.torch_reduce.sum calls).
The process-wide default applies to full reductions of CUDA tensors only; an
explicit `algorithm=` that cannot run there (CPU tensor, dim=...) is an error.
"""
import contextlib
from typing import Iterator, List, Optional

import torch

from . import _library  # noqa: F401

# A plain module global (not thread-local) so that torch.compile can read it.
default: Optional[str] = None  # read by ops.sum on every call; set it through the functions below


def algorithms() -> List[str]:
    """The algorithm names, "default" first, then the ladder in order."""
    return list(torch.ops.torch_reduce.algorithms())


def _check(name: str) -> str:
    valid = algorithms()
    if name not in valid:
        raise ValueError(f"unknown algorithm {name!r}; valid algorithms are: {', '.join(valid)}")
    return name


def get_default_algorithm() -> Optional[str]:
    """The algorithm set by set_default_algorithm/use_algorithm, or None
    (then the TORCH_REDUCE_ALGORITHM environment variable, else "default")."""
    return default


def set_default_algorithm(name: Optional[str]) -> None:
    """Sets the algorithm torch_reduce.sum uses when none is passed (None: unset)."""
    global default
    default = None if name is None else _check(name)


@contextlib.contextmanager
def use_algorithm(name: str) -> Iterator[None]:
    """Within the block, torch_reduce.sum uses `name` when no algorithm is passed."""
    previous = get_default_algorithm()
    set_default_algorithm(name)
    try:
        yield
    finally:
        set_default_algorithm(previous)
