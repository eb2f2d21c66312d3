# Sourced by the tools' test scripts: one "ok"/"FAIL" line per check, a
# failure count for the script's exit status, and a line count that counts a
# last line without its newline too.
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
lines() { awk 'END { print NR }' "$1"; }
# expect_exit NAME WANT GOT: the exact exit code (1 a failure, 2 a usage
# error), the actual one when it differs.
expect_exit() {
  if [ "$3" -eq "$2" ]; then echo "ok   $1: exits $2"; else echo "FAIL $1: exits $3, expected $2"; failures=$((failures + 1)); fi
}
# The trainer tests' corpus in DIR: train.en/train.de, the first 290 pairs of
# DATA/text/corpus.txt (English and German lines alternating), and dev.en/dev.de, its first 20.
trainer_corpus() {  # trainer_corpus DATA DIR
  head -580 "$1/text/corpus.txt" | awk 'NR % 2 == 1' > "$2/train.en"
  head -580 "$1/text/corpus.txt" | awk 'NR % 2 == 0' > "$2/train.de"
  head -20 "$2/train.en" > "$2/dev.en"
  head -20 "$2/train.de" > "$2/dev.de"
}
