#!/usr/bin/env bash
# The main job on a fresh machine: install, build, and translate text with a model.
# Until the trainer ships a trained model, the model has seeded random weights
# ("small" config) and carries a real vocabulary trained here on our own small
# corpus, so the whole text path runs: the words it outputs are random.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target mt_translate mt_model mt_vocab

vocab=build/demo.vocab
model=build/demo-small-random.mtm
[ -f "$vocab" ] || build/tools/mt_vocab train --input tests/data/text/corpus.txt --size 500 --soft-limit -o "$vocab"
[ -f "$model" ] || build/tools/mt_model random --config small --vocab "$vocab" --seed 1 -o "$model"
build/tools/mt_model info "$model"
echo "== translating 3 sentences, beam 4"
printf 'A man is walking along the river.\nTwo children look at a small boat.\nThe musician is painting a tall tree.\n' |
  build/tools/mt_translate -m "$model" --beam 4 --max-length 12 --scores
