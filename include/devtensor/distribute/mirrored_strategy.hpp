#pragma once
/// @file mirrored_strategy.hpp
/// @brief MirroredStrategy: one replica per logical device, run concurrently by persistent worker
/// threads, variables mirrored across the replicas, values combined by a CrossDeviceOps
/// (TensorFlow's tf.distribute.MirroredStrategy, eager).
///
///     dt::distribute::MirroredStrategy strategy({"/cpu:0", "/cpu:1"}, dt::distribute::ReductionToOneDevice{});
///     { auto guard = strategy.scope(); /* variables created here are mirrored */ }
///     auto per_replica = strategy.run(step, strategy_batch);   // step runs once per replica, concurrently
///     auto total = strategy.reduce(dt::distribute::ReduceOp::SUM, per_replica, std::nullopt);

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace distribute {

namespace strategy_detail {

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
      } catch (const detail::MergeAbandonedError&) {
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

template <class V>
const V& unwrap(const PerReplica<V>& value, int replica) {
  return value.values[static_cast<std::size_t>(replica)];
}
template <class V>
const V& unwrap(const Mirrored<V>& value, int replica) {
  return value.values[static_cast<std::size_t>(replica)];
}
template <class A>
const A& unwrap(const A& value, int) {
  return value;
}
template <class A>
void check_replicas(const A&, std::size_t) {}
template <class V>
void check_replicas(const PerReplica<V>& value, std::size_t n) {
  if (value.size() != n)
    throw InvalidArgumentError("run: a PerReplica argument has " + std::to_string(value.size()) + " values for " +
                               std::to_string(n) + " replicas");
}
template <class V>
void check_replicas(const Mirrored<V>& value, std::size_t n) {
  if (value.size() != n)
    throw InvalidArgumentError("run: a Mirrored argument has " + std::to_string(value.size()) + " values for " +
                               std::to_string(n) + " replicas");
}

}  // namespace strategy_detail

/// Inside strategy.run: which replica this is.
struct ReplicaContext {
  int replica_id_in_sync_group = 0;
  int num_replicas_in_sync = 1;
};
/// The replica context of the calling thread, or nothing in cross-replica context.
[[nodiscard]] inline std::optional<ReplicaContext> get_replica_context() {
  if (const auto* ctx = detail::current_replica_context()) return ReplicaContext{ctx->replica_id, ctx->num_replicas};
  return std::nullopt;
}
/// True outside strategy.run.
[[nodiscard]] inline bool in_cross_replica_context() { return detail::current_replica_context() == nullptr; }

/// A dataset whose global batches are split across replicas (experimental_distribute_dataset).
template <Element... Ts>
class DistributedDataset {
 public:
  using value_type = PerReplica<std::tuple<Tensor<Ts>...>>;

  /// `devices`: this worker's replicas; with several workers, each takes its own share of every
  /// global batch (DATA auto-shard: every worker reads the whole dataset).
  DistributedDataset(data::Dataset<Ts...> dataset, std::vector<int> devices, int workers = 1, int worker = 0)
      : dataset_(std::move(dataset)), devices_(std::move(devices)), workers_(workers), worker_(worker) {}

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = DistributedDataset::value_type;
    using difference_type = std::ptrdiff_t;
    Iterator(typename data::Dataset<Ts...>::Iterator it, const DistributedDataset* owner) : it_(std::move(it)), owner_(owner) {
      fill();
    }
    const value_type& operator*() const { return current_; }
    const value_type* operator->() const { return &current_; }
    Iterator& operator++() {
      ++it_;
      fill();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& i, std::default_sentinel_t s) { return i.it_ == s; }

   private:
    typename data::Dataset<Ts...>::Iterator it_;
    const DistributedDataset* owner_;
    value_type current_;
    void fill() {
      if (!(it_ == std::default_sentinel)) current_ = owner_->split(*it_);
    }
  };
  [[nodiscard]] Iterator begin() const { return Iterator(dataset_.begin(), this); }
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

  /// Where this worker's replicas start in a global batch of `rows` elements, and their sizes.
  [[nodiscard]] LocalBatch split_for(std::int64_t rows) const {
    return local_batch(dataset_.batch_size(), rows, workers_, static_cast<std::int64_t>(devices_.size()), worker_);
  }
  /// The per-replica sizes of a global batch of `rows` elements (this worker's replicas).
  [[nodiscard]] std::vector<std::int64_t> sizes_for(std::int64_t rows) const { return split_for(rows).sizes; }

 private:
  data::Dataset<Ts...> dataset_;
  std::vector<int> devices_;
  int workers_ = 1;
  int worker_ = 0;

  /// TensorFlow's split of a global batch: replica i gets sizes[i] consecutive elements; a partial
  /// batch runs out early and
  /// later replicas get empty batches.
  value_type split(const std::tuple<Tensor<Ts>...>& element) const {
    const std::int64_t rows = std::get<0>(element).rank() > 0 ? std::get<0>(element).shape()[0] : 1;
    const auto [offset, sizes] = split_for(rows);
    value_type out;
    std::int64_t start = offset;
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      const std::int64_t take = std::max<std::int64_t>(0, std::min(sizes[r], rows - start));
      out.values.push_back(std::apply(
          [&](const auto&... c) { return std::tuple{data::pipeline::rows_on(c, start, take, devices_[r])...}; }, element));
      start += take;
    }
    return out;
  }
};

