#pragma once
/// @file normalization.hpp
/// @brief Keras's BatchNormalization (layer.hpp says what every layer is).
///
/// Keras 3's computation, op for op, as its TensorFlow backend runs it: while training, the
/// batch's mean and (biased) variance over every axis but `axis` (tf.nn.moments), the moving
/// statistics updated as moving · momentum + batch · (1 − momentum); otherwise the moving
/// statistics; then tf.nn.batch_normalization: inv = gamma / sqrt(variance + epsilon),
/// y = x · inv + (beta − mean · inv). gamma and beta are trainable, moving_mean and
/// moving_variance are not (variables in that order, as Keras's weights files hold them). Under
/// MirroredStrategy each replica normalises by its own batch's statistics and keeps its own
/// moving statistics (mirrored variables with aggregation NONE, written in the replica), as
/// TensorFlow does; what is saved and read outside the strategy is the first replica's.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/initializers.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

struct BatchNormalizationOptions {
  /// The features' axis (the channels: -1 for channels_last, 1 for channels_first).
  std::int64_t axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;  // beta
  bool scale = true;   // gamma
  Initializer beta_initializer = initializers::Zeros{};
  Initializer gamma_initializer = initializers::Ones{};
  Initializer moving_mean_initializer = initializers::Zeros{};
  Initializer moving_variance_initializer = initializers::Ones{};
  /// One example's shape: a Sequential starting with the layer builds at once.
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "batch_normalization", "batch_normalization_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one. Under a mixed policy the layer computes
  /// in float32 and rounds its output to the 16-bit type, as Keras's.
  std::string dtype{};
};

namespace layer_detail {

class BatchNormalizationLayer final : public LayerBase {
 public:
  explicit BatchNormalizationLayer(BatchNormalizationOptions options);
  DEVTENSOR_HEADER_INLINE void build(const Shape& input_shape) override;
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "BatchNormalization"; }
  std::vector<Variable<float>> variables() const override {
    std::vector<Variable<float>> out;
    for (const auto* v : {&gamma_, &beta_, &moving_mean_, &moving_variance_})
      if (v->defined()) out.push_back(*v);
    return out;
  }
  std::optional<PartialShape> declared_input_shape() const override;
  const Variable<float>& gamma() const noexcept { return gamma_; }
  const Variable<float>& beta() const noexcept { return beta_; }
  const Variable<float>& moving_mean() const noexcept { return moving_mean_; }
  const Variable<float>& moving_variance() const noexcept { return moving_variance_; }
  const BatchNormalizationOptions& options() const noexcept { return options_; }

 private:
  BatchNormalizationOptions options_;
  std::size_t rank_ = 0;
  std::size_t axis_ = 0;  // options_.axis in [0, rank)
  std::int64_t features_ = 0;
  Variable<float> gamma_, beta_, moving_mean_, moving_variance_;

  /// options_.axis in [0, rank). @throws InvalidArgumentError with Keras's text.
  std::size_t feature_axis(const PartialShape& shape) const;
  /// A [features] tensor shaped to broadcast against the input (as Keras reshapes for axis != -1).
  Tensor<float> along_axis(const Tensor<float>& v) const;
};

}  // namespace layer_detail

