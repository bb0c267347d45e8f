#pragma once
/// @file layer.hpp
/// @brief What every layer is: the LayerBase interface, the Layer handle models hold, Keras's
/// default names, and the activations layers apply.
///
/// Layers are handles: `Dense d(4); model.add(d);` and `d` then name the same layer, so its
/// variables can be inspected after training. A layer builds (creates its variables) on its first
/// call, real or symbolic (keras_tensor.hpp), or at once when constructed with `input_dim`;
/// variables are created under whatever DeviceScope (or distribution scope) is current at that
/// moment. Names follow Keras: "dense", "dense_1", ... per process until nn::clear_session().

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/mixed_precision.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/nn_ops.hpp"
#include "devtensor/ops/thread_state.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

namespace layer_detail {
inline std::mutex& names_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<std::string, int>& name_counts() {
  static std::map<std::string, int> counts;
  return counts;
}
}  // namespace layer_detail

/// A fresh Keras-style name: "dense", then "dense_1", "dense_2", ...
std::string unique_name(const std::string& base);
/// Restarts layer and model names and the global dtype policy (Keras's clear_session).
void clear_session();

/// A layer's activation (Keras's `activation=`); softmax is over the last axis.
enum class Activation { linear, relu, sigmoid, tanh, softmax };

[[nodiscard]] Tensor<float> activate(Activation a, const Tensor<float>& x);
/// The same in a 16-bit type (a mixed precision policy's layers). The 16-bit Softmax kernel
/// computes in float32 and rounds once (Note [Sixteen-bit bodies in float]).
template <SixteenBitFloat D>
[[nodiscard]] Tensor<D> activate(Activation a, const Tensor<D>& x) {
  switch (a) {
    case Activation::relu: return relu(x);
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return tanh(x);
    case Activation::softmax: return softmax(x);
    case Activation::linear: break;
  }
  return x;
}

/// What random layers (Dropout) draw from during a model's training step (a part of the thread's
/// state: devtensor::StepSeed, ops/thread_state.hpp).
using StepSeed = devtensor::StepSeed;

[[nodiscard]] inline const StepSeed& current_step_seed() noexcept { return this_thread_state().step_seed; }

/// Sets the step's seed on this thread while it lives.
class StepSeedScope {
 public:
  StepSeedScope(const Tensor<std::int64_t>& seed, int replica) : previous_(this_thread_state().step_seed) {
    this_thread_state().step_seed = {&seed, replica};
  }
  ~StepSeedScope() { this_thread_state().step_seed = previous_; }
  StepSeedScope(const StepSeedScope&) = delete;
  StepSeedScope& operator=(const StepSeedScope&) = delete;

 private:
  StepSeed previous_;
};

/// A shape with -1 for unknown dimensions (the batch: "None" in summaries).
using PartialShape = std::vector<std::int64_t>;

/// "(None, 4)": a shape as Keras prints it (a 1-tuple with its comma).
[[nodiscard]] inline std::string python_shape(const PartialShape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("None") : std::to_string(shape[i]));
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// What every layer implements. A layer of one input implements build, call and output_shape; a
/// layer of several (Add, Concatenate, a model) overrides the `_inputs` forms instead.
class LayerBase {
 public:
  virtual ~LayerBase() = default;
  LayerBase() = default;
  LayerBase(const LayerBase&) = delete;
  LayerBase& operator=(const LayerBase&) = delete;

  /// Creates the variables for inputs of `input_shape` (batch dimension included).
  virtual void build(const Shape& input_shape) = 0;
  /// The forward computation (the layer is built); `training` as Keras's `training=` argument.
  [[nodiscard]] virtual Tensor<float> call(const Tensor<float>& x, bool training) = 0;
  /// The output shape for an input shape (dimension 0 may be -1: unknown batch).
  [[nodiscard]] virtual PartialShape output_shape(const PartialShape& input_shape) const = 0;
  [[nodiscard]] virtual std::string type_name() const = 0;
  [[nodiscard]] virtual std::vector<Variable<float>> variables() const = 0;
  /// The input shape the layer was declared with (batch dimension -1), when it was.
  [[nodiscard]] virtual std::optional<PartialShape> declared_input_shape() const { return std::nullopt; }

