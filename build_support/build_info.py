"""What a build is for: its version, its CUDA targets, and the record of both
that the package reads at import (torch_reduce/_build_info.py).

The version's local tag names the torch and CUDA the library was compiled
against (0.2.0+torch2.14.cu130, 0.2.0+torch2.13.cpu): a compiled extension
only loads beside the torch it was built for, and the tag says which.
"""
import os
import re
import shutil
import subprocess

import torch

from torch_versions import release

# With no GPU visible and no TORCH_CUDA_ARCH_LIST: the common data-centre and
# workstation GPUs (A100, A10/RTX 30xx, L4/L40/RTX 40xx, H100/H200), plus PTX
# of the newest, which the driver compiles for later GPUs.
COMMON_CUDA_ARCHS = "8.0;8.6;8.9;9.0+PTX"


def base_version(root):
    with open(os.path.join(root, "torch_reduce", "_version.py")) as f:
        return re.search(r'__version__ = "([^"]+)"', f.read()).group(1)


def local_tag(with_cuda):
    cuda = "cu" + torch.version.cuda.replace(".", "") if with_cuda else "cpu"
    return f"torch{release(torch.__version__)}.{cuda}"


def cuda_arch_list():
    """(the TORCH_CUDA_ARCH_LIST to build, why). torch reads the variable, so
    the caller sets it to the first element."""
    chosen = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if chosen:
        return chosen, "TORCH_CUDA_ARCH_LIST"
    if torch.cuda.is_available():
        caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
        return ";".join(f"{major}.{minor}" for major, minor in caps), "the visible GPUs"
    return COMMON_CUDA_ARCHS, "no GPU visible: the common GPUs"


def _arch_numbers(archs):
    numbers = []
    for entry in archs.replace(" ", ";").split(";"):
        if not entry:
            continue
        number = entry.replace("+PTX", "")
        if not re.fullmatch(r"\d+\.\d+a?", number):
            raise RuntimeError(f"TORCH_REDUCE_PTX_ONLY=1 takes numbered archs (9.0, 9.0a), not {entry!r}")
        numbers.append(number)
    return numbers


def ptx_only_flags(archs):
    """nvcc flags that compile for `archs` (a TORCH_CUDA_ARCH_LIST) to PTX
    alone, unoptimised: cicc compiles every source and template as for a GPU,
    but neither optimises the device code (about half of cicc's time) nor
    hands it to ptxas (a quarter to a third of a kernel unit's time), and the
    host code, which runs only on a GPU machine, is not optimised either.
    CI's check that every CUDA source compiles; the library it makes runs on
    a GPU only through the driver's compilation of the PTX at load. Replaces
    the build's own optimisation flag (-O3)."""
    computes = [f"compute_{n.replace('.', '')}" for n in _arch_numbers(archs)]
    return [f"-gencode=arch={c},code={c}" for c in computes] + ["-O0", "-Xcicc", "-O0"]


def ptx_only_archs(archs):
    """The build record's archs of such a build: 9.0 -> 9.0:PTX-only."""
    return ";".join(f"{n}:PTX-only" for n in _arch_numbers(archs))


def _first_line(command):
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[0].strip() if lines else "unknown"


def compiler_description():
    cxx = os.environ.get("CXX", "c++")
    path = shutil.which(cxx.split()[0]) or cxx
    return f"{path} ({_first_line([path, '--version'])})"


def nvcc_description(cuda_home):
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    lines = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.splitlines()
    found = [line for line in lines if "release" in line]
    return f"{nvcc} ({found[0].strip() if found else 'unknown'})"


def write_build_info(path, version, with_cuda, archs, compiler, nvcc):
    record = {
        "version": version,
        "torch": torch.__version__,
        "cuda": torch.version.cuda if with_cuda else None,
        "cuda_archs": archs.split(";") if with_cuda else [],
        "compiler": compiler,
        "nvcc": nvcc,
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("# Written by setup.py when the library was built; not in git.\n")
        f.write(f"BUILD = {record!r}\n")


def torch_requirement():
    """The runtime requirement: the torch release the library was built against."""
    major, minor = (int(part) for part in release(torch.__version__).split("."))
    return f"torch>={major}.{minor},<{major}.{minor + 1}"
