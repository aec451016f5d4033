"""Which torch a build is made against.

A compiled extension only loads beside the torch release (major.minor) it was
built against. pip's isolated build installs its own torch into a temporary
environment, which need not be the one the library will run with: the build
backend (backend.py) asks for the user's torch there, and setup.py stops with
a message if the two still differ.
"""
import os
import subprocess
import sys

_PROBE = "import torch; print(torch.__version__); print(torch.version.cuda); print(torch.__file__)"
# What a build environment sets to hide the user's packages (pip's does).
_ISOLATING = ("PYTHONPATH", "PYTHONNOUSERSITE")


def user_torch():
    """(version, cuda, file) of the torch that this Python imports outside a
    build environment, or None if it has none."""
    env = {k: v for k, v in os.environ.items() if k not in _ISOLATING}
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.split("\n")
    if out.returncode != 0 or len(lines) < 3:
        return None
    version, cuda, path = lines[:3]
    return version, None if cuda == "None" else cuda, path


def release(version):
    """'2.14.1+cu130' -> '2.14'."""
    return ".".join(version.split("+")[0].split(".")[:2])


def build_requirement():
    """The torch to build against: the user's own release, where there is one."""
    found = user_torch()
    return f"torch=={found[0].split('+')[0]}" if found else "torch>=2.4"


def check_isolated_build():
    """Stops the build if it runs against another torch release than the user's
    (an isolated build environment that fetched a different torch)."""
    if not any(name in os.environ for name in _ISOLATING):
        return  # not isolated: the torch imported here is the user's own
    import torch

    found = user_torch()
    if found is None or os.path.realpath(found[2]) == os.path.realpath(torch.__file__):
        return
    ours = (release(torch.__version__), torch.version.cuda is not None)
    theirs = (release(found[0]), found[1] is not None)
    if ours != theirs:
        raise SystemExit(
            f"torch_reduce: this build environment has torch {torch.__version__} but the Python it is "
            f"for has torch {found[0]}; a library built here would not load there.\n"
            "Build against your own torch: pip install --no-build-isolation ."
        )
