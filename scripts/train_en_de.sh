#!/usr/bin/env bash
# Reproduces models/en-de-tiny.mtm: English->German on Multi30k with mt_train
# ("tiny" config, 85 minutes of training on two threads), then scores it on
# test_2016_flickr with mt_bleu. Needs ../shared/data/multi30k.
#   scripts/train_en_de.sh [--recipe shipped|averaged] [RUN_DIR]   (default: shipped, runs/en-de-tiny)
# shipped:  the recipe models/en-de-tiny.mtm came from (1,500 warm-up updates,
#           the best dev-BLEU model).
# averaged: the candidate to replace it (docs/training.md): 1,000 warm-up
#           updates, the models of the last 20 evaluations (one per epoch)
#           kept, and the choice by dev BLEU (val, beam 5) among the best
#           model and the means of the last 5, 10 and 20 (the published
#           Transformer-tiny result averages the last ten checkpoints).
# The minutes are the budget; the updates they buy depend on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=shipped
if [ "${1:-}" = --recipe ]; then recipe=${2:-}; shift 2 || true; fi
case $recipe in
  shipped) warmup=1500 average=() ;;
  averaged) warmup=1000 average=(--average-last 20) ;;
  *) echo "usage: scripts/train_en_de.sh [--recipe shipped|averaged] [RUN_DIR]" >&2; exit 2 ;;
esac
data=../shared/data/multi30k
run=${1:-runs/en-de-tiny}
[ -f "$data/train.en" ] || { echo "train_en_de.sh: $data is missing" >&2; exit 1; }

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target mt_train mt_translate mt_bleu mt_model

build/tools/mt_train --train-src "$data/train.en" --train-tgt "$data/train.de" \
  --dev-src "$data/val.en" --dev-ref "$data/val.de" --src-lang en --tgt-lang de --out "$run" \
  --config tiny --vocab-size 8000 --max-tokens 4096 --lr 0.005 --warmup "$warmup" --dropout 0.3 \
  --label-smoothing 0.1 "${average[@]}" --threads 2 --time-budget 85 --log-every 50

model=$run/model_best.mtm
if [ "$recipe" = averaged ]; then
  # The means of the last N kept models (their names sort by step).
  mapfile -t kept < <(ls "$run"/average/step-*.mtm | sort)
  candidates=("$run/model_best.mtm")
  for n in 5 10 20; do
    [ "${#kept[@]}" -ge "$n" ] || continue
    build/tools/mt_model average "${kept[@]: -$n}" -o "$run/model_avg$n.mtm" --force
    candidates+=("$run/model_avg$n.mtm")
  done
  model=$run/model.mtm
  ./scripts/pick_by_dev_bleu.sh "$model" "$data/val.en" "$data/val.de" 13a "${candidates[@]}"
fi

for beam in 1 5; do
  build/tools/mt_translate -m "$model" --beam "$beam" --threads 2 --batch-size 32 \
    < "$data/test_2016_flickr.en" > "$run/test.beam$beam.de"
  echo "== test_2016_flickr, beam $beam"
  build/tools/mt_bleu "$data/test_2016_flickr.de" -i "$run/test.beam$beam.de"
  build/tools/mt_bleu "$data/test_2016_flickr.de" -i "$run/test.beam$beam.de" --lowercase
done
