#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a while
# on a scratch copy of its committed seed corpus (fuzz/corpus/):
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]    (default 60; model_file tokenizer translate sentence_splitter html)
#   FUZZ_PARALLEL=1 scripts/fuzz.sh 60                  (all targets at once, as CI runs them)
# A crash stops with the reproducing input saved as build-fuzz/crash-*; turn it
# into a regression test, fix, and add the input to the corpus. Any target
# that exits non-zero (a finding, a slow input, or one that cannot start)
# fails the script, named.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(model_file tokenizer translate sentence_splitter html)
# Per input: libFuzzer's default (1200 s) is longer than a CI run, so a hang
# would pass unseen. Inputs take under a millisecond on average (CI: 100k to
# 240k executions per target in 60 s, five targets on two cores, under ASan),
# the tokenizer's a few milliseconds; 10 s is thousands of times that, so only
# a real hang or runaway loop trips
# it, leaving build-fuzz/timeout-*.
input_timeout=10
# The whole run of one target: -max_total_time plus start-up, the seed corpus
# and the final stats take a few seconds; this outer bound only catches
# libFuzzer itself not stopping.
run_timeout=$((seconds * 2 + 120))
CXX=clang++ CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMT_FUZZ=ON \
  -DMT_BUILD_TESTS=OFF -DMT_BUILD_BENCHMARKS=OFF -DMT_BUILD_TRAINER=OFF -DMT_BUILD_TOOLS=OFF -DMT_CUDA=OFF > /dev/null
cmake --build build-fuzz -j2 --target "${targets[@]/#/fuzz_}"
# The longest input a target is given (libFuzzer's -max_len; 0 lets it choose:
# the longest seed). The tokenizer's crafted-BPE seed is 4,001 bytes, which
# made nearly every input that long: 43 runs a second alone on the Zen 3,
# 715 in CI's shared minute. At 1,024 bytes: 219 a second, with more
# features found in the same 20 s. The linear cost of long inputs is
# tests/test_tokenizer_bounds.cpp's to check.
max_len_of() { case $1 in tokenizer) echo 1024 ;; *) echo 0 ;; esac; }
# One target: its scratch corpus, its log; returns the fuzzer's exit status
# (124 when the outer timeout stopped it). A crash leaves build-fuzz/crash-*.
fuzz_one() {
  local t=$1 work=build-fuzz/corpus-$1
  mkdir -p "$work"
  (cd build-fuzz && timeout -k 30 "$run_timeout" "./fuzz/fuzz_$t" "../$work" "../fuzz/corpus/$t" \
     -max_total_time="$seconds" -timeout="$input_timeout" -rss_limit_mb=4096 -print_final_stats=1 \
     -max_len="$(max_len_of "$t")" \
     < /dev/null > "fuzz_$t.log" 2>&1)
}
declare -A status=()
# FUZZ_PARALLEL=1 runs the targets side by side (CI: about a minute in all);
# each one is waited for by its pid so that every exit status is kept.
if [ "${FUZZ_PARALLEL:-0}" = 1 ]; then
  declare -A pids=()
  for t in "${targets[@]}"; do fuzz_one "$t" & pids[$t]=$!; done
  for t in "${targets[@]}"; do rc=0; wait "${pids[$t]}" || rc=$?; status[$t]=$rc; done
else
  for t in "${targets[@]}"; do rc=0; fuzz_one "$t" || rc=$?; status[$t]=$rc; done
fi
failed=()
for t in "${targets[@]}"; do
  echo "== fuzz_$t, $seconds s"
  grep -E "^(Done|stat::number_of_executed_units|SUMMARY)|ERROR|^==[0-9]+==" "build-fuzz/fuzz_$t.log" | head -40 || true
  rc=${status[$t]}
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "fuzz.sh: fuzz_$t did not stop within $run_timeout s (exit $rc): killed" >&2
    tail -5 "build-fuzz/fuzz_$t.log" >&2 || true
    failed+=("fuzz_$t")
  elif [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: fuzz_$t exited $rc (log: build-fuzz/fuzz_$t.log)" >&2
    tail -5 "build-fuzz/fuzz_$t.log" >&2 || true
    failed+=("fuzz_$t")
  elif grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|SUMMARY: " "build-fuzz/fuzz_$t.log"; then
    echo "fuzz.sh: fuzz_$t exited 0 but its log reports an error (build-fuzz/fuzz_$t.log)" >&2
    failed+=("fuzz_$t")
  fi
done
findings=$(find build-fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) -printf '%f ')
if [ -n "$findings" ]; then
  echo "fuzz.sh: reproducing inputs left in build-fuzz/: $findings" >&2
  [ ${#failed[@]} -gt 0 ] || failed+=("(an earlier run's findings)")
fi
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]} (see above; a finding's reproducing input is build-fuzz/crash-*, leak-, timeout- or oom-*)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} target(s) ran $seconds s each, no finding"