  /// Several inputs and outputs; by default exactly one of each, through the forms above.
  DEVTENSOR_HEADER_INLINE virtual void build_inputs(const std::vector<Shape>& input_shapes);
  [[nodiscard]] DEVTENSOR_HEADER_INLINE virtual std::vector<Tensor<float>> call_inputs(
      const std::vector<Tensor<float>>& xs, bool training);
  [[nodiscard]] DEVTENSOR_HEADER_INLINE virtual std::vector<PartialShape> output_shapes(
      const std::vector<PartialShape>& input_shapes) const;

  /// The variables fit trains: none for a frozen layer, else those marked trainable (not
  /// BatchNormalization's moving statistics).
  [[nodiscard]] virtual std::vector<Variable<float>> trainable_variables() const;
  [[nodiscard]] std::int64_t count_params() const;
  /// Whether fit trains the layer (Keras's layer.trainable, true by default). A frozen layer's
  /// variables leave trainable_variables(); a frozen BatchNormalization also normalises by its
  /// moving statistics while training, as Keras's does. A model or a graph sets all its layers.
  /// Keras asks for compile() after a change; fit here re-traces its step itself when the set of
  /// trainable variables changed.
  [[nodiscard]] bool trainable() const noexcept { return trainable_; }
  virtual void set_trainable(bool trainable) { trainable_ = trainable; }
  [[nodiscard]] bool built() const noexcept { return built_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// What the layer computes in and keeps its variables in (Keras's layer.dtype_policy): the
  /// global policy when it was constructed, or its options' `dtype`, for the layers that compute
  /// in 16 bits (Dense, Activation, Dropout); float32 for the others (Note [Mixed precision at
  /// layer boundaries]).
  [[nodiscard]] const mixed_precision::DTypePolicy& dtype_policy() const noexcept { return policy_; }
  [[nodiscard]] DType compute_dtype() const noexcept { return policy_.compute_dtype(); }
  [[nodiscard]] DType variable_dtype() const noexcept { return policy_.variable_dtype(); }

  /// Builds on the first call, then runs `call`.
  Tensor<float> operator()(const Tensor<float>& x, bool training = false) {
    ensure_built(x.shape());
    return call(x, training);
  }
  /// Builds on the first call, then runs `call_inputs`.
  std::vector<Tensor<float>> invoke(const std::vector<Tensor<float>>& xs, bool training) {
    if (!built_) {
      std::vector<Shape> shapes;
      for (const auto& x : xs) shapes.push_back(x.shape());
      build_inputs(shapes);
      built_ = true;
    }
    return call_inputs(xs, training);
  }
  void ensure_built(const Shape& input_shape) {
    if (!built_) {
      build(input_shape);
      built_ = true;
    }
  }
  void ensure_built(const std::vector<Shape>& input_shapes) {
    if (!built_) {
      build_inputs(input_shapes);
      built_ = true;
    }
  }

  /// The index the layer's next symbolic call gets (Keras's node index, "dense[1][0]").
  int take_node_index() noexcept { return calls_++; }
  /// The output shapes of the layer's latest symbolic call (what summaries print).
  [[nodiscard]] const std::vector<PartialShape>& last_output_shapes() const noexcept { return last_output_shapes_; }
  void set_last_output_shapes(std::vector<PartialShape> shapes) { last_output_shapes_ = std::move(shapes); }

 protected:
  std::string name_;
  bool built_ = false;
  bool trainable_ = true;
  mixed_precision::DTypePolicy policy_;  // float32 unless the layer takes a policy

  /// For a layer that computes in 16 bits: the policy named `dtype`, or the global one.
  void take_policy(std::string_view dtype) {
    policy_ = dtype.empty() ? mixed_precision::global_policy() : mixed_precision::DTypePolicy(dtype);
  }
  /// `compute` run in the policy's compute type D (`compute.template operator()<D>()`, given
  /// nothing: it casts what it reads with in_compute<D>), its result cast back to float32.
  template <class F>
  Tensor<float> in_compute_dtype(F&& compute) const {
    switch (policy_.compute_dtype()) {
      case DType::DT_HALF: return cast<float>(compute.template operator()<float16>());
      case DType::DT_BFLOAT16: return cast<float>(compute.template operator()<bfloat16>());
      default: return compute.template operator()<float>();
    }
  }
  /// `x` in compute type D: itself in float32, else a cast (a variable's value read as Keras's
  /// AutoCastVariable reads it).
  template <FloatingElement D>
  static Tensor<D> in_compute(const Tensor<float>& x) {
    if constexpr (std::is_same_v<D, float>)
      return x;
    else
      return cast<D>(x);
  }

  template <class T>
  const T& only_input(const std::vector<T>& inputs) const {
    if (inputs.size() != 1)
      throw InvalidArgumentError("Layer \"" + name_ + "\" (" + type_name() + ") expects 1 input, but it received " +
                                 std::to_string(inputs.size()) + " input tensors.");
    return inputs[0];
  }

 private:
  int calls_ = 0;
  std::vector<PartialShape> last_output_shapes_;
};

/// A handle to any layer (what models hold).
class Layer {
 public:
  explicit Layer(std::shared_ptr<LayerBase> impl) : impl_(std::move(impl)) {
    if (!impl_) throw InvalidArgumentError("Layer: null layer");
  }
  /// From a layer handle such as Dense, or a model.
  template <class L>
  requires requires(const L& l) {
    { l.impl() } -> std::convertible_to<std::shared_ptr<LayerBase>>;
  }
  Layer(const L& layer) : Layer(std::shared_ptr<LayerBase>(layer.impl())) {}  // NOLINT: implicit by design