template <class CrossDeviceOps = AutoCrossDeviceOps>
class MirroredStrategy {
  class Impl;

 public:
  /// Replicas on `devices` (any spelling; default: every logical GPU, else every logical CPU).
  /// @throws InvalidArgumentError for duplicates, unknown devices or non-local jobs;
  ///         UnimplementedError when TF_CONFIG describes a cluster and no devices are given.
  explicit MirroredStrategy(const std::vector<std::string>& devices = {}, CrossDeviceOps cross_device_ops = {})
      : impl_(std::make_shared<Impl>(devices, std::move(cross_device_ops), std::nullopt)) {}

  /// Replicas on every device of every worker: local devices × workers.
  [[nodiscard]] int num_replicas_in_sync() const noexcept { return impl_->num_replicas_in_sync(); }
  /// The replicas' canonical device names, in replica order.
  [[nodiscard]] const std::vector<std::string>& devices() const noexcept { return impl_->names; }
  [[nodiscard]] const CrossDeviceOps& cross_device_ops() const noexcept { return impl_->ops; }

  /// RAII: variables created on this thread while the guard lives are distributed.
  class [[nodiscard]] Scope {
   public:
    explicit Scope(std::shared_ptr<Impl> impl) : scope_(check(std::move(impl))) {}

   private:
    detail::StrategyScope<Impl> scope_;

    static std::shared_ptr<Impl> check(std::shared_ptr<Impl> impl) {
      const auto* current = detail::current_distribution_scope();
      if (current && current->strategy.get() != impl.get())
        throw InvalidArgumentError("Mixing different tf.distribute.Strategy objects: " + impl->description() +
                                   " is not " + current->strategy->description());
      return impl;
    }
  };
  [[nodiscard]] Scope scope() const { return Scope(impl_); }

  /// Calls fn once per replica, concurrently, in a replica context with that replica's device as
  /// the device scope. PerReplica and Mirrored arguments are unwrapped to the replica's value.
  /// Returns a PerReplica of the results (nothing for void functions).
  template <class F, class... Args>
  auto run(F&& fn, const Args&... args) const {
    require_cross_replica("run");
    const auto n = static_cast<std::size_t>(impl_->num_replicas());
    (strategy_detail::check_replicas(args, n), ...);
    using R = std::invoke_result_t<F&, decltype(strategy_detail::unwrap(args, 0))...>;
    if constexpr (std::is_void_v<R>) {
      impl_->run_replicas([&]([[maybe_unused]] int r) { fn(strategy_detail::unwrap(args, r)...); });
    } else {
      std::vector<std::optional<R>> results(n);
      impl_->run_replicas([&]([[maybe_unused]] int r) {
        results[static_cast<std::size_t>(r)].emplace(fn(strategy_detail::unwrap(args, r)...));
      });
      PerReplica<R> out;
      for (auto& result : results) out.values.push_back(std::move(*result));
      return out;
    }
  }

