#!/usr/bin/env bash
# Everything the GPU is needed for, in one call: build for the local GPU, the
# GPU tests, compute-sanitizer over every kernel, the wheel path and the
# benchmarks. Logs and results go to $OUT (default gpu_out/); benchmark files
# also to benchmarks/results/. Steps: any of build tests sanitize wheel bench
# (default all). The build is the README's (scripts/setup_env.sh), in the
# machine's own environment: its compiler guard deals with a CXX that builds a
# crashing library (the H100 image's default, a g++ wrapper under /opt/gcc).
#   bash scripts/gpu_session.sh [steps...]
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-gpu_out}"
mkdir -p "$OUT"
export TORCH_REDUCE_CUDA=1 MAX_JOBS="${MAX_JOBS:-$(nproc)}" PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-$(python3 -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability())')}"
steps=("${@:-build tests sanitize wheel bench}")
steps=(${steps[*]})
status=0

run() {  # run NAME COMMAND...: log to $OUT/NAME.log, record the exit code
  local name=$1; shift
  local start=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && status=1
  echo "$name: rc=$rc ($((SECONDS - start)) s)" | tee -a "$OUT/summary.txt"
  tail -n 4 "$OUT/$name.log"
}

for step in "${steps[@]}"; do
  case $step in
    build)
      run build bash -c 'source scripts/setup_env.sh'
      cp build/compilers.json "$OUT/" 2>/dev/null ;;
    tests)
      # Workers in separate processes (pytest-xdist, where installed): a
      # crash then fails one test, not the run.
      workers=$(python3 -c "import xdist" 2>/dev/null && echo "-n 4")
      run tests python3 -m pytest -q -rs $workers -p no:cacheprovider tests ;;
    sanitize)
      for tool in memcheck racecheck synccheck initcheck; do
        run "sanitize_$tool" compute-sanitizer --tool "$tool" --error-exitcode 9 python3 scripts/sanitizer_workload.py
      done ;;
    wheel)
      # No package index there: the fresh environment borrows this Python's torch.
      WHEEL_TORCH=borrow run wheel bash scripts/check_wheel.sh $(python3 -c "import xdist" 2>/dev/null && echo "-n 4") ;;
    bench)
      run bench_sum python3 benchmarks/bench_sum.py --save
      run bench_ladder python3 benchmarks/bench_ladder.py --save
      run bench_dims python3 benchmarks/bench_dims.py --save
      run bench_sweep python3 benchmarks/bench_sweep.py --save
      cp benchmarks/results/*_h100.* benchmarks/results/*_h200.* "$OUT/" 2>/dev/null ;;
    *) echo "unknown step $step"; status=1 ;;
  esac
done
# The device tool brings back only a few files: pack the logs into one.
tar -czf "$OUT/logs.tgz" -C "$OUT" $(cd "$OUT" && ls *.log) && rm -f "$OUT"/*.log
exit $status
