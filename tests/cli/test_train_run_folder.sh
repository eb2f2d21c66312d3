#!/usr/bin/env bash
# mt_train's run folder from one invocation to the next: --resume restores
# the best dev BLEU and the early-stopping count and refuses options that
# would make it another run, a diverged run stops before it overwrites the
# last good checkpoint, --force starts over without the old run's files, and
# an empty training set, --lr 0 or a failed write stop with the reason.
# Usage: test_train_run_folder.sh BIN_DIR SCRATCH_DIR DATA_DIR
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
# train OPTIONS...: mt_train with args, an option given here replacing args' own.
train() {
  local kept=() i
  for ((i = 0; i < ${#args[@]}; i += 2)); do
    [[ " $* " == *" ${args[i]} "* ]] || kept+=("${args[i]}" "${args[i + 1]}")
  done
  "$bin/mt_train" "${kept[@]}" "$@"
}
steps() { "$bin/mt_model" info "$1" | awk '$1 == "steps" { print $2 }'; }
evaluations() { echo $(( $(wc -l < "$1/dev.tsv") - 1 )); }

train --out "$dir/run" --epochs 1 2> "$dir/err.txt"
expect_exit "one epoch" 0 $?
check "writes DIR/run.txt, the options that define the run" grep -q "^--seed	1$" "$dir/run/run.txt"

# --resume: an evaluation no better than the run's best (a rate of 1e-30
# leaves the weights as they are) keeps model_best.mtm. The optimizer's
# settings, threads and logging may change; a corpus moved elsewhere is the
# same corpus.
mkdir -p "$dir/moved"; cp "$dir/train.en" "$dir/moved/train.en"
cp "$dir/run/model_best.mtm" "$dir/best.before"
train --out "$dir/run" --epochs 2 --resume --lr 1e-30 --threads 1 --log-every 7 \
  --train-src "$dir/moved/train.en" 2> "$dir/err.txt"
expect_exit "--resume with another --lr, --threads, --log-every and a moved corpus" 0 $?
check "--resume evaluates" test "$(evaluations "$dir/run")" -eq 2
check "--resume keeps model_best.mtm when no better (steps $(steps "$dir/run/model_best.mtm"))" \
  cmp -s "$dir/run/model_best.mtm" "$dir/best.before"
# Early stopping counts the evaluations before the interruption: epoch 2 was
# one without a better BLEU, epoch 3 the second.
train --out "$dir/run" --epochs 6 --resume --lr 1e-30 --early-stopping 2 2> "$dir/err.txt"
expect_exit "--resume --early-stopping 2" 0 $?
check "--early-stopping counts the evaluations before --resume" grep -q "no better dev BLEU for 2 epochs" "$dir/err.txt"
check "and stops after epoch 3 ($(evaluations "$dir/run") evaluations)" test "$(evaluations "$dir/run")" -eq 3

# --resume refuses what would make it another run, naming the option, the
# run's value and the given one, before any work.
cp "$dir/run/checkpoint.bin" "$dir/checkpoint.before"
refused() {  # refused NAME PATTERN OPTIONS...: exits 2, says PATTERN, the checkpoint untouched
  local name=$1 pattern=$2; shift 2
  train --out "$dir/run" --epochs 9 --resume "$@" > /dev/null 2> "$dir/err.txt"
  expect_exit "--resume $name" 2 $?
  check "--resume $name: says so" grep -qe "$pattern" "$dir/err.txt"
}
refused "--seed 2" "--seed 2 here, 1 in the run" --seed 2
refused "--heads 2" "--heads 2 here, 4 in the run" --heads 2
refused "--gelu" "--gelu here, not in the run" --gelu
refused "--pre-norm" "--pre-norm here, not in the run" --pre-norm
refused "--max-tokens 500" "--max-tokens 500 here, 400 in the run" --max-tokens 500
refused "--max-train-length 50" "--max-train-length 50 here, 100 in the run" --max-train-length 50
refused "--vocab-size 300" "--vocab-size 300 here, 200 in the run" --vocab-size 300
refused "--subword-alpha 0.3" "--subword-alpha 0.3 here, 0 in the run" --subword-alpha 0.3
sed '1s/.*/Something else entirely./' "$dir/train.de" > "$dir/other.de"
refused "another --train-tgt" "--train-tgt '$dir/other.de' is not the file the run trained on" \
  --train-tgt "$dir/other.de"
check "--resume refused: the checkpoint untouched" cmp -s "$dir/run/checkpoint.bin" "$dir/checkpoint.before"

# A diverged run (a rate of 100 with full weight decay: the loss is NaN within
# ten updates) stops at once, exit 1, leaving the last good checkpoint and
# models; resumed with sane settings it trains on.
for f in checkpoint.bin model_last.mtm model_best.mtm; do cp "$dir/run/$f" "$dir/$f.good"; done
train --out "$dir/run" --epochs 9 --resume --lr 100 --weight-decay 1 > /dev/null 2> "$dir/err.txt"
expect_exit "a run that diverges" 1 $?
check "a diverged run: says so, one line" test "$(grep -c "diverged" "$dir/err.txt")" -eq 1
check "a diverged run: keeps the last good checkpoint and says to lower --lr" \
  grep -q "checkpoint.bin (step 63) is kept: --resume it with a lower --lr than 100" "$dir/err.txt"
for f in checkpoint.bin model_last.mtm model_best.mtm; do
  check "a diverged run: $f untouched" cmp -s "$dir/run/$f" "$dir/$f.good"
done
train --out "$dir/run" --epochs 4 --resume 2> "$dir/err.txt"
expect_exit "--resume after a divergence, with the run's own --lr" 0 $?
check "--resume after a divergence: resumed at the good checkpoint" grep -q "resumed at step 63" "$dir/err.txt"
train --out "$dir/diverged" --max-steps 30 --lr 100 --weight-decay 1 > /dev/null 2> "$dir/err.txt"
expect_exit "a new run that diverges" 1 $?
check "a new run that diverges: says to start over" grep -q "diverged before its first checkpoint" "$dir/err.txt"
check "a new run that diverges: no checkpoint" test ! -e "$dir/diverged/checkpoint.bin"
check "a new run that diverges: no model" test ! -e "$dir/diverged/model_last.mtm"

# An empty training set is refused with the reason: a target of blank lines
# before anything is created, every pair too long once the vocabulary is
# trained, instead of a crash.
sed 's/.*//' "$dir/train.de" > "$dir/blank.de"
train --out "$dir/blank" --train-tgt "$dir/blank.de" --max-steps 2 > /dev/null 2> "$dir/err.txt"
expect_exit "blank target lines" 1 $?
check "blank target lines: says so" grep -q "no pair of lines of '$dir/train.en' and '$dir/blank.de' has text on both sides" "$dir/err.txt"
check "blank target lines: nothing created" test ! -e "$dir/blank"
train --out "$dir/short" --max-train-length 1 --max-steps 2 > /dev/null 2> "$dir/err.txt"
expect_exit "--max-train-length 1" 1 $?
check "--max-train-length 1: says nothing is left, and why" \
  grep -q "no training pair left of 290: 290 longer than 1 token on a side.*raise --max-train-length" "$dir/err.txt"

# --force starts over: the old run's files go (a new run interrupted before
# its first checkpoint leaves nothing --resume would mix with its own), the
# user's own stay.
train --out "$dir/force" --epochs 2 --average-last 2 2> /dev/null
expect_exit "a run with --average-last 2" 0 $?
echo "my notes" > "$dir/force/notes.txt"
train --out "$dir/force" --force --max-train-length 1 > /dev/null 2> "$dir/err.txt"
expect_exit "--force, stopped before training" 1 $?
for f in checkpoint.bin model_best.mtm model_last.mtm model_avg.mtm average; do
  check "--force removes the old run's $f" test ! -e "$dir/force/$f"
done
check "--force keeps the user's files" grep -q "my notes" "$dir/force/notes.txt"
train --out "$dir/force" --resume --max-steps 2 > /dev/null 2> "$dir/err.txt"
expect_exit "--resume after an interrupted --force" 1 $?
check "--resume after an interrupted --force: nothing to continue" grep -q "holds no checkpoint.bin" "$dir/err.txt"
# --force with --vocab DIR/vocab.model: the run's input stays.
train --out "$dir/force" --force --vocab "$dir/force/vocab.model" --max-steps 2 2> "$dir/err.txt"
expect_exit "--force --vocab DIR/vocab.model" 0 $?

# --lr 0 would train nothing.
train --out "$dir/zero" --lr 0 --max-steps 2 > /dev/null 2> "$dir/err.txt"
expect_exit "--lr 0" 2 $?
check "--lr 0: says why" grep -q "lr 0: the weights would never change" "$dir/err.txt"
check "--lr 0: nothing created" test ! -e "$dir/zero"

# A vocabulary that cannot be written (a 64 KiB file size limit; the
# trained vocabulary is larger) stops the run there, leaving no truncated file.
(trap '' XFSZ; ulimit -f 64; train --out "$dir/full" --max-steps 2 > /dev/null 2> "$dir/err.txt")
expect_exit "vocab.model unwritable" 1 $?
check "vocab.model unwritable: says so" grep -q "cannot write '$dir/full/vocab.model'" "$dir/err.txt"
check "vocab.model unwritable: no truncated file" test ! -e "$dir/full/vocab.model"

# --force over a run whose DIR/average is a link to the user's own folder:
# the link goes, the folder and its files stay; a file of the user's in a
# real DIR/average stays too.
mkdir -p "$dir/kept" && echo mine > "$dir/kept/notes.txt" && echo mine > "$dir/kept/step-0000000001.mtm"
train --out "$dir/linked" --max-steps 2 > /dev/null 2>&1
ln -s "$dir/kept" "$dir/linked/average"
train --out "$dir/linked" --max-steps 2 --force > /dev/null 2> "$dir/err.txt"
expect_exit "--force over a linked DIR/average" 0 $?
check "--force: a linked DIR/average's files stay" test -e "$dir/kept/notes.txt" -a -e "$dir/kept/step-0000000001.mtm"
check "--force: the link itself goes" test ! -L "$dir/linked/average"
mkdir -p "$dir/linked/average" && echo mine > "$dir/linked/average/notes.txt"
train --out "$dir/linked" --max-steps 2 --force > /dev/null 2> "$dir/err.txt"
expect_exit "--force over DIR/average holding a user's file" 0 $?
check "--force: a user's file in DIR/average stays" test -e "$dir/linked/average/notes.txt"

# A dev set of lines under 4 bytes (a session's least) is evaluated.
printf 'Hi\nA\n' > "$dir/short.en"; printf 'Ha\nE\n' > "$dir/short.de"
train --out "$dir/short-dev" --max-steps 2 --dev-src "$dir/short.en" --dev-ref "$dir/short.de" > /dev/null 2> "$dir/err.txt"
expect_exit "a dev set of short lines" 0 $?

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all mt_train run folder checks passed"
