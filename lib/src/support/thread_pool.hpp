// A fixed pool of worker threads created with a session, never per call.
// parallel_for runs tasks on the workers and the calling thread, and makes no
// allocation: the job is a function pointer and a context on the caller's stack.
//
// Waiting threads poll briefly, then sleep (std::atomic::wait): back-to-back
// parallel regions (dozens per decoding step) find the workers awake, and a
// waiting thread never keeps a core from the threads it waits for when
// threads outnumber cores (several multi-threaded sessions on a small machine).
#pragma once

#include <atomic>
#include <cstdint>
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
    run(
        tasks, [](void* ctx, int task, int thread) { (*static_cast<F*>(ctx))(task, thread); }, &fn);
  }

 private:
  using Call = void (*)(void* ctx, int task, int thread);
  void run(int tasks, Call call, void* ctx);
  void worker_loop(int thread);
  void stop_and_join();
  // Enters the open job, if any, runs tasks until none is left, leaves.
  void join_job(int thread);
  void take_tasks(int thread);

  std::vector<std::thread> workers_;
  // The job, written by the caller while no worker is inside a job, read by
  // workers only between entering and leaving it.
  int tasks_ = 0;
  int block_ = 1;  // tasks taken at once
  Call call_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int> next_task_{0};
  // Moves once per job (and once to stop): what sleeping workers wait on.
  std::atomic<uint32_t> generation_{0};
  // How many workers are inside the current job, and a closed bit the caller
  // sets once it has run out of tasks: a worker may enter only while the job
  // is open, so the caller never waits for a worker that has not started it
  // (asleep, or descheduled by a busy machine).
  std::atomic<uint32_t> entry_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace mt::detail
