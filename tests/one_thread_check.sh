#!/bin/sh
# The [one_thread] check ends a program whose tagged case started a thread:
# test_one_thread_check's breaking case must exit 1 with that error.
#   tests/one_thread_check.sh PATH/test_one_thread_check
set -u
. "$(dirname "$0")/cli/check_lib.sh"
out=$("$1" '[one_thread_probe_breaks]' 2>&1)
expect_exit "a tagged case that starts a thread" 1 $?
check "the error names the tag and the thread" sh -c 'echo "$1" | grep -q "is tagged \[one_thread\] but started 1 thread"' - "$out"
[ "$failures" -eq 0 ] || { echo "$out"; exit 1; }
