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

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/device_util.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/cross_device_ops.hpp"
#include "devtensor/distribute/distributed_dataset.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/multi_worker/cross_worker.hpp"
#include "devtensor/distribute/replica_workers.hpp"
#include "devtensor/distribute/strategy_ops.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace distribute {

namespace strategy_detail {

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
  if (const auto* ctx = current_replica_context()) return ReplicaContext{ctx->replica_id, ctx->num_replicas};
  return std::nullopt;
}
/// True outside strategy.run.
[[nodiscard]] inline bool in_cross_replica_context() { return current_replica_context() == nullptr; }

template <CrossDeviceOps Ops = AutoCrossDeviceOps>
class MirroredStrategy {
  class Impl;

 public:
  /// Replicas on `devices` (any spelling; default: every logical GPU, else every logical CPU).
  /// @throws InvalidArgumentError for duplicates, unknown devices or non-local jobs;
  ///         UnimplementedError when TF_CONFIG describes a cluster and no devices are given.
  explicit MirroredStrategy(const std::vector<std::string>& devices = {}, Ops cross_device_ops = {});

  /// Replicas on every device of every worker: local devices × workers.
  [[nodiscard]] int num_replicas_in_sync() const noexcept { return impl_->num_replicas_in_sync(); }
  /// The replicas' canonical device names, in replica order.
  [[nodiscard]] const std::vector<std::string>& devices() const noexcept { return impl_->names; }
  [[nodiscard]] const Ops& cross_device_ops() const noexcept { return impl_->ops; }

  /// RAII: variables created on this thread while the guard lives are distributed.
  class [[nodiscard]] Scope {
   public:
    explicit Scope(std::shared_ptr<Impl> impl);
    ~Scope();

   private:
    StrategyScope<Impl> scope_;

