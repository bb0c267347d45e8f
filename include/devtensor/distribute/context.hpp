#pragma once
/// @file context.hpp
/// @brief Which distribution context this thread is in: a strategy's scope (variables created
/// here are distributed), a replica context (inside strategy.run), or neither (cross-replica).
///
/// Below the strategies, so that Variable can consult it without including them.
/// Strategies implement StrategyInterface, the part Keras's fit needs.

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/thread_state.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::distribute {

/// The reduction a WorkerGroup applies across processes.
enum class CollectiveReduction { sum, max, min };

/// The processes a strategy spans (MultiWorkerMirroredStrategy; MPI in the devtensor::mpi
/// component). Strategies within one process have none. Every call is a collective: each worker
/// makes the same calls in the same order.
class WorkerGroup {
 public:
  virtual ~WorkerGroup() = default;
  [[nodiscard]] virtual int num_workers() const = 0;
  /// This process's rank: 0 is the chief.
  [[nodiscard]] virtual int worker_index() const = 0;
  /// Reduces `count` elements of host memory across the workers: every worker's `input`, the
  /// result in `output` (`input == output`: in place); `what` names the operation in errors.
  /// @throws DeadlineExceededError when a peer does not arrive in time.
  virtual void all_reduce(devtensor::DType dtype, const void* input, void* output, std::size_t count,
                          CollectiveReduction reduction, std::string_view what) = 0;
  void all_reduce(devtensor::DType dtype, void* data, std::size_t count, CollectiveReduction reduction,
                  std::string_view what) {
    all_reduce(dtype, data, data, count, reduction, what);
  }
  /// The chief's `bytes` of host memory to every worker, in place.
  virtual void broadcast(void* data, std::size_t bytes, std::string_view what) = 0;
  /// Returns once every worker has called it.
  virtual void barrier(std::string_view what) = 0;

  /// Every worker's `mine` (any length, each its own), in rank order. Two all-reduces: the
  /// longest length, then capacity × workers int32 values, a byte in each: meant for the small
  /// exchanges of a strategy's start-up, not for tensors.
  std::vector<std::string> all_gather(std::string_view mine, std::string_view what) {
    std::int64_t capacity = static_cast<std::int64_t>(mine.size());
    all_reduce(devtensor::DType::DT_INT64, &capacity, 1, CollectiveReduction::max, what);
    const auto workers = static_cast<std::size_t>(num_workers());
    const auto width = static_cast<std::size_t>(capacity);
    std::vector<std::int32_t> slots(width * workers, 0);  // a sum of one non-zero contribution each
    std::int32_t* own = slots.data() + width * static_cast<std::size_t>(worker_index());
    for (std::size_t i = 0; i < mine.size(); ++i) own[i] = static_cast<unsigned char>(mine[i]) + 1;  // 0: padding
    all_reduce(devtensor::DType::DT_INT32, slots.data(), slots.size(), CollectiveReduction::sum, what);
    std::vector<std::string> out(workers);
    for (std::size_t w = 0; w < workers; ++w)
      for (std::size_t i = 0; i < width && slots[w * width + i] != 0; ++i)
        out[w].push_back(static_cast<char>(static_cast<unsigned char>(slots[w * width + i] - 1)));
    return out;
  }
};

/// What StrategyInterface::enter_scope returns: the scope lasts as long as the guard.
class StrategyScopeGuard {
 public:
  virtual ~StrategyScopeGuard() = default;
};

/// What Sequential::fit needs from a strategy.
class StrategyInterface {
 public:
  virtual ~StrategyInterface() = default;
  /// Enters the strategy's scope on this thread: variables created until the guard is destroyed
  /// are the strategy's distributed variables. (Virtual, so that non-template code such as
  /// Keras's fit does not instantiate every distributed variable type in every translation unit.)
  [[nodiscard]] virtual std::unique_ptr<StrategyScopeGuard> enter_scope() = 0;
  [[nodiscard]] virtual int num_replicas() const = 0;
  /// The device of each replica, in replica order.
  [[nodiscard]] virtual const std::vector<const Device*>& replica_devices() const = 0;
  /// The host CPU of this process (where values cross processes).
  [[nodiscard]] virtual const Device& host_device() const = 0;
  /// Calls fn(replica_id) once per replica, concurrently, in a replica context; rethrows the first
  /// replica's error (in replica order) after every replica finished.
  virtual void run_replicas(const std::function<void(int)>& fn) = 0;
  /// values[r][k]: replica r's k-th tensor (on replica r's device). Returns the element-wise sums,
  /// one copy per replica (result[r][k] on replica r's device).
  [[nodiscard]] virtual std::vector<std::vector<Tensor<float>>> batch_all_reduce_sum(
      const std::vector<std::vector<Tensor<float>>>& values) = 0;
  /// This process's share of a global batch of `global` examples: where its replicas start and
  /// how many each gets (TensorFlow's split; DATA auto-shard across processes).
  [[nodiscard]] virtual LocalBatch local_batch(std::int64_t global) const = 0;
  /// strategy.reduce(SUM) of one value per local replica, over every replica of every process,
  /// on the first replica's device. `what` names the operation in errors.
  [[nodiscard]] virtual Tensor<float> reduce_sum_to_first_replica(const std::vector<Tensor<float>>& per_replica,
                                                                  std::string_view what) = 0;
  /// The replicas of every process together (num_replicas() in one process).
  [[nodiscard]] virtual int num_replicas_in_sync() const { return num_replicas(); }
  /// The other processes, or nullptr in one process.
  [[nodiscard]] virtual WorkerGroup* worker_group() const { return nullptr; }
  [[nodiscard]] virtual std::string description() const = 0;
  /// TensorFlow's merge_call, for replica-context updates of mirrored variables: every replica
  /// calls it (inside run) with its contribution; the last to arrive runs `combine` once with all
  /// contributions in replica order; all return when it is done (its error, if any, in each).
  /// @throws FailedPreconditionError in every waiting replica when another replica failed or
  /// finished without making the same call.
  virtual void merge_call(
      int replica_id, std::shared_ptr<const void> contribution,
      const std::function<void(const std::vector<std::shared_ptr<const void>>&)>& combine) const = 0;
};

/// Thrown in replicas released from a merge_call that can no longer complete; the strategy
/// reports the replica error that caused it instead, when there is one.
class MergeAbandonedError : public FailedPreconditionError {
 public:
  using FailedPreconditionError::FailedPreconditionError;
};

/// The rendezvous behind StrategyInterface::merge_call, one per strategy, reset by every run.
class MergePoint {
 public:
  void reset(int replicas) {
    std::lock_guard lock(mutex_);
    slots_.assign(static_cast<std::size_t>(replicas), nullptr);
    replicas_ = replicas;
    arrived_ = finished_ = 0;
    aborted_ = false;
  }
  /// A replica returned from the run's function.
  void finished() {
    std::lock_guard lock(mutex_);
    ++finished_;
    if (arrived_ > 0 && arrived_ + finished_ == replicas_) aborted_ = true;  // waiters would wait forever
    changed_.notify_all();
  }
  /// A replica failed: nobody waits for it.
  void abort() {
    std::lock_guard lock(mutex_);
    aborted_ = true;
    changed_.notify_all();
  }
  void arrive(int replica, std::shared_ptr<const void> contribution,
              const std::function<void(const std::vector<std::shared_ptr<const void>>&)>& combine) {
    std::unique_lock lock(mutex_);
    if (aborted_) throw_aborted();
    slots_[static_cast<std::size_t>(replica)] = std::move(contribution);
    const std::uint64_t generation = generation_;
    if (++arrived_ + finished_ == replicas_) {
      if (finished_ > 0) {
        aborted_ = true;
        changed_.notify_all();
        throw_aborted();
      }
      error_ = nullptr;
      try {
        combine(slots_);
      } catch (...) {
        error_ = std::current_exception();
      }
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
      if (generation_ == generation) throw_aborted();
    }
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<const void>> slots_;
  int replicas_ = 0;
  int arrived_ = 0;
  int finished_ = 0;
  bool aborted_ = false;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;

  [[noreturn]] static void throw_aborted();
};

/// Sets a thread-local pointer for the lifetime of this object and restores the previous value.
template <class T>
class ScopedSet {
 public:
  ScopedSet(const T*& slot, const T* value) : slot_(slot), previous_(slot) { slot_ = value; }
  ScopedSet(const ScopedSet&) = delete;
  ScopedSet& operator=(const ScopedSet&) = delete;
  ~ScopedSet() { slot_ = previous_; }

 private:
  const T*& slot_;
  const T* previous_;
};

/// A strategy's scope on this thread.
struct DistributionScope {
  std::shared_ptr<StrategyInterface> strategy;
};
inline const DistributionScope*& current_distribution_scope() noexcept {
  return this_thread_state().distribution_scope;
}

/// A replica context: set on a strategy's worker thread while it runs replica `replica_id`.
struct ReplicaContextState {
  const StrategyInterface* strategy = nullptr;
  int replica_id = 0;        // in the sync group (global across processes)
  int num_replicas = 1;      // in the sync group
  int local_replica_id = 0;  // this process's replica: the component of a distributed variable
};
inline const ReplicaContextState*& current_replica_context() noexcept { return this_thread_state().replica_context; }

inline void MergePoint::throw_aborted() {
  throw MergeAbandonedError(
      "merge_call abandoned: another replica failed or returned without making the same update (every replica must "
      "update a MirroredVariable the same number of times in one run)");
}

}  // namespace devtensor::distribute
