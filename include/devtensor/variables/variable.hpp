#pragma once
/// @file variable.hpp
/// @brief Variable<T>: a named, mutable tensor that GradientTape differentiates with respect to.
///
/// A Variable is a handle (copies share the state) over an implementation:
/// - a **local variable** (`LocalVariable`, TensorFlow's ResourceVariable): one immutable
///   Tensor on one device that assignments replace, so a tensor read from a variable never changes
///   afterwards (TensorFlow's copy-on-write reads). It lives on the device its creation was placed
///   on (VarHandleOp: the innermost DeviceScope, else the preferred device);
/// - or whatever the **variable creator** installed on this thread builds (TensorFlow's
///   variable_creator_scope). Distribution strategies install theirs in `strategy.scope()`: their
///   mirrored and sync-on-read variables (distribute/distributed_variable.hpp) are distributed
///   variables over one local variable per replica device. This header knows nothing about
///   distribution; the strategies plug in from above.
/// Reads are recorded on active tapes as ReadVariableOp; tapes watch trainable variables when they
/// are read (watch_accessed_variables).

#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/capture.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/record.hpp"
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

// --- a variable's implementations: what strategies plug in through a variable creator ----------

/// A borrowed callable: the optimizers' per-component kernels cross the implementations' virtual
/// interface without a std::function (no allocation on the training step's path).
template <class Signature>
class FunctionRef;
template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::same_as<std::remove_cvref_t<F>, FunctionRef> && std::invocable<F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): passed like a callable
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

/// What every implementation of a variable shares: its identity.
struct VariableInfo {
  std::string name;       // "<name>:0"
  std::string base_name;  // "<name>"
  bool trainable = true;
  VariableSynchronization synchronization = VariableSynchronization::AUTO;
  VariableAggregation aggregation = VariableAggregation::NONE;
  std::uint64_t handle_id = 0;  // what tapes know the variable by (stable across assignments)
};

enum class VariableUpdate { add, sub };

/// A variable's implementation. Shapes and dtypes are checked by Variable before these are called.
template <Element T>
class VariableImpl {
 public:
  /// kernel(component, value, out): see Variable::apply_update.
  using UpdateKernel = FunctionRef<void(std::size_t, const Tensor<T>&, Tensor<T>&)>;

  explicit VariableImpl(VariableInfo info) : info_(std::move(info)) {}
  VariableImpl(const VariableImpl&) = delete;
  VariableImpl& operator=(const VariableImpl&) = delete;
  virtual ~VariableImpl() = default;

  [[nodiscard]] const VariableInfo& info() const noexcept { return info_; }
  [[nodiscard]] virtual bool distributed() const noexcept { return false; }
  [[nodiscard]] virtual std::size_t num_components() const noexcept = 0;
  /// Component i's value, unaggregated. @throws InvalidArgumentError for i >= num_components().
  [[nodiscard]] virtual Tensor<T> component(std::size_t i) const = 0;
  [[nodiscard]] virtual std::string component_name(std::size_t i) const = 0;
  /// Component 0's device.
  [[nodiscard]] virtual const Device& device() const noexcept = 0;
  /// The value the calling context reads (unrecorded), and the device it is on (no read).
  [[nodiscard]] virtual Tensor<T> read() const = 0;
  [[nodiscard]] virtual const Device& read_device() const = 0;
  virtual void assign(const Tensor<T>& value) = 0;
  virtual void update(VariableUpdate kind, const Tensor<T>& delta) = 0;
  virtual void apply_update(std::string_view op, UpdateKernel kernel) = 0;

