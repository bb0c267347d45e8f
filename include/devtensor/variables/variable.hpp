#pragma once
/// @file variable.hpp
/// @brief Variable<T>: a named, mutable tensor that GradientTape differentiates with respect to.
///
/// A Variable is a handle (copies share the state) holding an immutable Tensor that assignments
/// replace: a tensor read from a variable never changes afterwards, as TensorFlow's copy-on-write
/// reads promise. It lives on the device its creation was placed on (VarHandleOp: the innermost
/// DeviceScope, else the preferred device). Reads are recorded on active tapes as ReadVariableOp;
/// tapes watch trainable variables when they are read (watch_accessed_variables).
/// The synchronization and aggregation settings are stored for distribution strategies.

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/placer.hpp"
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
/// Variables are created by VarHandleOp: CPU and (simulated) GPUs. Real GPUs hold variables once
/// the CUDA backend gives their updates a kernel; until then they stay on the host. The same table
/// in every translation-unit flavour, because Variable is shared by all of them.
template <Element T>
inline constexpr KernelSupport var_handle_support{"VarHandleOp", dtype_enum_name<T>(), true, false, true, false};
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
      throw InvalidArgumentError("Variable '" + options.name + "': the initial value is an empty Tensor");
    if (options.synchronization == VariableSynchronization::ON_READ && options.trainable.value_or(false))
      throw InvalidArgumentError(
          "Synchronization value can be set to VariableSynchronization.ON_READ only for non-trainable "
          "variables. You have specified trainable=True and synchronization=VariableSynchronization.ON_READ.");
    auto state = std::make_shared<State>();
    state->name = options.name + ":0";
    state->trainable =
        options.trainable.value_or(options.synchronization != VariableSynchronization::ON_READ);
    state->synchronization = options.synchronization;
    state->aggregation = options.aggregation;
    state->handle_id = detail::next_tensor_id();
    const int device = place_op(detail::var_handle_support<T>);
    state->device = device;
    state->value = owned_copy(initial_value, device, "VarHandleOp");
    state_ = std::move(state);
  }

  [[nodiscard]] bool defined() const noexcept { return state_ != nullptr; }
  /// "<name>:0", as TensorFlow prints variable names.
  [[nodiscard]] const std::string& name() const { return state().name; }
  [[nodiscard]] bool trainable() const { return state().trainable; }
  [[nodiscard]] VariableSynchronization synchronization() const { return state().synchronization; }
  [[nodiscard]] VariableAggregation aggregation() const { return state().aggregation; }
  [[nodiscard]] Shape shape() const { return read_unrecorded().shape(); }
  [[nodiscard]] static constexpr std::string_view dtype() noexcept { return dtype_name<T>(); }
  [[nodiscard]] std::string device() const { return read_unrecorded().device(); }
  [[nodiscard]] int device_index() const { return state().device; }
  /// The id GradientTape knows this variable by (stable across assignments).
  [[nodiscard]] std::uint64_t handle_id() const { return state().handle_id; }
  /// Two handles of the same variable.
  [[nodiscard]] bool same_as(const Variable& other) const noexcept { return state_ == other.state_; }

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
  const Variable& assign(const Tensor<T>& value) const {
    check_shape(value, "AssignVariableOp");
    auto copy = owned_copy(value, state().device, "AssignVariableOp");
    std::lock_guard lock(state().mutex);
    state().value = std::move(copy);
    return *this;
  }
  const Variable& assign_add(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    update(delta, "AssignAddVariableOp", [](T a, T b) { return static_cast<T>(a + b); });
    return *this;
  }
  const Variable& assign_sub(const Tensor<T>& delta) const
    requires Numeric<T>
  {
    update(delta, "AssignSubVariableOp", [](T a, T b) { return static_cast<T>(a - b); });
    return *this;
  }

 private:
  struct State {
    std::string name;
    bool trainable = true;
    VariableSynchronization synchronization = VariableSynchronization::AUTO;
    VariableAggregation aggregation = VariableAggregation::NONE;
    std::uint64_t handle_id = 0;
    int device = 0;
    mutable std::mutex mutex;  // guards `value`
    Tensor<T> value;
  };
  std::shared_ptr<State> state_;

  State& state() const {
    if (!state_) throw FailedPreconditionError("This Variable is empty (default-constructed)");
    return *state_;
  }
  Tensor<T> read_unrecorded() const {
    std::lock_guard lock(state().mutex);
    return state().value;
  }
  void check_shape(const Tensor<T>& value, std::string_view op) const {
    if (!value.defined())
      throw InvalidArgumentError("Cannot assign an empty Tensor to variable " + state().name);
    const Shape current = shape();
    if (value.shape() != current)
      throw InvalidArgumentError("Cannot update variable with shape " + current.to_string() +
                                 " using a Tensor with shape " + value.shape().to_string() +
                                 ", shapes must be equal. [Op:" + std::string(op) + "] (variable " +
                                 state().name + ")");
  }
  /// A buffer of the variable's own on `device`, holding `value`'s elements.
  static Tensor<T> owned_copy(const Tensor<T>& value, int device, std::string_view op) {
    auto out = Tensor<T>::empty(value.shape(), device, op);
    detail::copy_bytes(out.mutable_data(), out.device_info(), value.data(), value.device_info(),
                       static_cast<std::size_t>(value.num_elements()) * sizeof(T));
    return out;
  }
  template <class F>
  void update(const Tensor<T>& delta, std::string_view op, F f) const {
    check_shape(delta, op);
    const Tensor<T> d = to_device(delta, state().device, op, 1);
    if (!d.host_memory())
      throw InternalError("Variable update on " + d.device() + " needs the CUDA backend's kernels");
    std::lock_guard lock(state().mutex);
    const Tensor<T>& old = state().value;
    auto next = Tensor<T>::empty(old.shape(), state().device, op);
    const T* a = old.data();
    const T* b = d.data();
    T* o = next.mutable_data();
    for (std::int64_t i = 0, n = old.num_elements(); i < n; ++i) o[i] = f(a[i], b[i]);
    state().value = std::move(next);
  }
};

}  // namespace devtensor
