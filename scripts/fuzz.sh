#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a while
# on a scratch copy of its committed seed corpus (fuzz/corpus/):
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    (default 60; model_file tokenizer translate)
#   FUZZ_PARALLEL=1 scripts/fuzz.sh 60                  (all targets at once, as CI runs them)
# A crash stops with the reproducing input saved as build-fuzz/crash-*; turn it
# into a regression test, fix, and add the input to the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model_file tokenizer translate)
CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_FUZZ=ON \
  -DMT_BUILD_TESTS=OFF -DMT_BUILD_BENCHMARKS=OFF -DMT_BUILD_TRAINER=OFF -DMT_BUILD_TOOLS=OFF -DMT_CUDA=OFF > /dev/null
cmake --build build-fuzz -j2 --target $(printf 'fuzz_%s ' "${targets[@]}")
# One target: its scratch corpus, its log; a crash leaves build-fuzz/crash-*.
fuzz_one() {
  local t=$1 work=build-fuzz/corpus-$1
  mkdir -p "$work"
  (cd build-fuzz && "./fuzz/fuzz_$t" "../$work" "../fuzz/corpus/$t" -max_total_time="$seconds" \
     -rss_limit_mb=4096 -print_final_stats=1 > "fuzz_$t.log" 2>&1)
}
# FUZZ_PARALLEL=1 runs the targets side by side (CI: about a minute in all).
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
  for t in "${targets[@]}"; do fuzz_one "$t" & done
  wait || true
else
  for t in "${targets[@]}"; do fuzz_one "$t" || true; done
fi
failed=0
for t in "${targets[@]}"; do
  echo "== fuzz_$t, $seconds s"
  grep -E "^(Done|stat::number_of_executed_units|SUMMARY)|ERROR|^==[0-9]+==" "build-fuzz/fuzz_$t.log" | head -40 || true
  grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|SUMMARY: " "build-fuzz/fuzz_$t.log" && failed=1
done
[ -z "$(ls build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* build-fuzz/oom-* 2>/dev/null)" ] || failed=1
[ $failed -eq 0 ] || { echo "fuzz.sh: a target failed; the reproducing input is build-fuzz/crash-* (or leak-, timeout-, oom-)" >&2; exit 1; }