    static std::shared_ptr<Impl> check(std::shared_ptr<Impl> impl);
  };
  [[nodiscard]] Scope scope() const;

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
  [[nodiscard]] Tensor<T> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value,
                                 std::optional<std::int64_t> axis) const;
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(std::string_view op, const PerReplica<Tensor<T>>& value,
                                 std::optional<std::int64_t> axis) const {
    return reduce(parse_reduce_op(op), value, axis);
  }
  /// A mirrored value is already reduced: MEAN returns it; SUM adds the replicas' equal copies.
  template <Numeric T>
  [[nodiscard]] Tensor<T> reduce(ReduceOp op, const Mirrored<Tensor<T>>& value,
                                 std::optional<std::int64_t> axis) const {
    if (op == ReduceOp::MEAN && !axis)
      return cdo_detail::copy_to(value.primary(), scope_device_or_host("strategy.reduce"));
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
    return cdo_detail::copy_to(value, scope_device_or_host("strategy.reduce"));
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
    return DistributedDataset<Ts...>(dataset, impl_->devices.devices(), impl_->num_workers(), impl_->worker_index());
  }

  /// The cross-device ops' reduction of a PerReplica value onto `destinations` (default: the
  /// replicas' devices), as a Mirrored value.
  template <Numeric T>
  [[nodiscard]] Mirrored<Tensor<T>> reduce_to(ReduceOp op, const PerReplica<Tensor<T>>& value,
                                              std::optional<Destinations> destinations = std::nullopt) const;
  /// batch_reduce over the replicas' devices (all-reduce algorithms pack here).
  template <Numeric T>
  [[nodiscard]] std::vector<Mirrored<Tensor<T>>> batch_reduce_to(
      ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values) const;

 protected:
  /// Replicas on this process's `devices`, in sync with the same replicas of every other worker
  /// (MultiWorkerMirroredStrategy: `across` says how values cross the processes).
  MirroredStrategy(const std::vector<std::string>& devices, Ops cross_device_ops, std::shared_ptr<CrossWorker> across)
      : impl_(std::make_shared<Impl>(devices, std::move(cross_device_ops), std::move(across))) {}

 private:
  std::shared_ptr<Impl> impl_;

  /// batch_reduce_to as an op (ops::BatchAllReduce: its inputs every replica's value, its outputs
  /// every reduced value's copy per replica device) that runs the cross-device ops.
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce_op(ReduceOp op,
                                                   const std::vector<PerReplica<Tensor<T>>>& values) const {
    const std::size_t replicas = static_cast<std::size_t>(impl_->num_replicas());
    std::vector<AnyTensor> inputs;
    ops::BatchAllReduce::Attrs attrs;
    std::vector<std::size_t> sizes;
    for (const auto& v : values) {
      strategy_detail::check_replicas(v, replicas);
      sizes.push_back(v.values.size());
      for (const auto& t : v.values) inputs.emplace_back(t);
      for (std::size_t d = 0; d < replicas; ++d) attrs.outputs.push_back({dtype_enum<T>(), v.values.at(0).shape()});
    }
    attrs.across_processes = !impl_->device_work_only();
    attrs.body = [impl = impl_, op, sizes](std::span<const AnyTensor> in) {
      std::vector<PerReplica<Tensor<T>>> per_replica(sizes.size());
      std::size_t next = 0;
      for (std::size_t k = 0; k < sizes.size(); ++k)
        for (std::size_t r = 0; r < sizes[k]; ++r) per_replica[k].values.push_back(in[next++].as<T>());
      std::vector<AnyTensor> out;
      for (const auto& mirrored : impl->batch_reduce_all_workers(op, per_replica))
        for (const auto& t : mirrored.values) out.emplace_back(t);
      return out;
    };
    const auto reduced = run_op<ops::BatchAllReduce>(attrs, inputs);
    std::vector<Mirrored<Tensor<T>>> out(values.size());
    for (std::size_t k = 0, next = 0; k < values.size(); ++k)
      for (std::size_t d = 0; d < replicas; ++d) out[k].values.push_back(reduced[next++].template as<T>());
    return out;
  }

  /// strategy.reduce's computation on values, now (ops::StrategyReduce runs it).
  template <Numeric T>
  Tensor<T> reduce_now(ReduceOp op, const PerReplica<Tensor<T>>& value, std::optional<std::int64_t> axis) const {
    const Device& destination = scope_device_or_host("strategy.reduce");
    if (!axis) {
      cdo_detail::require_components(value);
      Tensor<T> total = impl_->across_workers(cdo_detail::sum_on(value.values, destination), "strategy.reduce");
      return op == ReduceOp::MEAN
                 ? cdo_detail::divide(total, static_cast<std::int64_t>(value.size()) * impl_->num_workers())
                 : total;
    }
    const auto rank = static_cast<std::int64_t>(value.values[0].rank());
    std::vector<Tensor<T>> partial;
    std::int64_t count = 0;
    for (const auto& v : value.values) {
      DeviceScope scope(v.device_info().spec);
      partial.push_back(reduce_sum(v, *axis));
      count += v.shape()[static_cast<std::size_t>(*axis < 0 ? *axis + rank : *axis)];
    }
    Tensor<T> total = impl_->across_workers(cdo_detail::sum_on(partial, destination), "strategy.reduce");
    if (impl_->across) count = impl_->across->sum(count, "strategy.reduce");
    return op == ReduceOp::MEAN ? cdo_detail::divide(total, count) : total;
  }

  static void require_cross_replica(std::string_view method) {
    if (!in_cross_replica_context())
      throw FailedPreconditionError("Method " + std::string(method) +
                                    "() requires cross-replica context; it was "
                                    "called inside strategy.run. Return the values from the replica function and "
                                    "call it afterwards.");
  }
  class Impl final : public StrategyInterface, public std::enable_shared_from_this<Impl> {
   public:
    Impl(const std::vector<std::string>& requested, Ops cross_device_ops, std::shared_ptr<CrossWorker> processes);
    ~Impl() override;

    int num_replicas() const override { return static_cast<int>(names.size()); }
    std::unique_ptr<StrategyScopeGuard> enter_scope() override;
    int num_replicas_in_sync() const override { return num_replicas() * num_workers(); }
    int num_workers() const { return across ? across->num_workers() : 1; }
    /// Whether combining values only queues device work (within this process): a CUDA graph may
    /// record it (graph::EagerNodeOptions::capturable). Across processes it talks to the others.
    bool device_work_only() const { return !across; }
    int worker_index() const { return across ? across->worker_index() : 0; }
    WorkerGroup* worker_group() const override { return across ? &across->group() : nullptr; }
    const std::vector<const Device*>& replica_devices() const override { return devices.devices(); }
    const Device& host_device() const override { return *host; }
    void run_replicas(const std::function<void(int)>& fn) override;
    void merge_call(int replica_id, std::shared_ptr<const void> contribution,
                    const std::function<void(const std::vector<std::shared_ptr<const void>>&)>& combine) const override;
    std::vector<std::vector<Tensor<float>>> batch_all_reduce_sum(
        const std::vector<std::vector<Tensor<float>>>& values) override;
    /// batch_all_reduce_sum's computation, now (ops::BatchAllReduce runs it).
    std::vector<std::vector<Tensor<float>>> batch_all_reduce_sum_now(
        const std::vector<std::vector<Tensor<float>>>& values);
    LocalBatch local_batch(std::int64_t global) const override;
    Tensor<float> reduce_sum_to_first_replica(const std::vector<Tensor<float>>& per_replica,
                                              std::string_view what) override;
    /// A cross-replica step of fit's step as an op (now, or a node of the traced step) that runs
    /// `eager(self, values)` (values[r][k] in, `outputs_per_row` results per row of values out).
    template <class Op, class Eager>
    std::vector<std::vector<Tensor<float>>> cross_replica_op(const std::vector<std::vector<Tensor<float>>>& values,
                                                             std::size_t outputs_per_row, Eager eager) {
      std::vector<AnyTensor> inputs;
      std::vector<std::size_t> row_sizes;
      typename Op::Attrs attrs;
      for (const auto& row : values) {
        row_sizes.push_back(row.size());
        for (const auto& t : row) inputs.emplace_back(t);
        for (std::size_t k = 0; k < outputs_per_row; ++k) attrs.outputs.push_back({DType::DT_FLOAT, row.at(k).shape()});
      }
      attrs.across_processes = !device_work_only();
      attrs.body = [self = this->shared_from_this(), row_sizes, eager](std::span<const AnyTensor> in) {
        std::vector<std::vector<Tensor<float>>> rows(row_sizes.size());
        for (std::size_t r = 0, next = 0; r < rows.size(); ++r)
          for (std::size_t k = 0; k < row_sizes[r]; ++k) rows[r].push_back(in[next++].as<float>());
        std::vector<AnyTensor> out;
        for (const auto& row : eager(*self, rows))
          for (const auto& t : row) out.emplace_back(t);
        return out;
      };
      const auto symbolic = run_op<Op>(attrs, inputs);
      std::vector<std::vector<Tensor<float>>> out;
      for (std::size_t next = 0; next < symbolic.size(); next += outputs_per_row) {
        out.emplace_back();
        for (std::size_t k = 0; k < outputs_per_row; ++k) out.back().push_back(symbolic[next + k].template as<float>());
      }
      return out;
    }

    /// The cross-device ops' reduction over this process's replicas; across processes, every
    /// worker's replicas (CrossWorker says how).
    template <Numeric T>
    std::vector<Mirrored<Tensor<T>>> batch_reduce_all_workers(ReduceOp op,
                                                              const std::vector<PerReplica<Tensor<T>>>& values) {
      if (!across) return ops.batch_reduce(op, values, devices);
      return across->batch_reduce(ops, op, values, devices, num_replicas_in_sync());
    }
    /// A tensor summed across the workers (itself in one process), on its own device.
    template <Numeric T>
    Tensor<T> across_workers(const Tensor<T>& value, std::string_view what) {
      return across ? across->sum(std::vector{value}, what, num_replicas(), num_replicas_in_sync()).front() : value;
    }
    std::string description() const override;

    Ops ops;
    std::shared_ptr<CrossWorker> across;  // the other processes; none in one process
    std::vector<std::string> names;
    Destinations devices;
    const Device* host = nullptr;
    std::unique_ptr<strategy_detail::ReplicaWorkers> workers;
    mutable MergePoint merge_point;
    mutable strategy_detail::TurnOrder turns;  // while a run is traced
    bool tracing = false;                      // whether the run under way is traced
  };
};

