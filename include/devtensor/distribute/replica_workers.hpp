#pragma once
/// @file replica_workers.hpp
/// @brief ReplicaWorkers: the persistent threads a MirroredStrategy runs its replicas on, one per
/// replica, woken together for each strategy.run.

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>
#include <utility>
#include <vector>

#include "devtensor/distribute/context.hpp"

namespace devtensor::distribute::strategy_detail {

/// One persistent thread per replica. run() hands every thread the same task and waits for all;
/// an exception in one replica does not stop the others, and the first (in replica order) is
/// rethrown once all have finished, so the pool stays usable.
///
/// Each worker sleeps on its own semaphore and the last one to finish releases the caller's, so a
/// run costs one wake-up per replica and one for the caller, with no mutex for the threads to
/// queue on (a shared mutex and condition variable cost 75 us per 2-replica run on a 2-vCPU VM,
/// most of it threads waking only to wait for the lock; these semaphores cost 25 us).
class ReplicaWorkers {
 public:
  explicit ReplicaWorkers(int replicas) {
    for (int r = 0; r < replicas; ++r) slots_.push_back(std::make_unique<Slot>());
    for (int r = 0; r < replicas; ++r) threads_.emplace_back([this, r] { loop(r); });
  }
  ReplicaWorkers(const ReplicaWorkers&) = delete;
  ReplicaWorkers& operator=(const ReplicaWorkers&) = delete;
  ~ReplicaWorkers() {
    stop_.store(true, std::memory_order_relaxed);  // published by the semaphores
    for (auto& slot : slots_) slot->start.release();
    for (auto& t : threads_) t.join();
  }

  void run(const std::function<void(int)>& task) {
    std::lock_guard serial(run_mutex_);  // one run at a time
    task_ = &task;
    remaining_.store(static_cast<int>(slots_.size()), std::memory_order_relaxed);
    for (auto& slot : slots_) slot->start.release();  // publishes task_ and remaining_
    done_.acquire();  // every worker's error is visible after this
    task_ = nullptr;
    // Take every error out, so no worker keeps a reference to an exception the caller rethrows.
    std::vector<std::exception_ptr> errors;
    for (auto& slot : slots_) errors.push_back(std::exchange(slot->error, nullptr));
    // The first replica error in replica order, preferring a root cause over replicas that were
    // merely released from a merge_call because of it.
    std::exception_ptr first, root;
    for (auto& e : errors) {
      if (!e) continue;
      if (!first) first = e;
      if (root) continue;
      try {
        std::rethrow_exception(e);
      } catch (const MergeAbandonedError&) {
      } catch (...) {
        root = e;
      }
    }
    if (root) std::rethrow_exception(root);
    if (first) std::rethrow_exception(first);
  }

 private:
  struct Slot {
    std::binary_semaphore start{0};
    std::exception_ptr error;  // written by the worker, taken by run() after done_
  };
  std::mutex run_mutex_;
  std::vector<std::unique_ptr<Slot>> slots_;
  const std::function<void(int)>* task_ = nullptr;
  std::atomic<int> remaining_{0};
  std::atomic<bool> stop_{false};
  std::binary_semaphore done_{0};
  std::vector<std::thread> threads_;

  void loop(int replica) {
    Slot& slot = *slots_[static_cast<std::size_t>(replica)];
    for (;;) {
      slot.start.acquire();
      if (stop_.load(std::memory_order_relaxed)) return;
      std::exception_ptr error;
      try {
        (*task_)(replica);
      } catch (...) {
        error = std::current_exception();
      }
      slot.error = std::move(error);  // moved: this thread keeps no reference
      // acq_rel: the last worker's decrement sees every other worker's error before releasing.
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.release();
    }
  }
};

}  // namespace devtensor::distribute::strategy_detail
