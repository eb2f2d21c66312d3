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

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
missing=()
for p in g++-aarch64-linux-gnu qemu-user-static; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# SentencePiece and FlatBuffers for arm64, unpacked beside the build:
# installing SentencePiece's would remove the host's (not co-installable).
deps=$PWD/$build-deps
if [ ! -f "$deps/usr/lib/aarch64-linux-gnu/libsentencepiece.so" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo_cmd[@]}" dpkg --add-architecture arm64
    "${sudo_cmd[@]}" apt-get update -qq
  fi
  mkdir -p "$deps/debs"
  (cd "$deps/debs" && apt-get download -q libsentencepiece0:arm64 libsentencepiece-dev:arm64 \
                                          libflatbuffers2:arm64 libflatbuffers-dev:arm64)
  for deb in "$deps"/debs/*.deb; do dpkg-deb -x "$deb" "$deps"; done
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
