#!/usr/bin/env bash
# mt_translate on input nobody should send, with a real model (the shipped
# int8 en-de): every line in gives exactly one line out, in order, or the run
# stops with an error naming the line. Nothing is silently dropped.
# Usage: test_hostile_input.sh BIN_DIR SCRATCH_DIR MODEL [MANY_LINES]
# (MANY_LINES, default 100000: fewer for sanitizer builds, where each line
# costs 10x more and the release run has checked 100,000.)
set -u
bin=$1
dir=$2
model=$3
many=${4:-100000}
rm -rf "$dir"; mkdir -p "$dir"
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
lines() { awk 'END { print NR }' "$1"; }  # counts a last line without its newline too
translate() { "$bin/mt_translate" -m "$model" --beam 1 --max-length 8 "$@"; }

# One file of everything odd, one case per line; the last has no newline.
{
  printf 'A man is walking along the river.\n'
  printf '\n'                                   # empty
  printf '   \t  \n'                            # whitespace only
  printf '\xff\xfe\xc3 broken \xe2\x82 utf-8\n'  # invalid UTF-8: lone, truncated and stray bytes
  printf 'nul\0inside\0the line\n'              # NUL bytes
  printf '\xc0\xaf overlong and \xed\xa0\x80 surrogate\n'
  printf 'Mixed: Ein Hund, собака, 狗, كلب, कुत्ता, 🐕🐕🐕\n'
  printf '\xe2\x80\xae reversed \xe2\x80\xac \xe2\x81\xa6 isolate \xe2\x81\xa9 \xe2\x80\x8f mark\n'  # bidi controls
  printf 'zero\xe2\x80\x8bwidth\xef\xbb\xbf bom and \xcc\x81\xcc\x81\xcc\x81 combining\n'
  printf 'a carriage return\r\n'
  printf '\x01\x02\x1b[31m control characters \x7f\n'
  printf '%s\n' "$(head -c 200 /dev/zero | tr '\0' '!')"
  printf 'no final newline'
} > "$dir/odd.txt"
translate < "$dir/odd.txt" > "$dir/odd-out.txt" 2> "$dir/odd-err.txt"
check "odd lines: exit 0" test $? -eq 0
check "odd lines: $(lines "$dir/odd.txt") lines in, as many out" test "$(lines "$dir/odd.txt")" -eq "$(wc -l < "$dir/odd-out.txt")"
check "odd lines: the empty line stays empty" test -z "$(sed -n 2p "$dir/odd-out.txt")"
check "odd lines: the whitespace line gives an empty line" test -z "$(sed -n 3p "$dir/odd-out.txt" | tr -d ' ')"
check "odd lines: the output is valid UTF-8" iconv -f UTF-8 -t UTF-8 "$dir/odd-out.txt" -o /dev/null
check "odd lines: no warnings" test ! -s "$dir/odd-err.txt"
translate --batch-size 1 < "$dir/odd.txt" > "$dir/odd-out1.txt"
check "odd lines: the same translations one at a time" cmp -s "$dir/odd-out.txt" "$dir/odd-out1.txt"
"$bin/mt_translate" -m "$model" --max-length 8 --beam 3 --nbest 2 < "$dir/odd.txt" > "$dir/odd-nbest.txt"
check "odd lines: n-best gives 2 lines per line, blank ones included" \
  test "$(wc -l < "$dir/odd-nbest.txt")" -eq $((2 * $(lines "$dir/odd.txt")))

# A 100,000-character line between two ordinary ones.
{
  echo "A dog runs."
  head -c 100000 /dev/zero | tr '\0' 'x' | sed 's/x\{9\}/word and /g'; echo
  echo "A cat sleeps."
} > "$dir/long.txt"
translate --strict < "$dir/long.txt" > "$dir/long-out.txt" 2> "$dir/long-err.txt"
check "100,000 characters, --strict: refused" test $? -eq 1
check "100,000 characters, --strict: the error names line 2" grep -q "line 2" "$dir/long-err.txt"
check "100,000 characters, --strict: 3 lines out" test "$(wc -l < "$dir/long-out.txt")" -eq 3
translate < "$dir/long.txt" > "$dir/long-out.txt" 2> "$dir/long-err.txt"
check "100,000 characters, by default cut to fit: exit 0" test $? -eq 0
check "100,000 characters, by default cut to fit: 3 lines out" test "$(wc -l < "$dir/long-out.txt")" -eq 3
check "100,000 characters, by default cut to fit: a warning names line 2" grep -q "line 2 was truncated" "$dir/long-err.txt"
check "100,000 characters, by default cut to fit: the neighbours are translated as alone" \
  test "$(sed -n 3p "$dir/long-out.txt")" = "$(echo "A cat sleeps." | translate)"

# $many short lines (100,000 by default; with empty ones among them), batched
# and sorted by length inside.
awk -v n="$many" 'BEGIN { for (i = 1; i <= n; i++) print (i % 7 == 0 ? "" : "A dog number " i " runs.") }' > "$dir/many.txt"
"$bin/mt_translate" -m "$model" --beam 1 --max-length 2 --batch-size 64 < "$dir/many.txt" > "$dir/many-out.txt"
check "$many lines: exit 0" test $? -eq 0
check "$many lines: $many lines out" test "$(wc -l < "$dir/many-out.txt")" -eq "$many"
check "$many lines: the empty lines are where they were" \
  test "$(awk 'NR % 7 == 0 && $0 != ""' "$dir/many-out.txt" | wc -l)" -eq 0

# Options out of range: one clear line each, nothing translated.
expect_error() {  # expect_error NAME WORDS ARGS...
  local name=$1 words=$2; shift 2
  echo "A dog." | "$bin/mt_translate" -m "$model" "$@" > "$dir/err-out.txt" 2> "$dir/err.txt"
  local rc=$?
  check "$name: non-zero exit" test $rc -ne 0
  check "$name: says '$words'" grep -q -- "$words" "$dir/err.txt"
  check "$name: writes nothing" test ! -s "$dir/err-out.txt"
}
expect_error "beam 0" "--beam = '0'" --beam 0
expect_error "huge beam" "--beam = '100000'" --beam 100000
expect_error "nbest > beam" "--nbest must not exceed --beam" --beam 2 --nbest 3
expect_error "max length 0" "--max-length = '0'" --max-length 0
expect_error "batch 0" "--batch-size = '0'" --batch-size 0
expect_error "threads 0" "--threads = '0'" --threads 0
expect_error "length penalty NaN" "--length-penalty = 'nan'" --length-penalty nan
expect_error "max source length above the model's" "exceeds the model's limit" --max-source-length 5000
expect_error "an unknown device" "--device = 'tpu': expected one of cpu, cuda" --device tpu
expect_error "a value missing at the end" "--beam needs a value" --beam
expect_error "an unknown option at the end" "unknown option --bogus" --bogus

# --device cuda: translates where a GPU is, else one clear line (CI has none).
echo "A dog." | "$bin/mt_translate" -m "$model" --device cuda --beam 1 > "$dir/cuda-out.txt" 2> "$dir/cuda-err.txt"
if [ $? -eq 0 ]; then
  check "--device cuda: one line out" test "$(wc -l < "$dir/cuda-out.txt")" -eq 1
else
  check "--device cuda without a GPU or CUDA build: says so" grep -qE "CUDA" "$dir/cuda-err.txt"
fi

if [ $failures -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all hostile-input checks passed"
