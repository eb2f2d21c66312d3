#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a while
# on a scratch copy of its committed seed corpus (fuzz/corpus/):
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    (default 60; model_file tokenizer translate)
# A crash stops with the reproducing input saved as build-fuzz/crash-*; turn it
# into a regression test, fix, and add the input to the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model_file tokenizer translate)
CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_FUZZ=ON \
  -DMT_BUILD_TESTS=OFF -DMT_BUILD_BENCHMARKS=OFF -DMT_BUILD_TRAINER=OFF -DMT_BUILD_TOOLS=OFF > /dev/null
cmake --build build-fuzz -j2 --target $(printf 'fuzz_%s ' "${targets[@]}")
for t in "${targets[@]}"; do
  work=build-fuzz/corpus-$t
  mkdir -p "$work"
  echo "== fuzz_$t, $seconds s"
  (cd build-fuzz && "./fuzz/fuzz_$t" "../$work" "../fuzz/corpus/$t" -max_total_time="$seconds" \
     -rss_limit_mb=4096 -print_final_stats=1 2>&1 | grep -E "^(Done|stat::number_of_executed_units|==|SUMMARY)|ERROR" || true)
  [ -z "$(ls build-fuzz/crash-* 2>/dev/null)" ] || { echo "fuzz.sh: fuzz_$t crashed" >&2; exit 1; }
done
