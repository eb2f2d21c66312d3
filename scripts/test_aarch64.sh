#!/usr/bin/env bash
# libmt on aarch64: cross-built with Debian's g++-aarch64-linux-gnu and the
# whole test suite run under qemu-aarch64-static (the NEON kernels against
# the references, the shipped int8 model's translations against x86's).
#   scripts/test_aarch64.sh [--smoke] [BUILD_DIR]   (default build-aarch64)
# --smoke (every CI run): only the kernel tests against the references, the
# shipped int8 model's translations against x86's and the heapless test.
# The whole suite is opt-in in CI (MT_TEST_AARCH64=1 scripts/test.sh): it
# takes longer than the rest. Under emulation the stress tests run lighter
# (as under ASan).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
build=${1:-build-aarch64}

# Nothing is installed or downloaded here: scripts/install-deps.sh (CI's
# install step) puts the cross compiler and qemu on the machine and unpacks
# SentencePiece's and FlatBuffers' arm64 packages in build-aarch64-deps/.
deps=$PWD/build-aarch64-deps
missing=()
command -v aarch64-linux-gnu-g++ > /dev/null || missing+=("aarch64-linux-gnu-g++ (package g++-aarch64-linux-gnu)")
command -v qemu-aarch64-static > /dev/null || missing+=("qemu-aarch64-static (package qemu-user-static)")
[ -f "$deps/.complete" ] || missing+=("the arm64 SentencePiece and FlatBuffers packages unpacked in $deps/")
if [ ${#missing[@]} -gt 0 ]; then
  echo "test_aarch64: FAILED: missing:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  echo "test_aarch64: run scripts/install-deps.sh (it installs all of them), then this again" >&2
  exit 1
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE=platforms/toolchains/aarch64-linux-gnu.cmake -DMT_AARCH64_DEPS="$deps"
if [ $smoke = 1 ]; then
  smoke_tests=(test_kernels test_kernels_int8 test_shipped_models test_heapless)
  cmake --build "$build" -j2 --target "${smoke_tests[@]}"
  ctest --test-dir "$build" --output-on-failure --no-tests=error -j2 -R "^($(IFS='|'; echo "${smoke_tests[*]}")):"
  exit 0
fi
cmake --build "$build" -j2
# The concurrency stress with ASan's count: qemu is slower still. The corpus
# parity tests train SentencePiece vocabularies of up to 32k pieces on the
# corpora (minutes each under qemu): the fixture parity tests run instead.
MT_STRESS_TRANSLATIONS=160 ctest --test-dir "$build" --output-on-failure -j2 -E 'tokenizer corpus parity'
