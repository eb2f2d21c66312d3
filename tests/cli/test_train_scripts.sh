#!/usr/bin/env bash
# scripts/train_en_de.sh's options: each reaches the mt_train command it
# names (--dry-run prints that command; nothing is built or trained, and
# ../shared is not needed), and a wrong option or value stops at the usage.
# Usage: test_train_scripts.sh SOURCE_DIR
set -u
script=$1/scripts/train_en_de.sh
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"

# has WORDS...: the last dry run's command holds WORDS in this order, side by side.
has() { [[ " $out " == *" $* "* ]]; }

out=$("$script" --dry-run)
expect_exit "the defaults" 0 $?
check "the CPU build's mt_train" test "${out%% *}" = build/tools/mt_train
for words in "--time-budget 85" "--lr 0.003" "--warmup 1000" "--dropout 0.2" "--max-tokens 4096" \
  "--vocab-size 8000" "--d-ff 256" "--subword-alpha 0" "--average-last 20" "--device cpu" "--threads 2" "--seed 1" \
  "--out runs/en-de-tiny"; do
  check "the defaults: $words" has $words
done

out=$("$script" --steps 8853 --lr 0.004 --warmup 2000 --dropout 0.2 --max-tokens 2048 --vocab-size 4000 \
  --d-ff 512 --subword-alpha 0.3 --cooldown 0.2 --seed 7 --dry-run runs/screen)
expect_exit "every recipe option" 0 $?
for words in "--max-steps 8853" "--lr 0.004" "--warmup 2000" "--dropout 0.2" "--max-tokens 2048" \
  "--vocab-size 4000" "--d-ff 512" "--subword-alpha 0.3" "--cooldown 0.2" "--seed 7" "--out runs/screen"; do
  check "options: $words" has $words
done
check "--steps replaces the time budget" test "$(grep -c -- --time-budget <<< "$out")" -eq 0
out=$("$script" --dry-run)
check "no cooldown unless asked" test "$(grep -c -- --cooldown <<< "$out")" -eq 0
out=$("$script" --cooldown 0.3 --dry-run)
check "--cooldown over the time budget" has --cooldown 0.3
check "--cooldown over the time budget: the budget" has --time-budget 85

out=$("$script" --recipe best --dry-run)
check "the best recipe's warm-up" has --warmup 1500
check "the best recipe's lr" has --lr 0.005
check "the best recipe's dropout" has --dropout 0.3
check "the best recipe keeps no models to average" test "$(grep -c -- --average-last <<< "$out")" -eq 0
out=$("$script" --recipe best --warmup 700 --lr 0.004 --dropout 0.1 --dry-run)
check "--warmup overrides the recipe's" has --warmup 700
check "--lr overrides the recipe's" has --lr 0.004
check "--dropout overrides the recipe's" has --dropout 0.1

out=$("$script" --device cuda --steps 5 --dry-run)
check "--device cuda runs the CUDA build's mt_train" test "${out%% *}" = build-cuda/tools/mt_train
check "--device cuda: mt_train's device" has --device cuda

# Wrong options and values: the usage on stderr, exit 2, nothing printed.
# --dry-run comes first, so that no wrong option can take it as its value:
# a case that got past the checks would print its command, never train.
err=$(mktemp)
trap 'rm -f "$err"' EXIT
for bad in "--lr" "--steps" "--steps 0" "--steps 12x" "--seed -3" "--seed x" "--recipe newest" "--device tpu" "--device cuda" \
  "--bogus" "runs/a runs/b"; do
  # shellcheck disable=SC2086  # the words of $bad are the arguments
  out=$("$script" --dry-run $bad 2> "$err")
  expect_exit "train_en_de.sh $bad" 2 $?
  check "train_en_de.sh $bad: the usage" grep -q "^usage: scripts/train_en_de.sh" "$err"
  check "train_en_de.sh $bad: no command" test -z "$out"
done

exit $((failures > 0))
