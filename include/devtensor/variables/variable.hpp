#pragma once
/// @file variable.hpp
/// @brief Variable<T>: a named, mutable tensor that GradientTape differentiates with respect to.
///
/// A Variable is a handle (copies share the state) holding an immutable Tensor that assignments
/// replace: a tensor read from a variable never changes afterwards, as TensorFlow's copy-on-write
/// reads promise. It lives on the device its creation was placed on (VarHandleOp: the innermost
/// DeviceScope, else the preferred device). Reads are recorded on active tapes as ReadVariableOp;
/// tapes watch trainable variables when they are read (watch_accessed_variables).
///
/// Created inside a distribution strategy's scope, a variable has one component per replica device
/// (SPEC §5.8): component 0 takes the initial value, the others copy component 0. ON_WRITE (AUTO)
/// variables are mirrored: reads in a replica context see the replica's component, cross-replica
/// writes update every component, writes inside strategy.run are merged across the replicas with
/// the variable's aggregation. ON_READ variables sync on read: replica writes stay local,
/// cross-replica reads aggregate the components (SUM, MEAN, ONLY_FIRST_REPLICA).

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/functors.hpp"
#include "devtensor/ops/op_types.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

/// When replicas of a distributed variable are synchronised (TensorFlow's VariableSynchronization).
enum class VariableSynchronization { AUTO, NONE, ON_WRITE, ON_READ };
/// How replicas' updates combine (TensorFlow's VariableAggregation).
enum class VariableAggregation { NONE, SUM, MEAN, ONLY_FIRST_REPLICA };

[[nodiscard]] constexpr std::string_view to_string(VariableSynchronization s) noexcept {
  switch (s) {
    case VariableSynchronization::AUTO: return "AUTO";
    case VariableSynchronization::NONE: return "NONE";
    case VariableSynchronization::ON_WRITE: return "ON_WRITE";
    case VariableSynchronization::ON_READ: return "ON_READ";
  }
  return "?";
}
[[nodiscard]] constexpr std::string_view to_string(VariableAggregation a) noexcept {
  switch (a) {
    case VariableAggregation::NONE: return "NONE";
    case VariableAggregation::SUM: return "SUM";
    case VariableAggregation::MEAN: return "MEAN";
    case VariableAggregation::ONLY_FIRST_REPLICA: return "ONLY_FIRST_REPLICA";
  }
  return "?";
}

struct VariableOptions {
  std::string name = "Variable";
  /// Default: true, except for ON_READ variables (TensorFlow's rule).
  std::optional<bool> trainable = std::nullopt;
  VariableSynchronization synchronization = VariableSynchronization::AUTO;
  VariableAggregation aggregation = VariableAggregation::NONE;
};

namespace detail {
/// Variables are created by VarHandleOp: CPU and (simulated) GPUs, and real GPUs when the program
/// contains VarHandleOp's GPU body (src/devtensor_cuda.cu registers it), as TensorFlow places
/// variables on the GPU. Never pinned to the host for being small.
template <Element T>
inline constexpr KernelSupport var_handle_support{"VarHandleOp",
                                                  dtype_enum_name<T>(),
                                                  true,
                                                  true,
                                                  nullptr,
                                                  &kernel_slot<ops::VarHandleOp, gpu_t, T>,
                                                  false};
}  // namespace detail

template <Element T>
class Variable {
 public:
  using value_type = T;

  /// An empty handle; assign a real variable to it.
  Variable() = default;

