#!/usr/bin/env bash
# Installs the dependencies, builds libmt and runs the whole test suite twice:
# optimised, then under AddressSanitizer + UndefinedBehaviorSanitizer; then
# the Python package built as a wheel and tested installed
# (scripts/test_python.sh), the concurrency tests under ThreadSanitizer,
# mt_translate under valgrind memcheck, each libFuzzer target for a minute,
# the WebAssembly build under Node.js (scripts/test_wasm.sh), and the aarch64 kernels and shipped
# model under qemu (scripts/test_aarch64.sh --smoke; the whole suite with
# MT_TEST_AARCH64=1).
# Tests that need ../shared/data skip without it. Builds use -j2.
set -euo pipefail
cd "$(dirname "$0")/.."

# section NAME: prints the time the previous section took, then the name
# (CI's budget is 40 minutes: the times say where it goes).
section_start=$SECONDS
section() {
  echo "   (took $((SECONDS - section_start)) s; $((SECONDS / 60)) min in all)"
  section_start=$SECONDS
  echo "== $1"
}

./scripts/install-deps.sh

section "release build and tests"
# No benchmarks: CI never runs them (scripts/bench.sh builds and runs them).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DMT_BUILD_BENCHMARKS=OFF
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
./scripts/ctest_skipped.sh build

section "Python package: wheel and sdist, installed in a fresh venv, python/tests"
./scripts/test_python.sh build

section "AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
# (CUDA code compiles in the release build above; no GPU runs it here.)
# (MPI stays out: LeakSanitizer reports Open MPI's own allocations; the release build runs its tests.)
# (The SentencePiece models the release build's tokenizer tests trained are read, not trained again.)
# (-g1: line tables only, enough for the reports' stacks; full -g made the
# build ~14% slower: one test file, 56 s against 49 s.)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
      -DMT_SANITIZE=address,undefined \
      -DMT_BUILD_BENCHMARKS=OFF -DMT_CUDA=OFF -DMT_MPI=OFF -DMT_TEST_CACHE_DIR="$PWD/build/tests/spm-cache"
cmake --build build-asan -j2
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j2
./scripts/ctest_skipped.sh build-asan

section "ThreadSanitizer: one model shared by sessions on threads"
./scripts/tsan.sh

section "valgrind memcheck: mt_translate runs"
./scripts/valgrind.sh build

section "libFuzzer: model files, the tokenizer, translate (60 s each, side by side)"
FUZZ_PARALLEL=1 ./scripts/fuzz.sh 60

section "WebAssembly: Emscripten build, the test suite and mt_translate.js under Node.js"
./scripts/test_wasm.sh

# aarch64 under qemu: the kernels and the shipped model's translations
# always; the whole suite opt-in (MT_TEST_AARCH64=1), it takes ~14 minutes.
if [ "${MT_TEST_AARCH64:-0}" = 1 ]; then
  section "aarch64: cross-build, the test suite under qemu-aarch64"
  ./scripts/test_aarch64.sh
else
  section "aarch64: cross-build, kernels and the shipped model's translations under qemu-aarch64"
  ./scripts/test_aarch64.sh --smoke
fi
section "done"

