# Sourced by test.sh and bench.sh: finds or makes a Python with torch >= 2.4,
# then builds torch_reduce into it. Sets $PY.
#
#  - A python3 that already has torch >= 2.4 is used as it is (a GPU machine
#    with its own PyTorch; nothing is downloaded).
#  - Otherwise a virtual environment .venv/ gets torch 2.14.1 (a CUDA build, so
#    that the CUDA sources compile even on a machine without a GPU).
# Environment: TORCH_REDUCE_CUDA=1 requires the CUDA build (CI sets it);
# TORCH_CUDA_ARCH_LIST picks the GPUs to build for; MAX_JOBS the parallelism.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

has_torch() {  # torch >= 2.4, and pytest for the tests
  "$1" - <<'PY' 2>/dev/null
import sys, pytest, torch
major, minor = (int(p) for p in torch.__version__.split(".")[:2])
sys.exit(0 if (major, minor) >= (2, 4) else 1)
PY
}

if has_torch python3; then
  PY=python3
else
  if [ ! -x .venv/bin/python ] || ! has_torch .venv/bin/python; then
    echo "== creating .venv with torch 2.14.1"
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --upgrade "setuptools>=70.1"
    .venv/bin/python -m pip install -q "torch==2.14.1" numpy pytest ninja
  fi
  PY="$ROOT/.venv/bin/python"
fi
if [ -n "${EXTRA_PACKAGES:-}" ]; then
  # Optional extras (plots, progress bar): skipped where they cannot be installed.
  "$PY" -m pip install -q $EXTRA_PACKAGES 2>/dev/null || echo "note: could not install $EXTRA_PACKAGES; continuing without"
fi
echo "== $("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())')"

# torch finds CUDA through the nvcc on PATH; where that is a link outside the
# toolkit (/usr/local/bin/nvcc), point it at the toolkit, whose lib64 has cudart.
if [ -z "${CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDA_HOME=/usr/local/cuda
fi

# Without a GPU, a caller that needs only the CPU kernels (the benchmark,
# which then times CPU tensors) says CPU_KERNELS_WITHOUT_GPU=1: it builds
# them alone, in minutes rather than the half hour of the CUDA sources,
# unless TORCH_REDUCE_CUDA asks otherwise.
# (Asked once: each question imports torch, seconds.)
if "$PY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then GPU_VISIBLE=1; else GPU_VISIBLE=0; fi
if [ "${CPU_KERNELS_WITHOUT_GPU:-0}" = 1 ] && [ -z "${TORCH_REDUCE_CUDA:-}" ] && [ "$GPU_VISIBLE" = 0 ]; then
  echo "== no GPU: building the CPU kernels only (TORCH_REDUCE_CUDA=1 builds the CUDA ones too)"
  export TORCH_REDUCE_CUDA=0
fi

# A development build without a GPU compiles for one architecture, sm_90:
# enough to compile every CUDA source and run the CPU tests, in a quarter of
# the time. (pip install . and wheels build for the common GPUs: docs/INSTALL.md.)
if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ] && [ "$GPU_VISIBLE" = 0 ]; then
  export TORCH_CUDA_ARCH_LIST=9.0
fi
export MAX_JOBS="${MAX_JOBS:-$(nproc)}"

# The build keeps its objects in build/ and recompiles only what changed.
# logged_build LOG COMMAND...: runs a build, showing what it builds and for
# which GPUs, then "[compiled/total] file" as ninja goes; the whole log goes to
# LOG, and its end is shown if the build fails. (check_wheel.sh uses it too.)
# The CPU time is bash's `time` of the whole build, compilers included: the
# measure of a build's cost that does not depend on the number of cores.
logged_build() {
  local log=$1; shift
  local start=$SECONDS status cpu user sys TIMEFORMAT='%U %S'
  echo "== $* (full log: $log)"
  set +e
  exec 3>&1
  cpu=$( { time { "$@" 2>&1 | tee "$log" | "$PY" "$ROOT/scripts/build_progress.py" >&3
                  (exit "${PIPESTATUS[0]}"); }; } 2>&1 )
  status=$?
  exec 3>&-
  set -e
  if [ "$status" -ne 0 ]; then
    echo "== the build failed; the end of $log:"
    tail -n 40 "$log"
    exit "$status"
  fi
  read -r user sys <<<"$cpu"
  echo "== built in $((SECONDS - start)) s (CPU time: ${user%.*} s user, ${sys%.*} s system)"
}

mkdir -p build
logged_build build/build.log "$PY" -m pip install -v --no-build-isolation --no-deps -e .
