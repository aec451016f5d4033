#!/usr/bin/env bash
# A manual job for the torch releases CI does not build against: makes a
# virtual environment with the given torch (build/torch-<version>-venv), builds
# the CPU extension against it (TORCH_REDUCE_CUDA=0; a CUDA build would need
# that release's CUDA toolkit) and runs the test suite. Arguments after the
# version go to pytest.
#   bash scripts/check_torch.sh 2.4.1
# It leaves the in-place library built for that torch: run scripts/test.sh
# afterwards to build for your own again (a relink, from the kept objects).
set -euo pipefail
version=${1:?usage: bash scripts/check_torch.sh TORCH_VERSION [pytest arguments]}
shift
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$ROOT/build/torch-$version-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade "setuptools>=70.1"
  "$venv/bin/python" -m pip install -q "torch==$version" numpy pytest ninja
fi
PATH="$venv/bin:$PATH" TORCH_REDUCE_CUDA=0 bash "$ROOT/scripts/test.sh" "$@"
