// Splitting an op's work over the graph's thread pool (for op .cpp files only).
// Each output element is written by exactly one task in a fixed order, so
// results do not depend on the number of threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "autograd/graph.hpp"
#include "support/thread_pool.hpp"

namespace mt::autograd {

// fn(task, thread) for task in [0, tasks).
template <class T, class F>
void parallel_tasks(Graph<T>& g, int tasks, F&& fn) {
  g.pool().parallel_for(tasks, [&](int task, int thread) { fn(task, thread); });
}

// fn(begin, end, thread) over [0, n) cut into contiguous ranges of at least
// `grain` items (so tiny ops stay on the calling thread).
template <class T, class F>
void parallel_range(Graph<T>& g, int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t max_tasks = int64_t(g.num_threads()) * 4;
  const int tasks = int(std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, max_tasks));
  g.pool().parallel_for(tasks, [&](int task, int thread) {
    const int64_t b = n * task / tasks, e = n * (task + 1) / tasks;
    if (b < e) fn(b, e, thread);
  });
}

// Adds b into a, n values (the += of every backward).
template <class T>
inline void accumulate(T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

}  // namespace mt::autograd