  // Graph mode (Note [Automatic control dependencies] in ops/graph.hpp).
  /// The state its components hold, by address: one per component.
  [[nodiscard]] virtual std::vector<const void*> resources() const = 0;
  /// What a read made in the calling context reads when its graph runs (inside strategy.run, the
  /// replica's component), and what a write made there writes (a sync-on-read variable's
  /// component). The variable itself elsewhere; a target is owned by the variable.
  [[nodiscard]] virtual VariableImpl& read_target() { return *this; }
  [[nodiscard]] virtual VariableImpl& write_target() { return *this; }
  /// A write of `value` by `op` being traced: calls `write(values)` with the values one node must
  /// write together. A mirrored variable inside strategy.run gathers every replica's value (its
  /// merge_call, at trace time) and calls it once, on the replica that arrives last; every other
  /// variable calls it with {value}. @throws InvalidArgumentError as the eager write would.
  virtual void gather_write(std::string_view op, const Tensor<T>& value,
                            FunctionRef<void(const std::vector<Tensor<T>>&)> write) {
    (void)op;
    write(std::vector<Tensor<T>>{value});
  }
  /// The write of gathered `values` when the graph runs: their aggregation assigned (`kind`
  /// empty) or added or subtracted. One value: an ordinary assign or update.
  virtual void write_gathered(std::optional<VariableUpdate> kind, const std::vector<Tensor<T>>& values) {
    if (kind) update(*kind, values.at(0));
    else assign(values.at(0));
  }

 protected:
  /// @throws InvalidArgumentError naming the variable for a component out of range.
  void check_component(std::size_t i) const {
    if (i >= num_components())
      throw InvalidArgumentError("Variable " + info_.name + " has " + std::to_string(num_components()) +
                                 " component(s); there is no component " + std::to_string(i));
  }

 private:
  VariableInfo info_;
};

/// `value` in a buffer of the variable's own on `device` (VarHandleOp, AssignVariableOp); other
/// ops (an update's delta) take `value` as it is when it is already there.
template <Element T>
Tensor<T> variable_copy(const Tensor<T>& value, const Device& device, std::string_view op) {
  const bool here = &value.device_info() == &device;
  if (here && op != "VarHandleOp" && op != "AssignVariableOp") return value;
  auto out = Tensor<T>::empty(value.shape(), device, op);
  if (here)  // a copy within one real GPU: VarHandleOp's device body
    if (auto* body = kernels::optional_gpu_body<ops::VarHandleOp, T>(out.device_info())) {
      body(out.device_info(), out.mutable_data(), value.data(), value.num_elements());
      return out;
    }
  copy_bytes(out.mutable_data(), out.device_info(), value.data(), value.device_info(),
                     static_cast<std::size_t>(value.num_elements()) * sizeof(T));
  return out;
}

/// A tensor on `device` holding host `values` (the host side of a collective's result).
template <Element T>
Tensor<T> tensor_from_host(const std::vector<T>& values, const Shape& shape, const Device& device, std::string_view op) {
  auto out = Tensor<T>::empty(shape, device, op);
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no contiguous data()
    std::vector<unsigned char> bytes(values.begin(), values.end());
    static_assert(sizeof(bool) == 1);
    copy_bytes(out.mutable_data(), out.device_info(), bytes.data(), host_buffer_device(), bytes.size());
  } else {
    copy_bytes(out.mutable_data(), out.device_info(), values.data(), host_buffer_device(),
                       values.size() * sizeof(T));
  }
  return out;
}

/// TensorFlow's ResourceVariable: one tensor on one device, replaced by every assignment.
template <Element T>
class LocalVariable final : public VariableImpl<T> {
 public:
  /// A copy of `initial_value` on `device`.
  LocalVariable(VariableInfo info, const Tensor<T>& initial_value, const Device& device)
      : VariableImpl<T>(std::move(info)), device_(&device), value_(variable_copy(initial_value, device, "VarHandleOp")) {}

