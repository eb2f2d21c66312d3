// one_thread_check.cpp holds the [one_thread] tag's promise: these hidden
// cases are run by ctest tests of their own (tests/CMakeLists.txt), one that
// must end the program with the error, one that must pass.
#include <thread>

#include <catch2/catch.hpp>

namespace {

void start_and_join_a_thread() {
  std::thread t([] {});
  t.join();
}

}  // namespace

TEST_CASE("tagged one_thread, starts a thread", "[.one_thread_probe_breaks][one_thread]") {
  start_and_join_a_thread();
  SUCCEED("the check ends the program after this case");
}

TEST_CASE("tagged one_thread, starts none", "[.one_thread_probe_keeps][one_thread]") {
  SUCCEED("no thread started");
}

TEST_CASE("untagged, starts a thread", "[.one_thread_probe_keeps]") {
  start_and_join_a_thread();
  SUCCEED("threads are fine without the tag");
}
