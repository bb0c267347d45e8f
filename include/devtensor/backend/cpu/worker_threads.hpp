#pragma once
/// @file worker_threads.hpp
/// @brief WorkerThreads: persistent threads handed one task at a time, each worker its own index.
/// What a MirroredStrategy runs its replicas on (distribute/replica_workers.hpp) and what runs a
/// graph's independent parts (graph/inter_op.hpp); and the polling both use before they sleep.
///
/// Each worker sleeps on its own semaphore and the last one to finish releases the caller's, so a
/// batch of work costs one wake-up per worker and one for the caller, with no mutex for the threads
/// to queue on (a shared mutex and condition variable cost 75 us per 2-replica run on a 2-vCPU VM,
/// most of it threads waking only to wait for the lock; these semaphores cost 25 us).

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <semaphore>
#include <thread>
#include <vector>

namespace devtensor::backend::cpu {

/// How long a hand-over between threads polls before it sleeps. Waking a sleeping thread cost
/// 20-25 us on a 2-vCPU VM; polling costs that much CPU time on an otherwise idle core.
inline constexpr std::chrono::microseconds kSpin{50};

/// One poll's pause: a hint to the core that this thread is spinning.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `ready` until it returns true or kSpin has passed; its last answer.
template <class Ready>
bool spin_until(Ready ready) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int polls = 1;; ++polls) {
    if (ready()) return true;
    cpu_relax();
    if (polls % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

struct WorkerThreadsOptions {
  bool spin = false;  // a worker polls for its next task for kSpin before it sleeps
};

/// Persistent threads: start() hands the first `count` workers one task, worker w calling
/// task(first + w), and wait() returns once all of them have returned. One batch at a time: the
/// owner serialises start/wait pairs (InterOpTeam with a busy flag, ReplicaWorkers with a mutex).
class WorkerThreads {
 public:
  /// @throws std::system_error when a thread cannot be made (those made are stopped first).
  explicit WorkerThreads(int workers, WorkerThreadsOptions options = {}) : spin_(options.spin) {
    try {
      grow(workers);
    } catch (...) {
      stop();
      throw;
    }
  }
  WorkerThreads(const WorkerThreads&) = delete;
  WorkerThreads& operator=(const WorkerThreads&) = delete;
  ~WorkerThreads() { stop(); }

  [[nodiscard]] int size() const noexcept { return static_cast<int>(threads_.size()); }

  /// Adds workers until there are `workers`; between batches only. @throws std::system_error
  /// when a thread cannot be made, keeping the workers made until then.
  void grow(int workers) {
    if (workers <= size()) return;
    slots_.reserve(static_cast<std::size_t>(workers));  // no reallocation below: a failure leaves both in step
    threads_.reserve(static_cast<std::size_t>(workers));
    while (size() < workers) {
      Slot& slot = *slots_.emplace_back(std::make_unique<Slot>());
      try {
        threads_.emplace_back([this, &slot, w = size()] { loop(slot, w); });
      } catch (...) {
        slots_.pop_back();
        throw;
      }
    }
  }

  /// Starts task(first + w) on workers w = 0 .. count - 1 (count <= size()) and returns at once.
  /// `task` must not throw, and must live until wait() has returned.
  void start(int count, const std::function<void(int)>& task, int first = 0) noexcept {
    task_ = &task;
    first_ = first;
    started_ = count;
    remaining_.store(count, std::memory_order_relaxed);
    for (int w = 0; w < count; ++w) slots_[static_cast<std::size_t>(w)]->start.release();  // publishes the above
  }

  /// Returns once every worker start() woke has returned from the task: what they wrote
  /// happened before this returns.
  void wait() noexcept {
    if (started_ > 0) done_.acquire();
    started_ = 0;
    task_ = nullptr;
  }

 private:
  struct Slot {
    std::binary_semaphore start{0};
  };
  bool spin_;
  std::vector<std::unique_ptr<Slot>> slots_;
  const std::function<void(int)>* task_ = nullptr;
  int first_ = 0;
  int started_ = 0;  // the owner's thread only
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  std::binary_semaphore done_{0};
  std::vector<std::thread> threads_;

  void stop() noexcept {
    stop_.store(true, std::memory_order_relaxed);  // published by the semaphores
    for (auto& slot : slots_) slot->start.release();
    for (auto& t : threads_) t.join();
  }

  void loop(Slot& slot, int worker) {
    for (;;) {
      if (!spin_ || !spin_until([&] { return slot.start.try_acquire(); })) slot.start.acquire();
      if (stop_.load(std::memory_order_relaxed)) return;
      (*task_)(first_ + worker);
      // acq_rel: the last worker's decrement carries every other worker's writes to the caller.
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.release();
    }
  }
};

}  // namespace devtensor::backend::cpu
