#!/usr/bin/env bash
# Sets up (see setup_env.sh), builds, and benchmarks torch_reduce against
# torch.sum: on the GPU if there is one, else on the CPU, for which it builds
# the CPU kernels alone. Arguments go to benchmarks/bench_sum.py (e.g. --quick).
set -euo pipefail
EXTRA_PACKAGES="matplotlib tqdm"
CPU_KERNELS_WITHOUT_GPU=1
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
"$PY" benchmarks/bench_sum.py "$@"
