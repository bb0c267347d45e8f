#pragma once
/// @file distributed_variable.hpp
/// @brief Variables created in a distribution strategy's scope, as TensorFlow's
/// DistributedVariable: one local variable per replica device of the strategy, behind the same
/// Variable<T> handle users hold.
///
/// - MirroredVariable (synchronization AUTO / ON_WRITE): components stay equal. Reads inside
///   strategy.run see the replica's component; writes there meet in merge_call, are combined with
///   the variable's aggregation and applied to every component (aggregation NONE: each replica
///   writes its own component, as TensorFlow's); cross-replica writes go to every component.
/// - SyncOnReadVariable (ON_READ): replica writes stay local; cross-replica reads aggregate the
///   components (SUM, MEAN, ONLY_FIRST_REPLICA) of every replica of every worker.
/// Float sums go through the strategy's all-reduce (its cross-device ops: NCCL or the ring on the
/// devices, and across workers), as gradients do; other element types sum on the first component's
/// device (AddN's device body on a real GPU) and across workers through the worker group.
///
/// Strategies install a StrategyVariableCreator in `scope()` (StrategyScope), so
/// variables/variable.hpp needs nothing from here.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace distribute {

template <Element T>
class DistributedVariable : public VariableImpl<T> {
 public:
  [[nodiscard]] bool distributed() const noexcept override { return true; }
  [[nodiscard]] std::size_t num_components() const noexcept override { return components_.size(); }
  [[nodiscard]] Tensor<T> component(std::size_t i) const override {
    this->check_component(i);
    return components_[i].implementation().read();
  }
  /// The variable's own name for component 0, "<name>/replica_<i>:0" for the others.
  [[nodiscard]] std::string component_name(std::size_t i) const override {
    this->check_component(i);
    return components_[i].name();
  }
  [[nodiscard]] const Device& device() const noexcept override { return *devices_[0]; }

  /// The strategy whose scope created it.
  [[nodiscard]] const StrategyInterface& strategy() const noexcept { return *strategy_; }
  /// The per-device variables, in replica order (TensorFlow's `.values`).
  [[nodiscard]] const std::vector<Variable<T>>& values() const noexcept { return components_; }

  /// The replica's component inside strategy.run; the cross-replica value outside.
  [[nodiscard]] Tensor<T> read() const override {
    const int replica = local_replica();
    return replica >= 0 ? component(static_cast<std::size_t>(replica)) : read_cross_replica();
  }
  [[nodiscard]] const Device& read_device() const override {
    const int replica = local_replica();
    return replica >= 0 ? *devices_[static_cast<std::size_t>(replica)] : cross_replica_device();
  }

  /// Every component's state (graph mode: Note [Automatic control dependencies]).
  [[nodiscard]] std::vector<const void*> resources() const override {
    std::vector<const void*> out;
    for (const auto& c : components_)
      for (const void* r : c.implementation().resources()) out.push_back(r);
    return out;
  }
  /// Inside strategy.run, a read traced there reads the replica's component when the graph runs
  /// (which runs in cross-replica context).
  [[nodiscard]] VariableImpl<T>& read_target() override {
    const int replica = local_replica();
    return replica >= 0 ? components_[static_cast<std::size_t>(replica)].implementation() : *this;
  }

  /// Each component updated on its own device (kernel(c, value, out) for component c).
  /// @throws FailedPreconditionError in a replica context of the variable's strategy: the
  /// replicas' updates meet in merge_call (assign_add, or an optimizer's apply_gradients).
  void apply_update(std::string_view op, typename VariableImpl<T>::UpdateKernel kernel) override {
    if (local_replica() >= 0)
      throw FailedPreconditionError(std::string(op) + " of " + this->info().name +
                                    " in a replica context: apply optimizer updates in cross-replica context "
                                    "(after strategy.run), or use assign_add, which merges the replicas' updates");
    for (std::size_t c = 0; c < components_.size(); ++c)
      components_[c].implementation().apply_update(
          op, [&](std::size_t, const Tensor<T>& value, Tensor<T>& out) { kernel(c, value, out); });
  }

