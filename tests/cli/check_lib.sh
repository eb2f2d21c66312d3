# Sourced by the tools' test scripts: one "ok"/"FAIL" line per check, a
# failure count for the script's exit status, and a line count that counts a
# last line without its newline too.
failures=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
lines() { awk 'END { print NR }' "$1"; }
