#!/usr/bin/env bash
# mt_train as a user runs it: a tiny model on our own corpus for two epochs,
# its outputs, the exported model translating, --resume, and bad input.
# Usage: test_train.sh BIN_DIR SCRATCH_DIR DATA_DIR
set -u
bin=$1
dir=$2
data=$3
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# shellcheck source=tiny_train_args.sh
. "$(dirname "$0")/tiny_train_args.sh"
trainer_corpus "$data" "$dir"
tiny_train_args "$dir"
args+=(--threads 2)

"$bin/mt_train" "${args[@]}" --out "$dir/run" --epochs 2 2> "$dir/train.err"
expect_exit "mt_train" 0 $?
for f in model_best.mtm model_last.mtm checkpoint.bin vocab.model train.tsv dev.tsv; do
  check "writes $f" test -s "$dir/run/$f"
done
check "dev.tsv has one line per epoch" test "$(wc -l < "$dir/run/dev.tsv")" -eq 3
check "no progress bar when stderr is not a terminal" test "$(grep -c 'ETA' "$dir/train.err")" -eq 0
"$bin/mt_model" info "$dir/run/model_best.mtm" > "$dir/info.txt"
expect_exit "mt_model info" 0 $?
check "the model carries its metadata" grep -q "written by      mt_train" "$dir/info.txt"
check "and its vocabulary" grep -q "tokenizer       SentencePiece unigram" "$dir/info.txt"
printf 'A man is walking along the river.\nTwo children look at a small boat.\n' |
  "$bin/mt_translate" -m "$dir/run/model_best.mtm" --max-length 12 > "$dir/out.txt"
expect_exit "mt_translate with the exported model" 0 $?  # the pipeline's status is mt_translate's
check "the exported model translates" test "$(wc -l < "$dir/out.txt")" -eq 2

cp "$dir/run/vocab.model" "$dir/vocab.before"
"$bin/mt_train" "${args[@]}" --out "$dir/run" --epochs 3 --resume 2> "$dir/resume.err"
expect_exit "--resume" 0 $?
check "--resume leaves DIR/vocab.model as it was" cmp -s "$dir/run/vocab.model" "$dir/vocab.before"
check "--resume continues" grep -q "resumed at step" "$dir/resume.err"
check "--resume adds an epoch" test "$(wc -l < "$dir/run/dev.tsv")" -eq 4

# --vocab takes a libmt model's vocabulary as well as a SentencePiece .model:
# DIR/vocab.model is then the model's, as `mt_model vocab extract` writes it.
"$bin/mt_train" "${args[@]}" --vocab "$dir/run/model_best.mtm" --out "$dir/reuse" --max-steps 2 2> "$dir/err.txt"
expect_exit "--vocab MODEL.mtm" 0 $?
"$bin/mt_model" vocab extract "$dir/run/model_best.mtm" -o "$dir/extracted.model" > /dev/null
check "--vocab MODEL.mtm: the model's vocabulary" cmp -s "$dir/reuse/vocab.model" "$dir/extracted.model"
"$bin/mt_train" "${args[@]}" --vocab "$dir/train.en" --out "$dir/x" > /dev/null 2> "$dir/err.txt"
expect_exit "--vocab with a text file" 1 $?
check "--vocab with a text file: says what it needs" grep -q "is neither a SentencePiece .model nor a libmt model" "$dir/err.txt"
check "--vocab with a text file: nothing created" test ! -e "$dir/x"

"$bin/mt_train" --out "$dir/x" > /dev/null 2> "$dir/err.txt"
expect_exit "missing data" 2 $?
check "missing data: says what is required" grep -q "are required" "$dir/err.txt"
head -5 "$dir/train.de" > "$dir/short.de"
"$bin/mt_train" "${args[@]/$dir\/train.de/$dir/short.de}" --out "$dir/y" --epochs 1 > /dev/null 2> "$dir/err.txt"
expect_exit "misaligned files" 1 $?
check "misaligned files: says so" grep -q "must be aligned" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --out "$dir/z" --schedule cosine > /dev/null 2> "$dir/err.txt"
expect_exit "unknown schedule" 2 $?
check "unknown schedule: says so" grep -q "schedule = 'cosine': expected one of inverse_sqrt, noam" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --out "$dir/z" --dev-tokenize kanji > /dev/null 2> "$dir/err.txt"
expect_exit "unknown dev tokenizer" 2 $?
check "unknown dev tokenizer: says so" grep -q "dev-tokenize = 'kanji'" "$dir/err.txt"

"$bin/mt_train" "${args[@]}" --out "$dir/z" --device tpu > /dev/null 2> "$dir/err.txt"
expect_exit "unknown device" 2 $?
check "unknown device: says so" grep -q "device = 'tpu': expected one of cpu, cuda" "$dir/err.txt"

