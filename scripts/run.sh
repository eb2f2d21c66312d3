#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and translate English to
# German with the shipped int8 model (models/en-de-tiny.int8.mtm: trained by
# mt_train, quantized by mt_quantize). MODEL=models/en-de-tiny.mtm runs fp32.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target mt_translate mt_model

model=${MODEL:-models/en-de-tiny.int8.mtm}
build/tools/mt_model info "$model"
echo "== English -> German, beam 5"
input=$(mktemp)
trap 'rm -f "$input"' EXIT
printf '%s\n' \
  "A man in a blue shirt is standing on a ladder." \
  "Two children are playing in the sand at the beach." \
  "A woman with a red jacket takes a picture of the mountains." > "$input"
build/tools/mt_translate -m "$model" --beam 5 < "$input" | paste -d '\n' "$input" - | sed 'n;s/^/   -> /'