// The replicas' machinery, out of the class and not inline, for the reason the reductions below
// are: in compiled mode the explicit instantiation declarations keep it out of the caller's
// translation unit (GCC instantiates and optimizes an inline member despite them, in case it inlines it).
template <CrossDeviceOps Ops>
MirroredStrategy<Ops>::Impl::Impl(const std::vector<std::string>& requested, Ops cross_device_ops,
                                  std::shared_ptr<CrossWorker> processes)
    : ops(std::move(cross_device_ops)), across(std::move(processes)) {
  const DeviceSet& all = device_set("constructing MirroredStrategy");
  if (requested.empty() && !across) {
    const char* tf_config = std::getenv("TF_CONFIG");
    if (tf_config && std::string_view(tf_config).find("cluster") != std::string_view::npos)
      throw UnimplementedError(
          "In-graph multi-worker training with `MirroredStrategy` is not supported in eager mode.");
  }
  std::vector<std::string> wanted = requested;
  if (wanted.empty()) {
    for (const auto& d : all)
      if (d.is_gpu) wanted.push_back(d.full_name);
    if (wanted.empty())
      for (const auto& d : all) wanted.push_back(d.full_name);
  }
  for (const auto& name : wanted) {
    const std::string full = device_util::canonicalize(name);
    const auto spec = DeviceSpec::parse(full);
    if (spec.job() && *spec.job() != "localhost")
      throw InvalidArgumentError(
          "Local device should have only 'localhost' in the job field in device string. E.g. "
          "'job:localhost' in /job:localhost/replica:0/task:0/device:CPU:0 Devices: " +
          full);
    for (const auto& seen : names)
      if (seen == full) throw InvalidArgumentError("No duplicates allowed in `devices` argument: " + full);
    names.push_back(full);
  }
  std::vector<const Device*> found;
  for (const auto& name : wanted) found.push_back(&all.find(name));  // the user's spelling, for its error
  devices = std::move(found);
  host = &all.host_cpu();
  if (!across && log_enabled(LogSource::python_logger, LogSeverity::info))
    log(LogSource::python_logger, LogSeverity::info,
        "Using MirroredStrategy with devices " + cdo_detail::python_tuple(names));
  ops.prepare(devices, all);
  workers = std::make_unique<strategy_detail::ReplicaWorkers>(static_cast<int>(names.size()));
}

