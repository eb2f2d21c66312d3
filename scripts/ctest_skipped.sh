#!/usr/bin/env bash
# After a ctest run: which tests were skipped, grouped by the reason they
# printed (the "MT_TEST_SKIPPED: <reason>" line of MT_SKIP, tests/test_skip.hpp,
# and of tests/torch_check/run.sh), from the run's Testing/Temporary/LastTest.log.
#   scripts/ctest_skipped.sh BUILD_DIR
# Prints nothing but a count line when no test was skipped; always exits 0
# (a skip is reported, not a failure).
set -euo pipefail
build=${1:?usage: scripts/ctest_skipped.sh BUILD_DIR}
log=$build/Testing/Temporary/LastTest.log
if [ ! -f "$log" ]; then
  echo "ctest_skipped: no $log (ctest has not run in $build)"
  exit 0
fi

awk -v build="$build" '
  # One block per test: "N/M Test: NAME", its output, then how it ended.
  function finish() {
    if (name == "") return
    ++total
    if (skipped) {
      ++count
      if (reason == "") reason = "(no MT_TEST_SKIPPED line in its output)"
      if (!(reason in n)) order[++reasons] = reason
      ++n[reason]
      if (n[reason] <= 4) names[reason] = names[reason] "\n      " name
      else if (n[reason] == 5) names[reason] = names[reason] "\n      ..."
    }
    name = ""; reason = ""; skipped = 0
  }
  /^[0-9]+\/[0-9]+ Test: / { finish(); name = $0; sub(/^[0-9]+\/[0-9]+ Test: /, "", name); next }
  name != "" && reason == "" && /^MT_TEST_SKIPPED: / { reason = $0; sub(/^MT_TEST_SKIPPED: /, "", reason); next }
  name != "" && (/^Skip regular expression found in output/ || /^Test Skipped/ || /^Skip return code/) { skipped = 1 }
  END {
    finish()
    printf "ctest_skipped: %d of %d tests skipped in %s\n", count, total, build
    for (i = 1; i <= reasons; ++i) printf "  %4d  %s%s\n", n[order[i]], order[i], names[order[i]]
  }
' "$log"
