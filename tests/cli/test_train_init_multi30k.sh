#!/usr/bin/env bash
# Fine-tuning on real text: the shipped en-de-tiny, mt_train --init on
# Multi30k's val set for 14 updates (two epochs), lowers its loss on val (the issue's
# check: a few minutes of domain data must move the model), and the model
# file round-trips through mt_translate. Skipped without ../shared/data.
# Usage: test_train_init_multi30k.sh BIN_DIR SCRATCH_DIR SHARED_DATA_DIR MODELS_DIR
set -u
bin=$1
dir=$2
shared=$3
models=$4
val=$shared/multi30k/val
if [ ! -s "$val.en" ] || [ ! -s "$val.de" ]; then
  echo "MT_TEST_SKIPPED: $val.en/.de are absent (../shared/data)"
  exit 0
fi
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
"$bin/mt_train" --init "$models/en-de-tiny.mtm" --train-src "$val.en" --train-tgt "$val.de" \
  --dev-src "$val.en" --dev-ref "$val.de" --out "$dir/run" --max-steps 14 --lr 1e-4 --warmup 10 \
  --threads 2 2> "$dir/train.err"
check "mt_train --init on Multi30k val" test $? -eq 0
first=$(sed -n 2p "$dir/run/dev.tsv" | cut -f3)
last=$(tail -1 "$dir/run/dev.tsv" | cut -f3)
check "val loss lower after 14 updates ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.02) }'
head -50 "$val.en" | "$bin/mt_translate" -m "$dir/run/model_last.mtm" > "$dir/out.de"
check "the fine-tuned model translates every line" test "$(wc -l < "$dir/out.de")" -eq 50
cat "$dir/run/dev.tsv"
if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all Multi30k fine-tuning checks passed"
