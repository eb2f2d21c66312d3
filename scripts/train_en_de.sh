#!/usr/bin/env bash
# Reproduces models/en-de-tiny.mtm: English->German on Multi30k with mt_train
# ("tiny" config, 85 minutes of training on two threads), then scores it on
# test_2016_flickr with mt_bleu. Needs ../shared/data/multi30k.
#   scripts/train_en_de.sh [RUN_DIR]   (default runs/en-de-tiny)
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/multi30k
run=${1:-runs/en-de-tiny}
[ -f "$data/train.en" ] || { echo "train_en_de.sh: $data is missing" >&2; exit 1; }

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target mt_train mt_translate mt_bleu

build/tools/mt_train --train-src "$data/train.en" --train-tgt "$data/train.de" \
  --dev-src "$data/val.en" --dev-ref "$data/val.de" --src-lang en --tgt-lang de --out "$run" \
  --config tiny --vocab-size 8000 --max-tokens 4096 --lr 0.005 --warmup 1500 --dropout 0.3 \
  --label-smoothing 0.1 --threads 2 --time-budget 85 --log-every 50

for beam in 1 5; do
  build/tools/mt_translate -m "$run/model_best.mtm" --beam "$beam" --threads 2 --batch-size 32 \
    < "$data/test_2016_flickr.en" > "$run/test.beam$beam.de"
  echo "== test_2016_flickr, beam $beam"
  build/tools/mt_bleu "$data/test_2016_flickr.de" -i "$run/test.beam$beam.de"
  build/tools/mt_bleu "$data/test_2016_flickr.de" -i "$run/test.beam$beam.de" --lowercase
done
