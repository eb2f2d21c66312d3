#!/usr/bin/env bash
# mt_quantize as a user runs it: a small random fp32 model in, an int8 model
# out that mt_translate and mt_model read; every refusal is one line, exit 1,
# and leaves no file behind.
# Usage: test_quantize.sh BIN_DIR SCRATCH_DIR
set -u
bin=$1
dir=$2
rm -rf "$dir"   # the "nothing written" checks need an empty directory
mkdir -p "$dir"
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# max-positions 32 keeps the translations of a random model (which rarely
# stops) short, so each run takes a fraction of a second.
model=$dir/fp32.mtm
"$bin/mt_model" random --config tiny --seed 7 --max-positions 32 -o "$model" > /dev/null
cp "$model" "$dir/fp32-copy.mtm"
printf '5 6 7\n100 200 300 400\n9 10\n42 43 44 45 46 47\n7000 12 3000\n' > "$dir/calibration.txt"
: > "$dir/empty.txt"
layers() {  # layers DTYPE: report lines of the last run's layers in DTYPE
  grep -cE "^[a-z0-9_/]+ +$1 " "$dir/log.txt"
}
translate() {  # translate MODEL: ids in, ids out
  "$bin/mt_translate" -m "$1" --max-source-length 31 --max-length 8 --beam 2 < "$dir/calibration.txt"
}

"$bin/mt_quantize" --help > "$dir/help.txt"
check "--help exits 0" test $? -eq 0
check "--help prints the usage" grep -q "usage: mt_quantize MODEL --calibration FILE" "$dir/help.txt"

expect_error() {  # expect_error NAME WORDS OUTPUT ARGS...: exit $want (1; 2 for usage errors), one line saying WORDS, no OUTPUT
  local name=$1 words=$2 output=$3; shift 3
  "$bin/mt_quantize" "$@" > /dev/null 2> "$dir/err.txt"
  local rc=$?
  check "$name: exit $want" test $rc -eq "$want"
  check "$name: one line" test "$(wc -l < "$dir/err.txt")" -eq 1
  check "$name: says '$words'" grep -q -- "$words" "$dir/err.txt"
  if [ -n "$output" ]; then check "$name: writes nothing" test ! -e "$output"; fi
}
want=2  # usage errors
expect_error "no arguments" "a model file is required" ""
expect_error "unknown option" "unknown option --bogus" "$dir/x.mtm" "$model" -c "$dir/calibration.txt" -o "$dir/x.mtm" --bogus 1
expect_error "no calibration" "--calibration FILE is required" "$dir/x.mtm" "$model" -o "$dir/x.mtm"
expect_error "bad --activations" "--activations = 'static': expected one of calibrated, dynamic" "$dir/x.mtm" \
  "$model" -c "$dir/calibration.txt" -o "$dir/x.mtm" --activations static
expect_error "a method not offered" "unknown calibration method 'best'.*or auto" "$dir/x.mtm" \
  "$model" -c "$dir/calibration.txt" -o "$dir/x.mtm" --method best
expect_error "output = input" "would overwrite the input" "" "$model" -c "$dir/calibration.txt" -o "$model"
expect_error "output = input, spelled differently" "would overwrite the input" "" \
  "$model" -c "$dir/calibration.txt" -o "$dir/./fp32.mtm"
want=1  # failures
expect_error "calibration text is a directory" "cannot read '$dir': it is a directory" "$dir/x.mtm" \
  "$model" -c "$dir" -o "$dir/x.mtm"
expect_error "output folder missing, found before calibrating" "cannot write '$dir/none/x.mtm'" "" \
  "$model" -c "$dir/calibration.txt" -o "$dir/none/x.mtm"
expect_error "missing calibration file" "cannot read '$dir/none.txt'" "$dir/x.mtm" \
  "$model" -c "$dir/none.txt" -o "$dir/x.mtm"
expect_error "empty calibration file" "is empty" "$dir/x.mtm" "$model" -c "$dir/empty.txt" -o "$dir/x.mtm"
expect_error "missing model" "cannot read '$dir/none.mtm': No such file" "$dir/x.mtm" "$dir/none.mtm" -c "$dir/calibration.txt" -o "$dir/x.mtm"
expect_error "not a model" "not a libmt model" "$dir/x.mtm" "$dir/calibration.txt" -c "$dir/calibration.txt" -o "$dir/x.mtm"
printf '5 x 7\n' > "$dir/words.txt"
expect_error "calibration text that is not ids" "not token ids" "$dir/x.mtm" "$model" -c "$dir/words.txt" -o "$dir/x.mtm"
check "the input model is untouched" cmp -s "$model" "$dir/fp32-copy.mtm"

