#pragma once
/// @file cluster_coordinator.hpp
/// @brief TensorFlow's tf.distribute.coordinator.ClusterCoordinator: the chief schedules functions
/// that run on whichever worker is free, and collects their results (RemoteValue), while the
/// workers train asynchronously against the ps tasks. (README: "Parameter-server training" shows a
/// whole program; examples/17_parameter_server.cpp.)
///
/// Functions are matched across processes by the order of `function` calls, per-worker datasets
/// by the order of `create_per_worker_dataset` calls: every task makes the same ones, in the same
/// order, before its first `schedule`, `join` or `fetch` (where a worker starts serving and never
/// returns: when the chief's strategy ends the job, the worker process exits with status 0).
///
/// Faults. Workers send a heartbeat every timeout/5 (at most every second); a worker silent for
/// `timeout_seconds` is given up and the function it was running is scheduled again on another
/// worker (its writes reach the ps tasks once either way: parameter_server.hpp). Open MPI keeps
/// the job alive after a process dies only under `mpiexec --enable-recovery`; without it a dead
/// worker ends the whole job. A ps task that does not answer within the timeout fails the function
/// with UnavailableError, which join and fetch raise at the chief.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/coordinator/parameter_server_strategy.hpp"
#include "devtensor/coordinator/remote_value.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/multi_worker/ps_channel.hpp"

namespace devtensor::distribute::coordinator {

class ClusterCoordinator {
 public:
  /// On the chief, starts the dispatcher that sends scheduled functions to free workers.
  explicit ClusterCoordinator(ParameterServerStrategy& strategy);
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;
  /// Stops the dispatcher; functions not yet run are cancelled (call join() first).
  ~ClusterCoordinator();

  /// Makes `fn` schedulable (TensorFlow: a tf.function). Its parameters: per-worker iterators
  /// (by reference), arithmetic values, tensors; its result: void, arithmetic, a tensor.
  /// @throws FailedPreconditionError after the first schedule, join or fetch.
  template <class F>
  ScheduledFunction<F> function(F fn);

  /// Queues `fn(args...)` to run on a free worker; returns at once (TensorFlow's schedule).
  /// On a worker: serves the chief until the job ends (never returns).
  template <class F, class... Args>
  auto schedule(const ScheduledFunction<F>& fn, const Args&... args)
      -> RemoteValue<typename coordinator_detail::Signature<F>::result>;

  /// Waits until every scheduled function has run. @throws the first error of a function since
  /// the last join (TensorFlow: join raises one of the errors and clears them).
  void join();
  /// True when no scheduled function is pending.
  [[nodiscard]] bool done();
  /// `value.fetch()` (TensorFlow's coordinator.fetch).
  template <class R>
  R fetch(const RemoteValue<R>& value) {
    return value.fetch();
  }

  /// Calls `dataset_fn()` on every worker (not on the chief) and returns the per-worker dataset.
  template <class DatasetFn>
  auto create_per_worker_dataset(DatasetFn dataset_fn);

  [[nodiscard]] ParameterServerStrategy& strategy() const noexcept { return strategy_; }

 private:
  template <class R>
  friend class RemoteValue;
  template <Element... Ts>
  friend class PerWorkerDataset;

  struct Closure {
    std::uint64_t id = 0;
    std::uint32_t function = 0;
    ps_wire::Writer args;                           // sent again when the function is rescheduled
    std::function<void(ps_wire::Reader&)> deliver;  // the result, into its RemoteValue
    std::function<void(std::exception_ptr)> fail;
  };
  struct WorkerState {
    bool started = false;
    bool alive = true;
    ps_wire::Clock::time_point last_heard;
    std::shared_ptr<Closure> running;
  };
  using Invoker = std::function<void(ps_wire::Reader&, ps_wire::Writer&)>;

  ParameterServerStrategy& strategy_;
  ps_detail::State& state_;
  bool serving_ = false;  // a worker in its loop; the chief after its first schedule/join/fetch
  std::vector<Invoker> functions_;
  std::vector<std::shared_ptr<void>> iterators_;  // this worker's, by id (PerWorkerIterator::Local)
  std::vector<std::size_t> iterator_types_;
  std::size_t datasets_ = 0;
  std::size_t num_iterators_ = 0;

  // The chief's dispatcher.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Closure>> queue_;
  std::vector<WorkerState> workers_;
  std::uint64_t next_closure_ = 0;
  std::size_t pending_ = 0;
  std::exception_ptr first_error_;
  std::atomic<bool> stop_{false};
  std::thread dispatcher_;

