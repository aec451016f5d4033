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

export MAX_JOBS="${MAX_JOBS:-$(nproc)}"
echo "== building torch_reduce (MAX_JOBS=$MAX_JOBS, TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-auto})"
"$PY" -m pip install -q --no-build-isolation --no-deps -e .
