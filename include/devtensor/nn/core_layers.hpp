#pragma once
/// @file core_layers.hpp
/// @brief Layers without variables that reshape or transform: Flatten and ActivationLayer (Keras's
/// `Activation` layer; `nn::Activation` is the enum a Dense takes).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

struct FlattenOptions {
  /// Default: "flatten", "flatten_1", ...
  std::string name{};
};

struct ActivationLayerOptions {
  /// Default: "activation", "activation_1", ...
  std::string name{};
};

namespace layer_detail {

class FlattenLayer final : public LayerBase {
 public:
  explicit FlattenLayer(FlattenOptions options) {
    name_ = options.name.empty() ? unique_name("flatten") : std::move(options.name);
  }
  void build(const Shape& input_shape) override { (void)output_shape(input_shape.dims_vector()); }
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "Flatten"; }
  std::vector<Variable<float>> variables() const override { return {}; }
};

class ActivationLayer final : public LayerBase {
 public:
  ActivationLayer(Activation activation, ActivationLayerOptions options) : activation_(activation) {
    name_ = options.name.empty() ? unique_name("activation") : std::move(options.name);
  }
  void build(const Shape&) override {}
  Tensor<float> call(const Tensor<float>& x, bool) override { return activate(activation_, x); }
  PartialShape output_shape(const PartialShape& input_shape) const override { return input_shape; }
  std::string type_name() const override { return "Activation"; }
  std::vector<Variable<float>> variables() const override { return {}; }

 private:
  Activation activation_;
};

}  // namespace layer_detail

/// Every example's values in one row: [batch, d1, d2, ...] to [batch, d1 * d2 * ...]; a batch of
/// scalars becomes [batch, 1].
class Flatten : public LayerHandle<layer_detail::FlattenLayer> {
 public:
  explicit Flatten(FlattenOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::FlattenLayer>(std::move(options))) {}
};

/// Applies an activation to its input (Keras's `layers.Activation("softmax")`).
class ActivationLayer : public LayerHandle<layer_detail::ActivationLayer> {
 public:
  explicit ActivationLayer(Activation activation, ActivationLayerOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::ActivationLayer>(activation, std::move(options))) {}
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION PartialShape layer_detail::FlattenLayer::output_shape(const PartialShape& input_shape) const {
  if (input_shape.empty())
    throw InvalidArgumentError("Layer \"" + name_ + "\" (Flatten) needs inputs with a batch dimension; received a scalar");
  std::int64_t features = 1;
  for (std::size_t d = 1; d < input_shape.size(); ++d) {
    if (input_shape[d] < 0) {
      features = -1;
      break;
    }
    features *= input_shape[d];
  }
  return {input_shape[0], features};
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::FlattenLayer::call(const Tensor<float>& x, bool) {
  const PartialShape out = output_shape(x.shape().dims_vector());
  if (x.shape().dims_vector() == out) return x;
  return reshape(x, out);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