 protected:
  /// Component 0 from `initial_value` (across processes, the chief's: every worker starts from it),
  /// the others copied from component 0, so the replicas start equal.
  DistributedVariable(VariableInfo info, const Tensor<T>& initial_value, const StrategyInterface& strategy)
      : VariableImpl<T>(std::move(info)), strategy_(&strategy), devices_(strategy.replica_devices()) {
    const auto& me = this->info();
    Tensor<T> start = initial_value;
    if (auto* group = workers()) start = from_chief(initial_value, *group, me.base_name);
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      VariableInfo part = me;
      part.handle_id = next_tensor_id();  // a variable of its own (tapes tell them apart)
      if (i > 0) {
        part.base_name = me.base_name + "/replica_" + std::to_string(i);
        part.name = part.base_name + ":0";
      }
      const Tensor<T>& from = i == 0 ? start : components_[0].implementation().read();
      components_.emplace_back(std::make_shared<LocalVariable<T>>(std::move(part), from, *devices_[i]));
    }
  }

  virtual Tensor<T> read_cross_replica() const = 0;
  virtual const Device& cross_replica_device() const = 0;

  /// This thread's replica of the variable's strategy, or -1 in cross-replica context.
  int local_replica() const {
    const auto* ctx = current_replica_context();
    return ctx && ctx->strategy == strategy_ ? ctx->local_replica_id : -1;
  }
  /// The other processes of the strategy (MultiWorkerMirroredStrategy), or nullptr.
  WorkerGroup* workers() const {
    auto* group = strategy_->worker_group();
    return group && group->num_workers() > 1 ? group : nullptr;
  }
  /// Every replica of every process.
  std::int64_t replicas_in_sync() const { return strategy_->num_replicas_in_sync(); }
  const std::vector<const Device*>& devices() const noexcept { return devices_; }

  void assign_every_component(const Tensor<T>& value) {
    for (auto& c : components_) c.implementation().assign(value);
  }
  void update_every_component(VariableUpdate kind, const Tensor<T>& delta) {
    for (auto& c : components_) c.implementation().update(kind, delta);
  }
  void assign_component(std::size_t i, const Tensor<T>& value) { components_[i].implementation().assign(value); }
  VariableImpl<T>& component_variable(std::size_t i) const { return components_[i].implementation(); }
  void update_component(std::size_t i, VariableUpdate kind, const Tensor<T>& delta) {
    components_[i].implementation().update(kind, delta);
  }

  /// Σ `parts` (this worker's replicas' values, in replica order) over every replica of every
  /// worker, divided by num_replicas_in_sync for `mean`, on the first component's device.
  Tensor<T> sum_over_replicas(const std::vector<Tensor<T>>& parts, bool mean, std::string_view what) const {
    Tensor<T> total;
    if constexpr (std::is_same_v<T, float>) {
      std::vector<std::vector<Tensor<float>>> values;
      for (const auto& p : parts) values.push_back({p});
      // Variables hold a const view of their strategy, which is not const: its all-reduce runs
      // the collectives (merge_call's function runs in cross-replica context, as TensorFlow's does).
      auto& strategy = const_cast<StrategyInterface&>(*strategy_);
      total = strategy.batch_all_reduce_sum(values)[0][0];
    } else {
      total = combine(parts, *devices_[0], 1, what);
      if (auto* group = workers()) total = sum_across_workers(total, *group, what);
    }
    if constexpr (!std::is_same_v<T, bool>)
      if (mean) return combine({total}, *devices_[0], replicas_in_sync(), what);
    return total;
  }

  /// (Σ parts) / divisor on `device` (bool: logical or, no divisor). Host memory is summed in
  /// place; a real GPU runs the AddN and RealDiv device bodies; what has neither (integers on a
  /// GPU, a program without the bodies) is staged through the host. Not recorded on tapes: this
  /// is the variable's bookkeeping, not the user's computation.
  static Tensor<T> combine(const std::vector<Tensor<T>>& parts, const Device& device, std::int64_t divisor,
                           std::string_view op) {
    const Shape& shape = parts[0].shape();
    const std::int64_t n = shape.num_elements();
    auto out = Tensor<T>::empty(shape, device, op);
    const auto divide = [&](T* data) {
      if constexpr (!std::is_same_v<T, bool>)
        if (divisor != 1)
          for (std::int64_t i = 0; i < n; ++i) data[i] = static_cast<T>(data[i] / static_cast<T>(divisor));
    };
    if (out.host_memory()) {
      std::vector<Tensor<T>> local;  // host parts are read where they are
      for (const auto& p : parts) local.push_back(p.host_memory() ? p : variable_copy(p, device, op));
      T* o = out.mutable_data();
      std::copy(local[0].data(), local[0].data() + n, o);
      for (std::size_t k = 1; k < local.size(); ++k) {
        const T* p = local[k].data();
        for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(o[i] + p[i]);
      }
      divide(o);
      return out;
    }
    std::vector<Tensor<T>> local;
    for (const auto& p : parts) local.push_back(variable_copy(p, device, op));
    if constexpr (Floating<T>) {  // AddN and RealDiv's GPU bodies, when the program has them
      const auto& info = out.device_info();
      if (kernels::optional_gpu_body<ops::AddN, T>(info) &&
          (divisor == 1 || kernels::optional_gpu_body<ops::RealDiv, T>(info))) {
        if (divisor == 1) {
          kernels::run_body_on<ops::AddN, T, T>({}, local, out);
          return out;
        }
        auto sum = Tensor<T>::empty(shape, device, op);
        kernels::run_body_on<ops::AddN, T, T>({}, local, sum);
        const Tensor<T> quotient[2] = {sum, kernels::filled_on<T>(device, Shape{}, static_cast<T>(divisor), op)};
        kernels::run_body_on<ops::RealDiv, T, T>({}, quotient, out);
        return out;
      }
    }
    std::vector<T> total = local[0].to_vector();
    for (std::size_t k = 1; k < local.size(); ++k) {
      const auto v = local[k].to_vector();
      for (std::size_t i = 0; i < total.size(); ++i) total[i] = static_cast<T>(total[i] + v[i]);
    }
    if constexpr (!std::is_same_v<T, bool>)
      if (divisor != 1)
        for (auto& x : total) x = static_cast<T>(x / static_cast<T>(divisor));
    return tensor_from_host(total, shape, device, op);
  }

  /// `value` as the chief process has it, in host memory, as MPI's broadcast needs.
  Tensor<T> from_chief(const Tensor<T>& value, WorkerGroup& group, const std::string& name) const {
    auto host = variable_copy(value, strategy_->host_device(), "VarHandleOp");
    group.broadcast(host.mutable_data(), static_cast<std::size_t>(host.num_elements()) * sizeof(T),
                    "the value of variable " + name);
    return host;
  }

 private:
  const StrategyInterface* strategy_;  // strategies outlive their variables, as in TensorFlow
  std::vector<const Device*> devices_;
  std::vector<Variable<T>> components_;  // local variables, one per replica device

  /// This worker's `total` summed with every other worker's, through host memory (bool: or).
  Tensor<T> sum_across_workers(const Tensor<T>& total, WorkerGroup& group, std::string_view what) const {
    const std::string description = std::string(what) + " of " + this->info().name;
    const std::vector<T> mine = total.to_vector();
    std::vector<T> all(mine.begin(), mine.end());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<std::int32_t> flags(mine.begin(), mine.end());
      group.all_reduce(DType::DT_INT32, flags.data(), flags.size(), CollectiveReduction::max, description);
      all.assign(flags.begin(), flags.end());
    } else {
      group.all_reduce(dtype_enum<T>(), all.data(), all.size(), CollectiveReduction::sum, description);
    }
    return tensor_from_host(all, total.shape(), *devices_[0], what);
  }
};

