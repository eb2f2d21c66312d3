#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and translate English to
# German with the shipped model (models/en-de-tiny.mtm, trained by mt_train).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target mt_translate mt_model

model=models/en-de-tiny.mtm
build/tools/mt_model info "$model"
echo "== English -> German, beam 5"
input=$(mktemp)
trap 'rm -f "$input"' EXIT
printf '%s\n' \
  "A man in a blue shirt is standing on a ladder." \
  "Two children are playing in the sand at the beach." \
  "A woman with a red jacket takes a picture of the mountains." > "$input"
build/tools/mt_translate -m "$model" --beam 5 < "$input" | paste -d '\n' "$input" - | sed 'n;s/^/   -> /'
