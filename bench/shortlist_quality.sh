#!/usr/bin/env bash
# A vocabulary shortlist's cost in quality, and its speed, on real text: for
# each K:F (target ids per source id : frequent ids), mt_shortlist build learns
# a shortlist from TRAIN, then SPLIT is translated greedy and beam 5 with it
# and with --no-shortlist (the same model file), one after the other. Prints a
# Markdown table: BLEU without and with, the share of identical lines, and the
# wall-time ratio of the two translations (whole file, one thread, load included).
#
#   bench/shortlist_quality.sh MODEL TRAIN_SRC TRAIN_TGT SPLIT_SRC SPLIT_REF "K:F ..." [BLEU_TOKENIZE] [--self-translations]
#
# e.g. (tune on val, report on test):
#   bench/shortlist_quality.sh models/en-de-tiny.int8.mtm ../shared/data/multi30k/train.{en,de} \
#     ../shared/data/multi30k/val.{en,de} "50:100 200:1000 400:2000"
set -euo pipefail
model=$1 train_src=$2 train_tgt=$3 src=$4 ref=$5 configs=$6 tokenize=${7:-13a} self=${8:-}
bin=${BIN:-build/tools}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bleu() { "$bin/mt_bleu" "$ref" -i "$1" --tokenize "$tokenize" | sed -n 's/^BLEU[^=]* = \([0-9.]*\) .*/\1/p'; }
identical() { paste -d '\t' "$1" "$2" | awk -F '\t' '$1 == $2' | wc -l; }
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" 2> /dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }

lines=$(wc -l < "$src")
echo "| K:F | candidates | search | BLEU whole | BLEU shortlist | identical | time whole / shortlist |"
echo "|---|---|---|---|---|---|---|"
for config in $configs; do
  k=${config%:*} f=${config#*:}
  "$bin/mt_shortlist" build "$model" --source "$train_src" --target "$train_tgt" -k "$k" --frequent "$f" \
    $self -o "$work/model.mtm" --force > "$work/built.txt"
  rows=$(sed -n 's/.*(\([0-9.]*\) a row.*/\1/p' "$work/built.txt")
  for beam in 1 5; do
    whole=$(seconds "$bin/mt_translate" -m "$work/model.mtm" --beam $beam --no-shortlist -i "$src" -o "$work/whole.txt")
    listed=$(seconds "$bin/mt_translate" -m "$work/model.mtm" --beam $beam -i "$src" -o "$work/listed.txt")
    same=$(identical "$work/whole.txt" "$work/listed.txt")
    printf "| %s:%s | %s a row | %s | %s | %s | %.1f%% | %.2fx |\n" "$k" "$f" "$rows" \
      "$([ $beam = 1 ] && echo greedy || echo "beam 5")" "$(bleu "$work/whole.txt")" "$(bleu "$work/listed.txt")" \
      "$(echo "100 * $same / $lines" | bc -l)" "$(echo "$whole / $listed" | bc -l)"
  done
done
