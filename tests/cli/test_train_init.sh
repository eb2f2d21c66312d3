#!/usr/bin/env bash
# mt_train --init as a user fine-tunes: the shipped en-de-tiny on our own
# corpus for a few steps (dev loss measured at step 0, then lower), the
# fine-tuned model translating, --resume from the run's init.txt, and what
# cannot be fine-tuned refused with the reason before any work.
# Usage: test_train_init.sh BIN_DIR SCRATCH_DIR DATA_DIR MODELS_DIR
set -u
bin=$1
dir=$2
data=$3
models=$4
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# shellcheck source=tiny_train_args.sh
. "$(dirname "$0")/tiny_train_args.sh"
trainer_corpus "$data" "$dir"
args=(--train-src "$dir/train.en" --train-tgt "$dir/train.de" --dev-src "$dir/dev.en" --dev-ref "$dir/dev.de"
      --max-tokens 1000 --warmup 5 --lr 1e-4 --log-every 5 --threads 2)

"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --out "$dir/run" --max-steps 8 2> "$dir/train.err"
expect_exit "mt_train --init" 0 $?
for f in model_best.mtm model_last.mtm checkpoint.bin init.txt train.tsv dev.tsv; do
  check "writes $f" test -s "$dir/run/$f"
done
check "no vocabulary trained" test ! -e "$dir/run/vocab.model"
check "init.txt names the model" grep -q "en-de-tiny.mtm$" "$dir/run/init.txt"
# dev.tsv: header, step 0 (the shipped model), then the fine-tuned epochs.
check "dev.tsv starts at step 0" test "$(sed -n 2p "$dir/run/dev.tsv" | cut -f1)" = 0
first=$(sed -n 2p "$dir/run/dev.tsv" | cut -f3)
last=$(tail -1 "$dir/run/dev.tsv" | cut -f3)
check "fine-tuning lowers the dev loss ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.05) }'
"$bin/mt_model" info "$dir/run/model_last.mtm" > "$dir/info.txt"
expect_exit "mt_model info" 0 $?
check "keeps the model's shape" grep -q "^d_model  *128," "$dir/info.txt"
check "keeps its languages" grep -q "en -> de" "$dir/info.txt"
printf 'A man is walking along the river.\n' | "$bin/mt_translate" -m "$dir/run/model_last.mtm" > "$dir/out.txt"
expect_exit "mt_translate with the fine-tuned model" 0 $?
check "the fine-tuned model translates" test "$(wc -c < "$dir/out.txt")" -gt 5

# --resume reads init.txt; it ends where a straight run ends.
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --out "$dir/straight" --max-steps 12 2> /dev/null
expect_exit "a straight run of 12 steps" 0 $?
"$bin/mt_train" "${args[@]}" --out "$dir/run" --max-steps 12 --resume 2> "$dir/resume.err"
expect_exit "--resume" 0 $?
check "--resume continues" grep -q "resumed at step 8" "$dir/resume.err"
check "--resume ends on the straight run's model" cmp -s "$dir/run/model_last.mtm" "$dir/straight/model_last.mtm"

# --force starts a new model over the fine-tuning run: its init.txt goes with
# the rest, so --resume then continues the new model, not a fine-tuning of
# the old run's --init model.
cp -r "$dir/run" "$dir/forced"
"$bin/mt_train" "${args[@]}" "${tiny_model[@]}" --out "$dir/forced" --force --max-steps 2 2> "$dir/err.txt"
expect_exit "--force: a new model over a fine-tuning run" 0 $?
check "--force removes the old run's init.txt" test ! -e "$dir/forced/init.txt"
"$bin/mt_train" "${args[@]}" "${tiny_model[@]}" --out "$dir/forced" --max-steps 4 --resume 2> "$dir/err.txt"
expect_exit "--resume after --force" 0 $?
check "--resume after --force continues the new model" grep -q "resumed at step 2" "$dir/err.txt"

# --average-last: the last evaluations' models kept and averaged at the end.
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --out "$dir/avg" --max-steps 12 --average-last 2 \
  2> "$dir/avg.err"
expect_exit "--average-last 2" 0 $?
check "--average-last keeps the last 2 models" test "$(ls "$dir/avg/average" | wc -l)" -eq 2
check "--average-last writes model_avg.mtm with its dev BLEU" grep -q "models averaged: dev BLEU" "$dir/avg.err"
"$bin/mt_model" info "$dir/avg/model_avg.mtm" > "$dir/avg-info.txt"
check "model_avg.mtm says what it averaged" grep -q "averaged *2 models" "$dir/avg-info.txt"
check "model_avg.mtm carries the newest's steps" grep -q "steps *12" "$dir/avg-info.txt"
"$bin/mt_train" "${args[@]}" --out "$dir/avg1" --average-last 1 2> "$dir/err.txt"
expect_exit "--average-last 1" 2 $?

# What converted models have: swish here (the trainer computes it as the
# runtime; stored positions, start ids and the rest: test_trainer and
# torch_check), and Marian-style language tokens, which --tgt-lang picks and
# every training pair starts with.
"$bin/mt_model" random --config tiny --swish --vocab "$models/en-de-tiny.mtm" -o "$dir/swish.mtm" > /dev/null
"$bin/mt_model" set "$dir/swish.mtm" "language_tokens=>>fra<<=5 >>deu<<=6" language_placement=source_text \
  -o "$dir/multi.mtm" > /dev/null