/// TensorFlow's MirroredVariable (synchronization AUTO or ON_WRITE).
template <Element T>
class MirroredVariable final : public DistributedVariable<T> {
 public:
  MirroredVariable(VariableInfo info, const Tensor<T>& initial_value, const StrategyInterface& strategy)
      : DistributedVariable<T>(std::move(info), initial_value, strategy) {}

  void assign(const Tensor<T>& value) override {
    if (const int replica = own_component_write(); replica >= 0)
      this->assign_component(static_cast<std::size_t>(replica), value);
    else if (this->local_replica() >= 0)
      merged(value, "assign", [&](const Tensor<T>& aggregated) { this->assign_every_component(aggregated); });
    else
      this->assign_every_component(value);
  }
  void update(VariableUpdate kind, const Tensor<T>& delta) override {
    if (const int replica = own_component_write(); replica >= 0)
      this->update_component(static_cast<std::size_t>(replica), kind, delta);
    else if (this->local_replica() >= 0)
      merged(delta, kind == VariableUpdate::add ? "AssignAddVariableOp" : "AssignSubVariableOp",
             [&](const Tensor<T>& aggregated) { this->update_every_component(kind, aggregated); });
    else
      this->update_every_component(kind, delta);
  }
  /// Traced inside strategy.run with aggregation NONE, a write stays with the replica's component.
  [[nodiscard]] VariableImpl<T>& write_target() override {
    const int replica = own_component_write();
    return replica >= 0 ? this->component_variable(static_cast<std::size_t>(replica)) : *this;
  }