template <CrossDeviceOps Ops>
MirroredStrategy<Ops>::Impl::~Impl() = default;

template <CrossDeviceOps Ops>
MirroredStrategy<Ops>::MirroredStrategy(const std::vector<std::string>& devices, Ops cross_device_ops)
    : impl_(std::make_shared<Impl>(devices, std::move(cross_device_ops), nullptr)) {}

template <CrossDeviceOps Ops>
MirroredStrategy<Ops>::Scope::Scope(std::shared_ptr<Impl> impl) : scope_(check(std::move(impl))) {}

template <CrossDeviceOps Ops>
MirroredStrategy<Ops>::Scope::~Scope() = default;

template <CrossDeviceOps Ops>
std::shared_ptr<typename MirroredStrategy<Ops>::Impl> MirroredStrategy<Ops>::Scope::check(std::shared_ptr<Impl> impl) {
  const auto* current = current_distribution_scope();
  if (current && current->strategy.get() != impl.get())
    throw InvalidArgumentError("Mixing different tf.distribute.Strategy objects: " + impl->description() + " is not " +
                               current->strategy->description());
  return impl;
}

template <CrossDeviceOps Ops>
typename MirroredStrategy<Ops>::Scope MirroredStrategy<Ops>::scope() const {
  return Scope(impl_);
}

template <CrossDeviceOps Ops>
std::unique_ptr<StrategyScopeGuard> MirroredStrategy<Ops>::Impl::enter_scope() {
  return std::make_unique<StrategyScope<Impl>>(this->shared_from_this());
}

template <CrossDeviceOps Ops>
void MirroredStrategy<Ops>::Impl::run_replicas(const std::function<void(int)>& fn) {
  const int n = num_replicas();
  merge_point.reset(n);
  // While tracing, every replica builds the caller's graph (replica r > 0 under the name scope
  // `replica_<r>`, as TensorFlow's MirroredStrategy names them), one at a time (TurnOrder).
  const auto graph = graph::current_graph();
  tracing = graph != nullptr;
  if (tracing) turns.reset(n);
  // Each replica starts in the caller's context (Note [One thread state]), then its own replica
  // context and device.
  const ThreadState caller = ThreadState::snapshot();
  workers->run([&](int r) {
    const ThreadStateGuard as_caller(caller);
    const ReplicaContextState state{this, worker_index() * n + r, num_replicas_in_sync(), r};
    const ScopedSet in_replica(current_replica_context(), &state);
    DeviceScope scope(devices[static_cast<std::size_t>(r)].spec);
    std::optional<graph::NameScope> replica_names;
    if (graph && r > 0) replica_names.emplace("replica_" + std::to_string(r));
    try {
      if (graph) turns.wait(r);
      fn(r);
    } catch (...) {
      merge_point.abort();  // replicas waiting in merge_call must not wait for this one
      if (graph) turns.abort();
      throw;
    }
    merge_point.finished();
    if (graph) turns.finish(r);
  });
}

