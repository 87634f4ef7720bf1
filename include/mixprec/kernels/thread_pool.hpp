// A small persistent pool of std::threads for the kernels (GEMM splits its output across it).
//
//   kernels::thread_pool pool(4);                       // 3 workers + the calling thread
//   pool.run(tasks, [&](std::size_t task) { ... });     // every task once; returns when all are done
//
// The calling thread works too, so a pool of size 1 has no worker and runs everything inline.
// Tasks are handed out one at a time from a shared counter: which thread runs which task varies,
// so a task's result must not depend on the thread that runs it. One run at a time: a run()
// that finds the pool busy (another thread's call, or a task calling run() on its own pool)
// runs its tasks inline on the calling thread instead of waiting, so nesting cannot deadlock.
//
// If the OS refuses a thread (address space, a pids limit), the constructor stops and joins the
// workers it already started and rethrows what std::thread threw (std::system_error).
//
// Waking a sleeping thread costs tens of microseconds (more in a VM, where an idle virtual CPU
// halts), as much as a small GEMM: so a worker that finishes a job, and a caller waiting for the
// workers, first poll for up to `spin_time` (yielding the CPU to anything else that wants it),
// and only then block.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace mixprec::kernels {

class thread_pool {
 public:
  /// More threads than this is taken for a mistake (std::invalid_argument).
  static constexpr std::size_t max_threads = 4096;

  /// `threads` threads in all, counting the caller of run(); 0 means
  /// std::thread::hardware_concurrency() (at least 1).
  explicit thread_pool(std::size_t threads) {
    if (threads > max_threads)
      throw std::invalid_argument("kernels: a thread pool of " + std::to_string(threads) +
                                  " threads requested; at most " +
                                  std::to_string(max_threads) + " (0 means one per hardware thread).");
    const std::size_t total = threads != 0 ? threads : std::max<std::size_t>(1, std::thread::hardware_concurrency());
    workers_.reserve(total - 1);
    try {
      for (std::size_t i = 1; i < total; ++i) workers_.emplace_back([this] { work(); });
    } catch (...) {
      stop_workers();  // those already started wait on job_posted_, which must outlive them
      throw;
    }
  }

  ~thread_pool() { stop_workers(); }

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  /// Threads that run tasks, the caller of run() included.
  std::size_t size() const { return workers_.size() + 1; }

  /// Threads a run() called now would use: size(), or 1 while a run() is under way (a task of
  /// this pool, or another thread's call, whose run() goes inline). For planning work (the GEMM
  /// sizes its split by it); a hint only, since the pool may change state right after.
  std::size_t available_threads() const { return busy_.load(std::memory_order_relaxed) ? 1 : size(); }

  /// Calls task(i) once for every i in [0, tasks) and returns when all calls have returned.
  /// If tasks throw, the first exception is rethrown here (the other tasks still run).
  template <class Task>
  void run(std::size_t tasks, Task&& task) {
    using task_type = std::remove_reference_t<Task>;
    run_erased(tasks, [](void* context, std::size_t i) { (*static_cast<task_type*>(context))(i); },
               const_cast<void*>(static_cast<const void*>(std::addressof(task))));
  }

 private:
  using task_function = void (*)(void* context, std::size_t task);

  void run_erased(std::size_t tasks, task_function function, void* context) {
    bool idle = false;
    if (workers_.empty() || tasks <= 1 || !busy_.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
      run_inline(tasks, function, context);
      return;
    }
    struct release_on_exit {
      std::atomic<bool>& busy;
      ~release_on_exit() { busy.store(false, std::memory_order_release); }
    } release{busy_};
    {
      std::lock_guard lock(mutex_);
      function_ = function;
      context_ = context;
      task_count_ = tasks;
      next_task_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      workers_running_.store(workers_.size(), std::memory_order_relaxed);
      job_.fetch_add(1, std::memory_order_release);
    }
    job_posted_.notify_all();
    take_tasks();
    const auto workers_done = [this] { return workers_running_.load(std::memory_order_acquire) == 0; };
    if (!spin_until(workers_done)) {
      std::unique_lock lock(mutex_);
      job_finished_.wait(lock, workers_done);
    }
    std::lock_guard lock(mutex_);
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

  /// Polls `done` for up to spin_time; whether it became true.
  template <class Done>
  static bool spin_until(Done&& done) {
    const auto deadline = std::chrono::steady_clock::now() + spin_time;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }

  static void run_inline(std::size_t tasks, task_function function, void* context) {
    std::exception_ptr error;
    for (std::size_t i = 0; i < tasks; ++i) {
      try {
        function(context, i);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }

  /// Runs tasks of the current job until none is left.
  void take_tasks() {
    for (std::size_t i; (i = next_task_.fetch_add(1, std::memory_order_relaxed)) < task_count_;) {
      try {
        function_(context_, i);
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }

  void stop_workers() noexcept {
    {
      std::lock_guard lock(mutex_);
      stopping_.store(true, std::memory_order_release);
    }
    job_posted_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  void work() {
    std::size_t jobs_seen = 0;
    for (;;) {
      const auto job_or_stop = [&] {
        return stopping_.load(std::memory_order_acquire) || job_.load(std::memory_order_acquire) != jobs_seen;
      };
      if (!spin_until(job_or_stop)) {
        std::unique_lock lock(mutex_);
        job_posted_.wait(lock, job_or_stop);
      }
      if (stopping_.load(std::memory_order_acquire)) return;
      jobs_seen = job_.load(std::memory_order_acquire);
      take_tasks();
      if (workers_running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex_);  // the caller checks workers_running_ under the mutex before it waits
        job_finished_.notify_one();
      }
    }
  }

  static constexpr std::chrono::microseconds spin_time{100};

  std::vector<std::thread> workers_;
  std::atomic<bool> busy_{false};  // set for a whole run(): one job at a time

  // A job: posted under the mutex (which the condition variables need), published to spinning
  // workers by the release increment of job_.
  std::mutex mutex_;
  std::condition_variable job_posted_;
  std::condition_variable job_finished_;
  std::atomic<std::size_t> job_{0};  // incremented for every job posted
  std::atomic<bool> stopping_{false};
  task_function function_ = nullptr;
  void* context_ = nullptr;
  std::size_t task_count_ = 0;
  std::atomic<std::size_t> next_task_{0};
  std::atomic<std::size_t> workers_running_{0};
  std::exception_ptr error_;  // guarded by the mutex
};

}  // namespace mixprec::kernels