  [[nodiscard]] std::size_t num_components() const noexcept override { return 1; }
  [[nodiscard]] Tensor<T> component(std::size_t i) const override {
    this->check_component(i);
    return read();
  }
  [[nodiscard]] std::string component_name(std::size_t i) const override {
    this->check_component(i);
    return this->info().name;
  }
  [[nodiscard]] const Device& device() const noexcept override { return *device_; }
  [[nodiscard]] const Device& read_device() const override { return *device_; }
  [[nodiscard]] std::vector<const void*> resources() const override { return {this}; }
  [[nodiscard]] Tensor<T> read() const override {
    std::lock_guard lock(mutex_);
    return value_;
  }
  void assign(const Tensor<T>& value) override {
    auto copy = variable_copy(value, *device_, "AssignVariableOp");
    std::lock_guard lock(mutex_);
    value_ = std::move(copy);
  }
  void update(VariableUpdate kind, const Tensor<T>& delta) override {
    if constexpr (Numeric<T>) {
      if (kind == VariableUpdate::add)
        apply_elementwise<ops::Add>(delta, "AssignAddVariableOp");
      else
        apply_elementwise<ops::Sub>(delta, "AssignSubVariableOp");
    } else {
      throw InvalidArgumentError("Variable " + this->info().name + " of dtype bool cannot be added to or subtracted from");
    }
  }
  /// `out` is the variable's own buffer when nothing else holds it (an in-place update, as
  /// TensorFlow's ResourceApply* kernels do); when a read still holds it (a tape, a tensor the user
  /// kept), a new buffer on the same device, and that read keeps its values (copy-on-write).
  void apply_update(std::string_view op, typename VariableImpl<T>::UpdateKernel kernel) override {
    std::lock_guard lock(mutex_);
    const bool in_place = value_.storage().use_count() == 1;  // the variable's is the only reference
    Tensor<T> out = in_place ? value_ : Tensor<T>::empty(value_.shape(), *device_, op);
    kernel(0, static_cast<const Tensor<T>&>(value_), out);
    if (!in_place) value_ = std::move(out);
  }

 private:
  const Device* device_;
  mutable std::mutex mutex_;  // guards value_
  Tensor<T> value_;

  /// value = Op(value, delta) on the variable's device (Op's GPU body on a real GPU; staged
  /// through the host in a program without it).
  template <class Op>
  void apply_elementwise(const Tensor<T>& delta, std::string_view op) {
    const Tensor<T> d = variable_copy(delta, *device_, op);  // the delta on this device
    std::lock_guard lock(mutex_);
    auto next = Tensor<T>::empty(value_.shape(), *device_, op);
    const Tensor<T> inputs[2] = {value_, d};
    kernels::run_body_on<Op, T, T>({}, inputs, next);
    value_ = std::move(next);
  }
};