 private:
  /// Outside strategy.run: the component on the current device scope's device, else the first.
  std::size_t cross_replica_component() const {
    const DeviceSpec& request = current_device_spec();
    if (request.type() && request.id())
      for (std::size_t i = 0; i < this->devices().size(); ++i)
        if (request.matches(this->devices()[i]->spec)) return i;
    return 0;
  }
  Tensor<T> read_cross_replica() const override { return this->component(cross_replica_component()); }
  const Device& cross_replica_device() const override { return *this->devices()[cross_replica_component()]; }

  /// A write inside strategy.run: every replica's value meets in merge_call, the aggregation
  /// combines them, and `apply` writes the result to every component (so they stay equal).
  template <class Apply>
  void merged(const Tensor<T>& value, std::string_view what, Apply apply) {
    check_replica_write(what);
    this->strategy().merge_call(this->local_replica(), std::make_shared<const Tensor<T>>(value),
                                [&](const std::vector<std::shared_ptr<const void>>& all) {
                                  std::vector<Tensor<T>> parts;
                                  for (const auto& p : all) parts.push_back(*static_cast<const Tensor<T>*>(p.get()));
                                  apply(aggregated(parts, what));
                                });
  }
  /// The replica whose component alone a write inside strategy.run changes, or -1: with
  /// aggregation NONE there is nothing to combine, and TensorFlow writes the replica's own
  /// component (values.py's _on_write_update_replica), so the components may then differ, as
  /// BatchNormalization's moving statistics do under MirroredStrategy; reads outside
  /// strategy.run see the first replica's (the one saved).
  int own_component_write() const {
    return this->info().aggregation == VariableAggregation::NONE ? this->local_replica() : -1;
  }
  /// @throws InvalidArgumentError for a write in a replica context that the aggregation refuses.
  void check_replica_write(std::string_view what) const {
    const auto& name = this->info().name;
    const auto aggregation = this->info().aggregation;
    if (aggregation == VariableAggregation::MEAN && !Floating<T>)
      throw InvalidArgumentError(
          "Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation in "
          "replica context. Either change the variable dtype to float or update it in "
          "cross-replica context. (variable " +
          name + ", " + std::string(what) + ")");
  }
  /// The replicas' values (replica order) combined by the variable's aggregation.
  Tensor<T> aggregated(const std::vector<Tensor<T>>& parts, std::string_view what) const {
    if (this->info().aggregation == VariableAggregation::ONLY_FIRST_REPLICA) {
      auto* group = this->workers();
      return group ? this->from_chief(parts[0], *group, this->info().base_name) : parts[0];
    }
    return this->sum_over_replicas(parts, this->info().aggregation == VariableAggregation::MEAN, what);
  }

