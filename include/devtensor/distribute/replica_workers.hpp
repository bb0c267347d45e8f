#pragma once
/// @file replica_workers.hpp
/// @brief ReplicaWorkers: the persistent threads a MirroredStrategy runs its replicas on, one per
/// replica, woken together for each strategy.run; TurnOrder: one replica at a time while tracing.

#include <condition_variable>
#include <cstddef>
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

/// While a strategy.run is traced, its replicas build the graph one at a time in replica order, as
/// TensorFlow's MirroredStrategy runs them: a replica runs until it returns or arrives at a
/// merge_call, then the next one runs; once a merge is done, replica 0 goes on first again. So a
/// trace makes the same nodes in the same order every time: names, and the order in which the
/// replicas' reads and the merged update use each variable (Note [Automatic control dependencies]
/// in ops/graph.hpp), do not depend on which thread was faster.
class TurnOrder {
 public:
  void reset(int replicas) {
    std::lock_guard lock(mutex_);
    finished_.assign(static_cast<std::size_t>(replicas), false);
    turn_ = 0;
    aborted_ = false;
  }
  /// Waits until it is `replica`'s turn (or a replica failed: then nobody waits).
  void wait(int replica) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return turn_ == replica || aborted_; });
  }
  /// `replica` pauses at a merge_call: the next replica's turn.
  void pause(int replica) {
    std::lock_guard lock(mutex_);
    turn_ = next_after(replica);
    changed_.notify_all();
  }
  /// `replica` returned.
  void finish(int replica) {
    std::lock_guard lock(mutex_);
    finished_[static_cast<std::size_t>(replica)] = true;
    if (turn_ == replica) turn_ = next_after(replica);
    changed_.notify_all();
  }
  /// A merge is done: the first replica goes on.
  void merged() {
    std::lock_guard lock(mutex_);
    turn_ = next_after(-1);
    changed_.notify_all();
  }
  /// A replica failed: the others run without turns (to their merge_call, which fails too).
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> finished_;
  int turn_ = 0;
  bool aborted_ = false;

  int next_after(int replica) const {
    for (auto r = static_cast<std::size_t>(replica + 1); r < finished_.size(); ++r)
      if (!finished_[r]) return static_cast<int>(r);
    return -1;
  }
};

}  // namespace devtensor::distribute::strategy_detail
