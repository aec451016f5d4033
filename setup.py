"""Builds torch_reduce._C: the C++ ops, their CPU kernels and, when CUDA is
available to the build, their CUDA kernels. Metadata is in pyproject.toml;
build_support/ holds the build's own pieces (see docs/INSTALL.md).

CUDA is decided from the toolchain, never from whether a GPU is present, so a
GPU-less build host (CI) still compiles every CUDA source:
  TORCH_REDUCE_CUDA=1  require the CUDA build (fail if nvcc or a CUDA torch is missing)
  TORCH_REDUCE_CUDA=0  build the CPU kernels only
  unset                CUDA when torch is a CUDA build and nvcc (CUDA_HOME) is found
Target GPUs follow TORCH_CUDA_ARCH_LIST; unset, the visible GPUs, or with none
visible the common ones (build_support/build_info.py). TORCH_REDUCE_PTX_ONLY=1
compiles them to PTX alone (CI: every source compiled, without ptxas).
"""
import glob
import os
import sys

import torch
from setuptools import setup
from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(ROOT, "build_support"))

import build_info  # noqa: E402
from build_ext import build_folder, make_build_ext  # noqa: E402
from compiler_guard import CompilerGuard  # noqa: E402
from kernel_units import generate as generate_kernel_units  # noqa: E402
from torch_versions import check_isolated_build  # noqa: E402

check_isolated_build()


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
tag = build_info.local_tag(with_cuda)
version = f"{build_info.base_version(ROOT)}+{tag}"
CompilerGuard(os.path.join(ROOT, "build")).skip_known_failures()

# The C++ standard is left to torch.utils.cpp_extension: torch 2.4 builds with
# C++17, recent releases require C++20.
# No contraction of a * b + c into one fused multiply-add: the CPU kernels are
# compiled for the baseline ISA, AVX2 and AVX-512 (csrc/cpu/vector_isa.h), and
# where only some of them fuse, results would depend on the processor.
# No debug information (-g0 overrides the -g of Python's own CFLAGS): for the
# kernels' many template instantiations it took a third of the CPU sources'
# compile time and nine tenths of their objects' size (docs/INSTALL.md).
cxx_flags = ["-O3", "-ffp-contract=off", "-g0"]
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
archs = ""
if with_cuda:
    archs, why = build_info.cuda_arch_list()
    os.environ["TORCH_CUDA_ARCH_LIST"] = archs
    if os.environ.get("TORCH_REDUCE_PTX_ONLY") == "1":
        # Explicit -gencode flags, which torch then adds none to.
        nvcc_flags = [f for f in nvcc_flags if f != "-O3"] + build_info.ptx_only_flags(archs)
        archs = build_info.ptx_only_archs(archs)
        why += ", PTX only (TORCH_REDUCE_PTX_ONLY=1)"
    srcs += sources("csrc/cuda/**/*.cu")
    extension = CUDAExtension
    define_macros.append(("TORCH_REDUCE_WITH_CUDA", None))
# The kernel units first: they take longest to compile (build_ext.py keeps this order).
srcs = generate_kernel_units(ROOT, with_cuda) + srcs

banner = (
    f"torch_reduce: building {version} ({len(srcs)} sources) for "
    + (f"CUDA archs {archs} ({why})" if with_cuda else "the CPU only")
    + f", MAX_JOBS={os.environ.get('MAX_JOBS', 'all cores')}, in {os.path.relpath(build_folder(ROOT, tag), ROOT)}"
)


def describe_build():
    nvcc = build_info.nvcc_description(CUDA_HOME) if with_cuda else None
    return version, with_cuda, archs, build_info.compiler_description(), nvcc


setup(
    version=version,
    install_requires=[build_info.torch_requirement()],
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
    cmdclass={"build_ext": make_build_ext(ROOT, tag, banner, describe_build)},
)
