// MT_SKIP(reason): a test case that cannot run here is reported by ctest as
// "Skipped", never "Passed" (test_util.hpp includes this; the CUDA tests'
// cuda_test_util.hpp too).
#pragma once

#include <cstdio>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

// Catch2 v2 has no SKIP. A test case that cannot run here (no GPU, no
// ../shared/data, no threads in the build, ...) calls MT_SKIP(reason), which
// prints "MT_TEST_SKIPPED: <reason>" as a line of its own on stdout, WARNs
// "skipped: <reason>" (Catch's own report) and returns from the function it
// is in: the test case, or a void helper whose return ends the case. The
// ctest tests of tests/CMakeLists.txt (mt_add_test) have the marker as
// SKIP_REGULAR_EXPRESSION, so ctest reports them Skipped; scripts/ctest_skipped.sh
// lists them by reason. ctest reports a test whose output has the marker as
// Skipped whatever else it printed or failed: call MT_SKIP before any
// assertion, SECTION or GENERATE of the case.
#define MT_TEST_SKIP_MARKER "MT_TEST_SKIPPED:"

namespace mt::test {
inline void report_skip(const std::string& reason) {
  std::fflush(stdout);
  std::printf("\n" MT_TEST_SKIP_MARKER " %s\n", reason.c_str());
  std::fflush(stdout);
}
}  // namespace mt::test

#define MT_SKIP(reason)                             \
  do {                                              \
    std::ostringstream mt_skip_reason_;             \
    mt_skip_reason_ << reason;                      \
    ::mt::test::report_skip(mt_skip_reason_.str()); \
    WARN("skipped: " << mt_skip_reason_.str());     \
    return;                                         \
  } while (false)