template <CrossDeviceOps Ops>
void MirroredStrategy<Ops>::Impl::merge_call(
    int replica_id, std::shared_ptr<const void> contribution,
    const std::function<void(const std::vector<std::shared_ptr<const void>>&)>& combine) const {
  if (!tracing) {
    merge_point.arrive(replica_id, std::move(contribution), combine);
    return;
  }
  const int replica = replica_id;  // this process's replica (ReplicaContextState::local_replica_id)
  turns.pause(replica);
  merge_point.arrive(replica_id, std::move(contribution), [&](const std::vector<std::shared_ptr<const void>>& all) {
    combine(all);
    turns.merged();
  });
  turns.wait(replica);
}

template <CrossDeviceOps Ops>
std::vector<std::vector<Tensor<float>>> MirroredStrategy<Ops>::Impl::batch_all_reduce_sum(
    const std::vector<std::vector<Tensor<float>>>& values) {
  return cross_replica_op<ops::BatchAllReduce>(
      values, values.empty() ? 0 : values[0].size(),
      [](Impl& self, const auto& v) { return self.batch_all_reduce_sum_now(v); });
}

template <CrossDeviceOps Ops>
std::vector<std::vector<Tensor<float>>> MirroredStrategy<Ops>::Impl::batch_all_reduce_sum_now(
    const std::vector<std::vector<Tensor<float>>>& values) {
  const std::size_t replicas = values.size();
  const std::size_t count = replicas ? values[0].size() : 0;
  std::vector<PerReplica<Tensor<float>>> items(count);
  // Replica r's values on replica r's device: a program without GPU bodies computes them on
  // the CPU, and the all-reduce algorithms need them where the replicas are.
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t r = 0; r < replicas; ++r) items[k].values.push_back(cdo_detail::copy_to(values[r][k], devices[r]));
  const auto reduced = batch_reduce_all_workers(ReduceOp::SUM, items);
  std::vector<std::vector<Tensor<float>>> out(replicas);
  for (std::size_t r = 0; r < replicas; ++r)
    for (std::size_t k = 0; k < count; ++k) out[r].push_back(reduced[k].values[r]);
  return out;
}

template <CrossDeviceOps Ops>
LocalBatch MirroredStrategy<Ops>::Impl::local_batch(std::int64_t global) const {
  return distribute::local_batch(global, global, num_workers(), num_replicas(), worker_index());
}

template <CrossDeviceOps Ops>
Tensor<float> MirroredStrategy<Ops>::Impl::reduce_sum_to_first_replica(const std::vector<Tensor<float>>& per_replica,
                                                                       std::string_view what) {
  const std::vector<std::vector<Tensor<float>>> values{per_replica};
  return cross_replica_op<ops::StrategyReduce>(values, 1, [what = std::string(what)](Impl& self, const auto& v) {
    return std::vector<std::vector<Tensor<float>>>{
        {self.across_workers(cdo_detail::sum_on(v[0], self.devices[0]), what)}};
  })[0][0];
}

