#pragma once
/// @file replica_workers.hpp
/// @brief ReplicaWorkers: the persistent threads a MirroredStrategy runs its replicas on, one per
/// replica, woken together for each strategy.run.

#include <exception>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "devtensor/backend/cpu/worker_threads.hpp"
#include "devtensor/distribute/context.hpp"

namespace devtensor::distribute::strategy_detail {

/// One persistent thread per replica (backend::cpu::WorkerThreads). run() hands every thread the
/// same task and waits for all; an exception in one replica does not stop the others, and the
/// first (in replica order) is rethrown once all have finished, so the pool stays usable.
class ReplicaWorkers {
 public:
  explicit ReplicaWorkers(int replicas) : errors_(static_cast<std::size_t>(replicas)), threads_(replicas) {}

  void run(const std::function<void(int)>& task) {
    std::lock_guard serial(run_mutex_);  // one run at a time
    const std::function<void(int)> guarded = [this, &task](int replica) {
      try {
        task(replica);
      } catch (...) {
        errors_[static_cast<std::size_t>(replica)] = std::current_exception();  // read after wait()
      }
    };
    threads_.start(threads_.size(), guarded);
    threads_.wait();
    // Take every error out, so no worker keeps a reference to an exception the caller rethrows.
    std::vector<std::exception_ptr> errors;
    for (auto& e : errors_) errors.push_back(std::exchange(e, nullptr));
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
  std::mutex run_mutex_;
  std::vector<std::exception_ptr> errors_;  // one per replica: written by its worker, taken by run()
  backend::cpu::WorkerThreads threads_;
};

}  // namespace devtensor::distribute::strategy_detail
