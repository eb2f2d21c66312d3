#!/usr/bin/env bash
# Sentences per second of mt_translate in WebAssembly (Node.js) against the
# native build, same model, same input, 1 thread, whole-process wall time
# (model load included), best of 3.
#   bench/wasm/speed.sh [NATIVE_BUILD] [WASM_BUILD]   (default build, build-wasm)
# Input: Multi30k test_2016_flickr English when ../shared/data is there,
# else the 40 committed sentences 25 times.
set -euo pipefail
cd "$(dirname "$0")/../.."
native=${1:-build}/tools/mt_translate
wasm=${2:-build-wasm}/tools/mt_translate.js
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

input=$(mktemp)
trap 'rm -f "$input"' EXIT
if [ -f ../shared/data/multi30k/test_2016_flickr.en ]; then
  cp ../shared/data/multi30k/test_2016_flickr.en "$input"
else
  for _ in $(seq 25); do cat tests/data/shipped_sentences.en; done > "$input"
fi
lines=$(wc -l < "$input")

best_seconds() {  # best_seconds COMMAND...: the fastest of 3 runs
  local best=""
  for _ in 1 2 3; do
    local start end
    start=$(date +%s.%N)
    "$@" < "$input" > /dev/null
    end=$(date +%s.%N)
    best=$(echo "$start $end ${best:-inf}" | awk '{ t = $2 - $1; print ($3 == "inf" || t < $3) ? t : $3 }')
  done
  echo "$best"
}

echo "$lines sentences, 1 thread, batch 16"
printf '%-22s %-8s %12s %12s %8s\n' model search native/s wasm/s ratio
for model in en-de-tiny.int8 en-de-tiny; do
  for beam in 1 4; do
    args=(--model "models/$model.mtm" --beam "$beam" --threads 1)
    n=$(best_seconds "$native" "${args[@]}")
    w=$(best_seconds node "$wasm" "${args[@]}")
    awk -v m="$model" -v b="$beam" -v l="$lines" -v n="$n" -v w="$w" \
      'BEGIN { printf "%-22s %-8s %12.1f %12.1f %7.2fx\n", m, (b == 1 ? "greedy" : "beam " b), l / n, l / w, n / w }'
  done
done