template <CrossDeviceOps Ops>
std::string MirroredStrategy<Ops>::Impl::description() const {
  std::string s = "MirroredStrategy(";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s + ")";
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// The cross-replica reductions, out of the class and not inline, so that in compiled mode the
// explicit instantiation declarations below keep their bodies (and the cross-device ops' code
// they reach) out of the user's translation unit: 12_distributed_custom_loop.cpp 12 s -> 8.5 s.
template <CrossDeviceOps Ops>
template <Numeric T>
Tensor<T> MirroredStrategy<Ops>::reduce(ReduceOp op, const PerReplica<Tensor<T>>& value,
                                        std::optional<std::int64_t> axis) const {
  require_cross_replica("reduce");
  if (value.values.empty()) throw InvalidArgumentError("reduce: the PerReplica value has no components");
  if (const auto rank = static_cast<std::int64_t>(value.values[0].rank()); axis && (*axis < -rank || *axis >= rank))
    throw InvalidArgumentError("`axis` = " + std::to_string(*axis) + " out of range for `value` with rank " +
                               std::to_string(rank));
  const DeviceSpec destination = scope_device_or_host("strategy.reduce").spec;
  const Shape shape =
      axis ? ops::reduced_shape({std::vector<std::int64_t>{*axis}, false}, value.values[0].shape(), "Sum")
           : value.values[0].shape();
  const std::vector<AnyTensor> inputs(value.values.begin(), value.values.end());
  ops::StrategyReduce::Attrs attrs{[strategy = *this, op, axis, destination](std::span<const AnyTensor> in) {
                                     PerReplica<Tensor<T>> values;
                                     for (const auto& t : in) values.values.push_back(t.as<T>());
                                     DeviceScope scope(destination);
                                     return std::vector<AnyTensor>{strategy.reduce_now(op, values, axis)};
                                   },
                                   {{dtype_enum<T>(), shape}},
                                   !impl_->device_work_only()};
  return run_op<ops::StrategyReduce>(attrs, inputs).front().template as<T>();
}

template <CrossDeviceOps Ops>
template <Numeric T>
Mirrored<Tensor<T>> MirroredStrategy<Ops>::reduce_to(ReduceOp op, const PerReplica<Tensor<T>>& value,
                                                     std::optional<Destinations> destinations) const {
  require_cross_replica("reduce_to");
  if (!destinations && impl_->across) return impl_->batch_reduce_all_workers(op, std::vector{value}).front();
  return impl_->ops.reduce(op, value, destinations ? *destinations : impl_->devices);
}

template <CrossDeviceOps Ops>
template <Numeric T>
std::vector<Mirrored<Tensor<T>>> MirroredStrategy<Ops>::batch_reduce_to(
    ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values) const {
  require_cross_replica("batch_reduce_to");
  return batch_reduce_op(op, values);
}

// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // over devtensor's cross-device ops (Note [Explicit instantiations])
DEVTENSOR_EXTERN_TEMPLATE class MirroredStrategy<AutoCrossDeviceOps>;
DEVTENSOR_EXTERN_TEMPLATE class MirroredStrategy<ReductionToOneDevice>;
DEVTENSOR_EXTERN_TEMPLATE class MirroredStrategy<HierarchicalCopyAllReduce>;
DEVTENSOR_EXTERN_TEMPLATE class MirroredStrategy<NcclAllReduce>;
DEVTENSOR_EXTERN_TEMPLATE class MirroredStrategy<CollectiveAllReduce>;
// The reductions' member templates, for float and double (other element types: in the caller).
#define DEVTENSOR_STRATEGY_REDUCTIONS(S, T) \
  DEVTENSOR_EXTERN_TEMPLATE Tensor<T> MirroredStrategy<S>::reduce<T>(ReduceOp, const PerReplica<Tensor<T>>&, std::optional<std::int64_t>) const; \
  DEVTENSOR_EXTERN_TEMPLATE Mirrored<Tensor<T>> MirroredStrategy<S>::reduce_to<T>(ReduceOp, const PerReplica<Tensor<T>>&, std::optional<Destinations>) const; \
  DEVTENSOR_EXTERN_TEMPLATE std::vector<Mirrored<Tensor<T>>> MirroredStrategy<S>::batch_reduce_to<T>(ReduceOp, const std::vector<PerReplica<Tensor<T>>>&) const;
#define DEVTENSOR_STRATEGY_REDUCTIONS_FOR(S) DEVTENSOR_STRATEGY_REDUCTIONS(S, float) DEVTENSOR_STRATEGY_REDUCTIONS(S, double)
DEVTENSOR_STRATEGY_REDUCTIONS_FOR(AutoCrossDeviceOps)
DEVTENSOR_STRATEGY_REDUCTIONS_FOR(ReductionToOneDevice)
DEVTENSOR_STRATEGY_REDUCTIONS_FOR(HierarchicalCopyAllReduce)
DEVTENSOR_STRATEGY_REDUCTIONS_FOR(NcclAllReduce)
DEVTENSOR_STRATEGY_REDUCTIONS_FOR(CollectiveAllReduce)
#undef DEVTENSOR_STRATEGY_REDUCTIONS_FOR
#undef DEVTENSOR_STRATEGY_REDUCTIONS
#endif
// clang-format on

}  // namespace distribute
}  // namespace devtensor