  /// A variable holding a copy of `initial_value` on the device VarHandleOp is placed on.
  /// @throws InvalidArgumentError for an undefined initial value or trainable ON_READ variables.
  explicit Variable(const Tensor<T>& initial_value, VariableOptions options = {}) {
    if (!initial_value.defined())
      throw InvalidArgumentError("Variable '" + options.name + "': the initial value is an undefined tensor (default-constructed or moved from)");
    if (options.synchronization == VariableSynchronization::ON_READ && options.trainable.value_or(false))
      throw InvalidArgumentError(
          "Synchronization value can be set to VariableSynchronization.ON_READ only for non-trainable "
          "variables. You have specified trainable=True and synchronization=VariableSynchronization.ON_READ.");
    auto state = std::make_shared<State>();
    state->name = options.name + ":0";
    state->base_name = options.name;
    state->trainable =
        options.trainable.value_or(options.synchronization != VariableSynchronization::ON_READ);
    state->synchronization = options.synchronization;
    state->aggregation = options.aggregation;
    state->handle_id = detail::next_tensor_id();
    if (const auto* scope = detail::current_distribution_scope()) {
      if (options.synchronization == VariableSynchronization::NONE)
        throw InvalidArgumentError("`NONE` variable synchronization mode is not supported with tf.distribute "
                                   "strategy. Please change the `synchronization` for variable: " + options.name);
      state->strategy = scope->strategy.get();
      state->devices = scope->strategy->replica_devices();
      // Component 0 from the initial value (the chief's, across processes); the others from
      // component 0, so replicas start equal.
      state->components.push_back(owned_copy(initial_value, state->devices[0], "VarHandleOp"));
      if (auto* group = scope->strategy->worker_group(); group && group->num_workers() > 1)
        state->components[0] = from_chief(state->components[0], *group, options.name);
      for (std::size_t i = 1; i < state->devices.size(); ++i)
        state->components.push_back(owned_copy(state->components[0], state->devices[i], "VarHandleOp"));
    } else {
      const int device = place_op(detail::var_handle_support<T>);
      state->devices = {device};
      state->components = {owned_copy(initial_value, device, "VarHandleOp")};
    }
    state_ = std::move(state);
  }

  [[nodiscard]] bool defined() const noexcept { return state_ != nullptr; }
  /// "<name>:0", as TensorFlow prints variable names.
  [[nodiscard]] const std::string& name() const { return state().name; }
  /// Component i's name (SPEC §5.8): the variable's own for component 0, "<name>/replica_<i>:0"
  /// for the others. @throws InvalidArgumentError for i >= num_components().
  [[nodiscard]] std::string component_name(std::size_t i) const {
    const auto& s = state();
    if (i >= s.devices.size())
      throw InvalidArgumentError("Variable " + s.name + " has " + std::to_string(s.devices.size()) +
                                 " component(s); there is no component " + std::to_string(i));
    return i == 0 ? s.name : s.base_name + "/replica_" + std::to_string(i) + ":0";
  }
  [[nodiscard]] bool trainable() const { return state().trainable; }
  [[nodiscard]] VariableSynchronization synchronization() const { return state().synchronization; }
  [[nodiscard]] VariableAggregation aggregation() const { return state().aggregation; }
  [[nodiscard]] Shape shape() const { return component(0).shape(); }
  [[nodiscard]] static constexpr std::string_view dtype() noexcept { return dtype_name<T>(); }
  [[nodiscard]] std::string device() const { return read_unrecorded().device(); }
  /// The same device, parsed (for DeviceScopes on hot paths: no string work).
  [[nodiscard]] const DeviceSpec& device_spec() const { return read_unrecorded().device_info().spec; }
  [[nodiscard]] int device_index() const { return state().devices[0]; }
  /// The id GradientTape knows this variable by (stable across assignments).
  [[nodiscard]] std::uint64_t handle_id() const { return state().handle_id; }
  /// Two handles of the same variable.
  [[nodiscard]] bool same_as(const Variable& other) const noexcept { return state_ == other.state_; }

