#!/usr/bin/env bash
# The tools under a low memory limit (ulimit -v): a failure is exit code 1
# and one line naming the tool, never a signal (134 = abort); and one huge
# input line never decides mt_translate's memory: it is refused by line
# number (or cut with --truncate) while every other line is translated.
# Not under sanitizers (their shadow memory needs terabytes of address space).
# Usage: test_low_memory.sh BIN_DIR SCRATCH_DIR MODEL
set -u
bin=$1
dir=$2
model=$3
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=check_lib.sh
. "$(dirname "$0")/check_lib.sh"
limited() {  # limited KIB COMMAND...: runs it under ulimit -v KIB, stdout to out.txt, stderr to err.txt
  local kib=$1; shift
  (ulimit -v "$kib"; exec "$@") > "$dir/out.txt" 2> "$dir/err.txt"
}
says() { grep -q -- "$1" "$dir/err.txt"; }

# A 100 MB line between two short ones, under 512 MiB of address space.
{ printf 'A dog runs.\n'; head -c 100000000 /dev/zero | tr '\0' 'a'; printf '\nTwo men sit.\n'; } > "$dir/huge.txt"
limited 524288 "$bin/mt_translate" -m "$model" --beam 1 --strict -i "$dir/huge.txt"
check "100 MB line, --strict: exit 1" test $? -eq 1
check "100 MB line, --strict: refused by line number" says "line 2 has 100000000 bytes; --max-line-bytes is 65536"
check "100 MB line, --strict: 3 lines out" test "$(lines "$dir/out.txt")" -eq 3
check "100 MB line, --strict: the others translated" test -n "$(sed -n 1p "$dir/out.txt")" -a -n "$(sed -n 3p "$dir/out.txt")"
check "100 MB line, --strict: its own line empty" test -z "$(sed -n 2p "$dir/out.txt")"
limited 524288 "$bin/mt_translate" -m "$model" --beam 1 -i "$dir/huge.txt"
check "100 MB line, cut by default: exit 0" test $? -eq 0
check "100 MB line, cut by default: a warning names line 2" says "line 2 was truncated"
check "100 MB line, cut by default: 3 translations" test "$(grep -c . "$dir/out.txt")" -eq 3

# Threads the system will not start (each needs its stack).
echo "A dog." > "$dir/one.txt"
limited 400000 "$bin/mt_translate" -m "$model" --threads 256 --batch-size 1 --max-length 8 \
  --max-source-length 8 -i "$dir/one.txt"
check "--threads 256 under 400 MB: exit 1" test $? -eq 1
check "--threads 256 under 400 MB: says so" says "mt_translate: cannot start the session's 256 threads"

# The same under a process limit (ulimit -u), which binds only a user
# without CAP_SYS_RESOURCE: root runs it as nobody when nobody can read the build.
as_limited_user=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  as_limited_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if "${as_limited_user[@]}" "$bin/mt_translate" --help > /dev/null 2>&1 && "${as_limited_user[@]}" test -r "$model"; then
  "${as_limited_user[@]}" bash -c 'ulimit -u 4; exec "$@"' _ "$bin/mt_translate" -m "$model" --threads 64 \
    -i "$dir/one.txt" > "$dir/out.txt" 2> "$dir/err.txt"
  check "--threads 64 under ulimit -u 4: exit 1" test $? -eq 1
  check "--threads 64 under ulimit -u 4: says so" says "mt_translate: cannot start the session's 64 threads"
else
  echo "note: ulimit -u case not run (no unprivileged user can run $bin/mt_translate)"
fi

# Every tool out of memory: exit 1 with one line, no signal.
printf 'a b c\n' > "$dir/small.txt"
expect_clean_failure() {  # NAME TOOL ARGS...
  local name=$1 tool; shift
  tool=$(basename "$1")
  limited 150000 "$@"
  local rc=$?
  check "$name under 150 MB: exit 1 (got $rc)" test $rc -eq 1
  check "$name under 150 MB: a line naming the tool" grep -q "^$tool: " "$dir/err.txt"
}
expect_clean_failure "mt_model random --config base" "$bin/mt_model" random --config base -o "$dir/base.mtm"
expect_clean_failure "mt_bleu on a 100 MB line" "$bin/mt_bleu" "$dir/small.txt" -i "$dir/huge.txt"
expect_clean_failure "mt_quantize, 100 MB calibration line" "$bin/mt_quantize" "$model" --calibration "$dir/huge.txt" \
  -o "$dir/q.mtm"
expect_clean_failure "mt_vocab train on a 100 MB line" "$bin/mt_vocab" train --input "$dir/huge.txt" -o "$dir/v.model"
if [ -x "$bin/mt_train" ]; then
  expect_clean_failure "mt_train on a 100 MB line" "$bin/mt_train" --train-src "$dir/huge.txt" \
    --train-tgt "$dir/huge.txt" --dev-src "$dir/small.txt" --dev-ref "$dir/small.txt" --out "$dir/run" --config tiny
fi
rm -f "$dir/huge.txt"

echo "$failures failed"
[ "$failures" -eq 0 ]