expect_exit "mt_model set language tokens" 0 $?
"$bin/mt_train" "${args[@]}" --init "$dir/multi.mtm" --out "$dir/multi" --max-steps 6 2> "$dir/multi.err"
expect_exit "a multilingual model without its language" 1 $?
check "a multilingual model: says --tgt-lang must name one" grep -q "must name its languages" "$dir/multi.err"
"$bin/mt_train" "${args[@]}" --init "$dir/multi.mtm" --tgt-lang deu --out "$dir/multi" --max-steps 6 \
  2> "$dir/multi.err"
expect_exit "a multilingual swish model with --tgt-lang deu" 0 $?
first=$(sed -n 2p "$dir/multi/dev.tsv" | cut -f3)
last=$(tail -1 "$dir/multi/dev.tsv" | cut -f3)
check "it learns ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'
check "it keeps its language tokens" grep -q "language_tokens" <("$bin/mt_model" info "$dir/multi/model_last.mtm")

# Dev BLEU scores the --init model's target language: Chinese as sacreBLEU's
# zh does, whatever the files are named (the en-zh model's own translations
# of the shipped sentences as its corpus, in .txt files).
cp "$data/shipped_sentences.en" "$dir/zh-src.txt"
cp "$data/shipped_sentences.zh-tiny-fp32-greedy" "$dir/zh-ref.txt"
zh_args=(--train-src "$dir/zh-src.txt" --train-tgt "$dir/zh-ref.txt" --dev-src "$dir/zh-src.txt"
         --dev-ref "$dir/zh-ref.txt" --max-tokens 1000 --warmup 5 --lr 1e-5 --threads 2 --max-steps 1
         --init "$models/en-zh-tiny.mtm")
init_bleu() {  # OUT [OPTIONS...]: the --init model's dev BLEU as mt_train printed it
  local out=$1; shift
  "$bin/mt_train" "${zh_args[@]}" "$@" --out "$dir/$out" 2>&1 | sed -n 's/.*--init model: .* BLEU \([0-9.]*\).*/\1/p'
}
by_default=$(init_bleu zh-default)
as_zh=$(init_bleu zh-zh --dev-tokenize zh)
as_13a=$(init_bleu zh-13a --dev-tokenize 13a)
check "dev BLEU of an en-zh --init model is zh's ($by_default; zh $as_zh, 13a $as_13a)" \
  test -n "$by_default" -a "$by_default" = "$as_zh" -a "$as_zh" != "$as_13a"

# Refused before any work, with the reason.
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.int8.mtm" --out "$dir/int8" 2> "$dir/err.txt"
expect_exit "an int8 model" 1 $?
check "an int8 model: says to start from the fp32 one" grep -q "fine-tune the fp32 model it was quantized from" "$dir/err.txt"
check "an int8 model: nothing created" test ! -e "$dir/int8"
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --vocab-size 500 --out "$dir/x" 2> "$dir/err.txt"
expect_exit "--init with --vocab-size" 2 $?
check "--init with --vocab-size: says the model's vocabulary is used" grep -q "takes the model's shape and vocabulary: drop --vocab-size" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --resume --out "$dir/run" 2> "$dir/err.txt"
expect_exit "--init with --resume" 2 $?
"$bin/mt_train" "${args[@]}" --heads 8 --resume --out "$dir/run" --max-steps 12 2> "$dir/err.txt"
expect_exit "--resume of a fine-tuning run with --heads" 2 $?
check "--resume of a fine-tuning run with --heads: says to drop it" grep -q "shape and vocabulary: drop --heads" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --init "$models/en-de-tiny.mtm" --subword-alpha 0.3 --out "$dir/x" 2> "$dir/err.txt"
expect_exit "--init with --subword-alpha" 2 $?
check "--init with --subword-alpha: says why" grep -q "subword-alpha: not with a fine-tuning run" "$dir/err.txt"
check "--init with --subword-alpha: nothing created" test ! -e "$dir/x"
"$bin/mt_train" "${args[@]}" --resume --subword-alpha 0.3 --out "$dir/run" 2> "$dir/err.txt"
expect_exit "--resume of a fine-tuning run with --subword-alpha" 2 $?
check "--resume of a fine-tuning run with --subword-alpha: says why" grep -q "subword-alpha: not with a fine-tuning run" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --init "$dir/none.mtm" --out "$dir/x" 2> "$dir/err.txt"
expect_exit "a missing model" 1 $?
check "a missing model: named" grep -q "none.mtm" "$dir/err.txt"
head -c 5000 "$models/en-de-tiny.mtm" > "$dir/cut.mtm"
"$bin/mt_train" "${args[@]}" --init "$dir/cut.mtm" --out "$dir/x" 2> "$dir/err.txt"
expect_exit "a truncated model" 1 $?
check "a truncated model: nothing created" test ! -e "$dir/x"

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all mt_train --init checks passed"