 public:
  /// Traced inside strategy.run: the replicas' values meet at trace time (the same checks as the
  /// eager write), and one node writes their aggregation when the graph runs.
  void gather_write(std::string_view op, const Tensor<T>& value,
                    FunctionRef<void(const std::vector<Tensor<T>>&)> write) override {
    if (this->local_replica() < 0 || own_component_write() >= 0) {
      write(std::vector<Tensor<T>>{value});
      return;
    }
    check_replica_write(op);
    this->strategy().merge_call(this->local_replica(), std::make_shared<const Tensor<T>>(value),
                                [&](const std::vector<std::shared_ptr<const void>>& all) {
                                  std::vector<Tensor<T>> parts;
                                  for (const auto& p : all) parts.push_back(*static_cast<const Tensor<T>*>(p.get()));
                                  write(parts);
                                });
  }
  void write_gathered(std::optional<VariableUpdate> kind, const std::vector<Tensor<T>>& values) override {
    const std::string_view what = !kind                          ? "assign"
                                  : *kind == VariableUpdate::add ? "AssignAddVariableOp"
                                                                 : "AssignSubVariableOp";
    const Tensor<T> value = values.size() == 1 ? values[0] : aggregated(values, what);
    if (kind)
      this->update_every_component(*kind, value);
    else
      this->assign_every_component(value);
  }
};

/// TensorFlow's SyncOnReadVariable (synchronization ON_READ): metrics' accumulators.
template <Element T>
class SyncOnReadVariable final : public DistributedVariable<T> {
 public:
  SyncOnReadVariable(VariableInfo info, const Tensor<T>& initial_value, const StrategyInterface& strategy)
      : DistributedVariable<T>(std::move(info), initial_value, strategy) {}

  /// Traced inside strategy.run, a write stays with the replica's component, as an eager one.
  [[nodiscard]] VariableImpl<T>& write_target() override {
    const int replica = this->local_replica();
    return replica >= 0 ? this->component_variable(static_cast<std::size_t>(replica)) : *this;
  }

  /// In a replica: that replica's component. Cross-replica: every component, a SUM variable its
  /// share value / num_replicas_in_sync, so that reading it gives `value` back.
  void assign(const Tensor<T>& value) override {
    if (const int replica = this->local_replica(); replica >= 0) {
      this->assign_component(static_cast<std::size_t>(replica), value);
      return;
    }
    if constexpr (!std::is_same_v<T, bool>)
      if (this->info().aggregation == VariableAggregation::SUM && this->replicas_in_sync() > 1) {
        this->assign_every_component(
            this->combine({value}, *this->devices()[0], this->replicas_in_sync(), "AssignVariableOp"));
        return;
      }
    this->assign_every_component(value);
  }
  void update(VariableUpdate kind, const Tensor<T>& delta) override {
    if (const int replica = this->local_replica(); replica >= 0)
      this->update_component(static_cast<std::size_t>(replica), kind, delta);
    else
      this->update_every_component(kind, delta);
  }

 private:
  /// The aggregated value; across processes a collective, as strategy.reduce of the variable is
  /// in TensorFlow: every worker reads it.
  Tensor<T> read_cross_replica() const override {
    const auto aggregation = this->info().aggregation;
    if (aggregation == VariableAggregation::ONLY_FIRST_REPLICA || aggregation == VariableAggregation::NONE ||
        (this->num_components() == 1 && !this->workers()))
      return this->component(0);
    std::vector<Tensor<T>> parts;
    for (std::size_t i = 0; i < this->num_components(); ++i) parts.push_back(this->component(i));
    return this->sum_over_replicas(parts, aggregation == VariableAggregation::MEAN, "ReadVariableOp");
  }
  const Device& cross_replica_device() const override { return *this->devices()[0]; }
};

/// The distributed variable behind `v`, or nullptr for a local one.
template <Element T>
[[nodiscard]] const DistributedVariable<T>* as_distributed(const Variable<T>& v) {
  return dynamic_cast<const DistributedVariable<T>*>(&v.implementation());
}

