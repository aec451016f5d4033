"""The package around the ops: its version and build record, the refusal to
load beside another torch, the build's compiler guard, and where the
benchmarks write."""
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import torch_reduce
from torch_reduce import _library

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ".".join(torch.__version__.split("+")[0].split(".")[:2])


# --------------------------------------------------------------------------- #
# Version and build record
# --------------------------------------------------------------------------- #
def test_version_names_the_torch_and_cuda_it_was_built_for():
    cuda = "cu" + torch.version.cuda.replace(".", "") if torch_reduce.BUILT_WITH_CUDA else "cpu"
    assert re.fullmatch(rf"\d+\.\d+\.\d+\+torch{re.escape(RELEASE)}\.{cuda}", torch_reduce.__version__)


def test_build_info_describes_the_build():
    info = torch_reduce.build_info()
    assert info["version"] == torch_reduce.__version__
    assert info["torch"].split("+")[0].startswith(RELEASE + ".")
    assert info["compiler"]
    if torch_reduce.BUILT_WITH_CUDA:
        assert info["cuda"] == torch.version.cuda
        assert info["cuda_archs"] and all(re.fullmatch(r"\d+\.\d+a?(\+PTX|:PTX-only)?", a) for a in info["cuda_archs"])
        assert "nvcc" in info["nvcc"]
    else:
        assert info["cuda"] is None and info["cuda_archs"] == [] and info["nvcc"] is None


def test_build_info_is_a_copy():
    torch_reduce.build_info()["cuda_archs"].append("1.0")
    torch_reduce.build_info()["version"] = "changed"
    assert "1.0" not in torch_reduce.build_info()["cuda_archs"]
    assert torch_reduce.build_info()["version"] == torch_reduce.__version__


# --------------------------------------------------------------------------- #
# Loading beside another torch
# --------------------------------------------------------------------------- #
def _build(torch_version="2.14.1+cu130", cuda="13.0"):
    return {"version": "0.2.0+x", "torch": torch_version, "cuda": cuda}


@pytest.mark.parametrize(
    "build, torch_version, torch_cuda",
    [
        (_build(), "2.14.0", "13.0"),
        (_build(), "2.14.1+cu130", "13.2"),
        (_build("2.13.0+cpu", None), "2.13.0+cu130", "13.0"),  # a CPU build loads beside a CUDA torch
        (_build("2.13.0+cpu", None), "2.13.0", None),
    ],
)
def test_loads_beside_the_same_torch_release(build, torch_version, torch_cuda):
    assert _library.torch_mismatch(build, torch_version, torch_cuda) is None


@pytest.mark.parametrize(
    "build, torch_version, torch_cuda, says",
    [
        (_build(), "2.13.0+cu130", "13.0", "built against torch 2.14.1+cu130, but torch 2.13.0+cu130"),
        (_build(), "3.14.1", "13.0", "Install torch 2.14.*"),
        (_build(), "2.14.1+cpu", None, "is a CPU-only build"),
        (_build(), "2.14.1+cu129", "12.9", "built with CUDA 13.0, but torch 2.14.1+cu129 uses CUDA 12.9"),
    ],
)
def test_refuses_another_torch_and_says_how_to_rebuild(build, torch_version, torch_cuda, says):
    message = _library.torch_mismatch(build, torch_version, torch_cuda)
    assert says in message and "pip install --no-build-isolation" in message


def test_import_beside_another_torch_raises_import_error(tmp_path):
    # The package's Python files, with a build record naming another torch
    # release: the import must stop before it loads the library.
    package = tmp_path / "torch_reduce"
    shutil.copytree(Path(torch_reduce.__file__).parent, package, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    record = dict(torch_reduce.build_info(), torch="1.0.0")
    (package / "_build_info.py").write_text(f"BUILD = {record!r}\n")
    child = subprocess.run(
        [sys.executable, "-c", "import torch_reduce"], cwd=tmp_path, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(tmp_path)),
    )
    assert child.returncode != 0
    assert "ImportError: torch_reduce" in child.stderr and "built against torch 1.0.0" in child.stderr