# Calibrated activations (the default), default output name.
"$bin/mt_quantize" "$model" -c "$dir/calibration.txt" --report "$dir/report.tsv" > /dev/null 2> "$dir/log.txt"
check "calibrated: exit 0" test $? -eq 0
int8=$dir/fp32.int8.mtm
check "calibrated: writes MODEL.int8.mtm" test -s "$int8"
check "calibrated: smaller than a third of fp32" test "$(stat -c %s "$int8")" -lt "$(($(stat -c %s "$model") / 3))"
check "calibrated: prints the agreement" \
  grep -qE "5 calibration sentences; int8 vs fp32 greedy translations: [0-9.]+% identical, [0-9.]+% of tokens agree" "$dir/log.txt"
check "calibrated: every layer int8 in the report" test "$(layers int8)" -eq 45
check "calibrated: --report writes the TSV" test "$(grep -c $'\tint8\t' "$dir/report.tsv")" -eq 45
"$bin/mt_model" info "$int8" > "$dir/info.txt"
check "calibrated: mt_model info loads it" test $? -eq 0
check "calibrated: mt_model info says int8" grep -q "int8, calibrated activations (mse)" "$dir/info.txt"
translate "$int8" > "$dir/out.txt"
check "calibrated: mt_translate exit 0" test $? -eq 0
check "calibrated: one line of ids per input line" test "$(grep -cE '^[0-9]+( [0-9]+)*$' "$dir/out.txt")" -eq 5
"$bin/mt_quantize" "$model" -c "$dir/calibration.txt" -o "$dir/again.mtm" 2> /dev/null
check "the same input gives the same file" cmp -s "$int8" "$dir/again.mtm"
printf 'not a model' > "$dir/keep.mtm"
expect_error "an existing output without --force" "exists; add --force" "" "$model" -c "$dir/calibration.txt" -o "$dir/keep.mtm"
check "an existing output without --force: left as it was" test "$(cat "$dir/keep.mtm")" = "not a model"
"$bin/mt_quantize" "$model" -c "$dir/calibration.txt" -o "$dir/keep.mtm" --force 2> /dev/null
check "--force replaces it" cmp -s "$int8" "$dir/keep.mtm"
"$bin/mt_model" upgrade "$int8" -o "$dir/upgraded.int8.mtm" > /dev/null
check "mt_model upgrade rewrites an int8 model byte for byte" cmp -s "$int8" "$dir/upgraded.int8.mtm"
expect_error "an int8 model as input" "already an int8 model" "$dir/twice.mtm" "$int8" -c "$dir/calibration.txt" -o "$dir/twice.mtm"

# Dynamic activations.
"$bin/mt_quantize" "$model" -c "$dir/calibration.txt" --activations dynamic -o "$dir/dynamic.mtm" 2> "$dir/log.txt"
check "dynamic: exit 0" test $? -eq 0
check "dynamic: says so" grep -q "activations dynamic per-row" "$dir/log.txt"
"$bin/mt_model" info "$dir/dynamic.mtm" > "$dir/info.txt"
check "dynamic: mt_model info says so" grep -q "int8, dynamic per-row activations" "$dir/info.txt"
translate "$dir/dynamic.mtm" > "$dir/out.txt"
check "dynamic: translates" test "$(grep -cE '^[0-9]+( [0-9]+)*$' "$dir/out.txt")" -eq 5

# Layers kept fp32: the output projection (tied: the embedding too) and a decoder layer.
"$bin/mt_quantize" "$model" -c "$dir/calibration.txt" --keep-fp32 output --keep-fp32 decoder/layer_0 \
  -o "$dir/kept.mtm" 2> "$dir/log.txt"
check "--keep-fp32: exit 0" test $? -eq 0
check "--keep-fp32: 8 layers fp32" test "$(layers fp32)" -eq 8
check "--keep-fp32: they are decoder/layer_0 and output" \
  test "$(grep -cE '^(decoder/layer_0/[a-z_0-9/]+|output) +fp32 ' "$dir/log.txt")" -eq 8
check "--keep-fp32: the other 37 layers int8" test "$(layers int8)" -eq 37
"$bin/mt_model" info "$dir/kept.mtm" > "$dir/info.txt"
check "--keep-fp32: mt_model info loads it" test $? -eq 0
translate "$dir/kept.mtm" > "$dir/out.txt"
check "--keep-fp32: translates" test "$(grep -cE '^[0-9]+( [0-9]+)*$' "$dir/out.txt")" -eq 5

# An output that is a directory: refused before any work, left alone.
mkdir -p "$dir/a-directory"
expect_error "output is a directory" "cannot write '$dir/a-directory': it is a directory" "" "$model" -c "$dir/calibration.txt" -o "$dir/a-directory"
check "output is a directory: still a directory" test -d "$dir/a-directory"

check "no temporary files left" test -z "$(find "$dir" -name '*.tmp.*')"

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all mt_quantize checks passed"
