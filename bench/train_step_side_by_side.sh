#!/usr/bin/env bash
# One training step (forward + backward + Adam, 128 x 32 tokens, the "tiny"
# and "small" configs), libmt's bench_train_step against PyTorch's
# bench/torch_train_step.py with the same threads, run alternately ROUNDS
# times each; prints the best target tokens/s of each side and the ratio,
# as the table in docs/training.md.
#   bench/train_step_side_by_side.sh [BUILD_DIR] [ROUNDS]     (defaults: build 3)
# BUILD_DIR needs bench_train_step (configure with -DMT_BUILD_BENCHMARKS=ON,
# the default); PyTorch is Debian's python3-torch (/usr/bin/python3).
# Run it on an otherwise idle machine: it uses one core, then both.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
min_time=${MT_BENCH_MIN_TIME:-3}  # seconds of timed steps per config and run
bench=$build/bench/bench_train_step
[ -x "$bench" ] || { echo "train_step_side_by_side.sh: no $bench (cmake --build $build --target bench_train_step)" >&2; exit 2; }
/usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "train_step_side_by_side.sh: /usr/bin/python3 has no torch (apt install python3-torch)" >&2; exit 2; }
# Debian's torch calls whatever BLAS libblas.so.3 points to; without OpenBLAS
# that is the reference BLAS, and PyTorch's side would be timed on it.
/usr/bin/python3 -c 'import ctypes; ctypes.CDLL("libblas.so.3").openblas_get_corename' 2>/dev/null ||
  { echo "train_step_side_by_side.sh: libblas.so.3 is not OpenBLAS (scripts/install-deps.sh --bench installs it)" >&2; exit 2; }

declare -A best_mt best_torch
keep_best() {  # ARRAY KEY VALUE
  local -n array=$1
  if [ -z "${array[$2]:-}" ] || awk -v a="$3" -v b="${array[$2]}" 'BEGIN { exit !(a > b) }'; then array[$2]=$3; fi
}
core=?
for threads in 1 2; do
  for ((round = 1; round <= rounds; ++round)); do
    # "BM_train_step/tiny/min_time:3.000/real_time ... target_tokens/s=4.72507k/s"
    while read -r config rate; do keep_best best_mt "$config $threads" "$rate"; done < <(
      MT_BENCH_THREADS=$threads MT_BENCH_MIN_TIME=$min_time "$bench" 2>/dev/null | awk '/^BM_train_step/ {
        split($1, name, "/"); match($0, /target_tokens\/s=[0-9.]+[kM]?/); v = substr($0, RSTART + 16, RLENGTH - 16)
        scale = v ~ /k$/ ? 1e3 : v ~ /M$/ ? 1e6 : 1; sub(/[kM]$/, "", v); printf "%s %.0f\n", name[2], v * scale }')
    # "torch 1.13.0a0 cpu tiny  threads 1: 1.279 s/step, 3202 target tokens/s (2 steps, 2.36M params, OpenBLAS Cooperlake)"
    while read -r config rate kernel; do keep_best best_torch "$config $threads" "$rate"; core=$kernel; done < <(
      env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE MT_BENCH_THREADS=$threads \
        MT_BENCH_MIN_TIME=$min_time /usr/bin/python3 bench/torch_train_step.py \
        2>/dev/null | awk '/^torch/ { for (i = 1; i <= NF; ++i) if ($i == "target") rate = $(i - 1)
          kernel = $NF; sub(/\)$/, "", kernel); print $4, rate, kernel }')
  done
done

echo "| config | threads | mt_train | PyTorch | ratio |"
echo "|---|---|---|---|---|"
for config in tiny small; do
  for threads in 1 2; do
    key="$config $threads"
    awk -v c="$config" -v t="$threads" -v m="${best_mt[$key]:-0}" -v p="${best_torch[$key]:-0}" \
      'BEGIN { ratio = p > 0 ? sprintf("%.2f×", m / p) : "?"; printf "| %s | %d | %d | %d | %s |\n", c, t, m, p, ratio }'
  done
done
echo "(best of $rounds runs each, alternating; target tokens/s; PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') on OpenBLAS $core; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs)"