  /// Created in a strategy's scope: one component per replica.
  [[nodiscard]] bool distributed() const { return state().strategy != nullptr; }
  /// The strategy whose scope created it (nullptr: none).
  [[nodiscard]] const detail::StrategyInterface* strategy() const { return state().strategy; }
  /// Mirrored (ON_WRITE / AUTO) or sync-on-read (ON_READ); meaningful when distributed().
  [[nodiscard]] bool sync_on_read() const { return state().synchronization == VariableSynchronization::ON_READ; }
  [[nodiscard]] std::size_t num_components() const { return state().devices.size(); }
  /// Component i's value, without aggregation or recording (strategy.experimental_local_results).
  [[nodiscard]] Tensor<T> component(std::size_t i) const {
    std::lock_guard lock(state().mutex);
    return state().components.at(i);
  }

  /// The current value; recorded on active tapes (ReadVariableOp), which watch it when trainable.
  [[nodiscard]] Tensor<T> value() const {
    Tensor<T> current = read_unrecorded();
    if constexpr (Floating<T>) {
      if (autodiff::tapes_active()) {
        Tensor<T> read(current.storage(), current.shape());  // a new tensor value per read
        detail::TapeTensor handle = detail::tape_tensor(current);
        handle.id = state().handle_id;
        detail::record_variable_read(handle, detail::tape_tensor(read), state().trainable);
        return read;
      }
    }
    return current;
  }
  [[nodiscard]] Tensor<T> read_value() const { return value(); }
  [[nodiscard]] std::vector<T> to_vector() const { return read_unrecorded().to_vector(); }

  /// Replaces the value. @throws InvalidArgumentError when the shapes differ.
  /// In a replica context, a sync-on-read variable's write stays local to the replica; a mirrored
  /// variable's writes from all replicas are merged with its aggregation (SUM, MEAN,
  /// ONLY_FIRST_REPLICA) and applied to every component, so the components stay equal.
  /// In cross-replica context every component is written (sync-on-read SUM variables store
  /// value / n in each, so that the aggregated read returns value).
  /// @throws InvalidArgumentError for shapes that differ, and for replica-context writes to a
  /// mirrored variable without an aggregation (or with MEAN on an integer variable).
  const Variable& assign(const Tensor<T>& value) const {
    check_shape(value, "AssignVariableOp");
    State& s = state();
    const int replica = local_replica();
    if (replica >= 0 && s.synchronization == VariableSynchronization::ON_READ) {
      auto copy = owned_copy(value, s.devices[static_cast<std::size_t>(replica)], "AssignVariableOp");
      std::lock_guard lock(s.mutex);
      s.components[static_cast<std::size_t>(replica)] = std::move(copy);
    } else if (replica >= 0) {
      merged(value, "assign", [this](const Tensor<T>& aggregated) { assign_all(aggregated); });
    } else {
      assign_all(value);
    }
    return *this;
  }
  const Variable& assign_add(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    update<ops::Add>(delta, "AssignAddVariableOp");
    return *this;
  }
  const Variable& assign_sub(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    update<ops::Sub>(delta, "AssignSubVariableOp");
    return *this;
  }

  /// Internal (the optimizers' fused updates, ops/training_ops.hpp): for every component c, calls
  /// `kernel(c, value, out)` with the component's value and the tensor that becomes its new value.
  /// `out` is `value` itself when nothing else holds the component's buffer, so the kernel updates
  /// it in place as TensorFlow's ResourceApply* kernels do; when a read still holds it (a tape, a
  /// tensor the user kept), `out` is a new buffer on the same device and that read keeps its
  /// values (copy-on-write). Cross-replica only: replica-context updates of a mirrored variable
  /// meet in merge_call (assign_add / assign_sub).
  /// @throws FailedPreconditionError in a replica context of the variable's strategy.
  template <class Kernel>
  void apply_update(std::string_view op, Kernel&& kernel) const {
    State& s = state();
    if (local_replica() >= 0)
      throw FailedPreconditionError(std::string(op) + " of " + s.name +
                                    " in a replica context: apply optimizer updates in cross-replica context "
                                    "(after strategy.run), or use assign_add, which merges the replicas' updates");
    std::lock_guard lock(s.mutex);
    for (std::size_t c = 0; c < s.components.size(); ++c) {
      Tensor<T>& value = s.components[c];
      // The variable's own reference is the only one: no read can observe the in-place write.
      const bool in_place = value.storage().use_count() == 1;
      Tensor<T> out = in_place ? value : Tensor<T>::empty(value.shape(), s.devices[c], op);
      kernel(c, static_cast<const Tensor<T>&>(value), out);
      if (!in_place) value = std::move(out);
    }
  }

