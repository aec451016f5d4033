"""The compiler guard: a built library must raise and catch a C++ error through
its ops before the build counts as done.

Some toolchains build a library that loads and computes, but kills the
process on the first error an op raises (the H100 image's g++ wrapper under
/opt/gcc mixes two libstdc++s). So after every build a child process loads
the library and makes each entry point raise. If that fails, the build is
done again with the system compiler, and the compiler that failed is written
to build/compilers.json so that later builds skip it from the start. Where no
other compiler is left, the build stops with a message naming the fix.
"""
import json
import os
import shutil
import subprocess
import sys

# Loads the library alone (not the package), then makes it raise through the
# dispatcher and through the module's fast path, on the CPU and, where there is
# one, the GPU. The errors come from the three places a throw can start: libc10
# (a dim out of range), an ATen header inlined into the library (a repeated dim)
# and the library's own checks (an empty reduction). The /opt/gcc wrapper's
# library survives the first and crashes on the other two.
_CHECK = r"""
import importlib.util, sys
import torch
spec = importlib.util.spec_from_file_location("torch_reduce._C", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
ops = torch.ops.torch_reduce
cuda = torch.cuda.is_available() and torch._C._dispatch_has_kernel_for_dispatch_key("torch_reduce::sum", "CUDA")
devices = ["cpu"] + (["cuda"] if cuda else [])
for device in devices:
    x, empty = torch.ones(3, 4, device=device), torch.ones(0, device=device)
    for name, call, error in (
        ("torch.ops.torch_reduce.sum, dim out of range", lambda: ops.sum(x, [5]), IndexError),
        ("torch.ops.torch_reduce.sum, repeated dim", lambda: ops.sum(x, [0, 0]), RuntimeError),
        ("torch.ops.torch_reduce.amax, empty dim", lambda: ops.amax(empty, [0]), IndexError),
        ("_C.sum, dim out of range", lambda: module.sum(x, 5, False), IndexError),
        ("_C.sum, repeated dim", lambda: module.sum(x, (0, 0), False), RuntimeError),
        ("_C.amax, empty dim", lambda: module.amax(empty, 0, False), IndexError),
    ):
        try:
            call()
        except error:
            continue
        sys.exit(f"{name} on {device}: raised no {error.__name__}")
"""

SYSTEM_COMPILERS = ("/usr/bin/gcc", "/usr/bin/g++")


def self_check(library):
    """None if the library raises and catches errors, else what went wrong."""
    result = subprocess.run([sys.executable, "-c", _CHECK, library], capture_output=True, text=True)
    if result.returncode == 0:
        return None
    how = f"killed by signal {-result.returncode}" if result.returncode < 0 else f"exit code {result.returncode}"
    return f"{how}: {(result.stderr or result.stdout).strip()[-600:]}"


def _current_cxx():
    cxx = os.environ.get("CXX", "c++")
    return os.path.realpath(shutil.which(cxx) or cxx)


class CompilerGuard:
    def __init__(self, build_dir):
        self.record_path = os.path.join(build_dir, "compilers.json")

    def _failed(self):
        try:
            with open(self.record_path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def _fallback(self):
        """The system compiler, where it is not the one that is in use."""
        if all(os.access(path, os.X_OK) for path in SYSTEM_COMPILERS) and _current_cxx() != os.path.realpath(
            SYSTEM_COMPILERS[1]
        ):
            return SYSTEM_COMPILERS
        return None

    def _use(self, compilers):
        os.environ["CC"], os.environ["CXX"] = compilers

    def skip_known_failures(self):
        """Before a build: if CXX failed the check before, build with the
        fallback instead (and say so)."""
        reason = self._failed().get(_current_cxx())
        fallback = self._fallback()
        if reason and fallback:
            print(f"torch_reduce: CXX={_current_cxx()} built a library that crashes on an error before "
                  f"({self.record_path}); building with {fallback[1]}")
            self._use(fallback)

    def check_or_switch(self, library):
        """After a build: True if the library is good; False if the compiler
        was switched and the build must be run again; raises if neither."""
        failure = self_check(library)
        if failure is None:
            print(f"torch_reduce: self-check passed (errors raise and are caught) for {library}")
            return True
        failed = self._failed()
        failed[_current_cxx()] = failure
        os.makedirs(os.path.dirname(self.record_path), exist_ok=True)
        with open(self.record_path, "w") as f:
            json.dump(failed, f, indent=1)
        fallback = self._fallback()
        if fallback:
            print(f"torch_reduce: the library built with CXX={_current_cxx()} failed the self-check "
                  f"({failure}); building again with {fallback[1]}")
            self._use(fallback)
            return False
        raise SystemExit(
            f"torch_reduce: the library built with CXX={_current_cxx()} crashes when an op raises an error "
            f"({failure}).\nBuild it with the compiler family torch was built with "
            "(torch.__config__.show() names it), e.g.\n"
            "  CC=/usr/bin/gcc CXX=/usr/bin/g++ pip install --no-build-isolation .\n"
            f"(and delete {self.record_path} to try this compiler again)."
        )