  [[noreturn]] void serve();                  // a worker's loop
  void dispatch(const ThreadState& creator);  // the chief's dispatcher thread, in its creator's context
  void finish(const std::shared_ptr<Closure>& closure, ps_wire::Reader* result, std::exception_ptr error);
  void enqueue(std::shared_ptr<Closure> closure);
  template <Element... Ts>
  PerWorkerIterator<Ts...> make_iterator(const PerWorkerDataset<Ts...>& dataset);
  /// Files a new iterator (`local`: its position on this worker, if any) under the next id.
  std::size_t add_iterator(std::shared_ptr<void> local, std::size_t type);
  void begin_serving() {
    serving_ = true;
    if (!strategy_.is_chief()) serve();
  }
};

// --- implementation ---

template <class F>
ScheduledFunction<F> ClusterCoordinator::function(F fn) {
  using Sig = coordinator_detail::Signature<F>;
  if (serving_)
    throw FailedPreconditionError(
        "ClusterCoordinator::function after the first schedule, join or fetch: the workers "
        "have started serving and cannot make it any more. Make every function first.");
  ScheduledFunction<F> handle;
  handle.id_ = static_cast<std::uint32_t>(functions_.size());
  functions_.push_back([this, fn = std::move(fn)](ps_wire::Reader& in, ps_wire::Writer& out) mutable {
    // Each argument read in order (a braced list sequences the reads).
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      using Args = typename Sig::args;
      [[maybe_unused]] auto read = [&]<class P>(std::type_identity<P>) -> decltype(auto) {
        using V = std::remove_cvref_t<P>;
        if constexpr (coordinator_detail::IsPerWorkerIterator<V>::value) {
          const auto id = in.get<std::uint64_t>();
          if (id >= iterators_.size() || iterator_types_[id] != typeid(V).hash_code())
            throw FailedPreconditionError("schedule: per-worker iterator #" + std::to_string(id) +
                                          " is not one this worker made; every task must create the same per-worker "
                                          "datasets and iterators in the same order");
          V iterator;
          iterator.id_ = id;
          iterator.local_ = std::static_pointer_cast<typename V::Local>(iterators_[id]);
          return iterator;
        } else {
          return coordinator_detail::get_value<V>(in, state_.host);
        }
      };
      std::tuple<std::remove_cvref_t<std::tuple_element_t<I, Args>>...> values{
          read(std::type_identity<std::tuple_element_t<I, Args>>{})...};
      return std::apply(fn, values);
    };
    using R = typename Sig::result;
    constexpr auto n = std::tuple_size_v<typename Sig::args>;
    if constexpr (std::is_void_v<R>) {
      call(std::make_index_sequence<n>{});
    } else {
      coordinator_detail::put_value(out, call(std::make_index_sequence<n>{}));
    }
  });
  return handle;
}

template <class F, class... Args>
auto ClusterCoordinator::schedule(const ScheduledFunction<F>& fn, const Args&... args)
    -> RemoteValue<typename coordinator_detail::Signature<F>::result> {
  using Sig = coordinator_detail::Signature<F>;
  using R = typename Sig::result;
  static_assert(sizeof...(Args) == std::tuple_size_v<typename Sig::args>,
                "schedule(fn, args...): pass one argument per parameter of fn");
  static_assert(std::is_void_v<R> || coordinator_detail::transferable<R>,
                "a scheduled function returns void, an arithmetic value or a Tensor");
  begin_serving();  // a worker never comes back
  RemoteValue<R> result;
  result.coordinator_ = this;
  auto closure = std::make_shared<Closure>();
  closure->function = fn.id();
  ps_wire::Writer w;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    [[maybe_unused]] const auto put = [&]<class P, class A>(std::type_identity<P>, const A& arg) {
      using V = std::remove_cvref_t<P>;
      if constexpr (coordinator_detail::IsPerWorkerIterator<V>::value) {
        static_assert(std::is_same_v<A, V>, "pass the per-worker iterator the function takes");
        w.put<std::uint64_t>(arg.id());
      } else {
        static_assert(coordinator_detail::transferable<V>,
                      "a scheduled function's parameters are per-worker iterators, arithmetic values or tensors");
        coordinator_detail::put_value(w, static_cast<V>(arg));
      }
    };
    (put(std::type_identity<std::tuple_element_t<I, typename Sig::args>>{}, args), ...);
  }
  (std::index_sequence_for<Args...>{});
  closure->args = std::move(w);
  closure->deliver = [state = result.state_, &host = state_.host](ps_wire::Reader& r) {
    if constexpr (std::is_void_v<R>) {
      (void)host;  // (used for a value)
      state->value = true;
    } else {
      state->value = coordinator_detail::get_value<R>(r, host);  // nobody reads it before finish()
    }
    state->finish();
  };
  closure->fail = [state = std::shared_ptr<coordinator_detail::Completion>(result.state_)](std::exception_ptr e) {
    state->finish(std::move(e));
  };
  enqueue(std::move(closure));
  return result;
}

