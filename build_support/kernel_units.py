"""The kernels' translation units, one per op and backend (and, for CUDA, per
input family, so that they compile in parallel), generated from the op list
(csrc/op_list.h) into build/generated/. Adding an op to the list adds its
units; nothing else in the build names an op but the split below."""
import os
import re

# X(name, OpsObject, families): families is Floating or FloatingAndIntegral,
# or None for an op that runs another op's kernels (it has no units).
_ENTRY = re.compile(r"^\s*X\((\w+),\s*(\w+),\s*(Floating|FloatingAndIntegral|None)\)")

_CPU = """// Generated from csrc/op_list.h by build_support/kernel_units.py.
#include "cpu/reduce_layout.h"
#include "op_list.h"

namespace torch_reduce {{
namespace cpu {{
template void reduce_layout<{spec}>(const at::Tensor&, const ReduceLayout&, at::Tensor&, const OpCall&);
}}  // namespace cpu
}}  // namespace torch_reduce
"""

_CUDA = """// Generated from csrc/op_list.h by build_support/kernel_units.py.
#include "cuda/reduce_layout.cuh"
#include "op_list.h"

namespace torch_reduce {{
namespace cuda {{
static_assert(has_kernels_for<{spec}>(TypeFamily::{family}), "the op list and {spec}::kIntegralKernels disagree");
{instantiations}}}  // namespace cuda
}}  // namespace torch_reduce
"""
_INSTANTIATION = (
    "template void reduce_layout<{spec}, TypeFamily::{family}, ElementWidth::{width}>(const at::Tensor&, "
    "const ReduceLayout&, at::Tensor&, const OpCall&);\n"
    "template std::vector<LaunchStep> plan_layout<{spec}, TypeFamily::{family}, ElementWidth::{width}>("
    "const at::Tensor&, const ReduceLayout&, const at::Tensor&, const OpCall&);\n"
)
_WIDTHS = ["Narrow", "Wide"]

# Ops whose CUDA kernels of a family compile in a unit per ElementWidth
# (csrc/dispatch.h) rather than in one: those whose one unit was the longest
# of the build by far, so that the build waited for it (docs/TUNING.md). A
# unit costs about 35 s of CPU time before its kernels, so the rest stay whole.
_SPLIT_BY_WIDTH = {"vector_norm"}


def op_list(root):
    """(name, ops object, families) of every op, in the list's order."""
    with open(os.path.join(root, "csrc", "op_list.h")) as f:
        ops = [m.groups() for m in map(_ENTRY.match, f) if m]
    if not ops:
        raise RuntimeError("csrc/op_list.h: no X(name, OpsObject, families) lines found")
    return ops


def _write_if_changed(path, text):
    # An unchanged unit keeps its timestamp, so that ninja does not recompile it.
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def generate(root, with_cuda):
    """Writes the units under build/generated/ and returns their paths, relative to root,
    longest to compile first (the build starts them in this order): the split ops' CUDA
    units, the other CUDA units, then the CPU units (build_units_cpu.txt)."""
    out = os.path.join("build", "generated")
    ranked = []  # (rank, path): 0 the split ops' CUDA units, 1 the other CUDA units, 2 the CPU units
    for name, spec, families in op_list(root):
        if families == "None":
            continue
        units = [(2, os.path.join(out, "cpu", f"reduce_{name}.cpp"), _CPU.format(spec=spec))]
        if with_cuda:
            split = name in _SPLIT_BY_WIDTH
            for family in ["Floating", "Integral"] if families == "FloatingAndIntegral" else ["Floating"]:
                for widths in [[width] for width in _WIDTHS] if split else [_WIDTHS]:
                    instantiations = "".join(_INSTANTIATION.format(spec=spec, family=family, width=w) for w in widths)
                    suffix = f"_{widths[0].lower()}" if split else ""
                    path = os.path.join(out, "cuda", f"reduce_{name}_{family.lower()}{suffix}.cu")
                    text = _CUDA.format(spec=spec, family=family, instantiations=instantiations)
                    units.append((0 if split else 1, path, text))
        for rank, path, text in units:
            _write_if_changed(os.path.join(root, path), text)
            ranked.append((rank, path))
    return [path for _, path in sorted(ranked, key=lambda unit: unit[0])]
