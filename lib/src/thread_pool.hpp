// A fixed pool of worker threads created with a session, never per call.
// parallel_for runs tasks on the workers and the calling thread, and makes no
// allocation: the job is a function pointer and a context on the caller's stack.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace mt::detail {

class ThreadPool {
 public:
  // num_threads counts the calling thread: 1 means no worker threads.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }

  // Calls fn(task, thread) for every task in [0, tasks); thread < size() says
  // which thread runs it (for per-thread scratch). Returns when all are done.
  template <class F>
  void parallel_for(int tasks, F&& fn) {
    if (tasks <= 0) return;
    if (tasks == 1 || workers_.empty()) {
      for (int t = 0; t < tasks; ++t) fn(t, 0);
      return;
    }
    run(tasks, [](void* ctx, int task, int thread) { (*static_cast<F*>(ctx))(task, thread); }, &fn);
  }

 private:
  using Call = void (*)(void* ctx, int task, int thread);
  void run(int tasks, Call call, void* ctx);
  void worker_loop(int thread);
  void take_tasks(int thread);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> next_task_{0};
  std::atomic<int> busy_workers_{0};
  int tasks_ = 0;
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  bool stop_ = false;
};

}  // namespace mt::detail