/// Builds the implementation of every variable created on this thread while it is installed
/// (TensorFlow's variable_creator_scope): distribution strategies' scopes install theirs. One
/// overload per element type, since a virtual function cannot be a template.
class VariableCreator {
 public:
  virtual ~VariableCreator() = default;
  virtual std::shared_ptr<VariableImpl<float>> create(VariableInfo, const Tensor<float>&, const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<double>> create(VariableInfo, const Tensor<double>&, const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<std::int32_t>> create(VariableInfo, const Tensor<std::int32_t>&,
                                                             const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<std::int64_t>> create(VariableInfo, const Tensor<std::int64_t>&,
                                                             const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<bool>> create(VariableInfo, const Tensor<bool>&, const VariableOptions&) const = 0;
};
/// This thread's creator, or nullptr: variables are local.
inline const VariableCreator*& current_variable_creator() noexcept {
  thread_local const VariableCreator* creator = nullptr;
  return creator;
}

template <Element T>
class Variable {
 public:
  using value_type = T;

  /// An empty handle; assign a real variable to it.
  Variable() = default;

  /// A variable holding a copy of `initial_value`: a local variable on the device VarHandleOp is
  /// placed on, or what this thread's variable creator builds (a strategy's scope: a distributed
  /// variable with one component per replica).
  /// @throws InvalidArgumentError for an undefined initial value or trainable ON_READ variables;
  /// the creator's errors (a strategy refuses synchronization NONE).
  /// Created while a function is traced (TensorFlow: on its first trace only), the variable is
  /// made eagerly, from its initial value's nodes run once (tf.init_scope).
  explicit Variable(const Tensor<T>& initial_value, VariableOptions options = {}) {
    if (!initial_value.defined())
      throw InvalidArgumentError("Variable '" + options.name + "': the initial value is an undefined tensor (default-constructed or moved from)");
    if (graph::building()) [[unlikely]] {
      const Tensor<T> lifted = graph::variable_initial_value(initial_value).template as<T>();
      graph::InitScope eagerly;
      *this = Variable(lifted, std::move(options));
      return;
    }
    if (options.synchronization == VariableSynchronization::ON_READ && options.trainable.value_or(false))
      throw InvalidArgumentError(
          "Synchronization value can be set to VariableSynchronization.ON_READ only for non-trainable "
          "variables. You have specified trainable=True and synchronization=VariableSynchronization.ON_READ.");
    VariableInfo info{options.name + ":0",
                              options.name,
                              options.trainable.value_or(options.synchronization != VariableSynchronization::ON_READ),
                              options.synchronization,
                              options.aggregation,
                              next_tensor_id()};
    if (const auto* creator = current_variable_creator())
      impl_ = creator->create(std::move(info), initial_value, options);
    else
      impl_ = std::make_shared<LocalVariable<T>>(std::move(info), initial_value,
                                                         place_op(detail::var_handle_support<T>));
  }
  /// Internal (variable creators): a handle over `implementation`.
  explicit Variable(std::shared_ptr<VariableImpl<T>> implementation) : impl_(std::move(implementation)) {}

  [[nodiscard]] bool defined() const noexcept { return impl_ != nullptr; }
  /// "<name>:0", as TensorFlow prints variable names.
  [[nodiscard]] const std::string& name() const { return impl().info().name; }
  /// Component i's name: the variable's own for component 0, "<name>/replica_<i>:0"
  /// for the others. @throws InvalidArgumentError for i >= num_components().
  [[nodiscard]] std::string component_name(std::size_t i) const { return impl().component_name(i); }
  [[nodiscard]] bool trainable() const { return impl().info().trainable; }
  [[nodiscard]] VariableSynchronization synchronization() const { return impl().info().synchronization; }
  [[nodiscard]] VariableAggregation aggregation() const { return impl().info().aggregation; }
  [[nodiscard]] Shape shape() const { return impl().component(0).shape(); }
  [[nodiscard]] static constexpr std::string_view dtype() noexcept { return dtype_name<T>(); }
  /// The canonical full name of the device value() returns its tensor on (no read, no copy).
  [[nodiscard]] const std::string& device() const { return read_device_info().full_name; }
  /// The same device, parsed (for DeviceScopes on hot paths: no string work).
  [[nodiscard]] const DeviceSpec& device_spec() const { return read_device_info().spec; }
  [[nodiscard]] int device_index() const { return impl().device().logical_index; }
  /// The id GradientTape knows this variable by (stable across assignments).
  [[nodiscard]] std::uint64_t handle_id() const { return impl().info().handle_id; }
  /// Two handles of the same variable.
  [[nodiscard]] bool same_as(const Variable& other) const noexcept { return impl_ == other.impl_; }

  /// Created in a strategy's scope: one component per replica (distribute::DistributedVariable).
  [[nodiscard]] bool distributed() const { return impl().distributed(); }
  /// Mirrored (ON_WRITE / AUTO) or sync-on-read (ON_READ); meaningful when distributed().
  [[nodiscard]] bool sync_on_read() const { return synchronization() == VariableSynchronization::ON_READ; }
  [[nodiscard]] std::size_t num_components() const { return impl().num_components(); }
  /// Component i's value, without aggregation or recording (strategy.experimental_local_results).
  /// @throws InvalidArgumentError for i >= num_components().
  [[nodiscard]] Tensor<T> component(std::size_t i) const { return impl().component(i); }

  /// The current value; recorded on active tapes (ReadVariableOp), which watch it when trainable.
  /// A distributed variable reads the replica's component inside strategy.run; outside, a
  /// mirrored one the component on the current device scope's device (else the first), a
  /// sync-on-read one its components aggregated.
  /// While a graph is being built (a traced function), a ReadVariableOp node that reads the
  /// variable when the graph runs (captured by handle: later assignments are seen).
  [[nodiscard]] Tensor<T> value() const {
    if (auto* graph = graph::building()) [[unlikely]]
      return graph_read(*graph);
    Tensor<T> current = impl().read();
    if constexpr (Floating<T>) {
      if (autodiff::tapes_active()) {
        Tensor<T> read(current.storage(), current.shape());  // a new tensor value per read
        autodiff::TapeTensor handle = autodiff::tape_tensor(current);
        handle.id = impl().info().handle_id;
        autodiff::record_variable_read(handle, autodiff::tape_tensor(read), impl().info().trainable);
        return read;
      }
    }
    return current;
  }
  [[nodiscard]] Tensor<T> read_value() const { return value(); }
  [[nodiscard]] std::vector<T> to_vector() const { return impl().read().to_vector(); }

  /// Replaces the value. A distributed variable inside strategy.run: a sync-on-read variable's
  /// write stays local to the replica; a mirrored variable's writes from all replicas are merged
  /// with its aggregation (SUM, MEAN, ONLY_FIRST_REPLICA) and applied to every component. In
  /// cross-replica context every component is written (sync-on-read SUM variables store
  /// value / replicas in each, so that the aggregated read returns value).
  /// @throws InvalidArgumentError for an undefined tensor or another shape (the variable
  /// unchanged), and for replica-context writes to a mirrored variable without an aggregation
  /// (or with MEAN on an integer variable).
  const Variable& assign(const Tensor<T>& value) const {
    check_shape(value, "AssignVariableOp");
    if (auto* graph = graph::building()) [[unlikely]]
      return graph_update(*graph, "AssignVariableOp", value);
    impl().assign(value);
    return *this;
  }
  const Variable& assign_add(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    check_shape(delta, "AssignAddVariableOp");
    if (auto* graph = graph::building()) [[unlikely]]
      return graph_update(*graph, "AssignAddVariableOp", delta);
    impl().update(VariableUpdate::add, delta);
    return *this;
  }
  const Variable& assign_sub(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    check_shape(delta, "AssignSubVariableOp");
    if (auto* graph = graph::building()) [[unlikely]]
      return graph_update(*graph, "AssignSubVariableOp", delta);
    impl().update(VariableUpdate::sub, delta);
    return *this;
  }

  /// Internal (the optimizers' fused updates, ops/training_ops.hpp): for every component c, calls
  /// `kernel(c, value, out)` with the component's value and the tensor that becomes its new value.
  /// `out` is `value` itself when nothing else holds the component's buffer, so the kernel updates
  /// it in place as TensorFlow's ResourceApply* kernels do; when a read still holds it (a tape, a
  /// tensor the user kept), `out` is a new buffer on the same device and that read keeps its
  /// values (copy-on-write). Cross-replica only for distributed variables.
  /// @throws FailedPreconditionError in a replica context of the variable's strategy.
  template <class Kernel>
  void apply_update(std::string_view op, Kernel&& kernel) const {
    impl().apply_update(op, kernel);
  }

  /// Internal: the implementation (distribute::as_distributed looks through it).
  [[nodiscard]] VariableImpl<T>& implementation() const { return impl(); }

 private:
  std::shared_ptr<VariableImpl<T>> impl_;

  VariableImpl<T>& impl() const {
    if (!impl_) throw FailedPreconditionError("This Variable is empty (default-constructed)");
    return *impl_;
  }
  const Device& read_device_info() const { return impl().read_device(); }
  // Graph mode: nodes that hold the variable's implementation (TensorFlow's capture by handle),
  // with the state they use (Note [Automatic control dependencies] in ops/graph.hpp).
  static std::vector<graph::ResourceUse> uses(const VariableImpl<T>& target, bool writes) {
    std::vector<graph::ResourceUse> out;
    for (const void* r : target.resources()) out.push_back({r, writes});
    return out;
  }
  Tensor<T> graph_read(graph::Graph& graph) const {
    VariableImpl<T>& target = impl().read_target();  // inside strategy.run: the replica's component
    graph::Node node;
    node.name = graph.unique_name("ReadVariableOp");
    node.op = "ReadVariableOp";
    node.requested = read_device_info().spec;  // where the variable is read: placed there exactly
    node.outputs = {{dtype_enum<T>(), shape()}};
    node.resources = uses(target, false);
    node.any_thread = true;  // it sets the DeviceScope it reads under itself
    // The kernel reads as an eager value() does, under the read's device (a mirrored variable read
    // outside strategy.run reads the component there), and a tape around the graph's run records
    // the read as one of this variable (its handle id, whatever component was read).
    node.run = [variable = impl_, &target, where = node.requested](const graph::RunContext&, graph::NodeInputs,
                                                                    std::span<AnyTensor> out) {
      DeviceScope scope(where);
      out[0] = AnyTensor(Variable<T>::recorded_read(*variable, target.read()));
      if (auto* capture = graph::Capture::current())  // a CUDA graph reads this buffer at every replay
        capture->still_valid.push_back([variable, &target, where, at = out[0].storage->data] {
          DeviceScope again(where);
          return target.read().storage()->data == at;
        });
    };
    const auto index = graph.add(std::move(node));
    const auto read = graph::symbolic_output(graph, index, *graph.node(index), 0).template as<T>();
    if constexpr (Floating<T>) {
      if (autodiff::tapes_active()) {  // a tape inside the trace watches the variable, as eager
        autodiff::TapeTensor handle = autodiff::tape_tensor(read);
        handle.id = impl().info().handle_id;
        autodiff::record_variable_read(handle, autodiff::tape_tensor(read), impl().info().trainable);
      }
    }
    return read;
  }
  /// `current` (a value of `variable`) as value() returns it: recorded on active tapes as a read of
  /// `variable` (in a graph's kernel: a distributed variable's read of one component).
  static Tensor<T> recorded_read(const VariableImpl<T>& variable, const Tensor<T>& current) {
    if constexpr (Floating<T>) {
      if (autodiff::tapes_active()) {
        Tensor<T> read(current.storage(), current.shape());  // a new tensor value per read
        autodiff::TapeTensor handle = autodiff::tape_tensor(current);
        handle.id = variable.info().handle_id;
        autodiff::record_variable_read(handle, autodiff::tape_tensor(read), variable.info().trainable);
        return read;
      }
    }
    return current;
  }
  const Variable& graph_update(graph::Graph& graph, std::string_view op, const Tensor<T>& value) const {
    std::optional<VariableUpdate> kind;
    if (op == "AssignAddVariableOp") kind = VariableUpdate::add;
    if (op == "AssignSubVariableOp") kind = VariableUpdate::sub;
    // A mirrored variable written inside strategy.run: one node writes every replica's value,
    // aggregated, as its eager merge_call does (the replica that arrives last adds it).
    impl().gather_write(op, value, [&](const std::vector<Tensor<T>>& values) {
      VariableImpl<T>& target = impl().write_target();  // a sync-on-read variable's replica component
      graph::Node node;
      for (const auto& v : values) node.inputs.push_back(graph.input_edge(v, op));
      node.name = graph.unique_name(op);
      node.op = std::string(op);
      node.requested = target.device().spec;
      node.stateful = true;
      node.resources = uses(target, true);
      node.run = [variable = impl_, &target, kind](const graph::RunContext&, graph::NodeInputs in, std::span<AnyTensor>) {
        std::vector<Tensor<T>> given;
        for (const auto& v : in) given.push_back(v.as<T>());
        target.write_gathered(kind, given);
      };
      graph.add(std::move(node));
    });
    return *this;
  }

  void check_shape(const Tensor<T>& value, std::string_view op) const {
    if (!value.defined()) throw InvalidArgumentError("Cannot assign an undefined tensor to variable " + name());
    const Shape current = shape();
    if (value.shape() != current)
      throw InvalidArgumentError("Cannot update variable with shape " + current.to_string() +
                                 " using a Tensor with shape " + value.shape().to_string() +
                                 ", shapes must be equal. [Op:" + std::string(op) + "] (variable " + name() + ")");
  }
};

}  // namespace devtensor