/// A mirrored or sync-on-read variable over `strategy`'s replica devices, by `options`'
/// synchronization. A function of its own so that compiled mode instantiates the distributed
/// variable types once, in the library (Note [Explicit instantiations]).
/// @throws InvalidArgumentError for synchronization NONE (TensorFlow's message).
template <Element T>
std::shared_ptr<VariableImpl<T>> make_distributed_variable(VariableInfo info, const Tensor<T>& initial,
                                                           const VariableOptions& options,
                                                           const StrategyInterface& strategy) {
  if (options.synchronization == VariableSynchronization::NONE)
    throw InvalidArgumentError(
        "`NONE` variable synchronization mode is not supported with tf.distribute "
        "strategy. Please change the `synchronization` for variable: " +
        options.name);
  if (options.synchronization == VariableSynchronization::ON_READ)
    return std::make_shared<SyncOnReadVariable<T>>(std::move(info), initial, strategy);
  return std::make_shared<MirroredVariable<T>>(std::move(info), initial, strategy);
}
// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE
#define DEVTENSOR_ALL(T)                                                                                          \
  DEVTENSOR_EXTERN_TEMPLATE std::shared_ptr<VariableImpl<T>> make_distributed_variable<T>(                        \
      VariableInfo, const Tensor<T>&, const VariableOptions&, const StrategyInterface&);
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL) DEVTENSOR_ALL(bool)
#undef DEVTENSOR_ALL
#endif
    // clang-format on

    /// A strategy's variable creator: mirrored or sync-on-read variables over its replica devices.
    /// A template over the strategy's implementation only so that the distributed variable types of
    /// every element type are instantiated where a strategy is, not in every translation unit that
    /// includes this header (they cost ~1 s of compile time).
    template <class Strategy>
    class StrategyVariableCreator final : public VariableCreator {
 public:
  explicit StrategyVariableCreator(const Strategy& strategy) noexcept : strategy_(&strategy) {}
  std::shared_ptr<VariableImpl<float>> create(VariableInfo info, const Tensor<float>& initial,
                                              const VariableOptions& options) const override {
    return make(std::move(info), initial, options);
  }
  std::shared_ptr<VariableImpl<double>> create(VariableInfo info, const Tensor<double>& initial,
                                               const VariableOptions& options) const override {
    return make(std::move(info), initial, options);
  }
  std::shared_ptr<VariableImpl<std::int32_t>> create(VariableInfo info, const Tensor<std::int32_t>& initial,
                                                     const VariableOptions& options) const override {
    return make(std::move(info), initial, options);
  }
  std::shared_ptr<VariableImpl<std::int64_t>> create(VariableInfo info, const Tensor<std::int64_t>& initial,
                                                     const VariableOptions& options) const override {
    return make(std::move(info), initial, options);
  }
  std::shared_ptr<VariableImpl<bool>> create(VariableInfo info, const Tensor<bool>& initial,
                                             const VariableOptions& options) const override {
    return make(std::move(info), initial, options);
  }

 private:
  const StrategyInterface* strategy_;

  template <Element T>
  std::shared_ptr<VariableImpl<T>> make(VariableInfo info, const Tensor<T>& initial,
                                        const VariableOptions& options) const {
    return make_distributed_variable(std::move(info), initial, options, *strategy_);
  }
};

/// A strategy's scope on this thread (RAII): variables created while it lives are the strategy's
/// distributed variables; nested scopes of the same strategy are fine, another one's are not
/// (checked by the strategies). Non-template code enters one through StrategyInterface::enter_scope.
template <class Strategy>
class StrategyScope final : public StrategyScopeGuard {
 public:
  explicit StrategyScope(std::shared_ptr<Strategy> strategy)
      : state_{strategy},
        creator_(*strategy),
        scope_(current_distribution_scope(), &state_),
        creating_(current_variable_creator(), &creator_) {}
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;

 private:
  DistributionScope state_;
  StrategyVariableCreator<Strategy> creator_;
  ScopedSet<DistributionScope> scope_;
  ScopedSet<VariableCreator> creating_;
};

}  // namespace distribute
}  // namespace devtensor
