#pragma once
/// @file remote_value.hpp
/// @brief What crosses between the chief's program and the workers' in parameter-server
/// training: RemoteValue (a scheduled function's result), per-worker datasets and iterators, and
/// the handles of schedulable functions (coordinator/cluster_coordinator.hpp uses them).

#include <condition_variable>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/multi_worker/ps_wire.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::distribute::coordinator {

class ClusterCoordinator;

namespace coordinator_detail {

/// A scheduled function's completion, which fetch waits for: done, with an error or not. Its
/// members are compiled once (the mpi component), not per result type.
struct Completion {
  std::mutex mutex;
  std::condition_variable ready;
  bool done = false;
  std::exception_ptr error;

  /// Marks it done (after the result was stored), with `e` if the function failed; wakes fetch.
  void finish(std::exception_ptr e = nullptr);
  /// Waits until done. @throws the function's error.
  void wait();
};

}  // namespace coordinator_detail

/// The result of a scheduled function, available once it has run (TensorFlow's RemoteValue).
template <class R>
class RemoteValue {
 public:
  using value_type = R;
  /// Waits for the function and returns its result. @throws the function's error (with its type),
  /// UnavailableError when a ps task failed, CancelledError when an earlier function's error
  /// cancelled it. On a worker: serves the chief (never returns).
  R fetch() const;

 private:
  friend class ClusterCoordinator;
  struct State : coordinator_detail::Completion {
    std::optional<std::conditional_t<std::is_void_v<R>, bool, R>> value;  // set before finish()
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  ClusterCoordinator* coordinator_ = nullptr;
};

/// An iterator over one worker's dataset (TensorFlow's PerWorkerDistributedIterator): passed to
/// `schedule`, it is the running worker's own iterator inside the function.
template <Element... Ts>
class PerWorkerIterator {
 public:
  using value_type = std::tuple<Tensor<Ts>...>;
  /// The next element of this worker's dataset. @throws OutOfRangeError at its end ("End of
  /// sequence", as TensorFlow's next() raises); FailedPreconditionError outside a scheduled function.
  value_type next() {
    if (!local_)
      throw FailedPreconditionError(
          "PerWorkerIterator::next(): the iterator's elements are on the workers; call it in "
          "a function passed to ClusterCoordinator::schedule");
    if (local_->position == std::default_sentinel) throw OutOfRangeError("End of sequence");
    value_type out = *local_->position;
    ++local_->position;
    return out;
  }
  [[nodiscard]] std::size_t id() const noexcept { return id_; }

 private:
  friend class ClusterCoordinator;
  struct Local {
    typename data::Dataset<Ts...>::Iterator position;
  };
  std::size_t id_ = 0;
  std::shared_ptr<Local> local_;  // on the worker that owns it
};

/// A dataset built on every worker (TensorFlow's PerWorkerDataset).
template <Element... Ts>
class PerWorkerDataset {
 public:
  /// A per-worker iterator over it (TensorFlow's iter(per_worker_dataset)).
  [[nodiscard]] PerWorkerIterator<Ts...> iterator() const;

 private:
  friend class ClusterCoordinator;
  ClusterCoordinator* coordinator_ = nullptr;
  std::optional<data::Dataset<Ts...>> local_;  // on a worker
};

/// A function the coordinator can schedule (made by ClusterCoordinator::function).
template <class F>
class ScheduledFunction {
 public:
  [[nodiscard]] std::uint32_t id() const noexcept { return id_; }

 private:
  friend class ClusterCoordinator;
  std::uint32_t id_ = 0;
};

namespace coordinator_detail {

template <class F>
struct Signature : Signature<decltype(&F::operator())> {};
template <class C, class R, class... A>
struct Signature<R (C::*)(A...) const> {
  using result = R;
  using args = std::tuple<A...>;
};
template <class C, class R, class... A>
struct Signature<R (C::*)(A...)> : Signature<R (C::*)(A...) const> {};

template <class T>
struct IsPerWorkerIterator : std::false_type {};
template <Element... Ts>
struct IsPerWorkerIterator<PerWorkerIterator<Ts...>> : std::true_type {};
template <class T>
struct IsTensor : std::false_type {};
template <Element T>
struct IsTensor<Tensor<T>> : std::true_type {};

/// What may cross to a worker and back: arithmetic values and tensors.
template <class V>
void put_value(ps_wire::Writer& w, const V& v) {
  if constexpr (IsTensor<V>::value)
    w.put_tensor(v);
  else
    w.put(v);
}
template <class V>
V get_value(ps_wire::Reader& r, const Device& host) {
  if constexpr (IsTensor<V>::value)
    return r.get_tensor().template to_tensor<typename V::value_type>(host, "schedule");
  else
    return r.template get<V>();
}
template <class V>
inline constexpr bool transferable = std::is_arithmetic_v<V> || IsTensor<V>::value;

}  // namespace coordinator_detail

#if DEVTENSOR_MPI_DEFINITIONS  // Note [The mpi component's compiled part]

DEVTENSOR_MPI_DEFINITION void coordinator_detail::Completion::finish(std::exception_ptr e) {
  std::lock_guard lock(mutex);
  error = std::move(e);
  done = true;
  ready.notify_all();
}

DEVTENSOR_MPI_DEFINITION void coordinator_detail::Completion::wait() {
  std::unique_lock lock(mutex);
  ready.wait(lock, [&] { return done; });
  if (error) std::rethrow_exception(error);
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::coordinator