template <class R>
R RemoteValue<R>::fetch() const {
  if (coordinator_) coordinator_->begin_serving();
  state_->wait();
  if constexpr (!std::is_void_v<R>) return *state_->value;  // written before the wait ended
}

template <class DatasetFn>
auto ClusterCoordinator::create_per_worker_dataset(DatasetFn dataset_fn) {
  using D = std::invoke_result_t<DatasetFn&>;
  return [&]<Element... Ts>(std::type_identity<data::Dataset<Ts...>>) {
    if (serving_)
      throw FailedPreconditionError(
          "create_per_worker_dataset after the first schedule, join or fetch: the workers "
          "have started serving. Create every per-worker dataset first.");
    PerWorkerDataset<Ts...> out;
    out.coordinator_ = this;
    if (!strategy_.is_chief()) out.local_.emplace(dataset_fn());
    ++datasets_;
    return out;
  }
  (std::type_identity<D>{});
}

template <Element... Ts>
PerWorkerIterator<Ts...> PerWorkerDataset<Ts...>::iterator() const {
  if (!coordinator_)
    throw FailedPreconditionError("PerWorkerDataset: made by ClusterCoordinator::create_per_worker_dataset");
  return coordinator_->make_iterator(*this);
}

template <Element... Ts>
PerWorkerIterator<Ts...> ClusterCoordinator::make_iterator(const PerWorkerDataset<Ts...>& dataset) {
  if (serving_)
    throw FailedPreconditionError(
        "PerWorkerDataset::iterator() after the first schedule, join or fetch: the workers "
        "have started serving. Make every per-worker iterator first.");
  PerWorkerIterator<Ts...> it;
  using Local = typename PerWorkerIterator<Ts...>::Local;
  if (dataset.local_) it.local_ = std::make_shared<Local>(Local{dataset.local_->begin()});
  it.id_ = add_iterator(it.local_, typeid(PerWorkerIterator<Ts...>).hash_code());
  return it;
}

// --- definitions (Note [The mpi component's compiled part]) ---
#if DEVTENSOR_MPI_DEFINITIONS

DEVTENSOR_MPI_DEFINITION ClusterCoordinator::ClusterCoordinator(ParameterServerStrategy& strategy)
    : strategy_(strategy), state_(strategy.state()) {
  if (!strategy.is_chief()) return;
  workers_.resize(static_cast<std::size_t>(strategy.num_workers()));
  dispatcher_ = std::thread([this, context = ThreadState::snapshot()] { dispatch(context); });
}

DEVTENSOR_MPI_DEFINITION ClusterCoordinator::~ClusterCoordinator() {
  stop_ = true;
  changed_.notify_all();
  if (dispatcher_.joinable()) dispatcher_.join();
  std::deque<std::shared_ptr<Closure>> left;
  for (auto& w : workers_)
    if (w.running) left.push_back(std::move(w.running));
  for (auto& c : queue_) left.push_back(std::move(c));
  for (auto& c : left)
    c->fail(
        std::make_exception_ptr(CancelledError("The ClusterCoordinator was destroyed before this function ran; "
                                               "call join() before it goes")));
}

DEVTENSOR_MPI_DEFINITION std::size_t ClusterCoordinator::add_iterator(std::shared_ptr<void> local, std::size_t type) {
  iterators_.push_back(std::move(local));
  iterator_types_.push_back(type);
  return num_iterators_++;
}

DEVTENSOR_MPI_DEFINITION void ClusterCoordinator::join() {
  begin_serving();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return pending_ == 0; });
  if (auto error = std::exchange(first_error_, nullptr)) std::rethrow_exception(error);
}

DEVTENSOR_MPI_DEFINITION bool ClusterCoordinator::done() {
  std::lock_guard lock(mutex_);
  return pending_ == 0;
}

