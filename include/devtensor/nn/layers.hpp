#pragma once
/// @file layers.hpp
/// @brief Layers: the LayerBase interface, the Layer handle Sequential holds, and Dense.
///
/// Layers are handles: `Dense d(4); model.add(d);` and `d` then name the same layer, so its
/// variables can be inspected after training. A layer builds (creates its variables) on its first
/// call, or at once when constructed with `input_dim`; variables are created under whatever
/// DeviceScope (or distribution scope) is current at that moment. Names follow Keras: "dense",
/// "dense_1", ... per process until nn::clear_session().

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/matmul.hpp"
#include "devtensor/ops/nn_ops.hpp"
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
/// Restarts layer and model names (Keras's clear_session).
void clear_session();

/// A layer's activation (Keras's `activation=`); softmax is over the last axis.
enum class Activation { linear, relu, sigmoid, tanh, softmax };

[[nodiscard]] inline Tensor<float> activate(Activation a, const Tensor<float>& x) {
  switch (a) {
    case Activation::relu: return relu(x);
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return tanh(x);
    case Activation::softmax: return softmax(x);
    case Activation::linear: break;
  }
  return x;
}

/// What every layer implements. Shapes use -1 for the batch dimension ("None" in summaries).
class LayerBase {
 public:
  virtual ~LayerBase() = default;
  LayerBase() = default;
  LayerBase(const LayerBase&) = delete;
  LayerBase& operator=(const LayerBase&) = delete;

  /// Creates the variables for inputs of `input_shape` (batch dimension included).
  virtual void build(const Shape& input_shape) = 0;
  /// The forward computation (the layer is built).
  [[nodiscard]] virtual Tensor<float> call(const Tensor<float>& x) = 0;
  /// The output shape for an input shape (dimension 0 may be -1: unknown batch).
  [[nodiscard]] virtual std::vector<std::int64_t> output_shape(const std::vector<std::int64_t>& input_shape) const = 0;
  [[nodiscard]] virtual std::string type_name() const = 0;
  [[nodiscard]] virtual std::vector<Variable<float>> variables() const = 0;
  /// The input shape the layer was declared with (batch dimension -1), when it was.
  [[nodiscard]] virtual std::optional<std::vector<std::int64_t>> declared_input_shape() const { return std::nullopt; }

  [[nodiscard]] std::vector<Variable<float>> trainable_variables() const;
  [[nodiscard]] bool built() const noexcept { return built_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  /// Builds on the first call, then runs `call`.
  Tensor<float> operator()(const Tensor<float>& x) {
    if (!built_) {
      build(x.shape());
      built_ = true;
    }
    return call(x);
  }
  void ensure_built(const Shape& input_shape) {
    if (!built_) {
      build(input_shape);
      built_ = true;
    }
  }

 protected:
  std::string name_;
  bool built_ = false;
};

/// A handle to any layer (what Sequential holds).
class Layer {
 public:
  explicit Layer(std::shared_ptr<LayerBase> impl) : impl_(std::move(impl)) {
    if (!impl_) throw InvalidArgumentError("Layer: null layer");
  }
  /// From a layer handle such as Dense.
  template <class L>
    requires requires(const L& l) { { l.impl() } -> std::convertible_to<std::shared_ptr<LayerBase>>; }
  Layer(const L& layer) : Layer(std::shared_ptr<LayerBase>(layer.impl())) {}  // NOLINT: implicit by design

  Tensor<float> operator()(const Tensor<float>& x) const { return (*impl_)(x); }
  [[nodiscard]] LayerBase& get() const noexcept { return *impl_; }
  [[nodiscard]] LayerBase* operator->() const noexcept { return impl_.get(); }
  [[nodiscard]] std::shared_ptr<LayerBase> impl() const noexcept { return impl_; }

 private:
  std::shared_ptr<LayerBase> impl_;
};

struct DenseOptions {
  /// The input's last dimension; when given, the layer (and a Sequential starting with it) builds
  /// at once.
  std::optional<std::int64_t> input_dim = std::nullopt;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer kernel_initializer = initializers::GlorotUniform{};
  Initializer bias_initializer = initializers::Zeros{};
  /// Default: "dense", "dense_1", ...
  std::string name{};
};

namespace layer_detail {

class DenseLayer final : public LayerBase {
 public:
  DenseLayer(std::int64_t units, DenseOptions options);

  DEVTENSOR_HEADER_INLINE void build(const Shape& input_shape) override;

  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x) override;

  std::vector<std::int64_t> output_shape(const std::vector<std::int64_t>& input_shape) const override {
    std::vector<std::int64_t> out = input_shape;
    if (!out.empty()) out.back() = units_;
    return out;
  }
  std::string type_name() const override { return "Dense"; }
  std::vector<Variable<float>> variables() const override {
    std::vector<Variable<float>> out;
    if (kernel_.defined()) out.push_back(kernel_);
    if (bias_.defined()) out.push_back(bias_);
    return out;
  }
  std::optional<std::vector<std::int64_t>> declared_input_shape() const override {
    if (!options_.input_dim) return std::nullopt;
    return std::vector<std::int64_t>{-1, *options_.input_dim};
  }

