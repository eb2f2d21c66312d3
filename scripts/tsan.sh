#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency tests (CI's TSan job): builds only
# test_concurrency, test_decoder, test_streaming, test_cache, test_alignments and test_shortlist in build-tsan with
# -fsanitize=thread and runs them, leaving out the cases tagged [one_thread]: they start no thread,
# so TSan has nothing to check in them, and they were most of its time (test_cache: 260 of 268 s).
# (The release and ASan suites hold them to it: tests/one_thread_check.cpp.)
# A data race, a lock-order report or a failed test fails it.
#   scripts/tsan.sh            (MT_JOBS=1 scripts/tsan.sh on a busy machine)
set -euo pipefail
cd "$(dirname "$0")/.."
build="build-tsan"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DMT_SANITIZE=thread \
  -DMT_BUILD_TRAINER=OFF -DMT_BUILD_TOOLS=OFF -DMT_BUILD_BENCHMARKS=OFF -DMT_CUDA=OFF > /dev/null
build_started=$SECONDS
cmake --build "$build" -j"${MT_JOBS:-2}" --target test_concurrency test_decoder test_streaming test_cache test_alignments test_shortlist
echo "   (the TSan build took $((SECONDS - build_started)) s)"
# halt_on_error: stop at the first report, with TSan's non-zero exit code.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
# Without address randomisation where setarch can: the TSan runtime of older
# compilers cannot place its shadow memory on kernels that randomise mmap
# with more bits (vm.mmap_rnd_bits = 32) and aborts before the first test.
norandom=()
if setarch "$(uname -m)" -R true 2> /dev/null; then norandom=(setarch "$(uname -m)" -R); fi
# A deadlock would otherwise hang CI until its own limit: each test gets a
# bound far above its normal time (the longest, test_concurrency, took 184 to
# 238 s on a 2-core AMD EPYC Zen 3; the first test to pass the bound fails
# the run), MT_TSAN_TIMEOUT seconds to change it.
tsan_timeout=${MT_TSAN_TIMEOUT:-900}
for t in test_concurrency test_decoder test_streaming test_cache test_alignments test_shortlist; do
  echo "== $t (ThreadSanitizer)"
  started=$SECONDS
  rc=0
  timeout -k 30 "$tsan_timeout" "${norandom[@]}" "$build/tests/$t" "~[one_thread]" || rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "tsan: $t TIMED OUT: still running after $tsan_timeout s (a deadlock?), killed" >&2
    exit 1
  fi
  [ $rc -eq 0 ] || { echo "tsan: $t FAILED (exit $rc)" >&2; exit 1; }
  echo "   ($t: $((SECONDS - started)) s under TSan)"
done