  Tensor<float> operator()(const Tensor<float>& x, bool training = false) const { return (*impl_)(x, training); }
  [[nodiscard]] LayerBase& get() const noexcept { return *impl_; }
  [[nodiscard]] LayerBase* operator->() const noexcept { return impl_.get(); }
  [[nodiscard]] std::shared_ptr<LayerBase> impl() const noexcept { return impl_; }

 private:
  std::shared_ptr<LayerBase> impl_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.
DEVTENSOR_DEFINITION void LayerBase::build_inputs(const std::vector<Shape>& input_shapes) {
  build(only_input(input_shapes));
}
DEVTENSOR_DEFINITION std::vector<Tensor<float>> LayerBase::call_inputs(const std::vector<Tensor<float>>& xs,
                                                                       bool training) {
  return {call(only_input(xs), training)};
}
DEVTENSOR_DEFINITION std::vector<PartialShape> LayerBase::output_shapes(
    const std::vector<PartialShape>& input_shapes) const {
  return {output_shape(only_input(input_shapes))};
}

DEVTENSOR_DEFINITION Tensor<float> activate(Activation a, const Tensor<float>& x) {
  switch (a) {
    case Activation::relu: return relu(x);
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return tanh(x);
    case Activation::softmax: return softmax(x);
    case Activation::linear: break;
  }
  return x;
}

DEVTENSOR_DEFINITION std::string unique_name(const std::string& base) {
  std::lock_guard lock(layer_detail::names_mutex());
  const int n = layer_detail::name_counts()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

DEVTENSOR_DEFINITION void clear_session() {
  {
    std::lock_guard lock(layer_detail::names_mutex());
    layer_detail::name_counts().clear();
  }
  mixed_precision::policy_detail::reset_every_thread();  // as Keras's: every thread's state anew
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> LayerBase::trainable_variables() const {
  std::vector<Variable<float>> out;
  if (!trainable_) return out;
  for (auto& v : variables())
    if (v.trainable()) out.push_back(v);
  return out;
}

DEVTENSOR_DEFINITION std::int64_t LayerBase::count_params() const {
  std::int64_t n = 0;
  for (const auto& v : variables()) n += v.shape().num_elements();
  return n;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