 private:
  struct State {
    std::string name;       // "<name>:0"
    std::string base_name;  // "<name>"
    bool trainable = true;
    VariableSynchronization synchronization = VariableSynchronization::AUTO;
    VariableAggregation aggregation = VariableAggregation::NONE;
    std::uint64_t handle_id = 0;
    const detail::StrategyInterface* strategy = nullptr;  // set when created in a strategy's scope
    std::vector<int> devices;                              // one per component
    mutable std::mutex mutex;                              // guards `components`
    std::vector<Tensor<T>> components;
  };
  std::shared_ptr<State> state_;

  State& state() const {
    if (!state_) throw FailedPreconditionError("This Variable is empty (default-constructed)");
    return *state_;
  }
  /// The value this context reads: the replica's component in a replica context; otherwise the
  /// component on the current device scope's device, else the primary; sync-on-read variables
  /// aggregate their components in cross-replica context.
  Tensor<T> read_unrecorded() const {
    const State& s = state();
    const int replica = local_replica();
    std::lock_guard lock(s.mutex);
    if (replica >= 0) return s.components[static_cast<std::size_t>(replica)];
    if (s.synchronization == VariableSynchronization::ON_READ && (s.components.size() > 1 || workers()))
      return aggregate_locked();
    if (s.components.size() == 1) return s.components[0];
    const DeviceSpec& request = detail::requested_spec();
    if (request.type() && request.id()) {
      const auto& devices = Context::global().logical_devices();
      for (std::size_t i = 0; i < s.devices.size(); ++i)
        if (request.matches(devices[static_cast<std::size_t>(s.devices[i])].spec)) return s.components[i];
    }
    return s.components[0];
  }
  /// This thread's replica of this variable's strategy, or -1 in cross-replica context.
  int local_replica() const {
    const auto* ctx = detail::current_replica_context();
    if (ctx && state().strategy && ctx->strategy == state().strategy) return ctx->local_replica_id;
    return -1;
  }
  /// The other processes of the variable's strategy (MultiWorkerMirroredStrategy), or nullptr.
  detail::WorkerGroup* workers() const {
    const State& s = state();
    auto* group = s.strategy ? s.strategy->worker_group() : nullptr;
    return group && group->num_workers() > 1 ? group : nullptr;
  }
  /// Every replica of every process.
  std::int64_t replicas_in_sync() const {
    const State& s = state();
    return s.strategy ? s.strategy->num_replicas_in_sync() : static_cast<std::int64_t>(s.components.size());
  }
  /// Cross-replica read of a sync-on-read variable (the mutex is held). Across processes the read
  /// is a collective, as in TensorFlow (strategy.reduce of the variable): every worker reads it.
  Tensor<T> aggregate_locked() const {
    const State& s = state();
    if (s.aggregation == VariableAggregation::ONLY_FIRST_REPLICA || s.aggregation == VariableAggregation::NONE)
      return s.components[0];
    const bool mean = s.aggregation == VariableAggregation::MEAN;
    detail::WorkerGroup* group = workers();
    if constexpr (!std::is_same_v<T, bool>) {
      if (group) {
        std::vector<T> total = combine(s.components, 0, 1, "ReadVariableOp").to_vector();  // this worker's sum
        group->all_reduce(dtype_enum<T>(), total.data(), total.size(), detail::CollectiveReduction::sum,
                          "the cross-replica read of " + s.name);
        if (mean)
          for (auto& x : total) x = static_cast<T>(x / static_cast<T>(replicas_in_sync()));
        return host_tensor(total, s.components[0].shape(), s.devices[0]);
      }
    }
    const auto n = static_cast<std::int64_t>(s.components.size());
    return combine(s.components, s.devices[0], mean ? n : 1, "ReadVariableOp");
  }
  /// Cross-replica assignment: every component gets `value` (a SUM sync-on-read variable: its
  /// share, value / every replica of every process, so that reading it gives `value` back).
  void assign_all(const Tensor<T>& value) const {
    State& s = state();
    Tensor<T> stored = value;
    if (s.synchronization == VariableSynchronization::ON_READ && s.aggregation == VariableAggregation::SUM &&
        replicas_in_sync() > 1)
      stored = combine({value}, s.devices[0], replicas_in_sync(), "AssignVariableOp");
    std::vector<Tensor<T>> copies;
    for (int device : s.devices) copies.push_back(owned_copy(stored, device, "AssignVariableOp"));
    std::lock_guard lock(s.mutex);
    s.components = std::move(copies);
  }

