#!/usr/bin/env bash
# mt_translate with a model whose every piece decodes to a line break (and
# whose unknown piece's surface is a newline): still exactly one output line
# per input line, in every output mode, and no line separator of any kind
# inside a line.
# Usage: test_line_breaks.sh WRITE_LINE_BREAK_MODEL BIN_DIR SCRATCH_DIR
set -u
writer=$1
bin=$2
dir=$3
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
# Any line separator but the newline ending each line: CR, VT, FF, U+0085, U+2028, U+2029.
no_breaks() { ! LC_ALL=C grep -q -P '[\r\v\f]|\xC2\x85|\xE2\x80[\xA8\xA9]' "$1"; }

model="$dir/line-breaks.mtm"
"$writer" "$model" || { echo "FAIL cannot write the model"; exit 1; }

# Five lines, some with separators of their own inside; the last without a newline.
printf 'a\ny\xe2\x80\xa8y\nyyyy a\r\n\xc2\x85 a \x0b\x0c\ny' > "$dir/in.txt"
n=$(lines "$dir/in.txt")

run() {  # run NAME EXPECTED_LINES ARGS...
  local name=$1 expected=$2; shift 2
  "$bin/mt_translate" -m "$model" --min-length 6 --max-length 16 "$@" -i "$dir/in.txt" > "$dir/$name.txt" 2> "$dir/$name.err"
  check "$name: exit 0" test $? -eq 0
  check "$name: $expected lines out" test "$(lines "$dir/$name.txt")" -eq "$expected"
  check "$name: no line separator inside a line" no_breaks "$dir/$name.txt"
}
run greedy "$n" --beam 1
run beam "$n" --beam 4
run scores "$n" --beam 2 --scores
run nbest $((n * 3)) --beam 3 --nbest 3
check "n-best: every line starts with its input's index" \
  test "$(grep -c '^[0-4] ||| ' "$dir/nbest.txt")" -eq $((n * 3))
# At least 6 tokens a line (--min-length), each a break: the breaks became spaces.
check "no translation is empty" test "$(grep -c . "$dir/greedy.txt")" -eq "$n"

echo "$failures failed"
[ "$failures" -eq 0 ]