DEVTENSOR_MPI_DEFINITION void ClusterCoordinator::enqueue(std::shared_ptr<Closure> closure) {
  std::lock_guard lock(mutex_);
  closure->id = ++next_closure_;
  ++pending_;
  queue_.push_back(std::move(closure));
  changed_.notify_all();
}

/// A closure ran (result) or failed (error): its RemoteValue gets it; an error other than the
/// end of a worker is the one join raises, and cancels the functions not yet sent.
DEVTENSOR_MPI_DEFINITION void ClusterCoordinator::finish(const std::shared_ptr<Closure>& closure,
                                                         ps_wire::Reader* result, std::exception_ptr error) {
  if (!error) {
    try {
      closure->deliver(*result);
    } catch (...) {
      error = std::current_exception();
    }
  }
  std::deque<std::shared_ptr<Closure>> cancelled;
  if (error) {
    closure->fail(error);
    std::lock_guard lock(mutex_);
    if (!first_error_) first_error_ = error;
    cancelled.swap(queue_);
  }
  for (auto& c : cancelled)
    c->fail(std::make_exception_ptr(CancelledError("Cancelled: an earlier scheduled function failed")));
  std::lock_guard lock(mutex_);
  pending_ -= 1 + cancelled.size();
  changed_.notify_all();
}

