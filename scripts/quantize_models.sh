#!/usr/bin/env bash
# Reproduces the int8 shipped models from the fp32 ones (models/*.int8.mtm)
# and prints test BLEU of fp32 and int8 side by side, greedy and beam 5.
# Calibration: the first 1,000 training sources; method chosen by dev BLEU
# (never the test set). Needs ../shared/data.
#   scripts/quantize_models.sh [en-de|en-zh ...]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
data=../shared/data
[ -d "$data/multi30k" ] || { echo "quantize_models.sh: $data is missing" >&2; exit 1; }
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target mt_quantize mt_translate mt_bleu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# score MODEL SRC REF TARGET_LANG [mt_bleu options]
score() {
  local model=$1 src=$2 ref=$3 lang=$4
  shift 4
  for beam in 1 5; do
    build/tools/mt_translate -m "$model" --beam "$beam" --threads 2 --batch-size 32 < "$src" > "$tmp/hyp.$lang"
    echo "== $(basename "$model"), beam $beam"
    build/tools/mt_bleu "$ref" -i "$tmp/hyp.$lang" "$@"
  done
}

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(en-de en-zh)
for pair in "${pairs[@]}"; do
  case $pair in
    en-de)
      corpus=$data/multi30k
      head -n 1000 "$corpus/train.en" > "$tmp/calibration.en"
      build/tools/mt_quantize models/en-de-tiny.mtm -c "$tmp/calibration.en" --method auto --force \
        --dev-src "$corpus/val.en" --dev-ref "$corpus/val.de" --report "$tmp/en-de.report.tsv"
      for m in models/en-de-tiny.mtm models/en-de-tiny.int8.mtm; do
        score "$m" "$corpus/test_2016_flickr.en" "$corpus/test_2016_flickr.de" de
      done ;;
    en-zh)
      corpus=$data/tatoeba-cmn
      head -n 1000 "$corpus/train.en" > "$tmp/calibration.en"
      build/tools/mt_quantize models/en-zh-tiny.mtm -c "$tmp/calibration.en" --method auto --force \
        --dev-src "$corpus/dev.en" --dev-ref "$corpus/dev.zh" --dev-tokenize zh
      for m in models/en-zh-tiny.mtm models/en-zh-tiny.int8.mtm; do
        score "$m" "$corpus/test.en" "$corpus/test.zh" zh --tokenize zh
      done ;;
    *) echo "quantize_models.sh: unknown pair '$pair' (en-de, en-zh)" >&2; exit 1 ;;
  esac
done
