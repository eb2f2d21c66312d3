#!/usr/bin/env bash
# The working tree's fp32 GEMM kernel against BASE's (a commit), call by call
# in one process (bench/gemm_ab.cpp), on each shape "M N K" given (default:
# the tiny then the small training step's shapes, M = 4096 tokens or the
# output layer's 126-row blocks), on the core the command is pinned to.
#   bench/gemm_ab.sh [BASE] [SECONDS] [SHAPE...]      (defaults: HEAD 1)
#   e.g. taskset -c 0 bench/gemm_ab.sh HEAD~1 2 "4096 256 128"
# Builds with the AVX-512 flags where the CPU has AVX-512, else AVX2's;
# GEMM_AB_ISA=avx2 takes AVX2's kernel (6 x 1 tiles) on any x86-64 CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD} seconds=${2:-1}
shift $(($# < 2 ? $# : 2))
[ $# -gt 0 ] || set -- "4096 384 128" "4096 128 128" "4096 256 128" "4096 128 256" "126 8000 128" "128 128 4096" \
  "128 256 4096" "128 8000 4096" "4096 128 8000" "4096 768 256" "4096 1024 256" "4096 256 1024" "4096 256 768"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git show "$base:platforms/simd/gemm.hpp" | sed 's/^namespace mt::simd {/namespace mt::simd_base {/; s/^#pragma once//' \
  > "$dir/gemm_base.hpp"
grep -q 'namespace mt::simd_base {' "$dir/gemm_base.hpp" || { echo "gemm_ab.sh: no namespace mt::simd in $base's gemm.hpp" >&2; exit 1; }
if [ "${GEMM_AB_ISA:-}" != avx2 ] && grep -q avx512bw /proc/cpuinfo; then
  isa=(-mavx512f -mavx512bw -mavx512dq -mavx512cd -mavx512vl -mavx2 -mfma)
else isa=(-mavx2 -mfma)
fi
g++ -std=c++20 -O3 "${isa[@]}" -Iplatforms -Iplatforms/include -I"$dir" bench/gemm_ab.cpp -o "$dir/gemm_ab"
for shape in "$@"; do
  # shellcheck disable=SC2086  # a shape is three words
  "$dir/gemm_ab" $shape "$seconds"
done
