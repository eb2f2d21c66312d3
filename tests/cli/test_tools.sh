#!/usr/bin/env bash
# The command-line tools as a user runs them: outputs, exit codes, messages.
# Usage: test_tools.sh BIN_DIR SCRATCH_DIR DATA_DIR
set -u
bin=$1
dir=$2
data=$3
rm -rf "$dir"; mkdir -p "$dir"
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

model=$dir/tools-tiny.mtm
"$bin/mt_model" random --config tiny --seed 4 -o "$model" > /dev/null
check "mt_model random writes a model" test -s "$model"
"$bin/mt_model" info "$model" > "$dir/info.txt"
check "mt_model info describes it" grep -q "4 encoder + 4 decoder" "$dir/info.txt"
"$bin/mt_model" upgrade "$model" -o "$dir/upgraded.mtm" > /dev/null
check "mt_model upgrade rewrites a model byte for byte as the writer does" cmp -s "$model" "$dir/upgraded.mtm"

# Checkpoint averaging: a model with itself translates as itself; an int8 or
# lone model is refused with the reason.
"$bin/mt_model" average "$model" "$model" -o "$dir/self-average.mtm" > /dev/null
check "mt_model average writes the mean" test -s "$dir/self-average.mtm"
printf '5 6 7\n100 200 300\n' | "$bin/mt_translate" -m "$model" --max-length 8 > "$dir/plain.txt"
printf '5 6 7\n100 200 300\n' | "$bin/mt_translate" -m "$dir/self-average.mtm" --max-length 8 > "$dir/averaged.txt"
check "a model averaged with itself translates as itself" cmp -s "$dir/plain.txt" "$dir/averaged.txt"
check "the average says so in its metadata" grep -q "averaged *2 models" <("$bin/mt_model" info "$dir/self-average.mtm")
# The newest (last) file's steps, no dev BLEU of one model.
"$bin/mt_model" set "$model" steps=10 dev_bleu=30.5 -o "$dir/step10.mtm" > /dev/null
"$bin/mt_model" set "$model" steps=20 dev_bleu=31.5 -o "$dir/step20.mtm" > /dev/null
"$bin/mt_model" average "$dir/step10.mtm" "$dir/step20.mtm" -o "$dir/steps-average.mtm" > /dev/null
"$bin/mt_model" info "$dir/steps-average.mtm" > "$dir/steps-average.txt"
check "the average keeps the last file's steps" grep -qx "steps *20" "$dir/steps-average.txt"
check "the average carries no model's dev BLEU" bash -c "! grep -q dev_bleu '$dir/steps-average.txt'"
"$bin/mt_model" average "$model" -o "$dir/one.mtm" > /dev/null 2> "$dir/average-err.txt"
check "mt_model average of one model is a usage error" test $? -eq 2 -a ! -e "$dir/one.mtm"
printf '5 6 7\n100 200 300\n' > "$dir/calibration.txt"
"$bin/mt_quantize" "$model" --calibration "$dir/calibration.txt" -o "$dir/average.int8.mtm" > /dev/null 2>&1
"$bin/mt_model" average "$model" "$dir/average.int8.mtm" -o "$dir/mixed.mtm" > /dev/null 2> "$dir/average-err.txt"
check "mt_model average refuses int8 with the reason" grep -q "is int8: average the fp32 models" "$dir/average-err.txt"

"$bin/mt_model" random --config tiny --max-positions 64 -o "$dir/p64.mtm" > /dev/null
echo "5 6 7" | "$bin/mt_translate" -m "$dir/p64.mtm" --max-length 4 > "$dir/p64.txt"
check "the default --max-source-length follows a model with fewer positions" test -s "$dir/p64.txt"
"$bin/mt_model" check "$model" > "$dir/check.txt"
check "mt_model check passes a sound model" grep -q "ok (format version" "$dir/check.txt"
cp "$model" "$dir/nan.mtm"   # the weights fill the end of the file: make one of them NaN
printf '\xff\xff\xff\xff' | dd of="$dir/nan.mtm" bs=1 seek=$(( $(stat -c %s "$model") - 4096 )) conv=notrunc status=none
"$bin/mt_model" check "$dir/nan.mtm" > /dev/null 2> "$dir/check-err.txt"
check "mt_model check reports a NaN weight" test $? -ne 0 -a -n "$(grep "holds a NaN at element" "$dir/check-err.txt")"