# Every option checked before any work: nothing created, no vocabulary trained.
"$bin/mt_train" "${args[@]}" --out "$dir/new/deep" --config huge > /dev/null 2> "$dir/err.txt"
expect_exit "unknown config" 2 $?
check "unknown config: nothing created" test ! -e "$dir/new"
"$bin/mt_train" "${args[@]}" --out "$dir/new" --heads 5 > /dev/null 2> "$dir/err.txt"
expect_exit "heads that do not divide d_model" 2 $?
check "heads that do not divide d_model: nothing created" test ! -e "$dir/new"
"$bin/mt_train" "${args[@]/$dir\/train.en/$dir/none.en}" --out "$dir/new" > /dev/null 2> "$dir/err.txt"
expect_exit "missing training file" 1 $?
check "missing training file: named, before any work" grep -q "cannot read '$dir/none.en': No such file" "$dir/err.txt"
check "missing training file: nothing created" test ! -e "$dir/new"
# Subword regularization trains; what it cannot do is refused before any work.
"$bin/mt_train" "${args[@]}" --out "$dir/sampled" --epochs 1 --subword-alpha 0.3 2> "$dir/err.txt"
expect_exit "--subword-alpha" 0 $?
check "--subword-alpha: says it samples" grep -q "subword sampling, alpha 0.3" "$dir/err.txt"
check "--subword-alpha: a model" test -s "$dir/sampled/model_best.mtm"
"$bin/mt_train" "${args[@]}" --out "$dir/bpe" --subword-alpha 0.3 --vocab-type bpe > /dev/null 2> "$dir/err.txt"
expect_exit "--subword-alpha with a BPE vocabulary" 2 $?
check "--subword-alpha with a BPE vocabulary: says why" grep -q "draws unigram segmentations: drop --vocab-type bpe" "$dir/err.txt"
check "--subword-alpha with a BPE vocabulary: nothing created" test ! -e "$dir/bpe"
"$bin/mt_train" "${args[@]}" --out "$dir/bpe" --subword-alpha -0.1 > /dev/null 2> "$dir/err.txt"
expect_exit "a negative --subword-alpha" 2 $?

# --cooldown: the last half of 10 updates decays linearly; update 10, the last,
# at a fifth of the schedule's rate (warm-up 10: 3e-3 * 10/10 / 5). train.tsv
# logs every 5th update (args' --log-every 5).
"$bin/mt_train" "${args[@]}" --out "$dir/cool" --max-steps 10 --cooldown 0.5 2> "$dir/err.txt"
expect_exit "--cooldown" 0 $?
check "--cooldown: update 10's lr is 6e-4" awk -F'\t' '$1 == 10 { ok = $5 > 5.999e-4 && $5 < 6.001e-4 } END { exit !ok }' "$dir/cool/train.tsv"
check "--cooldown: update 5's lr is the warm-up's 1.5e-3" awk -F'\t' '$1 == 5 { ok = $5 > 1.499e-3 && $5 < 1.501e-3 } END { exit !ok }' "$dir/cool/train.tsv"
# By the clock (--time-budget, no --max-steps): the logged rate over the
# schedule's (3e-3 * min(s / 10, sqrt(10 / s))) never above 1, never rising
# (within 1e-5: train.tsv prints 6 digits), and below 0.9 by the end of a
# 3-second run whose last half decays.
"$bin/mt_train" "${args[@]}" --out "$dir/cool-time" --time-budget 0.05 --cooldown 0.5 2> "$dir/err.txt"
expect_exit "--cooldown by the clock" 0 $?
awk -F'\t' 'NR > 1 { s = $1; f = $5 / (3e-3 * (s < 10 ? s / 10 : sqrt(10 / s))); print f }' \
  "$dir/cool-time/train.tsv" > "$dir/cool-time/ratios.txt"
check "--cooldown by the clock: logged" test "$(wc -l < "$dir/cool-time/ratios.txt")" -ge 3
check "--cooldown by the clock: never above the schedule, never rising, and decayed" awk \
  'NR > 1 && $1 > prev + 1e-5 { bad = 1 } $1 > 1 + 1e-5 { bad = 1 } { prev = $1 } END { exit bad || prev >= 0.9 }' \
  "$dir/cool-time/ratios.txt"
"$bin/mt_train" "${args[@]}" --out "$dir/cool2" --epochs 1 --cooldown 0.5 > /dev/null 2> "$dir/err.txt"
expect_exit "--cooldown without a length" 2 $?
check "--cooldown without a length: says why" grep -q "cooldown: needs --max-steps or --time-budget" "$dir/err.txt"
check "--cooldown without a length: nothing created" test ! -e "$dir/cool2"

# A run folder is not reused by accident.
"$bin/mt_train" "${args[@]}" --out "$dir/run" --epochs 1 > /dev/null 2> "$dir/err.txt"
expect_exit "an existing run without --resume or --force" 1 $?
check "an existing run: says how to go on" grep -q "holds a run already: --resume continues it, --force starts over" "$dir/err.txt"
"$bin/mt_train" "${args[@]}" --out "$dir/fresh" --resume > /dev/null 2> "$dir/err.txt"
expect_exit "--resume with nothing to resume" 1 $?
"$bin/mt_train" "${args[@]}" --out "$dir/z" --max-length 50 > /dev/null 2> "$dir/err.txt"
expect_exit "--max-length (translation's name)" 2 $?
check "--max-length: points to --max-train-length" grep -q "did you mean --max-train-length" "$dir/err.txt"
# Without nvcc or a GPU, --device cuda stops at once with the reason; with
# both it trains two steps and exits 0.
"$bin/mt_train" "${args[@]}" --out "$dir/cuda" --device cuda --max-steps 2 > /dev/null 2> "$dir/err.txt"
rc=$?
if [ $rc -ne 0 ]; then
  expect_exit "--device cuda unavailable" 1 $rc
  check "--device cuda unavailable: one line with the reason" grep -q "^mt_train: --device cuda: " "$dir/err.txt"
fi

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all mt_train checks passed"