  std::int64_t units() const noexcept { return units_; }
  const Variable<float>& kernel() const noexcept { return kernel_; }
  const Variable<float>& bias() const noexcept { return bias_; }

 private:
  std::int64_t units_;
  DenseOptions options_;
  std::int64_t in_features_ = 0;
  Variable<float> kernel_;
  Variable<float> bias_;

  Tensor<float> initial(const Initializer& init, const Shape& shape, std::string_view what) const;
};

}  // namespace layer_detail

/// A fully connected layer: activation(x · kernel + bias), kernel [in, units].
class Dense {
 public:
  explicit Dense(std::int64_t units, DenseOptions options = {})
      : impl_(std::make_shared<layer_detail::DenseLayer>(units, std::move(options))) {}

  Tensor<float> operator()(const Tensor<float>& x) const { return (*impl_)(x); }
  [[nodiscard]] std::shared_ptr<LayerBase> impl() const { return impl_; }
  [[nodiscard]] const std::string& name() const noexcept { return impl_->name(); }
  [[nodiscard]] std::int64_t units() const noexcept { return impl_->units(); }
  [[nodiscard]] bool built() const noexcept { return impl_->built(); }
  /// The variables (empty handles before the layer is built).
  [[nodiscard]] const Variable<float>& kernel() const noexcept { return impl_->kernel(); }
  [[nodiscard]] const Variable<float>& bias() const noexcept { return impl_->bias(); }
  [[nodiscard]] std::vector<Variable<float>> trainable_variables() const { return impl_->trainable_variables(); }

 private:
  std::shared_ptr<layer_detail::DenseLayer> impl_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION layer_detail::DenseLayer::DenseLayer(std::int64_t units, DenseOptions options)
    : units_(units), options_(std::move(options)) {
  if (units < 1)
    throw InvalidArgumentError("Received an invalid value for `units`, expected a positive integer. Received: units=" +
                               std::to_string(units));
  if (options_.input_dim && *options_.input_dim < 1)
    throw InvalidArgumentError("Dense: input_dim must be positive, got " + std::to_string(*options_.input_dim));
  name_ = options_.name.empty() ? unique_name("dense") : options_.name;
  if (options_.input_dim) ensure_built(Shape({1, *options_.input_dim}));
}

// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION void layer_detail::DenseLayer::build(const Shape& input_shape) {
  if (input_shape.rank() != 2)
    throw InvalidArgumentError("Input 0 of layer \"" + name_ + "\" is incompatible with the layer: expected ndim=2, found ndim=" +
                               std::to_string(input_shape.rank()) + ". Full shape received: " + input_shape.to_python());
  const std::int64_t in = input_shape[1];
  const Shape kernel_shape({in, units_});
  kernel_ = Variable<float>(initial(options_.kernel_initializer, kernel_shape, "kernel"), {.name = name_ + "/kernel"});
  if (options_.use_bias)
    bias_ = Variable<float>(initial(options_.bias_initializer, Shape({units_}), "bias"), {.name = name_ + "/bias"});
  in_features_ = in;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DenseLayer::call(const Tensor<float>& x) {
  if (x.rank() != 2 || x.shape()[1] != in_features_)
    throw InvalidArgumentError("Input 0 of layer \"" + name_ + "\" is incompatible with the layer: expected axis -1 "
                               "of input shape to have value " + std::to_string(in_features_) +
                               ", but received input with shape " + x.shape().to_python());
  Tensor<float> y = matmul(x, kernel_.value());
  if (options_.use_bias) y = add(y, bias_.value());
  return activate(options_.activation, y);
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DenseLayer::initial(
    const Initializer& init, const Shape& shape, std::string_view what) const {
  if (!init) throw InvalidArgumentError("Dense \"" + name_ + "\": the " + std::string(what) + " initializer is empty");
  Tensor<float> value = init(shape);
  if (value.shape() != shape)
    throw InvalidArgumentError("Dense \"" + name_ + "\": the " + std::string(what) + " initializer returned shape " +
                               value.shape().to_string() + ", expected " + shape.to_string());
  return value;
}

DEVTENSOR_DEFINITION std::string unique_name(const std::string& base) {
  std::lock_guard lock(layer_detail::names_mutex());
  const int n = layer_detail::name_counts()[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

DEVTENSOR_DEFINITION void clear_session() {
  std::lock_guard lock(layer_detail::names_mutex());
  layer_detail::name_counts().clear();
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> LayerBase::trainable_variables() const {
  std::vector<Variable<float>> out;
  for (auto& v : variables())
    if (v.trainable()) out.push_back(v);
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