DEVTENSOR_MPI_DEFINITION void ClusterCoordinator::dispatch(const ThreadState& creator) {
  const ThreadStateGuard as_creator(creator);  // Note [One thread state]
  const double timeout = state_.options.timeout_seconds;
  const auto silence = std::chrono::duration_cast<ps_wire::Clock::duration>(ps_wire::seconds(timeout));
  const auto start_limit =
      ps_wire::Clock::now() +
      std::max(silence * 6, std::chrono::duration_cast<ps_wire::Clock::duration>(std::chrono::seconds(60)));
  auto last_busy = ps_wire::Clock::now();
  auto pause = std::chrono::microseconds(20);
  while (!stop_) {
    std::exception_ptr failure;
    try {
      bool busy = false;
      // Results and heartbeats.
      // (By tag: the chief's own thread receives its ps tasks' replies on the same communicator.)
      for (int tag : {ps_wire::kHeartbeat, ps_wire::kResult})
        while (auto m = state_.channel.try_receive(MPI_ANY_SOURCE, tag)) {
          busy = true;
          const int worker = m->source - 1;
          if (worker < 0 || worker >= strategy_.num_workers()) continue;
          ps_wire::Reader r(std::move(*m), state_.channel);
          const std::uint64_t id = m->tag == ps_wire::kResult ? r.get<std::uint64_t>() : 0;
          std::shared_ptr<Closure> done;
          {
            std::lock_guard lock(mutex_);
            auto& w = workers_[static_cast<std::size_t>(worker)];
            if (!w.alive) {    // given up but only slow: it serves again (a result it still sends is ignored,
              w.alive = true;  // its writes were deduplicated by the ps tasks)
              log(LogSource::python_logger, LogSeverity::warning,
                  "Worker /job:worker/replica:0/task:" + std::to_string(worker) +
                      " is heard from again; it serves again");
            }
            w.started = true;
            w.last_heard = ps_wire::Clock::now();
            // A result for what it runs now; not one of a function given up on and sent elsewhere.
            if (m->tag != ps_wire::kResult || !w.running || w.running->id != id) continue;
            done = std::move(w.running);
          }
          std::exception_ptr error;
          try {
            ps_wire::get_status(r);
          } catch (...) {
            error = std::current_exception();
          }
          finish(done, &r, error);
        }
      // Workers given up, and what they ran back in the queue; then free workers get work.
      std::vector<std::shared_ptr<Closure>> unrunnable;
      {
        std::lock_guard lock(mutex_);
        const auto now = ps_wire::Clock::now();
        bool any_alive = false;
        for (std::size_t i = 0; i < workers_.size(); ++i) {
          auto& w = workers_[i];
          if (w.alive && ((w.started && now - w.last_heard > silence) || (!w.started && now > start_limit))) {
            w.alive = false;
            log(LogSource::python_logger, LogSeverity::warning,
                "Worker /job:worker/replica:0/task:" + std::to_string(i) + " has not been heard from for " +
                    std::to_string(timeout) + " s; it is considered failed" +
                    (w.running ? " and its function is scheduled again on another worker" : ""));
            if (w.running) queue_.push_front(std::move(w.running));
          }
          any_alive = any_alive || w.alive;
          if (!w.alive || !w.started || w.running || queue_.empty()) continue;
          w.running = queue_.front();
          queue_.pop_front();
          ps_wire::Writer run;
          run.put(w.running->id).put(w.running->function);
          run.append(w.running->args);
          try {
            state_.channel.send(strategy_.state().roles.worker_rank(static_cast<int>(i)), ps_wire::kRun,
                                std::move(run));
          } catch (const Error&) {  // MPI refused (a peer it knows is dead): the next worker gets it
            w.alive = false;
            queue_.push_front(std::move(w.running));
          }
          busy = true;
        }
        if (!any_alive) unrunnable.assign(queue_.begin(), queue_.end()), queue_.clear();
      }
      for (auto& c : unrunnable)
        finish(c, nullptr,
               std::make_exception_ptr(UnavailableError("No worker is available to run a scheduled function: "
                                                        "every worker has failed")));
      // Idle: yield for 2 ms after the last activity (results come in bursts), then sleep up to 1 ms
      // (a schedule() wakes it at once).
      const auto now = ps_wire::Clock::now();
      if (busy) {
        last_busy = now;
        pause = std::chrono::microseconds(20);
      } else if (now - last_busy < std::chrono::milliseconds(2)) {
        std::this_thread::yield();
      } else {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
      }
    } catch (...) {
      failure = std::current_exception();
    }
    if (!failure) continue;
    // MPI failed under the dispatcher: every pending function gets the error. (Outside the handler,
    // so the exception is not this thread's last to drop while a caller reads it.)
    std::vector<std::shared_ptr<Closure>> pending;
    {
      std::lock_guard lock(mutex_);
      for (auto& w : workers_)
        if (w.running) pending.push_back(std::move(w.running));
      pending.insert(pending.end(), queue_.begin(), queue_.end());
      queue_.clear();
    }
    for (auto& c : pending) finish(c, nullptr, failure);
    failure = nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

DEVTENSOR_MPI_DEFINITION void ClusterCoordinator::serve() {
  auto& channel = state_.channel;
  const int chief = 0;
  const double interval = std::min(1.0, state_.options.timeout_seconds / 5);
  ps_wire::Writer hello;
  hello.put<std::uint8_t>(1);
  channel.send(chief, ps_wire::kHeartbeat, std::move(hello));
  std::atomic<bool> stop{false};
  std::thread heartbeat([&] {
    while (!stop) {
      ps_wire::poll_until([&] { return stop.load(); }, ps_wire::after(interval), std::chrono::microseconds(0));
      ps_wire::Writer beat;
      beat.put<std::uint8_t>(1);
      try {
        if (!stop) channel.send(chief, ps_wire::kHeartbeat, std::move(beat));
      } catch (const Error&) {  // the chief is gone: the job is ending
      }
    }
  });
  for (;;) {
    auto m = channel.receive(chief, ps_wire::kRun, ps_wire::Clock::time_point::max());
    ps_wire::Reader in(std::move(*m), channel);
    const auto closure = in.get<std::uint64_t>();
    const auto function = in.get<std::uint32_t>();
    if (function == UINT32_MAX) break;  // the job ends
    ps_wire::Writer out;
    out.put(closure);
    ps_wire::Writer payload;
    try {
      if (function >= functions_.size())
        throw FailedPreconditionError("This worker has no scheduled function #" + std::to_string(function) +
                                      ": every task must make the same functions in the same order");
      state_.begin_closure();
      ps_detail::ClosureWrites writes(strategy_.num_ps());
      {
        ps_detail::current_closure_writes() = &writes;
        struct Reset {
          ~Reset() { ps_detail::current_closure_writes() = nullptr; }
        } reset;
        functions_[function](in, payload);
      }
      state_.commit(closure, writes);
      ps_wire::put_status(out, nullptr);
      out.append(std::move(payload));
    } catch (const Error& e) {
      ps_wire::put_status(out, &e);
    } catch (const std::exception& e) {
      const InternalError internal(std::string("A scheduled function failed on a worker: ") + e.what());
      ps_wire::put_status(out, &internal);
    }
    channel.send(chief, ps_wire::kResult, std::move(out));
  }
  stop = true;
  heartbeat.join();
  channel.flush(1.0);
  std::exit(0);  // finalises MPI (mpi_runtime.hpp)
}

#endif  // DEVTENSOR_MPI_DEFINITIONS

}  // namespace devtensor::distribute::coordinator
