#!/usr/bin/env bash
# The package as a user gets it: builds an sdist and a wheel (reusing the
# in-place build's objects), checks that the sdist holds every tracked source,
# installs the wheel into a fresh virtual environment and runs tests against
# it from outside the source tree. Arguments go to pytest.
#   WHEEL_TESTS: the test files, in tests/ (default: those of what installing
#                changes -- finding and loading the package and its library, every
#                op through the Python entry points, torch's subsystems and
#                deployment through the installed library; the wheel holds the
#                in-place build's objects, whose semantics the whole suite has just
#                tested); "all" for the whole suite
#   WHEEL_TORCH=install (default): pip installs the torch the wheel requires
#                                  into the fresh environment
#   WHEEL_TORCH=borrow:            the fresh environment sees this Python's torch
#                                  and its packages (a machine with no package index,
#                                  e.g. the GPU's)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"

# From another folder: the source tree's build/ would pass for the package.
"$PY" -m pip show -q build 2>/dev/null || "$PY" -m pip install -q build
rm -rf dist
(cd "$(mktemp -d)" && logged_build "$ROOT/build/wheel.log" \
  "$PY" -m build --no-isolation --skip-dependency-check --sdist --wheel --outdir "$ROOT/dist" "$ROOT")
ls -l dist
"$PY" scripts/check_sdist.py dist/*.tar.gz

venv="$ROOT/build/wheel-venv"
rm -rf "$venv"
"$PY" -m venv "$venv"
if [ "${WHEEL_TORCH:-install}" = borrow ]; then
  "$PY" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' \
    > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/borrowed_torch.pth"
  "$venv/bin/python" -m pip install -q --no-deps dist/*.whl   # pytest and numpy are borrowed too
else
  "$venv/bin/python" -m pip install -q dist/*.whl pytest numpy 2>build/wheel-venv.log \
    || { cat build/wheel-venv.log; exit 1; }
fi

# From outside the source tree, so that `import torch_reduce` is the wheel's.
cd "$(mktemp -d)"
"$venv/bin/python" - <<'PY'
import torch_reduce, sysconfig
where = torch_reduce.__file__
assert where.startswith(sysconfig.get_paths()["purelib"]), f"torch_reduce imported from {where}, not the wheel"
print("== testing the installed wheel:", torch_reduce.__version__, "from", where)
print("   build_info:", torch_reduce.build_info())
PY
wheel_tests="${WHEEL_TESTS:-test_package.py test_python_entry.py test_models.py test_export.py test_autograd.py test_func.py test_explain.py}"
if [ "$wheel_tests" = all ]; then
  targets=("$ROOT/tests")
else
  targets=()
  for name in $wheel_tests; do targets+=("$ROOT/tests/$name"); done
fi
"$venv/bin/python" -m pytest -q -rs -p no:cacheprovider "${targets[@]}" "$@"
