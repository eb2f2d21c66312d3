#include "thread_pool.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_CPU_RELAX() _mm_pause()
#else
#define MT_CPU_RELAX() ((void)0)
#endif

namespace mt::detail {

namespace {
// Workers poll this many times for the next job before sleeping: a decode step
// runs dozens of short parallel regions back to back, and a futex wake-up per
// region would cost more than the region itself.
constexpr int kSpinBeforeSleep = 20000;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::take_tasks(int thread) {
  for (int task = next_task_.fetch_add(1, std::memory_order_relaxed); task < tasks_;
       task = next_task_.fetch_add(1, std::memory_order_relaxed)) {
    call_(ctx_, task, thread);
  }
}

void ThreadPool::run(int tasks, Call call, void* ctx) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_ = tasks;
    call_ = call;
    ctx_ = ctx;
    next_task_.store(0, std::memory_order_relaxed);
    busy_workers_.store(int(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  take_tasks(0);
  // The job lives on this stack frame: wait until every worker has left it.
  while (busy_workers_.load(std::memory_order_acquire) != 0) MT_CPU_RELAX();
}

void ThreadPool::worker_loop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinBeforeSleep; ++spin) {
      MT_CPU_RELAX();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    // The job's fields (and stop_) were written before the release that moved
    // the generation, and this thread's acquire load of it makes them visible.
    if (stop_) return;
    take_tasks(thread);
    busy_workers_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace mt::detail
