#!/usr/bin/env bash
# Whether two revisions of the CUDA backend launch the same kernels, without a
# GPU: each revision's layout kernels (reduce_layout.cuh) run over the same
# views -- fixed shapes, then random ones (sizes, slices, transposes,
# expanded dims, permutes; six dtypes; nine ops of every kind of state) -- on a fake CUDA
# runtime (fake_cuda_runtime.cpp) that records each launch instead of making
# it: the kernel's mangled name (its template arguments), grid, block, shared
# bytes and whether it launched early, under five made-up devices (SMs, L2
# size). The fold orders, and so the results, follow from the kernels and
# their grids; argument values are not compared. Partials live on the CPU
# (the fake runtime has no memory): new_partials is patched to the CPU.
#   bash scripts/launch_diff/run.sh REV_A REV_B [CASES]   # e.g. main HEAD 5000
# Needs nvcc and the virtual environment's torch (scripts/setup_env.sh); about
# 10 minutes of 2 cores a revision to build (device code to PTX only).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cases="${3:-5000}"
torch_dir="$("$root/.venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
nvcc="${NVCC:-nvcc}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() {  # build REV DIR
  mkdir -p "$2/obj"
  git -C "$root" archive "$1" csrc | tar -x -C "$2"
  sed -i 's/at::TensorOptions().dtype(at::kByte).device(at::kCUDA, stream.device_index())/at::TensorOptions().dtype(at::kByte)/' \
    "$2/csrc/cuda/launch_columns.cuh"
  local flags=(-DTORCH_REDUCE_WITH_CUDA "-I$2/csrc" "-I$torch_dir/include" "-I$torch_dir/include/torch/csrc/api/include"
    -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ -D__CUDA_NO_BFLOAT16_CONVERSIONS__
    -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr -O1 -std=c++20
    -gencode=arch=compute_90,code=compute_90 -Xcicc -O0 -cudart none)
  local src
  for src in "$here/launch_cases.cu" "$here/fake_cuda_runtime.cpp" "$2"/csrc/{reduce_front_end,layout,reduce_dims,in_place_plans,algorithm}.cpp; do
    "$nvcc" "${flags[@]}" -c "$src" -o "$2/obj/$(basename "$src").o" &
  done
  wait
  "$nvcc" -cudart none "$2"/obj/*.o -o "$2/launch_cases" "-L$torch_dir/lib" -ltorch_cpu -lc10 -lc10_cuda \
    -Xlinker -rpath -Xlinker "$torch_dir/lib" -Xlinker -export-dynamic
}

build "$1" "$work/a"
build "$2" "$work/b"
status=0
# SMs, L2 bytes, seed: the H100's and H200's sizes, and small devices on which
# modest inputs outgrow the L2 and the waves.
for device in "132 52428800 11" "132 62914560 12" "114 52428800 13" "78 4194304 14" "16 2097152 15"; do
  set -- $device
  FAKE_SMS=$1 FAKE_L2=$2 "$work/a/launch_cases" "$cases" "$3" > "$work/a.log"
  FAKE_SMS=$1 FAKE_L2=$2 "$work/b/launch_cases" "$cases" "$3" > "$work/b.log"
  echo "$1 SMs, L2 $2 B: $(grep -c '^case' "$work/a.log") cases, $(grep -c 'launch ' "$work/a.log") launches of" \
    "$(grep 'launch ' "$work/a.log" | sed 's/ grid.*//' | sort -u | wc -l) kernels;" \
    "$(diff "$work/a.log" "$work/b.log" | grep -c '^[<>]' || true) lines differ"
  diff "$work/a.log" "$work/b.log" | head -20 || status=1
done
exit $status
