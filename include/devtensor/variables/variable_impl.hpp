#pragma once
/// @file variable_impl.hpp
/// @brief What a Variable<T> handle holds (variables/variable.hpp): a variable's implementation
/// (VariableImpl), TensorFlow's ResourceVariable (LocalVariable: one tensor on one device that
/// assignments replace), and the variable creator through which strategies plug in their
/// distributed variables.

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
#include "devtensor/ops/thread_state.hpp"
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
inline constexpr KernelSupport var_handle_support{
    "VarHandleOp", dtype_enum_name<T>(), true, true, nullptr, &kernel_slot<ops::VarHandleOp, gpu_t, T>, false};
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
  requires(!std::same_as<std::remove_cvref_t<F>, FunctionRef> && std::invocable<F&, Args...>) FunctionRef(F&& f)
  noexcept  // NOLINT(google-explicit-constructor): passed like a callable
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
  /// The state its components hold, by address: one per component (the variable itself, unless it
  /// has components of its own).
  [[nodiscard]] virtual std::vector<const void*> resources() const { return {this}; }
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
    if (kind)
      update(*kind, values.at(0));
    else
      assign(values.at(0));
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
Tensor<T> tensor_from_host(const std::vector<T>& values, const Shape& shape, const Device& device,
                           std::string_view op) {
  auto out = Tensor<T>::empty(shape, device, op);
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no contiguous data()
    std::vector<unsigned char> bytes(values.begin(), values.end());
    static_assert(sizeof(bool) == 1);
    copy_bytes(out.mutable_data(), out.device_info(), bytes.data(), host_buffer_device(), bytes.size());
  } else {
    copy_bytes(out.mutable_data(), out.device_info(), values.data(), host_buffer_device(), values.size() * sizeof(T));
  }
  return out;
}

/// TensorFlow's ResourceVariable: one tensor on one device, replaced by every assignment.
template <Element T>
class LocalVariable final : public VariableImpl<T> {
 public:
  /// A copy of `initial_value` on `device`.
  LocalVariable(VariableInfo info, const Tensor<T>& initial_value, const Device& device)
      : VariableImpl<T>(std::move(info)),
        device_(&device),
        value_(variable_copy(initial_value, device, "VarHandleOp")) {}

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
      throw InvalidArgumentError("Variable " + this->info().name +
                                 " of dtype bool cannot be added to or subtracted from");
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
  virtual std::shared_ptr<VariableImpl<float>> create(VariableInfo, const Tensor<float>&,
                                                      const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<double>> create(VariableInfo, const Tensor<double>&,
                                                       const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<std::int32_t>> create(VariableInfo, const Tensor<std::int32_t>&,
                                                             const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<std::int64_t>> create(VariableInfo, const Tensor<std::int64_t>&,
                                                             const VariableOptions&) const = 0;
  virtual std::shared_ptr<VariableImpl<bool>> create(VariableInfo, const Tensor<bool>&,
                                                     const VariableOptions&) const = 0;
};
/// This thread's creator, or nullptr: variables are local.
inline const VariableCreator*& current_variable_creator() noexcept { return this_thread_state().variable_creator; }

}  // namespace devtensor
