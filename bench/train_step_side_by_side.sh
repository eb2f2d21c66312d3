#!/usr/bin/env bash
# One training step (forward + backward + Adam, 128 x 32 tokens, the "tiny"
# and "small" configs), libmt's bench_train_step against PyTorch's
# bench/torch_train_step.py with the same threads, run alternately ROUNDS
# times each; prints the best target tokens/s of each side and the ratio,
# as the table in docs/training.md. The last two columns are the floor no
# implementation beats: 2x PyTorch's step needs the step's products
# (train_step_gemm_flops, bench/train_step_batch.hpp) at that many GFLOP/s
# over the whole step, against the FMA loop's peak on the same threads
# (bench/fma_peak.hpp; best of the rounds too).
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

declare -A best_mt best_torch best_peak flops_per_token
keep_best() {  # ARRAY KEY VALUE
  local -n array=$1
  if [ -z "${array[$2]:-}" ] || awk -v a="$3" -v b="${array[$2]}" 'BEGIN { exit !(a > b) }'; then array[$2]=$3; fi
}
core=?
for threads in 1 2; do
  for ((round = 1; round <= rounds; ++round)); do
    # "BM_train_step/tiny/min_time:3.000/real_time ... GEMM_GFLOP/s=59.6749/s target_tokens/s=4.08784k/s"
    # "fma_peak_f32/avx2/min_time:0.500/real_time/threads:2 ... FLOPS=202.57G/s"
    while read -r config rate gflops; do
      if [ "$config" = peak ]; then keep_best best_peak "$threads" "$rate"; continue; fi
      keep_best best_mt "$config $threads" "$rate"
      flops_per_token[$config]=$(awk -v g="$gflops" -v r="$rate" 'BEGIN { printf "%.6g", g * 1e9 / r }')
    done < <(
      MT_BENCH_THREADS=$threads MT_BENCH_MIN_TIME=$min_time "$bench" --benchmark_filter='train_step|fma_peak' \
        2>/dev/null | awk 'function counter(key,   v, scale) {
          if (!match($0, key "=[0-9.]+[kMG]?")) return 0; v = substr($0, RSTART + length(key) + 1, RLENGTH - length(key) - 1)
          scale = v ~ /k$/ ? 1e3 : v ~ /M$/ ? 1e6 : v ~ /G$/ ? 1e9 : 1; sub(/[kMG]$/, "", v); return v * scale }
        /^BM_train_step/ { split($1, name, "/"); printf "%s %.0f %s\n", name[2], counter("target_tokens/s"), counter("GEMM_GFLOP/s") }
        /^fma_peak/ { printf "peak %.1f 0\n", counter("FLOPS") / 1e9 }')
    # "torch 1.13.0a0 cpu tiny  threads 1: 1.279 s/step, 3202 target tokens/s (2 steps, 2.36M params, OpenBLAS Cooperlake)"
    while read -r config rate kernel; do keep_best best_torch "$config $threads" "$rate"; core=$kernel; done < <(
      env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE MT_BENCH_THREADS=$threads \
        MT_BENCH_MIN_TIME=$min_time /usr/bin/python3 bench/torch_train_step.py \
        2>/dev/null | awk '/^torch/ { for (i = 1; i <= NF; ++i) if ($i == "target") rate = $(i - 1)
          kernel = $NF; sub(/\)$/, "", kernel); print $4, rate, kernel }')
  done
done

echo "| config | threads | mt_train | PyTorch | ratio | GEMM GFLOP/s: mt_train, 2× PyTorch | FMA peak |"
echo "|---|---|---|---|---|---|---|"
for config in tiny small; do
  for threads in 1 2; do
    key="$config $threads"
    awk -v c="$config" -v t="$threads" -v m="${best_mt[$key]:-0}" -v p="${best_torch[$key]:-0}" \
      -v f="${flops_per_token[$config]:-0}" -v peak="${best_peak[$threads]:-0}" 'BEGIN {
        # Rounded down: a cell shows 2.00× only when it is at 2× (1,999 / 1,000 shows 1.99×).
        ratio = p > 0 ? sprintf("%.2f×", int(100 * m / p) / 100) : "?"
        need = 2 * p * f / 1e9; share = peak > 0 ? sprintf(" (%.0f%% of peak)", 100 * need / peak) : ""
        printf "| %s | %d | %d | %d | %s | %.1f, %.1f%s | %.1f |\n", c, t, m, p, ratio, m * f / 1e9, need, share, peak }'
  done
done
echo "(best of $rounds runs each, alternating; target tokens/s; PyTorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)') on OpenBLAS $core; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs)"
