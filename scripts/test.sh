#!/usr/bin/env bash
# Sets up (see setup_env.sh), builds, and runs the test suite. CUDA tests run
# when a GPU is present and are skipped, with the reason, when not.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
"$PY" -m pytest -q -rs tests "$@"