  /// A mirrored variable written inside strategy.run: every replica's value meets in merge_call,
  /// the aggregation combines them, and `apply` writes the result to every component.
  template <class Apply>
  void merged(const Tensor<T>& value, std::string_view what, Apply apply) const {
    const State& s = state();
    if (s.aggregation == VariableAggregation::NONE)
      throw InvalidArgumentError(
          "You must specify an aggregation method to update a MirroredVariable in Replica Context. You can do so by "
          "passing an explicit value for argument `aggregation` when creating the variable, e.g. "
          "VariableOptions{.aggregation = VariableAggregation::SUM} (variable " + s.name + ", " + std::string(what) + ")");
    if (s.aggregation == VariableAggregation::MEAN && !Floating<T>)
      throw InvalidArgumentError("Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation in "
                                 "replica context. Either change the variable dtype to float or update it in "
                                 "cross-replica context. (variable " + s.name + ")");
    const auto* ctx = detail::current_replica_context();
    const auto aggregation = s.aggregation;
    const int replicas_in_sync = ctx->num_replicas;  // every process's replicas
    detail::WorkerGroup* workers = ctx->strategy->worker_group();
    ctx->strategy->merge_call(ctx->local_replica_id, std::make_shared<const Tensor<T>>(value),
                              [&](const std::vector<std::shared_ptr<const void>>& all) {
                                const auto part = [&](std::size_t i) { return *static_cast<const Tensor<T>*>(all[i].get()); };
                                if (aggregation == VariableAggregation::ONLY_FIRST_REPLICA) {
                                  apply(workers ? from_chief(part(0), *workers, s.name) : part(0));
                                  return;
                                }
                                const bool mean = aggregation == VariableAggregation::MEAN;
                                if constexpr (std::is_same_v<T, float>) {
                                  // The strategy's all-reduce (its cross-device ops; across workers
                                  // too): NCCL or the ring on the devices, as gradients are summed.
                                  std::vector<std::vector<Tensor<float>>> values;
                                  for (std::size_t i = 0; i < all.size(); ++i) values.push_back({part(i)});
                                  // The context holds a const view of the strategy, which is not const.
                                  auto* strategy = const_cast<detail::StrategyInterface*>(ctx->strategy);
                                  const Tensor<float> total = strategy->batch_all_reduce_sum(values)[0][0];
                                  apply(mean ? combine({total}, s.devices[0], replicas_in_sync, what) : total);
                                  return;
                                }
                                if constexpr (Numeric<T>) {
                                  if (!workers) {  // one process: combined on the first component's device
                                    std::vector<Tensor<T>> parts;
                                    for (std::size_t i = 0; i < all.size(); ++i) parts.push_back(part(i));
                                    apply(combine(parts, s.devices[0], mean ? replicas_in_sync : 1, what));
                                    return;
                                  }
                                }
                                std::vector<T> sum = part(0).to_vector();
                                for (std::size_t i = 1; i < all.size(); ++i) {
                                  const auto v = part(i).to_vector();
                                  for (std::size_t j = 0; j < sum.size(); ++j) sum[j] = static_cast<T>(sum[j] + v[j]);
                                }
                                if constexpr (!std::is_same_v<T, bool>)
                                  if (workers)
                                    workers->all_reduce(dtype_enum<T>(), sum.data(), sum.size(), detail::CollectiveReduction::sum,
                                                        "the replica-context update of " + s.name);
                                if (aggregation == VariableAggregation::MEAN)
                                  for (auto& x : sum) x = static_cast<T>(x / static_cast<T>(replicas_in_sync));
                                apply(host_tensor(sum, part(0).shape(), state().devices[0]));
                              });
  }

