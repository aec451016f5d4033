"""torch_reduce.explain: what a call would do, step by step, without running it.

The front end plans the call on a meta tensor of the input's sizes, strides and
dtype (csrc/explain.cpp): the dtypes, then each step it would take -- what it
reads (the input in place, or a copy or a stage's partial), the layout the
dims merge into, the kernel family that reads it, the bytes read and the
outputs. On CUDA with a GPU, each step also lists its launches as the CUDA
backend plans them (csrc/cuda/row_plans.cuh, column_plans.cuh), by the same
functions its launches are made by: kernel, template choices, grid, block,
bytes read and written."""
import dataclasses
import json
from typing import List, Optional, Sequence, Union

import torch

from . import _library  # noqa: F401
from .ops import _dim_list

# c10's dtype names, as the plan's JSON gives them, and torch's.
_DTYPE_NAMES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Char": "int8",
    "Byte": "uint8",
    "Short": "int16",
    "Int": "int32",
    "Long": "int64",
    "Bool": "bool",
    # An op of two results (var_mean) writes them as the two parts of a complex number.
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
}


def _torch_dtype_names(value):
    if isinstance(value, dict):
        return {k: _torch_dtype_names(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_torch_dtype_names(v) for v in value]
    return _DTYPE_NAMES.get(value, value) if isinstance(value, str) else value


@dataclasses.dataclass
class Plan:
    """The plan of one call: `steps` holds one dict per layout the front end hands the backend,
    in order; a step's "launches" lists its kernel launches (None where the backend does not
    plan them here: the CPU, or CUDA without a GPU)."""

    op: str
    device: str
    input_dtype: str
    kernel_dtype: str
    result_dtype: str
    steps: List[dict]

    @property
    def bytes_read(self) -> int:
        return sum(step["bytes_read"] for step in self.steps)

    @property
    def launches(self) -> Optional[List[dict]]:
        """Every kernel launch of the call, in order; None where a step's are not planned here."""
        if any(step["launches"] is None for step in self.steps):
            return None
        return [launch for step in self.steps for launch in step["launches"]]

    def __str__(self) -> str:
        lines = [
            f"torch_reduce.{self.op} on {self.device}: {self.input_dtype} in, the kernels write "
            f"{self.kernel_dtype}, {self.result_dtype} out; {len(self.steps)} step(s)"
            + (f", {len(self.launches)} launch(es)" if self.launches is not None else "")
            + f", {self.bytes_read} bytes read"
        ]
        if not self.steps:
            lines.append("  no kernel: an empty input or output")
        for i, s in enumerate(self.steps, 1):
            shape = f"{s['batch']} x {s['reduce']}" + (f" x {s['inner']}" if s["layout"] == "columns" else "")
            runs = "".join(
                f", {key} {s[key]['sizes']} (strides {s[key]['strides']})"
                for key in ("batch_runs", "reduce_runs", "column_runs")
                if key in s
            )
            lines.append(
                f"  {i}. {s['layout']} [{shape}]{' (full)' if s['full'] else ''}{runs}: reads the "
                f"{s['reads']} {tuple(s['sizes'])} {s['dtype']}, {s['bytes_read']} bytes, "
                f"-> {s['outputs']} x {s['output_dtype']}{' (permuted output)' if s['permuted_output'] else ''}"
            )
            lines.append(f"     kernel: {s['kernel']}")
            for launch in s["launches"] or []:
                flags = "".join(f", {f.replace('_', '-')}" for f in ("evict_first", "early") if launch[f])
                shared = f", {launch['shared_bytes']} B shared" if launch["shared_bytes"] else ""
                geometry = f"<<<{launch['grid']}, {launch['block']}>>>" if launch["block"] else ""
                config = f"{launch['config']}; " if launch["config"] else ""
                lines.append(
                    f"     launch {launch['kernel']}{geometry}{shared}: "
                    f"{config}reads {launch['bytes_read']} B, writes {launch['bytes_written']} B{flags}"
                )
            if s["launches"] is None and self.device == "cuda":
                lines.append("     launches: planned where a GPU is visible (grids depend on the device)")
        return "\n".join(lines)


def explain(
    input: torch.Tensor,
    dim: Union[None, int, Sequence[int]] = None,
    op: str = "sum",
    keepdim: bool = False,
    *,
    dtype: Optional[torch.dtype] = None,
    device: Optional[str] = None,
) -> Plan:
    """The plan of torch_reduce.<op>(input, dim, keepdim, dtype=dtype), without running it.

    `device` plans for another backend than the input's (e.g. "cuda" for a CPU tensor, in a
    CUDA build). print() the result for a readable summary."""
    plan = json.loads(torch.ops.torch_reduce.explain(input, op, _dim_list(dim), keepdim, dtype=dtype, device=device))
    return Plan(op=op, **_torch_dtype_names(plan))