printf '5 6 7\n\n100 200 300 400\n9' > "$dir/in.txt"   # an empty line, no final newline
"$bin/mt_translate" -m "$model" --max-length 8 --beam 1 < "$dir/in.txt" > "$dir/out.txt"
check "one output line per input line" test "$(wc -l < "$dir/out.txt")" -eq 4
"$bin/mt_translate" -m "$model" --max-length 8 --beam 1 --batch-size 1 -i "$dir/in.txt" > "$dir/out1.txt"
check "batch size does not change the output" cmp -s "$dir/out.txt" "$dir/out1.txt"
"$bin/mt_translate" -m "$model" --max-length 8 --beam 1 --threads 2 < "$dir/in.txt" > "$dir/out2.txt"
check "threads do not change the output" cmp -s "$dir/out.txt" "$dir/out2.txt"
for split in layers sentences; do
  "$bin/mt_translate" -m "$model" --max-length 8 --beam 3 --threads 3 --thread-split $split < "$dir/in.txt" > "$dir/out-$split.txt"
  "$bin/mt_translate" -m "$model" --max-length 8 --beam 3 < "$dir/in.txt" > "$dir/out-beam3.txt"
  check "--thread-split $split does not change the output" cmp -s "$dir/out-beam3.txt" "$dir/out-$split.txt"
done
"$bin/mt_translate" -m "$model" --thread-split rows < "$dir/in.txt" > /dev/null 2> "$dir/split-err.txt"
check "a wrong --thread-split is refused by name" grep -q "thread-split = 'rows': expected one of automatic, layers, sentences" "$dir/split-err.txt"
"$bin/mt_translate" -m "$model" --max-length 8 --beam 3 --nbest 2 --scores < "$dir/in.txt" > "$dir/nbest.txt"
# 2 per line; the empty line has one empty hypothesis (score 0).
check "n-best writes beam lines with index and score" test "$(grep -c '^[0-9]* ||| .* ||| -' "$dir/nbest.txt")" -eq 6
check "n-best gives an empty line --nbest empty hypotheses" test "$(grep -c '^1 |||  ||| 0' "$dir/nbest.txt")" -eq 2
"$bin/mt_translate" -m "$model" --max-length 8 --beam 3 --nbest 2 < "$dir/in.txt" > "$dir/nbest-plain.txt"
check "n-best without --scores: INDEX ||| TEXT" test "$(grep -c '|||.*|||' "$dir/nbest-plain.txt")" -eq 0 -a \
  "$(grep -c '^[0-9]* ||| ' "$dir/nbest-plain.txt")" -eq 8
check "n-best without --scores: the same texts" \
  cmp -s <(sed 's/ ||| [^|]*$//' "$dir/nbest.txt") "$dir/nbest-plain.txt"
"$bin/mt_translate" --help > /dev/null
check "--help exits 0" test $? -eq 0

expect_error() {  # expect_error NAME WORDS ARGS...
  local name=$1 words=$2; shift 2
  "$@" < "$dir/in.txt" > /dev/null 2> "$dir/err.txt"
  local rc=$?
  check "$name: non-zero exit" test $rc -ne 0
  check "$name: says '$words'" grep -q -- "$words" "$dir/err.txt"
}
expect_error "no model" "a model is required" "$bin/mt_translate"
expect_error "missing model file" "cannot open" "$bin/mt_translate" -m "$dir/none.mtm"
expect_error "not a model" "not a libmt model" "$bin/mt_translate" -m "$dir/in.txt"
expect_error "beam 0" "--beam" "$bin/mt_translate" -m "$model" --beam 0
expect_error "nbest > beam" "--nbest must not exceed --beam" "$bin/mt_translate" -m "$model" --beam 2 --nbest 3
expect_error "unknown option" "unknown option --bogus" "$bin/mt_translate" -m "$model" --bogus 1
expect_error "threads 0" "--threads" "$bin/mt_translate" -m "$model" --threads 0
printf '5 x 7\n' > "$dir/bad.txt"
expect_error "bad ids" "line 1" "$bin/mt_translate" -m "$model" -i "$dir/bad.txt"
printf '5 9999999\n' > "$dir/oov.txt"
expect_error "id outside the vocabulary" "outside the model's vocabulary" "$bin/mt_translate" -m "$model" -i "$dir/oov.txt"
expect_error "unknown preset" "unknown model preset" "$bin/mt_model" random --config huge -o "$dir/x.mtm"

