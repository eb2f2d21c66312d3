#!/bin/sh
# The [one_thread] check ends a program whose tagged case started a thread:
# test_one_thread_check's breaking case must fail with that error.
#   tests/one_thread_check.sh PATH/test_one_thread_check
set -u
out=$("$1" '[one_thread_probe_breaks]' 2>&1)
rc=$?
echo "$out"
[ "$rc" -ne 0 ] || { echo "one_thread_check.sh: the program passed (exit 0)"; exit 1; }
echo "$out" | grep -q 'is tagged \[one_thread\] but started 1 thread' ||
  { echo "one_thread_check.sh: exit $rc without the check's error"; exit 1; }