  /// (Σ parts) / divisor on `device`, each part copied there first (bool: logical or, no divisor):
  /// the merge of replica writes of non-float variables (float ones go through the strategy's
  /// all-reduce), sync-on-read aggregation, MEAN's division and SUM's per-component share. A real
  /// GPU runs the AddN and RealDiv device bodies, so nothing goes through the host; CPUs, simulated
  /// GPUs, integer divisions and programs without those bodies use host loops. Not recorded on
  /// tapes: this is the variable's bookkeeping, not the user's computation.
  static Tensor<T> combine(const std::vector<Tensor<T>>& parts, int device, std::int64_t divisor, std::string_view op) {
    std::vector<Tensor<T>> local;
    for (const auto& p : parts) local.push_back(owned_copy(p, device, op));
    const Shape& shape = local[0].shape();
    const std::int64_t n = shape.num_elements();
    if constexpr (Floating<T>) {
      const auto& info = Context::global().logical_devices()[static_cast<std::size_t>(device)];
      auto* add_body = op_detail::optional_gpu_body<ops::AddN, T>(info);
      auto* div_body = op_detail::optional_gpu_body<ops::RealDiv, T>(info);
      if (add_body && (divisor == 1 || div_body)) {
        auto sum = Tensor<T>::empty(shape, device, op);
        std::vector<const T*> pointers;
        for (const auto& t : local) pointers.push_back(t.data());
        add_body(info, sum.mutable_data(), pointers.data(), pointers.size(), n);
        if (divisor == 1) return sum;
        const auto by = op_detail::filled_on<T>(device, Shape{}, static_cast<T>(divisor), op);
        auto out = Tensor<T>::empty(shape, device, op);
        div_body(info, sum.data(), shape, by.data(), by.shape(), out.mutable_data(), shape);
        return out;
      }
    }
    std::vector<T> total = local[0].to_vector();
    for (std::size_t i = 1; i < local.size(); ++i) {
      const auto v = local[i].to_vector();
      for (std::size_t j = 0; j < total.size(); ++j) total[j] = static_cast<T>(total[j] + v[j]);
    }
    if constexpr (!std::is_same_v<T, bool>)
      if (divisor != 1)
        for (auto& x : total) x = static_cast<T>(x / static_cast<T>(divisor));
    return host_tensor(total, shape, device);
  }