# Text in, text out: a vocabulary trained with mt_vocab, embedded by mt_model.
vocab=$dir/tools.vocab
"$bin/mt_vocab" train --input "$data/text/corpus.txt" --vocab-size 600 --soft-limit --byte-fallback -o "$vocab" > /dev/null
check "mt_vocab train writes a vocabulary" test -s "$vocab"
"$bin/mt_vocab" info "$vocab" > "$dir/vocab-info.txt"
check "mt_vocab info describes it" grep -q "unigram" "$dir/vocab-info.txt"
text_model=$dir/tools-text.mtm
"$bin/mt_model" random --config tiny --vocab "$vocab" -o "$text_model" > /dev/null
"$bin/mt_model" info "$text_model" > "$dir/text-info.txt"
check "the model carries the tokenizer" grep -q "tokenizer       SentencePiece unigram" "$dir/text-info.txt"
# Empty and blank lines, invalid UTF-8, a NUL byte, a tab, no final newline.
printf 'A man is walking along the river.\n\n   \n\xff\xfe broken \xc3\nnul\x00byte\ttab\nEin Hund' > "$dir/text-in.txt"
"$bin/mt_translate" -m "$text_model" --max-length 6 < "$dir/text-in.txt" > "$dir/text-out.txt"
check "text: exit 0" test $? -eq 0
check "text: one output line per input line" test "$(wc -l < "$dir/text-out.txt")" -eq 6
"$bin/mt_translate" -m "$text_model" --max-length 6 --ids <<< "5 6 7" > "$dir/ids-out.txt"
check "--ids translates ids with a text model" grep -qE '^[0-9 ]*$' "$dir/ids-out.txt"
head -c 3000 /dev/zero | tr '\0' 'a' > "$dir/long.txt"; echo >> "$dir/long.txt"; echo "short" >> "$dir/long.txt"
expect_error_in() {  # like expect_error with an input file
  local name=$1 words=$2 input=$3; shift 3
  "$@" < "$input" > /dev/null 2> "$dir/err.txt"
  local rc=$?
  check "$name: non-zero exit" test $rc -ne 0
  check "$name: says '$words'" grep -q -- "$words" "$dir/err.txt"
}
expect_error_in "too long with --strict" "line 1 has [0-9]* tokens; --max-source-length is 20" "$dir/long.txt" \
  "$bin/mt_translate" -m "$text_model" --max-source-length 20 --strict
"$bin/mt_translate" -m "$text_model" --max-source-length 20 --max-length 4 --strict < "$dir/long.txt" > "$dir/long-out.txt" 2> /dev/null
check "too long with --strict: the other line is translated" test -n "$(sed -n 2p "$dir/long-out.txt")"
check "too long with --strict: an empty line in its place" test -z "$(sed -n 1p "$dir/long-out.txt")"
expect_error_in "longer than --max-line-bytes, --strict" "line 1 has 3000 bytes; --max-line-bytes is 100" "$dir/long.txt" \
  "$bin/mt_translate" -m "$text_model" --max-line-bytes 100 --strict
for how in default --truncate; do
  flag=(); [ $how = --truncate ] && flag=(--truncate)
  "$bin/mt_translate" -m "$text_model" --max-source-length 20 --max-length 4 "${flag[@]}" < "$dir/long.txt" > "$dir/long-out.txt" 2> "$dir/long-err.txt"
  check "long line ($how): exit 0" test $? -eq 0
  check "long line ($how): warns about line 1" grep -q "line 1 was truncated" "$dir/long-err.txt"
  check "long line ($how): both lines translated" test "$(grep -c . "$dir/long-out.txt")" -eq 2
done

# The progress line: on a terminal only.
for i in $(seq 150); do echo "A dog is running past the river $i."; done > "$dir/many.txt"
"$bin/mt_translate" -m "$text_model" --beam 1 --max-length 3 --batch-size 64 < "$dir/many.txt" > "$dir/many-out.txt" 2> "$dir/many-err.txt"
check "150 lines in, 150 out" test "$(wc -l < "$dir/many-out.txt")" -eq 150
check "no progress line when stderr is not a terminal" test ! -s "$dir/many-err.txt"
if command -v script > /dev/null; then
  script -qec "'$bin/mt_translate' -m '$text_model' --beam 1 --max-length 3 --batch-size 64 -i '$dir/many.txt' 2>&1 >/dev/null" /dev/null > "$dir/tty.txt"
  check "a progress line on a terminal" grep -q "150 sentences, [0-9]* words/s" "$dir/tty.txt"
fi

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all tool checks passed"
