#!/usr/bin/env bash
# Builds main.cpp into a program that runs a torch_reduce AOTInductor package, against the torch
# of $PYTHON (default python3): its headers and libraries, and the Python library that torch_reduce's
# op library needs today (docs/DEPLOY.md, "From C++").
#
#   bash examples/aoti_cpp/build.sh [output, default build/aoti_cpp/every_op]
#
# No CMake: find_package(Torch) on a CUDA build of torch looks for the CUDA toolkit even for a
# CPU-only program; the paths come from Python instead.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
OUTPUT=${1:-build/aoti_cpp/every_op}
mkdir -p "$(dirname "$OUTPUT")"

# torch's folder; its C++ ABI flag; the folder and name of the shared libpython (libpython3.11.so).
read -r TORCH ABI PYLIBDIR PYLIB < <("$PYTHON" - <<'PY'
import os, sysconfig, torch
ldlib = sysconfig.get_config_var("LDLIBRARY")  # libpython3.11.so, or libpython3.11.a without --enable-shared
print(os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI), sysconfig.get_config_var("LIBDIR"),
      ldlib[len("lib"):].split(".so")[0] if ldlib.endswith(".so") or ".so." in ldlib else "-")
PY
)
if [ "$PYLIB" = "-" ]; then
  echo "build.sh: this Python has no shared libpython (built without --enable-shared); torch_reduce's" \
       "op library needs one to load outside Python (docs/DEPLOY.md)" >&2
  exit 1
fi

# --no-as-needed: libraries main.cpp calls nothing of, which --as-needed would drop. The package's
# compiled model needs libtorch.so; the op library, a Python extension module today, needs
# libtorch_python.so and libpython's symbols. RPATH (not RUNPATH): it also serves the libraries
# that the program loads itself (the op library, the package's model), so no LD_LIBRARY_PATH.
"${CXX:-g++}" -std=c++20 -O2 -D_GLIBCXX_USE_CXX11_ABI="$ABI" "$HERE/main.cpp" -o "$OUTPUT" \
  -I"$TORCH/include" -I"$TORCH/include/torch/csrc/api/include" \
  -L"$TORCH/lib" -L"$PYLIBDIR" -Wl,--disable-new-dtags,-rpath,"$TORCH/lib:$PYLIBDIR" \
  -ltorch_cpu -lc10 -Wl,--no-as-needed -ltorch -ltorch_python -l"$PYLIB" -Wl,--as-needed -ldl
echo "built $OUTPUT"
