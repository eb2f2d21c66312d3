#!/usr/bin/env bash
# Trains English->Chinese on Tatoeba (../shared/data/tatoeba-cmn) with mt_train
# ("tiny" config, two threads, 88 minutes: the budget models/en-zh-tiny.mtm had),
# keeps the better of the best-dev-BLEU model and the mean of the last five
# evaluations (dev BLEU, beam 5), and scores it on the test set with BLEU's zh
# tokenization.
#   scripts/train_en_zh.sh [RUN_DIR]   (default runs/en-zh-tiny)
# The vocabulary keeps full-width punctuation (--normalization nmt_nfkc_cjk):
# nmt_nfkc folds ，？！ to ASCII, which the model then could never write.
# One { ... } block, read whole before it runs: editing the file during a
# run of an hour and more would otherwise change what bash reads next.
{
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data/tatoeba-cmn
run=${1:-runs/en-zh-tiny}
[ -f "$data/train.en" ] || { echo "train_en_zh.sh: $data is missing" >&2; exit 1; }

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target mt_train mt_translate mt_bleu

build/tools/mt_train --train-src "$data/train.en" --train-tgt "$data/train.zh" \
  --dev-src "$data/dev.en" --dev-ref "$data/dev.zh" --src-lang en --tgt-lang zh --out "$run" \
  --config tiny --vocab-size 8000 --character-coverage 0.9995 --byte-fallback --normalization nmt_nfkc_cjk \
  --max-tokens 4096 --lr 0.005 --warmup 1000 --dropout 0.3 --label-smoothing 0.1 --average-last 5 \
  --threads 2 --time-budget 88 --log-every 50

candidates=("$run/model_best.mtm")
if [ -f "$run/model_avg.mtm" ]; then candidates+=("$run/model_avg.mtm"); fi
./scripts/pick_by_dev_bleu.sh "$run/model.mtm" "$data/dev.en" "$data/dev.zh" zh "${candidates[@]}"

for beam in 1 5; do
  build/tools/mt_translate -m "$run/model.mtm" --beam "$beam" --threads 2 --batch-size 32 \
    < "$data/test.en" > "$run/test.beam$beam.zh"
  echo "== tatoeba test, beam $beam"
  build/tools/mt_bleu "$data/test.zh" -i "$run/test.beam$beam.zh" --tokenize zh
done
exit 0
}
