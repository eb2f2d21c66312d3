// Our malloc family over glibc's own (__libc_*), with a counter and a switch
// that refuses. Linked only into the programs that use it; sanitizers bring
// their own malloc, so tests/CMakeLists.txt leaves these out there.
#include "malloc_hooks.hpp"

#include <atomic>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}

namespace {

enum Mode : int { kOff, kCounting, kRefusing };
std::atomic<int> g_mode{kOff};
std::atomic<long> g_calls{0};
std::atomic<size_t> g_bytes{0};

// Counts the call; false when it must be refused.
inline bool allow(size_t bytes) {
  const int mode = g_mode.load(std::memory_order_relaxed);
  if (mode == kOff) return true;
  g_calls.fetch_add(1, std::memory_order_relaxed);
  g_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return mode == kCounting;
}

}  // namespace

extern "C" {
void* malloc(size_t n) { return allow(n) ? __libc_malloc(n) : nullptr; }
void* calloc(size_t n, size_t size) { return allow(n * size) ? __libc_calloc(n, size) : nullptr; }
void* realloc(void* p, size_t n) { return allow(n) ? __libc_realloc(p, n) : nullptr; }
void free(void* p) { __libc_free(p); }
void* memalign(size_t alignment, size_t n) { return allow(n) ? __libc_memalign(alignment, n) : nullptr; }
void* aligned_alloc(size_t alignment, size_t n) { return allow(n) ? __libc_memalign(alignment, n) : nullptr; }
int posix_memalign(void** out, size_t alignment, size_t n) {
  if (!allow(n)) return 12;  // ENOMEM
  *out = __libc_memalign(alignment, n);
  return *out ? 0 : 12;
}
}

namespace mt::test {

namespace {

HeapUse run(Mode mode, const std::function<void()>& body) {
  g_calls = 0;
  g_bytes = 0;
  g_mode = mode;
  body();
  g_mode = kOff;
  return {g_calls.load(), g_bytes.load()};
}

}  // namespace

long allocations_during(const std::function<void()>& body) { return run(kCounting, body).calls; }
HeapUse heap_use_during(const std::function<void()>& body) { return run(kCounting, body); }
long refused_allocations_during(const std::function<void()>& body) { return run(kRefusing, body).calls; }

}  // namespace mt::test
