#pragma once
/// @file layers.hpp
/// @brief Dense, the fully connected layer (layer.hpp says what every layer is).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/matmul.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

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
  /// The layer's dtype policy ("float32", "mixed_float16", "mixed_bfloat16"); default: the
  /// global one (nn/mixed_precision.hpp).
  std::string dtype{};
};

namespace layer_detail {

class DenseLayer final : public LayerBase {
 public:
  DenseLayer(std::int64_t units, DenseOptions options);

  DEVTENSOR_HEADER_INLINE void build(const Shape& input_shape) override;

  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;

  PartialShape output_shape(const PartialShape& input_shape) const override {
    PartialShape out = input_shape;
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
  std::optional<PartialShape> declared_input_shape() const override {
    if (!options_.input_dim) return std::nullopt;
    return PartialShape{-1, *options_.input_dim};
  }

  std::int64_t units() const noexcept { return units_; }
  const DenseOptions& options() const noexcept { return options_; }
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
class Dense : public LayerHandle<layer_detail::DenseLayer> {
 public:
  explicit Dense(std::int64_t units, DenseOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::DenseLayer>(units, std::move(options))) {}

  [[nodiscard]] std::int64_t units() const noexcept { return impl_->units(); }
  /// The variables (empty handles before the layer is built).
  [[nodiscard]] const Variable<float>& kernel() const noexcept { return impl_->kernel(); }
  [[nodiscard]] const Variable<float>& bias() const noexcept { return impl_->bias(); }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION layer_detail::DenseLayer::DenseLayer(std::int64_t units, DenseOptions options)
    : units_(units), options_(std::move(options)) {
  if (units < 1)
    throw InvalidArgumentError("Received an invalid value for `units`, expected a positive integer. Received: units=" +
                               std::to_string(units));
  if (options_.input_dim && *options_.input_dim < 1)
    throw InvalidArgumentError("Dense: input_dim must be positive, got " + std::to_string(*options_.input_dim));
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name("dense") : options_.name;
  if (options_.input_dim) ensure_built(Shape({1, *options_.input_dim}));
}

// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION void layer_detail::DenseLayer::build(const Shape& input_shape) {
  if (input_shape.rank() != 2)
    throw InvalidArgumentError(
        "Input 0 of layer \"" + name_ + "\" is incompatible with the layer: expected ndim=2, found ndim=" +
        std::to_string(input_shape.rank()) + ". Full shape received: " + input_shape.to_python());
  const std::int64_t in = input_shape[1];
  const Shape kernel_shape({in, units_});
  kernel_ = Variable<float>(initial(options_.kernel_initializer, kernel_shape, "kernel"), {.name = name_ + "/kernel"});
  if (options_.use_bias)
    bias_ = Variable<float>(initial(options_.bias_initializer, Shape({units_}), "bias"), {.name = name_ + "/bias"});
  in_features_ = in;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DenseLayer::call(const Tensor<float>& x, bool /*training*/) {
  if (x.rank() != 2 || x.shape()[1] != in_features_)
    throw InvalidArgumentError("Input 0 of layer \"" + name_ +
                               "\" is incompatible with the layer: expected axis -1 "
                               "of input shape to have value " +
                               std::to_string(in_features_) + ", but received input with shape " +
                               x.shape().to_python());
  return in_compute_dtype([&]<class D>() {
    Tensor<D> y = matmul(in_compute<D>(x), in_compute<D>(kernel_.value()));
    if (options_.use_bias) y = add(y, in_compute<D>(bias_.value()));
    return activate(options_.activation, y);
  });
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DenseLayer::initial(const Initializer& init, const Shape& shape,
                                                                     std::string_view what) const {
  if (!init) throw InvalidArgumentError("Dense \"" + name_ + "\": the " + std::string(what) + " initializer is empty");
  Tensor<float> value = init(shape);
  if (value.shape() != shape)
    throw InvalidArgumentError("Dense \"" + name_ + "\": the " + std::string(what) + " initializer returned shape " +
                               value.shape().to_string() + ", expected " + shape.to_string());
  return value;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
