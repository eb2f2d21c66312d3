#!/usr/bin/env bash
# valgrind memcheck on whole mt_translate runs with the shipped models: text
# (odd lines included) greedy and beam, int8 and fp32, and token ids. Any
# invalid access, use of uninitialised memory or leak fails the run.
#   scripts/valgrind.sh [BUILD_DIR]     (default build; needs build/tools/mt_translate)
# valgrind 3.19 has no AVX-512: under it the CPU reports AVX2 at most, so the
# AVX2 kernels run (MT_ISA pins them for the record).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
translate=$build/tools/mt_translate
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
{
  printf 'A man in a blue shirt is standing on a ladder.\n'
  printf '\n   \n'
  printf 'Two dogs play in the snow \xff\xfe broken \xc3\n'
  printf 'nul\0byte, собака, 狗, \xe2\x80\xae bidi \xe2\x80\xac\n'
  printf 'A little girl climbs into a wooden playhouse.'
} > "$scratch/in.txt"
printf '5 6 7 8\n\n9 10\n' > "$scratch/ids.txt"
head -c 100000 models/en-de-tiny.mtm > "$scratch/cut.mtm"

# shellcheck disable=SC2054  # the commas are inside valgrind's options
memcheck=(valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect,possible
          --errors-for-leak-kinds=definite,indirect,possible --track-origins=yes)
# Each run takes 1-20 s under memcheck (30 s for all six on 2 cores here); a
# hang fails at this bound instead of eating CI's time.
run_timeout=${MT_VALGRIND_TIMEOUT:-300}
run() {  # run NAME EXPECTED_EXIT ARGS...: one memcheck'd mt_translate
  local name=$1 expected=$2; shift 2
  local rc=0
  MT_ISA=avx2 timeout -k 10 "$run_timeout" "${memcheck[@]}" "$translate" --max-length 12 "$@" \
    > "$scratch/out.txt" 2> "$scratch/err.txt" || rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "valgrind: $name: TIMED OUT: still running after $run_timeout s, killed"; cat "$scratch/err.txt"; exit 1
  fi
  if [ $rc -ne "$expected" ]; then
    echo "valgrind: $name: FAILED (exit $rc, expected $expected)"; cat "$scratch/err.txt"; exit 1
  fi
  echo "valgrind: $name: clean ($(wc -l < "$scratch/out.txt") lines out)"
}
run "int8 text, greedy" 0 -m models/en-de-tiny.int8.mtm --beam 1 -i "$scratch/in.txt"
run "int8 text, beam 4, n-best 2, 2 threads" 0 -m models/en-de-tiny.int8.mtm --beam 4 --nbest 2 --threads 2 -i "$scratch/in.txt"
run "fp32 text, beam 3, batch 2" 0 -m models/en-de-tiny.mtm --beam 3 --batch-size 2 -i "$scratch/in.txt"
run "fp32 ids, greedy" 0 -m models/en-de-tiny.mtm --ids --beam 1 -i "$scratch/ids.txt"
run "a usage error exit (beam 0)" 2 -m models/en-de-tiny.mtm --beam 0 -i "$scratch/ids.txt"
run "an error exit (truncated model)" 1 -m "$scratch/cut.mtm" -i "$scratch/in.txt"