/// Normalises each feature by the batch's statistics while training and by moving statistics
/// otherwise, then scales by gamma and shifts by beta (Keras's BatchNormalization).
class BatchNormalization : public LayerHandle<layer_detail::BatchNormalizationLayer> {
 public:
  explicit BatchNormalization(BatchNormalizationOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::BatchNormalizationLayer>(std::move(options))) {}
  [[nodiscard]] const Variable<float>& gamma() const noexcept { return impl_->gamma(); }
  [[nodiscard]] const Variable<float>& beta() const noexcept { return impl_->beta(); }
  [[nodiscard]] const Variable<float>& moving_mean() const noexcept { return impl_->moving_mean(); }
  [[nodiscard]] const Variable<float>& moving_variance() const noexcept { return impl_->moving_variance(); }
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION layer_detail::BatchNormalizationLayer::BatchNormalizationLayer(BatchNormalizationOptions options)
    : options_(std::move(options)) {
  name_ = options_.name.empty() ? unique_name("batch_normalization") : options_.name;
  take_policy(options_.dtype);
  if (options_.input_shape) {
    PartialShape full = *declared_input_shape();
    full[0] = 1;
    for (const std::int64_t d : full)
      if (d < 0)
        throw InvalidArgumentError("BatchNormalization \"" + name_ + "\": input_shape " +
                                   python_shape(*options_.input_shape) +
                                   " must be fully defined to build the layer at once");
    ensure_built(Shape(full));
  }
}

DEVTENSOR_DEFINITION std::optional<PartialShape> layer_detail::BatchNormalizationLayer::declared_input_shape() const {
  if (!options_.input_shape) return std::nullopt;
  PartialShape out{-1};
  out.insert(out.end(), options_.input_shape->begin(), options_.input_shape->end());
  return out;
}

DEVTENSOR_DEFINITION std::size_t layer_detail::BatchNormalizationLayer::feature_axis(const PartialShape& shape) const {
  const auto rank = static_cast<std::int64_t>(shape.size());
  if (options_.axis >= rank || options_.axis < -rank)
    throw InvalidArgumentError("Axis " + std::to_string(options_.axis) + " is out of bounds for input shape " +
                               python_shape(shape) + ". Received: axis=" + std::to_string(options_.axis));
  return static_cast<std::size_t>(options_.axis < 0 ? options_.axis + rank : options_.axis);
}

DEVTENSOR_DEFINITION void layer_detail::BatchNormalizationLayer::build(const Shape& input_shape) {
  rank_ = input_shape.rank();
  axis_ = feature_axis(input_shape.dims_vector());
  features_ = input_shape[axis_];
  const Shape shape({features_});
  const auto make = [&](const Initializer& init, std::string_view what, bool trainable) {
    if (!init)
      throw InvalidArgumentError("BatchNormalization \"" + name_ + "\": the " + std::string(what) +
                                 " initializer is empty");
    Tensor<float> value = init(shape);
    if (value.shape() != shape)
      throw InvalidArgumentError("BatchNormalization \"" + name_ + "\": the " + std::string(what) +
                                 " initializer returned shape " + value.shape().to_string() + ", expected " +
                                 shape.to_string());
    return Variable<float>(value, {.name = name_ + "/" + std::string(what), .trainable = trainable});
  };
  if (options_.scale) gamma_ = make(options_.gamma_initializer, "gamma", true);
  if (options_.center) beta_ = make(options_.beta_initializer, "beta", true);
  moving_mean_ = make(options_.moving_mean_initializer, "moving_mean", false);
  moving_variance_ = make(options_.moving_variance_initializer, "moving_variance", false);
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::BatchNormalizationLayer::along_axis(const Tensor<float>& v) const {
  if (axis_ + 1 == rank_) return v;  // broadcasts as it is
  std::vector<std::int64_t> dims(rank_, 1);
  dims[axis_] = features_;
  return reshape(v, dims);
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::BatchNormalizationLayer::call(const Tensor<float>& x, bool training) {
  if (x.rank() != rank_ || x.shape()[axis_] != features_)
    throw InvalidArgumentError("Input 0 of layer \"" + name_ + "\" is incompatible with the layer: expected ndim=" +
                               std::to_string(rank_) + " and axis " + std::to_string(options_.axis) + " of size " +
                               std::to_string(features_) + ", but received input with shape " + x.shape().to_python());
  Tensor<float> mean, variance;
  if (training && trainable_) {  // frozen: inference mode while training too, as Keras 3
    std::vector<std::int64_t> axes;
    for (std::size_t d = 0; d < rank_; ++d)
      if (d != axis_) axes.push_back(static_cast<std::int64_t>(d));
    // tf.nn.moments: the mean kept in its dimensions, the variance of the centred values.
    const Tensor<float> kept_mean = reduce_mean(x, axes, true);
    mean = reshape(kept_mean, std::vector<std::int64_t>{features_});
    variance = reshape(reduce_mean(square(sub(x, kept_mean)), axes, true), std::vector<std::int64_t>{features_});
    // Keras: moving · momentum + batch · (1 − momentum), both factors float32 as Python's floats
    // become (1 − momentum computed in double first).
    const Tensor<float> keep = scalar<float>(static_cast<float>(options_.momentum));
    const Tensor<float> take = scalar<float>(static_cast<float>(1.0 - options_.momentum));
    const Tensor<float> old_mean = moving_mean_.value(), old_variance = moving_variance_.value();
    moving_mean_.assign(add(mul(old_mean, keep), mul(mean, take)));
    moving_variance_.assign(add(mul(old_variance, keep), mul(variance, take)));
  } else {
    mean = moving_mean_.value();
    variance = moving_variance_.value();
  }
  // tf.nn.batch_normalization.
  Tensor<float> inv =
      div(scalar<float>(1.0f), sqrt(add(variance, scalar<float>(static_cast<float>(options_.epsilon)))));
  if (options_.scale) inv = mul(inv, gamma_.value());
  Tensor<float> shift = neg(mul(mean, inv));
  if (options_.center) shift = sub(beta_.value(), mul(mean, inv));
  const Tensor<float> y = add(mul(x, along_axis(inv)), along_axis(shift));
  // Keras normalises 16-bit inputs in float32 and casts the result back to the compute dtype.
  return in_compute_dtype([&]<class D>() { return in_compute<D>(y); });
}

DEVTENSOR_DEFINITION PartialShape
layer_detail::BatchNormalizationLayer::output_shape(const PartialShape& input_shape) const {
  (void)feature_axis(input_shape);
  return input_shape;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
