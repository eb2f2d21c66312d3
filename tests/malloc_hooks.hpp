// The process's malloc family replaced (tests/malloc_hooks.cpp) so that a
// test can count every heap allocation on every thread (operator new, the C
// library and the thread pool all come through it), or refuse them all.
#pragma once

#include <cstddef>
#include <functional>

namespace mt::test {

// Heap allocations made by any thread while body runs.
long allocations_during(const std::function<void()>& body);

struct HeapUse {
  long calls = 0;
  size_t bytes = 0;
};
// Calls and bytes allocated while body runs (bytes as asked for).
HeapUse heap_use_during(const std::function<void()>& body);

// Runs body with the heap forbidden: every allocation returns null (so
// operator new throws) and is counted; returns that count.
long refused_allocations_during(const std::function<void()>& body);

}  // namespace mt::test
