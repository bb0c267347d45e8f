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
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/tensor/tensor.hpp"
#include "devtensor/variables/variable_impl.hpp"
#include "devtensor/variables/variable_ops.hpp"

namespace devtensor {

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
  explicit Variable(const Tensor<T>& initial_value, VariableOptions options = {});
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
  /// variable when the graph runs (captured by handle: later assignments are seen), after the
  /// writes made before it (ops::ReadVariable).
  [[nodiscard]] Tensor<T> value() const { return run_op<ops::ReadVariable<T>>({shared()}); }
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
    run_op<ops::WriteVariable<T, ops::VariableWrite::assign>>({shared()}, value);
    return *this;
  }
  const Variable& assign_add(const Tensor<T>& delta) const requires Numeric<T> {
    check_shape(delta, "AssignAddVariableOp");
    run_op<ops::WriteVariable<T, ops::VariableWrite::add>>({shared()}, delta);
    return *this;
  }
  const Variable& assign_sub(const Tensor<T>& delta) const requires Numeric<T> {
    check_shape(delta, "AssignSubVariableOp");
    run_op<ops::WriteVariable<T, ops::VariableWrite::sub>>({shared()}, delta);
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
  const std::shared_ptr<VariableImpl<T>>& shared() const {
    if (!impl_) throw FailedPreconditionError("This Variable is empty (default-constructed)");
    return impl_;
  }

  void check_shape(const Tensor<T>& value, std::string_view op) const;
};

// Out of the class and not inline, so that in compiled mode the explicit instantiation
// declarations below keep them out of the caller's translation unit: the constructor makes the
// local variable, whose virtual functions (its updates' kernels among them) come with it.
template <Element T>
Variable<T>::Variable(const Tensor<T>& initial_value, VariableOptions options) {
  if (!initial_value.defined())
    throw InvalidArgumentError("Variable '" + options.name +
                               "': the initial value is an undefined tensor (default-constructed or moved from)");
  if (const auto lifted = graph::lifted_initial_value(initial_value)) [[unlikely]] {  // created in a trace
    graph::InitScope eagerly;
    *this = Variable(lifted->template as<T>(), std::move(options));
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
    impl_ = std::make_shared<LocalVariable<T>>(std::move(info), initial_value, place_op(detail::var_handle_support<T>));
}

template <Element T>
void Variable<T>::check_shape(const Tensor<T>& value, std::string_view op) const {
  if (!value.defined()) throw InvalidArgumentError("Cannot assign an undefined tensor to variable " + name());
  const Shape current = shape();
  if (value.shape() != current)
    throw InvalidArgumentError("Cannot update variable with shape " + current.to_string() +
                               " using a Tensor with shape " + value.shape().to_string() +
                               ", shapes must be equal. [Op:" + std::string(op) + "] (variable " + name() + ")");
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
#define DEVTENSOR_ALL(T) \
  DEVTENSOR_EXTERN_TEMPLATE Variable<T>::Variable(const Tensor<T>&, VariableOptions); \
  DEVTENSOR_EXTERN_TEMPLATE void Variable<T>::check_shape(const Tensor<T>&, std::string_view) const;
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
#endif
// clang-format on

}  // namespace devtensor
