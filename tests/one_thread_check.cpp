// The promise behind the [one_thread] tag: a case so tagged starts no
// thread, which is why scripts/tsan.sh leaves it out (ThreadSanitizer has
// nothing to check in one thread). Every test program counts the threads its
// process starts; a tagged case that started any ends the program with an
// error, so a case given threads later cannot keep the tag and drop out of
// TSan unnoticed. Linux only (the count interposes pthread_create); the
// WebAssembly build has no threads.

// The listener interface Catch2's single header keeps for its own main unless asked.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::atomic<long> threads_started{0};

}  // namespace

// Every thread of the process starts here, whoever asks (std::thread, the
// library's pools, a test's own): counted, then passed on to the definition
// that follows the program's, the C library's or a sanitizer's interceptor.
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Create next = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  if (next == nullptr) {
    std::fputs("one_thread_check: no pthread_create after the test program's own\n", stderr);
    std::abort();
  }
  threads_started.fetch_add(1, std::memory_order_relaxed);
  return next(thread, attr, start, arg);
}

namespace {

class OneThreadCheck : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    TestEventListenerBase::testCaseStarting(info);
    at_start_ = threads_started.load();
  }

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    TestEventListenerBase::testCaseEnded(stats);
    const std::vector<std::string>& tags = stats.testInfo.lcaseTags;
    const long started = threads_started.load() - at_start_;
    if (started == 0 || std::find(tags.begin(), tags.end(), "one_thread") == tags.end()) return;
    std::fflush(stdout);
    std::fprintf(stderr,
                 "one_thread_check: \"%s\" is tagged [one_thread] but started %ld thread(s): scripts/tsan.sh "
                 "leaves such cases out; drop the tag\n",
                 stats.testInfo.name.c_str(), started);
    std::fflush(stderr);
    std::_Exit(1);
  }

 private:
  long at_start_ = 0;
};

}  // namespace

CATCH_REGISTER_LISTENER(OneThreadCheck)
#endif