  /// Cross-replica reduction to the current device (default CPU:0). With an axis, each replica
  /// first reduces over it; MEAN then divides the global sum by the global element count along
  /// the axis (uneven replica batches weigh correctly).
  /// @throws InvalidArgumentError for an axis out of range.
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, std::optional<std::int64_t> axis) const {
    require_cross_replica("reduce");
    if (value.values.empty()) throw InvalidArgumentError("reduce: the PerReplica value has no components");
    const int destination = result_device();
    if (!axis) {
      cdo_detail::require_components(value);
      Tensor<T> total = impl_->across_workers(cdo_detail::sum_on(value.values, destination), "strategy.reduce");
      return op == ReduceOp::MEAN ? cdo_detail::divide(total, static_cast<std::int64_t>(value.size()) * impl_->num_workers()) : total;
    }
    const auto rank = static_cast<std::int64_t>(value.values[0].rank());
    if (*axis < -rank || *axis >= rank)
      throw InvalidArgumentError("`axis` = " + std::to_string(*axis) + " out of range for `value` with rank " +
                                 std::to_string(rank));
    std::vector<Tensor<T>> partial;
    std::int64_t count = 0;
    for (const auto& v : value.values) {
      DeviceScope scope(v.device_info().spec);
      partial.push_back(reduce_sum(v, *axis));
      count += v.shape()[static_cast<std::size_t>(*axis < 0 ? *axis + rank : *axis)];
    }
    Tensor<T> total = impl_->across_workers(cdo_detail::sum_on(partial, destination), "strategy.reduce");
    if (auto* group = impl_->group.get()) group->all_reduce(DType::DT_INT64, &count, 1, detail::CollectiveReduction::sum, "strategy.reduce");
    return op == ReduceOp::MEAN ? cdo_detail::divide(total, count) : total;
  }
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(std::string_view op, const PerReplica<Tensor<T>>& value, std::optional<std::int64_t> axis) const {
    return reduce(parse_reduce_op(op), value, axis);
  }
  /// A mirrored value is already reduced: MEAN returns it; SUM adds the replicas' equal copies.
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(ReduceOp op, const Mirrored<Tensor<T>>& value, std::optional<std::int64_t> axis) const {
    if (op == ReduceOp::MEAN && !axis) return cdo_detail::copy_to(value.primary(), result_device());
    return reduce(op, PerReplica<Tensor<T>>{value.values}, axis);
  }
  /// A plain (non-distributed) tensor: MEAN returns it; SUM needs a single replica.
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(ReduceOp op, const Tensor<T>& value, std::optional<std::int64_t> axis) const {
    if (op == ReduceOp::SUM && num_replicas_in_sync() > 1)
      throw InvalidArgumentError("A non-DistributedValues value " + value.shape().to_string() + " " +
                                 std::string(value.dtype()) + " tensor cannot be reduced with the given reduce op " +
                                 std::string(to_string(op)) + ".");
    if (axis) return reduce(op, PerReplica<Tensor<T>>{{value}}, axis);
    return cdo_detail::copy_to(value, result_device());
  }

  /// Every replica's value, in replica order.
  template <class V>
  [[nodiscard]] std::vector<V> experimental_local_results(const PerReplica<V>& value) const {
    return value.values;
  }
  template <Element T>
  [[nodiscard]] std::vector<Tensor<T>> experimental_local_results(const Variable<T>& v) const {
    std::vector<Tensor<T>> out;
    for (std::size_t i = 0; i < v.num_components(); ++i) out.push_back(v.component(i));
    return out;
  }

  /// Splits every global batch across the replicas and places each piece on its
  /// replica's device.
  template <Element... Ts>
  [[nodiscard]] DistributedDataset<Ts...> experimental_distribute_dataset(const data::Dataset<Ts...>& dataset) const {
    require_cross_replica("experimental_distribute_dataset");
    return DistributedDataset<Ts...>(dataset, impl_->device_indices, impl_->num_workers(), impl_->worker_index());
  }

  /// The cross-device ops' reduction of a PerReplica value onto `destinations` (default: the
  /// replicas' devices), as a Mirrored value.
  template <Numeric T>
  [[nodiscard]] Mirrored<Tensor<T>> reduce_to(ReduceOp op, const PerReplica<Tensor<T>>& value,
                                              std::optional<std::vector<std::string>> destinations = std::nullopt) const {
    require_cross_replica("reduce_to");
    if (!destinations && impl_->group) return impl_->batch_reduce_all_workers(op, std::vector{value}).front();
    const auto targets = destinations ? cdo_detail::resolve(*destinations) : impl_->device_indices;
    return impl_->ops.reduce(op, value, targets);
  }
  /// batch_reduce over the replicas' devices (all-reduce algorithms pack here).
  template <Numeric T>
  [[nodiscard]] std::vector<Mirrored<Tensor<T>>> batch_reduce_to(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values) const {
    require_cross_replica("batch_reduce_to");
    return impl_->batch_reduce_all_workers(op, values);
  }

 protected:
  /// The processes a MultiWorkerMirroredStrategy spans, and how values cross them.
  struct Workers {
    std::shared_ptr<detail::WorkerGroup> group;
    CommunicationOptions options;
  };
  /// Replicas on this process's `devices`, in sync with the same replicas of every other worker.
  MirroredStrategy(const std::vector<std::string>& devices, CrossDeviceOps cross_device_ops, Workers workers)
      : impl_(std::make_shared<Impl>(devices, std::move(cross_device_ops), std::move(workers))) {}

 private:
  std::shared_ptr<Impl> impl_;

  static void require_cross_replica(std::string_view method) {
    if (!in_cross_replica_context())
      throw FailedPreconditionError("Method " + std::string(method) + "() requires cross-replica context; it was "
                                    "called inside strategy.run. Return the values from the replica function and "
                                    "call it afterwards.");
  }
  /// The current device when the scope names one exactly, else the host CPU.
  static int result_device() {
    const DeviceSpec& request = detail::requested_spec();
    if (request.type() && request.id()) {
      const auto& devices = Context::global().logical_devices();
      for (std::size_t i = 0; i < devices.size(); ++i)
        if (request.matches(devices[i].spec)) return static_cast<int>(i);
    }
    return 0;
  }

  class Impl final : public detail::StrategyInterface, public std::enable_shared_from_this<Impl> {
   public:
    Impl(const std::vector<std::string>& requested, CrossDeviceOps cross_device_ops, std::optional<Workers> processes)
        : ops(std::move(cross_device_ops)) {
      if (processes) {
        group = std::move(processes->group);
        group_options = processes->options;
      }
      auto& context = Context::global();
      if (!context.initialized()) context.ensure_initialized("constructing MirroredStrategy");
      if (requested.empty() && !group) {
        const char* tf_config = std::getenv("TF_CONFIG");
        if (tf_config && std::string_view(tf_config).find("cluster") != std::string_view::npos)
          throw UnimplementedError("In-graph multi-worker training with `MirroredStrategy` is not supported in eager mode.");
      }
      std::vector<std::string> wanted = requested;
      if (wanted.empty()) {
        for (const auto& d : context.logical_devices())
          if (d.is_gpu) wanted.push_back(d.full_name);
        if (wanted.empty())
          for (const auto& d : context.logical_devices()) wanted.push_back(d.full_name);
      }
      for (const auto& name : wanted) {
        const std::string full = device_util::canonicalize(name);
        const auto spec = DeviceSpec::parse(full);
        if (spec.job() && *spec.job() != "localhost")
          throw InvalidArgumentError("Local device should have only 'localhost' in the job field in device string. E.g. "
                                     "'job:localhost' in /job:localhost/replica:0/task:0/device:CPU:0 Devices: " + full);
        for (const auto& seen : names)
          if (seen == full) throw InvalidArgumentError("No duplicates allowed in `devices` argument: " + full);
        names.push_back(full);
      }
      device_indices = cdo_detail::resolve(wanted);  // the user's spellings, for its error
      if (!group && log_enabled(LogSource::python_logger, LogSeverity::info))
        log(LogSource::python_logger, LogSeverity::info,
            "Using MirroredStrategy with devices " + cdo_detail::python_tuple(names));
      if constexpr (std::is_same_v<CrossDeviceOps, AutoCrossDeviceOps>) ops.select(device_indices);
      else if constexpr (requires { ops.validate(); }) ops.validate();
      workers = std::make_unique<strategy_detail::ReplicaWorkers>(static_cast<int>(names.size()));
    }

    int num_replicas() const override { return static_cast<int>(names.size()); }
    std::unique_ptr<detail::StrategyScopeGuard> enter_scope() override {
      return std::make_unique<detail::StrategyScope<Impl>>(this->shared_from_this());
    }
    int num_replicas_in_sync() const override { return num_replicas() * num_workers(); }
    int num_workers() const { return group ? group->num_workers() : 1; }
    int worker_index() const { return group ? group->worker_index() : 0; }
    detail::WorkerGroup* worker_group() const override { return group.get(); }
    const std::vector<int>& replica_devices() const override { return device_indices; }
    void run_replicas(const std::function<void(int)>& fn) override {
      const int n = num_replicas();
      merge_point.reset(n);
      workers->run([&](int r) {
        const detail::ReplicaContextState state{this, worker_index() * n + r, num_replicas_in_sync(), r};
        const detail::ScopedSet in_replica(detail::current_replica_context(), &state);
        DeviceScope scope(cdo_detail::info(device_indices[static_cast<std::size_t>(r)]).spec);
        try {
          fn(r);
        } catch (...) {
          merge_point.abort();  // replicas waiting in merge_call must not wait for this one
          throw;
        }
        merge_point.finished();
      });
    }
    void merge_call(int replica_id, std::shared_ptr<const void> contribution,
                    const std::function<void(const std::vector<std::shared_ptr<const void>>&)>& combine) const override {
      merge_point.arrive(replica_id, std::move(contribution), combine);
    }
    std::vector<std::vector<Tensor<float>>> batch_all_reduce_sum(const std::vector<std::vector<Tensor<float>>>& values) override {
      const std::size_t replicas = values.size();
      const std::size_t count = replicas ? values[0].size() : 0;
      std::vector<PerReplica<Tensor<float>>> items(count);
      // Replica r's values on replica r's device: a program without GPU bodies computes them on
      // the CPU, and the all-reduce algorithms need them where the replicas are.
      for (std::size_t k = 0; k < count; ++k)
        for (std::size_t r = 0; r < replicas; ++r) items[k].values.push_back(cdo_detail::copy_to(values[r][k], device_indices[r]));
      const auto reduced = batch_reduce_all_workers(ReduceOp::SUM, items);
      std::vector<std::vector<Tensor<float>>> out(replicas);
      for (std::size_t r = 0; r < replicas; ++r)
        for (std::size_t k = 0; k < count; ++k) out[r].push_back(reduced[k].values[r]);
      return out;
    }
    std::vector<std::int64_t> batch_sizes(std::int64_t global) const override {
      return local_batch(global, global, num_workers(), num_replicas(), worker_index()).sizes;
    }
    std::int64_t batch_offset(std::int64_t global) const override {
      return local_batch(global, global, num_workers(), num_replicas(), worker_index()).offset;
    }

    /// The cross-device ops' reduction over this process's replicas, then (several workers) the
    /// local sums all-reduced across the workers: host buffers packed by bytes_per_pack, the
    /// list reversed first, one collective per pack. MEAN divides by every replica.
    /// When the workers' GPUs form an NCCL clique (MultiWorkerMirroredStrategy with NCCL), every
    /// replica of every worker is reduced in one NCCL call per pack instead, on the devices; with
    /// a timeout, an MPI barrier first names a worker that does not arrive.
    template <Numeric T>
    std::vector<Mirrored<Tensor<T>>> batch_reduce_all_workers(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values) {
      if (!group || group->num_workers() == 1) return ops.batch_reduce(op, values, device_indices);
      if constexpr (std::is_same_v<CrossDeviceOps, CollectiveAllReduce> && !std::is_same_v<T, std::int32_t>) {
        bool one_per_replica = ops.spans_workers();
        for (const auto& v : values) one_per_replica = one_per_replica && v.size() == device_indices.size();
        if (one_per_replica) {
          // Each replica's value on its GPU (a program without GPU bodies computed it on the CPU).
          std::vector<PerReplica<Tensor<T>>> placed(values.size());
          for (std::size_t i = 0; i < values.size(); ++i)
            for (std::size_t r = 0; r < device_indices.size(); ++r)
              placed[i].values.push_back(cdo_detail::copy_to(values[i].values[r], device_indices[r]));
          if (group_options.timeout_seconds()) group->barrier("batch_reduce");
          return ops.all_reduce_across_workers(op, placed, device_indices, "batch_reduce");
        }
      }
      auto local = ops.batch_reduce(ReduceOp::SUM, values, device_indices);
      std::vector<Tensor<T>> sums;
      for (const auto& m : local) sums.push_back(m.primary());
      sums = across_workers(sums, "batch_reduce");
      std::vector<Mirrored<Tensor<T>>> out(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        Tensor<T> total = op == ReduceOp::MEAN ? cdo_detail::divide(sums[i], static_cast<std::int64_t>(num_replicas_in_sync())) : sums[i];
        out[i] = ops.broadcast(total, device_indices);
      }
      return out;
    }
    /// Each tensor summed across the workers (itself in one process), on its own device.
    template <Numeric T>
    std::vector<Tensor<T>> across_workers(const std::vector<Tensor<T>>& values, std::string_view what) {
      if (!group || group->num_workers() == 1 || values.empty()) return values;
      std::vector<Tensor<T>> reversed(values.rbegin(), values.rend());
      const auto packs = group_by_size(reversed, group_options.bytes_per_pack());
      if (log_enabled(LogSource::python_logger, LogSeverity::info))
        cdo_detail::log_first_10(worker_logs(), [&] {
          return "Collective all_reduce tensors: " + std::to_string(values.size()) + " all_reduces, num_devices = " +
                 std::to_string(num_replicas()) + ", group_size = " + std::to_string(num_replicas_in_sync()) +
                 ", implementation = CommunicationImplementation.RING, num_packs = " + std::to_string(packs.size());
        });
      std::vector<Tensor<T>> out;
      for (const auto& pack : packs) {
        // A pack of one tensor in host memory: MPI reads it where it is and writes the result.
        if (pack.size() == 1 && pack[0].host_memory()) {
          const auto& t = pack[0];
          auto result = Tensor<T>::empty(t.shape(), t.device_index(), "CollectiveReduceV2");
          const auto count = static_cast<std::size_t>(t.num_elements());
          group->all_reduce(dtype_enum<T>(), t.data(), result.mutable_data(), count, detail::CollectiveReduction::sum, what);
          out.push_back(std::move(result));
          continue;
        }
        // Otherwise one host buffer per pack: each tensor copied in once and out once.
        std::size_t total = 0;
        for (const auto& t : pack) total += static_cast<std::size_t>(t.num_elements());
        const auto host = std::make_unique_for_overwrite<T[]>(total);
        std::size_t at = 0;
        for (const auto& t : pack) {
          const auto count = static_cast<std::size_t>(t.num_elements());
          detail::copy_bytes(host.get() + at, detail::host_buffer_device(), t.data(), t.device_info(), count * sizeof(T));
          at += count;
        }
        group->all_reduce(dtype_enum<T>(), host.get(), total, detail::CollectiveReduction::sum, what);
        at = 0;
        for (const auto& t : pack) {
          auto result = Tensor<T>::empty(t.shape(), t.device_index(), "CollectiveReduceV2");
          const auto count = static_cast<std::size_t>(t.num_elements());
          detail::copy_bytes(result.mutable_data(), result.device_info(), host.get() + at, detail::host_buffer_device(),
                             count * sizeof(T));
          at += count;
          out.push_back(std::move(result));
        }
      }
      std::reverse(out.begin(), out.end());
      return out;
    }
    template <Numeric T>
    Tensor<T> across_workers(const Tensor<T>& value, std::string_view what) {
      return group ? across_workers(std::vector{value}, what).front() : value;
    }
    static logging::FirstN& worker_logs() {
      static logging::FirstN site(10);
      return site;
    }
    std::string description() const override {
      std::string s = "MirroredStrategy(";
      for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
      return s + ")";
    }

    CrossDeviceOps ops;
    std::shared_ptr<detail::WorkerGroup> group;  // the other processes; none in one process
    CommunicationOptions group_options;
    std::vector<std::string> names;
    std::vector<int> device_indices;
    std::unique_ptr<strategy_detail::ReplicaWorkers> workers;
    mutable detail::MergePoint merge_point;
  };
};

}  // namespace distribute
}  // namespace devtensor