  /// A tensor on `device` holding host `values`.
  static Tensor<T> host_tensor(const std::vector<T>& values, const Shape& shape, int device) {
    auto out = Tensor<T>::empty(shape, device, "AssignVariableOp");
    if constexpr (std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < values.size(); ++i) out.mutable_data()[i] = values[i];
    } else {
      detail::copy_bytes(out.mutable_data(), out.device_info(), values.data(), detail::host_buffer_device(),
                         values.size() * sizeof(T));
    }
    return out;
  }

  void check_shape(const Tensor<T>& value, std::string_view op) const {
    if (!value.defined())
      throw InvalidArgumentError("Cannot assign an undefined tensor to variable " + state().name);
    const Shape current = shape();
    if (value.shape() != current)
      throw InvalidArgumentError("Cannot update variable with shape " + current.to_string() +
                                 " using a Tensor with shape " + value.shape().to_string() +
                                 ", shapes must be equal. [Op:" + std::string(op) + "] (variable " +
                                 state().name + ")");
  }
  /// A buffer of the variable's own on `device`, holding `value`'s elements.
  /// `value` as the chief process has it (SPEC §6.3: initial values are broadcast from the chief),
  /// staged through host memory, as MPI's broadcast of a host buffer needs.
  static Tensor<T> from_chief(const Tensor<T>& value, detail::WorkerGroup& group, const std::string& name) {
    auto host = owned_copy(value, 0, "VarHandleOp");  // logical device 0 is always CPU:0
    group.broadcast(host.mutable_data(), static_cast<std::size_t>(host.num_elements()) * sizeof(T),
                    "the initial value of variable " + name);
    return owned_copy(host, value.device_index(), "VarHandleOp");
  }
  static Tensor<T> owned_copy(const Tensor<T>& value, int device, std::string_view op) {
    if (value.device_index() == device && op != "VarHandleOp" && op != "AssignVariableOp") return value;
    auto out = Tensor<T>::empty(value.shape(), device, op);
    if (value.device_index() == device)  // a copy within one real GPU: VarHandleOp's device body
      if (auto* body = op_detail::optional_gpu_body<ops::VarHandleOp, T>(out.device_info())) {
        body(out.device_info(), out.mutable_data(), value.data(), value.num_elements());
        return out;
      }
    detail::copy_bytes(out.mutable_data(), out.device_info(), value.data(), value.device_info(),
                       static_cast<std::size_t>(value.num_elements()) * sizeof(T));
    return out;
  }
  /// Applies Op (AddV2 or Sub) to (old, delta) as assign does: the replica's own component
  /// (sync-on-read in a replica), every component with the merged deltas (mirrored in a replica),
  /// or every component; on each component's device, with Op's device body on a real GPU.
  template <class Op>
  void update(const Tensor<T>& delta, std::string_view op) const {
    check_shape(delta, op);
    const int replica = local_replica();
    if (replica >= 0 && state().synchronization == VariableSynchronization::ON_READ)
      update_components<Op>(delta, op, replica);
    else if (replica >= 0)
      merged(delta, op, [&](const Tensor<T>& aggregated) { update_components<Op>(aggregated, op, -1); });
    else
      update_components<Op>(delta, op, -1);
  }
  template <class Op>
  void update_components(const Tensor<T>& delta, std::string_view op, int only) const {
    State& s = state();
    std::lock_guard lock(s.mutex);
    for (std::size_t c = 0; c < s.components.size(); ++c) {
      if (only >= 0 && static_cast<std::size_t>(only) != c) continue;
      const Tensor<T>& old = s.components[c];
      const Tensor<T> d = owned_copy(delta, s.devices[c], op);  // the delta on this component's device
      auto next = Tensor<T>::empty(old.shape(), s.devices[c], op);
      const ops::Functor<Op> f;
      if (next.host_memory()) {
        const T* a = old.data();
        const T* b = d.data();
        T* o = next.mutable_data();
        for (std::int64_t i = 0, n = old.num_elements(); i < n; ++i) o[i] = f(a[i], b[i]);
      } else if (auto* body = op_detail::optional_gpu_body<Op, T>(next.device_info())) {
        body(next.device_info(), old.data(), old.shape(), d.data(), d.shape(), next.mutable_data(), old.shape());
      } else {
        // A real GPU in a program without Op's GPU body (host-compiled, mirrored variables in GPU
        // memory): staged through the host. Correct, not fast; link devtensor::cuda.
        std::vector<T> a = old.to_vector();
        const std::vector<T> b = d.to_vector();
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = f(a[i], b[i]);
        detail::copy_bytes(next.mutable_data(), next.device_info(), a.data(), detail::host_buffer_device(),
                           a.size() * sizeof(T));
      }
      s.components[c] = std::move(next);
    }
  }
};

}  // namespace devtensor