# --------------------------------------------------------------------------- #
# The build: its compiler guard and the torch it builds against (build_support/)
# --------------------------------------------------------------------------- #
@pytest.fixture
def build_support(monkeypatch):
    """The build's own modules (build_support/), importable."""
    if not (ROOT / "build_support").is_dir():
        pytest.skip("the build's sources (build_support/) are not beside these tests")
    monkeypatch.syspath_prepend(str(ROOT / "build_support"))


@pytest.fixture
def compiler_guard(build_support, monkeypatch):
    import compiler_guard

    for name in ("CC", "CXX"):
        monkeypatch.delenv(name, raising=False)
    return compiler_guard


def test_built_library_passes_the_self_check(compiler_guard):
    assert compiler_guard.self_check(torch_reduce._C.__file__) is None


def test_self_check_fails_a_library_that_cannot_raise(compiler_guard, tmp_path):
    assert "exit code" in compiler_guard.self_check(str(tmp_path / "missing.so"))


def test_a_failing_compiler_is_replaced_by_the_system_one_and_remembered(compiler_guard, monkeypatch, tmp_path):
    if not all(os.access(p, os.X_OK) for p in compiler_guard.SYSTEM_COMPILERS):
        pytest.skip("no system compiler at " + ", ".join(compiler_guard.SYSTEM_COMPILERS))
    wrapper = tmp_path / "bin" / "g++"
    wrapper.parent.mkdir()
    wrapper.write_text("#!/bin/sh\nexec /usr/bin/g++ \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    monkeypatch.setattr(compiler_guard, "self_check", lambda library: "killed by signal 11: ")
    guard = compiler_guard.CompilerGuard(str(tmp_path / "build"))
    assert guard.check_or_switch("lib.so") is False  # build again ...
    assert os.environ["CXX"] == "/usr/bin/g++"  # ... with the system compiler
    # A later build skips the compiler that failed from the start.
    monkeypatch.setenv("CXX", str(wrapper))
    guard.skip_known_failures()
    assert os.environ["CXX"] == "/usr/bin/g++"
    # Where the system compiler fails too, the build stops, naming the fix.
    with pytest.raises(SystemExit, match="CC=/usr/bin/gcc CXX=/usr/bin/g\\+\\+ pip install --no-build-isolation"):
        guard.check_or_switch("lib.so")


def test_an_isolated_build_against_another_torch_stops(build_support, tmp_path):
    # An isolated build environment is one whose torch shadows the user's
    # (through PYTHONPATH, as pip's does): here a stand-in of another release.
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("__version__ = '2.4.1'\nclass version:\n    cuda = None\n")
    child = subprocess.run(
        [sys.executable, "-c", "import torch_versions; torch_versions.check_isolated_build()"],
        capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "build_support")])),
    )
    assert child.returncode != 0
    assert f"this build environment has torch 2.4.1 but the Python it is for has torch {torch.__version__}" in child.stderr
    assert "pip install --no-build-isolation ." in child.stderr


def test_the_build_asks_for_the_users_torch_release(build_support):
    import torch_versions

    assert torch_versions.build_requirement() == "torch==" + torch.__version__.split("+")[0]


# --------------------------------------------------------------------------- #
# Benchmarks write outside the tracked tree unless asked
# --------------------------------------------------------------------------- #
def test_benchmarks_write_to_an_untracked_folder_unless_saved(monkeypatch):
    if not (ROOT / "benchmarks").is_dir():
        pytest.skip("the benchmarks are not beside these tests")
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import argparse

    import harness
    import report

    parser = argparse.ArgumentParser()
    harness.add_common_args(parser)
    info = types.SimpleNamespace(kind="test")
    default, _ = report.output_paths(parser.parse_args([]).out, "sum", info)
    saved, _ = report.output_paths(parser.parse_args(["--save"]).out, "sum", info)
    assert default.parent == ROOT / "benchmarks" / "out"
    assert saved.parent == ROOT / "benchmarks" / "results"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(default)], cwd=ROOT)
    assert ignored.returncode in (0, 128)  # ignored, or not a git checkout
