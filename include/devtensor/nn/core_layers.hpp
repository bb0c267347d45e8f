#pragma once
/// @file core_layers.hpp
/// @brief Layers without variables that reshape, transform or regularise: Flatten, ActivationLayer
/// (Keras's `Activation` layer; `nn::Activation` is the enum a Dense takes) and Dropout.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/random.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

struct FlattenOptions {
  /// Default: "flatten", "flatten_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (under a mixed one its output is rounded
  /// to the 16-bit type, as Keras casts a layer's inputs to its compute dtype).
  std::string dtype{};
};

struct ActivationLayerOptions {
  /// Default: "activation", "activation_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (nn/mixed_precision.hpp). Keras's advice
  /// for a mixed precision model: its last softmax in "float32".
  std::string dtype{};
};

struct DropoutOptions {
  /// The layer's seed; by default a fresh one.
  std::optional<std::uint64_t> seed = std::nullopt;
  /// Default: "dropout", "dropout_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (nn/mixed_precision.hpp).
  std::string dtype{};
};

namespace layer_detail {

class DropoutLayer final : public LayerBase {
 public:
  DEVTENSOR_HEADER_INLINE DropoutLayer(double rate, DropoutOptions options);
  void build(const Shape&) override {}
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  PartialShape output_shape(const PartialShape& input_shape) const override { return input_shape; }
  std::string type_name() const override { return "Dropout"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  double rate() const noexcept { return rate_; }

 private:
  double rate_;
  std::uint64_t seed_;
  std::atomic<std::int64_t> calls_{0};  // the seed of a call outside a model's step
};

class FlattenLayer final : public LayerBase {
 public:
  explicit FlattenLayer(FlattenOptions options) {
    name_ = options.name.empty() ? unique_name("flatten") : std::move(options.name);
    take_policy(options.dtype);
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
    take_policy(options.dtype);
    name_ = options.name.empty() ? unique_name("activation") : std::move(options.name);
  }
  void build(const Shape&) override {}
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  PartialShape output_shape(const PartialShape& input_shape) const override { return input_shape; }
  std::string type_name() const override { return "Activation"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  Activation activation() const noexcept { return activation_; }

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

/// Keras's Dropout: while training, each element is zeroed with probability `rate` and the others
/// are scaled by 1 / (1 - rate); otherwise the identity. In a model's training step the mask is
/// drawn from the step's seed (new every step, traced or not; each replica its own), so a traced
/// fit and an eager one drop the same elements.
class Dropout : public LayerHandle<layer_detail::DropoutLayer> {
 public:
  /// @throws InvalidArgumentError unless 0 <= rate <= 1.
  explicit Dropout(double rate, DropoutOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::DropoutLayer>(rate, std::move(options))) {}
  [[nodiscard]] double rate() const noexcept { return impl_->rate(); }
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Tensor<float> layer_detail::ActivationLayer::call(const Tensor<float>& x, bool /*training*/) {
  return in_compute_dtype([&]<class D>() { return activate(activation_, in_compute<D>(x)); });
}

DEVTENSOR_DEFINITION layer_detail::DropoutLayer::DropoutLayer(double rate, DropoutOptions options)
    : rate_(rate), seed_(options.seed ? *options.seed : next_seed()) {
  if (!(rate >= 0.0 && rate <= 1.0))
    throw InvalidArgumentError(
        "Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
        "Received: rate=" +
        number_string(rate));
  take_policy(options.dtype);
  name_ = options.name.empty() ? unique_name("dropout") : std::move(options.name);
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DropoutLayer::call(const Tensor<float>& x, bool training) {
  if (!training || rate_ == 0.0) return x;
  if (rate_ == 1.0) return mul(x, scalar<float>(0.0f));
  const StepSeed& step = current_step_seed();
  const Tensor<std::int64_t> own = step.seed ? Tensor<std::int64_t>() : scalar<std::int64_t>(calls_.fetch_add(1));
  const Tensor<std::int64_t>& seed = step.seed ? *step.seed : own;
  // Each layer and each replica its own stream.
  const std::uint64_t stream = splitmix64(seed_ ^ splitmix64(static_cast<std::uint64_t>(step.replica)));
  const Tensor<float> uniform = stateless_random_uniform<float>(x.shape(), seed, stream);
  const Tensor<float> keep = grad_ops::greater_equal(uniform, scalar<float>(static_cast<float>(rate_)));  // 1 or 0
  return in_compute_dtype([&]<class D>() {
    const auto scale = scalar<D>(static_cast<D>(static_cast<float>(1.0 / (1.0 - rate_))));
    return mul(mul(in_compute<D>(x), scale), in_compute<D>(keep));
  });
}

DEVTENSOR_DEFINITION PartialShape layer_detail::FlattenLayer::output_shape(const PartialShape& input_shape) const {
  if (input_shape.empty())
    throw InvalidArgumentError("Layer \"" + name_ +
                               "\" (Flatten) needs inputs with a batch dimension; received a scalar");
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
  return in_compute_dtype([&]<class D>() {
    const Tensor<D> in = in_compute<D>(x);
    return x.shape().dims_vector() == out ? in : reshape(in, out);
  });
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
