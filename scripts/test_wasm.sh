#!/usr/bin/env bash
# libmt in WebAssembly: built with Debian's Emscripten (cmake/wasm.cmake:
# SIMD128, single-threaded), the test suite run by Node.js (web/translator.js
# included), then the shipped int8 model translates the committed sentences
# with mt_translate.js exactly as the native build does; prints the sizes.
#   scripts/test_wasm.sh [BUILD_DIR]   (default build-wasm)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-wasm}

command -v emcmake > /dev/null || { echo "test_wasm: emcmake not found (scripts/install-deps.sh installs emscripten)"; exit 1; }
command -v node > /dev/null || { echo "test_wasm: node not found"; exit 1; }
# Emscripten's own tools need Debian's node-acorn, which a Node.js not from
# Debian does not look for.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

emcmake cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2

# The same bytes as x86 (tests/test_shipped_models.cpp checks the native build against this file).
# Under a bound: a hang in Node.js would otherwise run until CI's own limit.
# The run takes 0.6 s here (start-up included); MT_WASM_TIMEOUT seconds to
# change the bound.
wasm_timeout=${MT_WASM_TIMEOUT:-120}
node=(timeout -k 10 "$wasm_timeout" node)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"${node[@]}" "$build/tools/mt_translate.js" --model models/en-de-tiny.int8.mtm --beam 1 \
  --max-length-ratio 2 --max-length-offset 10 < tests/data/shipped_sentences.en > "$out" || rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "test_wasm: node mt_translate.js TIMED OUT: still running after $wasm_timeout s, killed"
  exit 1
fi
[ $rc -eq 0 ] || { echo "test_wasm: node mt_translate.js FAILED (exit $rc)"; exit 1; }
if ! cmp -s "$out" tests/data/shipped_sentences.de-tiny-int8-greedy; then
  echo "test_wasm: mt_translate.js differs from the native translation:"
  diff "$out" tests/data/shipped_sentences.de-tiny-int8-greedy | head -20
  exit 1
fi
echo "test_wasm: mt_translate.js translates the 40 committed sentences as the native build"
size() { echo "$(stat -c %s "$1") bytes ($(gzip -9 -c "$1" | wc -c) gzipped)"; }
echo "test_wasm: mt_translate.wasm $(size "$build/tools/mt_translate.wasm"), libmt.wasm $(size "$build/web/libmt.wasm")," \
     "libmt.js $(size "$build/web/libmt.js")"
