"""Builds torch_reduce._C: the C++ ops, their CPU kernels and, when CUDA is
available to the build, their CUDA kernels.

CUDA is decided from the toolchain, never from whether a GPU is present, so a
GPU-less build host (CI) still compiles every CUDA source:
  TORCH_REDUCE_CUDA=1  require the CUDA build (fail if nvcc or a CUDA torch is missing)
  TORCH_REDUCE_CUDA=0  build the CPU kernels only
  unset                CUDA when torch is a CUDA build and nvcc (CUDA_HOME) is found
Target GPUs follow TORCH_CUDA_ARCH_LIST (e.g. "9.0" for H100, "8.0;8.6;9.0").
"""
import glob
import os
import sys

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))


def want_cuda():
    forced = os.environ.get("TORCH_REDUCE_CUDA")
    available = torch.version.cuda is not None and CUDA_HOME is not None
    if forced == "1":
        if not available:
            raise RuntimeError(
                "TORCH_REDUCE_CUDA=1 but CUDA cannot be built here: "
                f"torch.version.cuda={torch.version.cuda}, CUDA_HOME={CUDA_HOME}"
            )
        return True
    if forced == "0":
        return False
    return available


def sources(pattern):
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern), recursive=True))


with_cuda = want_cuda()
if with_cuda and not os.environ.get("TORCH_CUDA_ARCH_LIST") and not torch.cuda.is_available():
    # With no GPU to ask, torch would build for every architecture it knows.
    os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
    print("torch_reduce: no GPU visible and TORCH_CUDA_ARCH_LIST unset; building for sm_90 (H100)")
# The C++ standard is left to torch.utils.cpp_extension: torch 2.4 builds with
# C++17, recent releases require C++20.
cxx_flags = ["-O3"]
link_flags = []
if sys.platform.startswith("linux"):
    # ATen's at::parallel_for is an OpenMP loop in the headers: without
    # -fopenmp an extension's CPU kernels run on one thread. (torch ships the
    # libgomp it uses, so the extension shares its thread pool.)
    cxx_flags.append("-fopenmp")
    link_flags.append("-fopenmp")
nvcc_flags = ["-O3", "-lineinfo", "--expt-relaxed-constexpr"]
if os.environ.get("TORCH_REDUCE_PTXAS_VERBOSE") == "1":
    nvcc_flags.append("-Xptxas=-v")
srcs = sources("csrc/*.cpp") + sources("csrc/cpu/*.cpp")
extension = CppExtension
define_macros = []
if with_cuda:
    srcs += sources("csrc/cuda/**/*.cu")
    extension = CUDAExtension
    define_macros.append(("TORCH_REDUCE_WITH_CUDA", None))

setup(
    name="torch_reduce",
    version="0.1.0",
    description="Fast, deterministic reductions for PyTorch, and the classic CUDA reduction ladder",
    packages=find_packages(include=["torch_reduce", "torch_reduce.*"]),
    ext_modules=[
        extension(
            "torch_reduce._C",
            srcs,
            include_dirs=[os.path.join(ROOT, "csrc")],
            define_macros=define_macros,
            extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags} if with_cuda else {"cxx": cxx_flags},
            extra_link_args=link_flags,
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    python_requires=">=3.9",
    install_requires=["torch>=2.4"],
)
