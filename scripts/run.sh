#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and translate with a model.
# Until the trainer ships a real model, the model has seeded random weights
# ("small" config) and the input is token ids; the output is target token ids.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target mt_translate mt_model

model=build/small-random.mtm
[ -f "$model" ] || build/tools/mt_model random --config small --seed 1 -o "$model"
build/tools/mt_model info "$model"
echo "== translating 3 sentences (token ids), beam 4"
printf '17 204 99 3051 12\n7 7 7\n4000 12 845 1203 77 5 61 918\n' |
  build/tools/mt_translate -m "$model" --beam 4 --max-length 12 --scores
