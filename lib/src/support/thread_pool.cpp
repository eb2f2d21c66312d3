#include "support/thread_pool.hpp"

// The spin-wait hint: lets the sibling hyperthread (x86) or the core's other
// work (aarch64 YIELD) go ahead while this thread polls.
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MT_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define MT_CPU_RELAX() asm volatile("yield" ::: "memory")
#else
#define MT_CPU_RELAX() ((void)0)
#endif

namespace mt::detail {

namespace {

// Polls before sleeping: long enough to bridge the caller's serial work
// between two parallel regions of a decoding step (microseconds), short
// enough that a thread waiting on a descheduled one gives its core back soon.
constexpr int kSpinBeforeSleep = 2000;
constexpr uint32_t kClosed = 1u << 31;  // in entry_: the caller has closed the job

// Waits until `value` is no longer `old`; returns the new value (acquire).
// Who changes a value and then notifies does it with a sequentially
// consistent read-modify-write: notify reads the waiter count that wait()
// keeps, and the two must not pass each other, or a wake-up is lost.
uint32_t wait_for_change(const std::atomic<uint32_t>& value, uint32_t old) {
  for (int spin = 0; spin < kSpinBeforeSleep; ++spin) {
    const uint32_t now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    MT_CPU_RELAX();
  }
  for (;;) {
    value.wait(old, std::memory_order_acquire);
    const uint32_t now = value.load(std::memory_order_acquire);
    if (now != old) return now;
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  try {
    workers_.reserve(size_t(num_threads));
    for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { worker_loop(t); });
  } catch (...) {
    // The system refused a thread (or memory): the destructor will not run,
    // and a joinable std::thread destroyed unjoined would terminate.
    stop_and_join();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::take_tasks(int thread) {
  for (int first = next_task_.fetch_add(block_, std::memory_order_relaxed); first < tasks_;
       first = next_task_.fetch_add(block_, std::memory_order_relaxed)) {
    const int last = first + block_ < tasks_ ? first + block_ : tasks_;
    for (int task = first; task < last; ++task) call_(ctx_, task, thread);
  }
}

void ThreadPool::run(int tasks, Call call, void* ctx) {
  tasks_ = tasks;
  // Many small tasks (attention: one per row and head) are taken a few at a
  // time: one shared counter update per task cost more than the task itself.
  block_ = tasks / (size() * 8) > 1 ? tasks / (size() * 8) : 1;
  call_ = call;
  ctx_ = ctx;
  next_task_.store(0, std::memory_order_relaxed);
  entry_.store(0, std::memory_order_release);  // open, nobody inside
  generation_.fetch_add(1);
  generation_.notify_all();
  take_tasks(0);
  // The job lives on this stack frame: close it to late workers, then wait
  // until those inside have left (their tasks' writes come with them).
  uint32_t entry = entry_.fetch_or(kClosed, std::memory_order_acquire) | kClosed;
  while (entry != kClosed) entry = wait_for_change(entry_, entry);
}

void ThreadPool::join_job(int thread) {
  uint32_t entry = entry_.load(std::memory_order_relaxed);
  do {
    if (entry & kClosed) return;
  } while (!entry_.compare_exchange_weak(entry, entry + 1, std::memory_order_acquire, std::memory_order_relaxed));
  take_tasks(thread);
  // The last one out of a closed job wakes the caller if it went to sleep.
  if (entry_.fetch_sub(1) == (kClosed | 1)) entry_.notify_one();
}

void ThreadPool::worker_loop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    seen = wait_for_change(generation_, seen);
    if (stop_.load(std::memory_order_relaxed)) return;
    join_job(thread);
  }
}

}  // namespace mt::detail
