#pragma once
/// @file conv_layers.hpp
/// @brief Keras's convolution and pooling layers: Conv2D, DepthwiseConv2D, MaxPooling2D,
/// AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D (layer.hpp says what every layer is).
///
/// Keras's arguments and defaults: `padding` "valid" or "same" (lower case), `strides` and
/// `kernel_size` an int or 2 ints, `data_format` "channels_last" (NHWC) or "channels_first"
/// (NCHW); kernels HWIO, initialised Glorot-uniform over the receptive field as Keras's.

#include <array>
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
#include "devtensor/ops/conv.hpp"
#include "devtensor/ops/depthwise_conv.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

struct Conv2DOptions {
  SpatialInts strides = 1;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  SpatialInts dilation_rate = 1;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer kernel_initializer = initializers::GlorotUniform{};
  Initializer bias_initializer = initializers::Zeros{};
  /// One example's shape (Keras's `input_shape=(28, 28, 1)`): a Sequential starting with the
  /// layer builds at once.
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "conv2d", "conv2d_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (nn/mixed_precision.hpp).
  std::string dtype{};
};

/// Keras's DepthwiseConv2D arguments: kernels [rows, cols, in_channels, depth_multiplier].
struct DepthwiseConv2DOptions {
  SpatialInts strides = 1;
  std::string padding = "valid";
  std::int64_t depth_multiplier = 1;
  std::string data_format = "channels_last";
  SpatialInts dilation_rate = 1;
  Activation activation = Activation::linear;
  bool use_bias = true;
  Initializer depthwise_initializer = initializers::GlorotUniform{};
  Initializer bias_initializer = initializers::Zeros{};
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "depthwise_conv2d", "depthwise_conv2d_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (nn/mixed_precision.hpp).
  std::string dtype{};
};

/// MaxPooling2D's and AveragePooling2D's: `strides` default to the pool size.
struct Pooling2DOptions {
  std::optional<SpatialInts> strides = std::nullopt;
  std::string padding = "valid";
  std::string data_format = "channels_last";
  std::optional<PartialShape> input_shape = std::nullopt;
  std::string name{};
  std::string dtype{};  // the dtype policy (default: the global one)
};

struct GlobalPooling2DOptions {
  std::string data_format = "channels_last";
  bool keepdims = false;
  std::optional<PartialShape> input_shape = std::nullopt;
  std::string name{};
  std::string dtype{};  // the dtype policy (default: the global one)
};

namespace layer_detail {

/// Keras's checks of the arguments every 2-D window layer shares: a pair of positive ints, a
/// padding, a data format. @throws InvalidArgumentError with Keras's texts.
std::array<std::int64_t, 2> positive_pair(const SpatialInts& v, std::string_view argument);
std::string conv_padding(const std::string& padding);
bool channels_first(const std::string& data_format);
/// @throws InvalidArgumentError unless `shape` has rank 4 (Keras's input spec).
void expect_rank4(const std::string& layer, const PartialShape& shape, bool min);
/// One example's declared shape with the batch dimension (-1) in front.
std::optional<PartialShape> with_batch(const std::optional<PartialShape>& shape);
/// @throws InvalidArgumentError (Keras's text) unless x is 4-D with `in_channels` channels.
void expect_channels(const std::string& layer, const Shape& x, bool channels_first, std::int64_t in_channels);
/// The window of a convolution layer's arguments (checked at construction).
ops::Window2D keras_window(const SpatialInts& strides, const SpatialInts& dilation_rate, const std::string& padding);
/// A 4-D shape in either format as NHWC (unknown dimensions kept).
Shape nhwc_of(const PartialShape& shape, bool channels_first);

class Conv2DLayer final : public LayerBase {
 public:
  Conv2DLayer(std::int64_t filters, const SpatialInts& kernel_size, Conv2DOptions options);
  DEVTENSOR_HEADER_INLINE void build(const Shape& input_shape) override;
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "Conv2D"; }
  std::vector<Variable<float>> variables() const override {
    std::vector<Variable<float>> out;
    if (kernel_.defined()) out.push_back(kernel_);
    if (bias_.defined()) out.push_back(bias_);
    return out;
  }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  const Variable<float>& kernel() const noexcept { return kernel_; }
  const Variable<float>& bias() const noexcept { return bias_; }
  std::int64_t filters() const noexcept { return filters_; }
  const std::array<std::int64_t, 2>& kernel_size() const noexcept { return kernel_size_; }
  const Conv2DOptions& options() const noexcept { return options_; }

 private:
  std::int64_t filters_;
  std::array<std::int64_t, 2> kernel_size_;
  Conv2DOptions options_;
  bool channels_first_ = false;
  std::int64_t in_channels_ = 0;
  Variable<float> kernel_;
  Variable<float> bias_;
};

/// A weight's first value from its initializer. @throws InvalidArgumentError for an empty
/// initializer or one that returns another shape.
Tensor<float> initial_weight(const Initializer& init, const Shape& shape, const std::string& layer,
                             const std::string& name, std::string_view what);

class DepthwiseConv2DLayer final : public LayerBase {
 public:
  DepthwiseConv2DLayer(const SpatialInts& kernel_size, DepthwiseConv2DOptions options);
  DEVTENSOR_HEADER_INLINE void build(const Shape& input_shape) override;
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "DepthwiseConv2D"; }
  std::vector<Variable<float>> variables() const override {
    std::vector<Variable<float>> out;
    if (kernel_.defined()) out.push_back(kernel_);
    if (bias_.defined()) out.push_back(bias_);
    return out;
  }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  const Variable<float>& kernel() const noexcept { return kernel_; }
  const Variable<float>& bias() const noexcept { return bias_; }
  const std::array<std::int64_t, 2>& kernel_size() const noexcept { return kernel_size_; }
  const DepthwiseConv2DOptions& options() const noexcept { return options_; }

 private:
  std::array<std::int64_t, 2> kernel_size_;
  DepthwiseConv2DOptions options_;
  bool channels_first_ = false;
  std::int64_t in_channels_ = 0;
  Variable<float> kernel_;
  Variable<float> bias_;
};

/// MaxPooling2D (`max`) or AveragePooling2D.
class Pooling2DLayer final : public LayerBase {
 public:
  Pooling2DLayer(bool max, const SpatialInts& pool_size, Pooling2DOptions options);
  void build(const Shape& input_shape) override { expect_rank4(name_, input_shape.dims_vector(), false); }
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return max_ ? "MaxPooling2D" : "AveragePooling2D"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  const std::array<std::int64_t, 2>& pool_size() const noexcept { return pool_size_; }
  const std::array<std::int64_t, 2>& strides() const noexcept { return strides_; }
  const Pooling2DOptions& options() const noexcept { return options_; }

 private:
  bool max_;
  std::array<std::int64_t, 2> pool_size_, strides_;
  Pooling2DOptions options_;
  bool channels_first_ = false;
};

/// GlobalAveragePooling2D (`max` false) or GlobalMaxPooling2D: over rows and columns.
class GlobalPooling2DLayer final : public LayerBase {
 public:
  GlobalPooling2DLayer(bool max, GlobalPooling2DOptions options);
  void build(const Shape& input_shape) override { expect_rank4(name_, input_shape.dims_vector(), false); }
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return max_ ? "GlobalMaxPooling2D" : "GlobalAveragePooling2D"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  const GlobalPooling2DOptions& options() const noexcept { return options_; }

 private:
  bool max_;
  GlobalPooling2DOptions options_;
  bool channels_first_ = false;
};

}  // namespace layer_detail

/// A 2-D convolution layer: activation(conv2d(x, kernel) + bias), kernel [kh, kw, in, filters].
class Conv2D : public LayerHandle<layer_detail::Conv2DLayer> {
 public:
  /// @throws InvalidArgumentError for filters < 1, a kernel size that is not 1 or 2 positive
  /// ints, a padding other than "valid"/"same", an unknown data format (Keras's texts).
  Conv2D(std::int64_t filters, const SpatialInts& kernel_size, Conv2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::Conv2DLayer>(filters, kernel_size, std::move(options))) {}
  [[nodiscard]] const Variable<float>& kernel() const noexcept { return impl_->kernel(); }
  [[nodiscard]] const Variable<float>& bias() const noexcept { return impl_->bias(); }
};

/// A depthwise 2-D convolution layer: each input channel convolved with its own
/// depth_multiplier kernels, activation(depthwise_conv2d(x, kernel) + bias).
class DepthwiseConv2D : public LayerHandle<layer_detail::DepthwiseConv2DLayer> {
 public:
  /// @throws InvalidArgumentError for a depth_multiplier < 1, a kernel size that is not 1 or 2
  /// positive ints, a padding other than "valid"/"same", an unknown data format (Keras's texts).
  explicit DepthwiseConv2D(const SpatialInts& kernel_size, DepthwiseConv2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::DepthwiseConv2DLayer>(kernel_size, std::move(options))) {}
  [[nodiscard]] const Variable<float>& kernel() const noexcept { return impl_->kernel(); }
  [[nodiscard]] const Variable<float>& bias() const noexcept { return impl_->bias(); }
};

/// The maximum over each pool_size window (Keras's default 2x2, strides the pool size).
class MaxPooling2D : public LayerHandle<layer_detail::Pooling2DLayer> {
 public:
  explicit MaxPooling2D(const SpatialInts& pool_size = 2, Pooling2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::Pooling2DLayer>(true, pool_size, std::move(options))) {}
};
/// The mean over each pool_size window (padding not counted).
class AveragePooling2D : public LayerHandle<layer_detail::Pooling2DLayer> {
 public:
  explicit AveragePooling2D(const SpatialInts& pool_size = 2, Pooling2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::Pooling2DLayer>(false, pool_size, std::move(options))) {}
};
/// The mean over rows and columns: [batch, rows, cols, channels] to [batch, channels].
class GlobalAveragePooling2D : public LayerHandle<layer_detail::GlobalPooling2DLayer> {
 public:
  explicit GlobalAveragePooling2D(GlobalPooling2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::GlobalPooling2DLayer>(false, std::move(options))) {}
};
/// The maximum over rows and columns.
class GlobalMaxPooling2D : public LayerHandle<layer_detail::GlobalPooling2DLayer> {
 public:
  explicit GlobalMaxPooling2D(GlobalPooling2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::GlobalPooling2DLayer>(true, std::move(options))) {}
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::array<std::int64_t, 2> layer_detail::positive_pair(const SpatialInts& v,
                                                                             std::string_view argument) {
  const auto& x = v.values();
  const auto printed = [&] {
    if (x.size() == 1) return std::to_string(x[0]);
    std::string s = "(";
    for (std::size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + std::to_string(x[i]);
    return s + ")";
  };
  if (x.size() != 1 && x.size() != 2)
    throw InvalidArgumentError("The `" + std::string(argument) + "` argument must be a tuple of 2 integers. Received " +
                               std::string(argument) + "=" + printed());
  for (const std::int64_t e : x)
    if (e < 1)
      throw InvalidArgumentError("The `" + std::string(argument) +
                                 "` argument must be a tuple of 2 integers. Received " + std::string(argument) + "=" +
                                 printed() + ", including values {" + std::to_string(e) +
                                 "} that do not satisfy `value > 0`");
  return x.size() == 1 ? std::array<std::int64_t, 2>{x[0], x[0]} : std::array<std::int64_t, 2>{x[0], x[1]};
}

DEVTENSOR_DEFINITION std::string layer_detail::conv_padding(const std::string& padding) {
  if (padding == "valid") return "VALID";
  if (padding == "same") return "SAME";
  throw InvalidArgumentError("The `padding` argument must be a list/tuple or one of {'same', 'valid'}. Received: " +
                             padding);
}

DEVTENSOR_DEFINITION bool layer_detail::channels_first(const std::string& data_format) {
  if (data_format == "channels_last") return false;
  if (data_format == "channels_first") return true;
  throw InvalidArgumentError(
      "The `data_format` argument must be one of {'channels_first', 'channels_last'}. Received: "
      "data_format=" +
      data_format);
}

DEVTENSOR_DEFINITION void layer_detail::expect_rank4(const std::string& layer, const PartialShape& shape, bool min) {
  if (min ? shape.size() >= 4 : shape.size() == 4) return;
  throw InvalidArgumentError("Input 0 of layer \"" + layer + "\" is incompatible with the layer: expected " +
                             (min ? "min_ndim" : "ndim") + "=4, found ndim=" + std::to_string(shape.size()) +
                             ". Full shape received: " + python_shape(shape));
}

DEVTENSOR_DEFINITION std::optional<PartialShape> layer_detail::with_batch(const std::optional<PartialShape>& shape) {
  if (!shape) return std::nullopt;
  PartialShape out{-1};
  out.insert(out.end(), shape->begin(), shape->end());
  return out;
}

DEVTENSOR_DEFINITION void layer_detail::expect_channels(const std::string& layer, const Shape& x, bool channels_first,
                                                        std::int64_t in_channels) {
  expect_rank4(layer, x.dims_vector(), true);
  if (x[channels_first ? 1 : 3] != in_channels)
    throw InvalidArgumentError("Input 0 of layer \"" + layer + "\" is incompatible with the layer: expected axis " +
                               (channels_first ? "1" : "-1") + " of input shape to have value " +
                               std::to_string(in_channels) + ", but received input with shape " + x.to_python());
}

DEVTENSOR_DEFINITION ops::Window2D layer_detail::keras_window(const SpatialInts& strides,
                                                              const SpatialInts& dilation_rate,
                                                              const std::string& padding) {
  ops::Window2D window;
  window.strides = positive_pair(strides, "strides");
  window.dilations = positive_pair(dilation_rate, "dilation_rate");
  window.padding = padding == "same" ? ops::PaddingKind::same : ops::PaddingKind::valid;
  return window;
}

DEVTENSOR_DEFINITION Shape layer_detail::nhwc_of(const PartialShape& shape, bool channels_first) {
  const std::size_t rows = channels_first ? 2 : 1;
  return Shape::partial({shape[0], shape[rows], shape[rows + 1], shape[channels_first ? 1 : 3]});
}

DEVTENSOR_DEFINITION layer_detail::Conv2DLayer::Conv2DLayer(std::int64_t filters, const SpatialInts& kernel_size,
                                                            Conv2DOptions options)
    : filters_(filters), kernel_size_(positive_pair(kernel_size, "kernel_size")), options_(std::move(options)) {
  if (filters < 1)
    throw InvalidArgumentError(
        "Invalid value for argument `filters`. Expected a strictly positive value. Received "
        "filters=" +
        std::to_string(filters) + ".");
  (void)positive_pair(options_.strides, "strides");
  (void)positive_pair(options_.dilation_rate, "dilation_rate");
  (void)conv_padding(options_.padding);
  channels_first_ = channels_first(options_.data_format);
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name("conv2d") : options_.name;
  if (options_.input_shape) {
    PartialShape full = *with_batch(options_.input_shape);
    expect_rank4(name_, full, false);
    full[0] = 1;
    ensure_built(Shape(full));
  }
}

DEVTENSOR_DEFINITION void layer_detail::Conv2DLayer::build(const Shape& input_shape) {
  expect_rank4(name_, input_shape.dims_vector(), true);
  in_channels_ = input_shape[channels_first_ ? 1 : 3];
  const Shape kernel_shape({kernel_size_[0], kernel_size_[1], in_channels_, filters_});
  kernel_ = Variable<float>(initial_weight(options_.kernel_initializer, kernel_shape, type_name(), name_, "kernel"),
                            {.name = name_ + "/kernel"});
  if (options_.use_bias)
    bias_ = Variable<float>(initial_weight(options_.bias_initializer, Shape({filters_}), type_name(), name_, "bias"),
                            {.name = name_ + "/bias"});
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::initial_weight(const Initializer& init, const Shape& shape,
                                                                const std::string& layer, const std::string& name,
                                                                std::string_view what) {
  if (!init)
    throw InvalidArgumentError(layer + " \"" + name + "\": the " + std::string(what) + " initializer is empty");
  Tensor<float> value = init(shape);
  if (value.shape() != shape)
    throw InvalidArgumentError(layer + " \"" + name + "\": the " + std::string(what) + " initializer returned shape " +
                               value.shape().to_string() + ", expected " + shape.to_string());
  return value;
}

DEVTENSOR_DEFINITION layer_detail::DepthwiseConv2DLayer::DepthwiseConv2DLayer(const SpatialInts& kernel_size,
                                                                              DepthwiseConv2DOptions options)
    : kernel_size_(positive_pair(kernel_size, "kernel_size")), options_(std::move(options)) {
  if (options_.depth_multiplier < 1)
    throw InvalidArgumentError(
        "Invalid value for argument `depth_multiplier`. Expected a strictly positive value. "
        "Received depth_multiplier=" +
        std::to_string(options_.depth_multiplier) + ".");
  (void)positive_pair(options_.strides, "strides");
  (void)positive_pair(options_.dilation_rate, "dilation_rate");
  (void)conv_padding(options_.padding);
  channels_first_ = channels_first(options_.data_format);
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name("depthwise_conv2d") : options_.name;
  if (options_.input_shape) {
    PartialShape full = *with_batch(options_.input_shape);
    expect_rank4(name_, full, false);
    full[0] = 1;
    ensure_built(Shape(full));
  }
}

DEVTENSOR_DEFINITION void layer_detail::DepthwiseConv2DLayer::build(const Shape& input_shape) {
  expect_rank4(name_, input_shape.dims_vector(), true);
  in_channels_ = input_shape[channels_first_ ? 1 : 3];
  (void)output_shape(input_shape.dims_vector());  // Keras checks the window fits
  const Shape kernel_shape({kernel_size_[0], kernel_size_[1], in_channels_, options_.depth_multiplier});
  kernel_ = Variable<float>(initial_weight(options_.depthwise_initializer, kernel_shape, type_name(), name_, "kernel"),
                            {.name = name_ + "/kernel"});
  if (options_.use_bias)
    bias_ = Variable<float>(initial_weight(options_.bias_initializer, Shape({in_channels_ * options_.depth_multiplier}),
                                           type_name(), name_, "bias"),
                            {.name = name_ + "/bias"});
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::DepthwiseConv2DLayer::call(const Tensor<float>& x, bool /*training*/) {
  expect_channels(name_, x.shape(), channels_first_, in_channels_);
  const std::string_view format = channels_first_ ? "NCHW" : "NHWC";
  return in_compute_dtype([&]<class D>() {
    Tensor<D> y =
        depthwise_conv2d(in_compute<D>(x), in_compute<D>(kernel_.value()), options_.strides,
                         conv_padding(options_.padding), {.data_format = format, .dilations = options_.dilation_rate});
    if (options_.use_bias) y = bias_add(y, in_compute<D>(bias_.value()), {.data_format = format});
    return activate(options_.activation, y);
  });
}

DEVTENSOR_DEFINITION PartialShape
layer_detail::DepthwiseConv2DLayer::output_shape(const PartialShape& input_shape) const {
  expect_rank4(name_, input_shape, true);
  const ops::Window2D window = keras_window(options_.strides, options_.dilation_rate, options_.padding);
  const std::int64_t depth = input_shape[channels_first_ ? 1 : 3];
  const Shape in = nhwc_of(input_shape, channels_first_);
  // Keras's own check of the window (compute_conv_output_shape): equal strides are not required.
  const ops::WindowGeometry g = ops::window_geometry(window, in, kernel_size_[0], kernel_size_[1], "DepthwiseConv2D");
  const std::int64_t out_depth = depth >= 0 ? depth * options_.depth_multiplier : -1;
  if (channels_first_) return {input_shape[0], out_depth, g.out_rows, g.out_cols};
  return {input_shape[0], g.out_rows, g.out_cols, out_depth};
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::Conv2DLayer::call(const Tensor<float>& x, bool /*training*/) {
  expect_channels(name_, x.shape(), channels_first_, in_channels_);
  const std::string_view format = channels_first_ ? "NCHW" : "NHWC";
  return in_compute_dtype([&]<class D>() {
    Tensor<D> y = conv2d(in_compute<D>(x), in_compute<D>(kernel_.value()), options_.strides,
                         conv_padding(options_.padding), {.data_format = format, .dilations = options_.dilation_rate});
    if (options_.use_bias) y = bias_add(y, in_compute<D>(bias_.value()), {.data_format = format});
    return activate(options_.activation, y);
  });
}

DEVTENSOR_DEFINITION PartialShape layer_detail::Conv2DLayer::output_shape(const PartialShape& input_shape) const {
  expect_rank4(name_, input_shape, true);
  const ops::Window2D window = keras_window(options_.strides, options_.dilation_rate, options_.padding);
  const std::int64_t depth = input_shape[channels_first_ ? 1 : 3];
  const Shape in = nhwc_of(input_shape, channels_first_);
  const Shape filter = Shape::partial({kernel_size_[0], kernel_size_[1], depth, filters_});
  const ops::WindowGeometry g = ops::conv_geometry(window, in, filter, "Conv2D");
  if (channels_first_) return {input_shape[0], filters_, g.out_rows, g.out_cols};
  return {input_shape[0], g.out_rows, g.out_cols, filters_};
}

DEVTENSOR_DEFINITION layer_detail::Pooling2DLayer::Pooling2DLayer(bool max, const SpatialInts& pool_size,
                                                                  Pooling2DOptions options)
    : max_(max), pool_size_(positive_pair(pool_size, "pool_size")), options_(std::move(options)) {
  strides_ = options_.strides ? positive_pair(*options_.strides, "strides") : pool_size_;
  (void)conv_padding(options_.padding);
  channels_first_ = channels_first(options_.data_format);
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name(max ? "max_pooling2d" : "average_pooling2d") : options_.name;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::Pooling2DLayer::call(const Tensor<float>& x, bool /*training*/) {
  expect_rank4(name_, x.shape().dims_vector(), false);
  const PoolOptions pool{.data_format = channels_first_ ? "NCHW" : "NHWC"};
  const SpatialInts size{pool_size_[0], pool_size_[1]}, strides{strides_[0], strides_[1]};
  const Padding padding = conv_padding(options_.padding);
  return in_compute_dtype([&]<class D>() {
    const Tensor<D> in = in_compute<D>(x);
    return max_ ? max_pool2d(in, size, strides, padding, pool) : avg_pool2d(in, size, strides, padding, pool);
  });
}

DEVTENSOR_DEFINITION PartialShape layer_detail::Pooling2DLayer::output_shape(const PartialShape& input_shape) const {
  expect_rank4(name_, input_shape, false);
  ops::PoolAttrs attrs{pool_size_, {}};
  attrs.window.strides = strides_;
  attrs.window.padding = options_.padding == "same" ? ops::PaddingKind::same : ops::PaddingKind::valid;
  const std::size_t rows = channels_first_ ? 2 : 1, channels = channels_first_ ? 1 : 3;
  const Shape in = Shape::partial({input_shape[0], input_shape[rows], input_shape[rows + 1], input_shape[channels]});
  const ops::WindowGeometry g = ops::pool_geometry(attrs, in, type_name());
  if (channels_first_) return {input_shape[0], input_shape[1], g.out_rows, g.out_cols};
  return {input_shape[0], g.out_rows, g.out_cols, input_shape[3]};
}

DEVTENSOR_DEFINITION layer_detail::GlobalPooling2DLayer::GlobalPooling2DLayer(bool max, GlobalPooling2DOptions options)
    : max_(max), options_(std::move(options)) {
  channels_first_ = channels_first(options_.data_format);
  take_policy(options_.dtype);
  name_ =
      options_.name.empty() ? unique_name(max ? "global_max_pooling2d" : "global_average_pooling2d") : options_.name;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::GlobalPooling2DLayer::call(const Tensor<float>& x, bool /*training*/) {
  expect_rank4(name_, x.shape().dims_vector(), false);
  const std::vector<std::int64_t> axes =
      channels_first_ ? std::vector<std::int64_t>{2, 3} : std::vector<std::int64_t>{1, 2};
  return in_compute_dtype([&]<class D>() {
    const Tensor<D> in = in_compute<D>(x);
    return max_ ? reduce_max(in, axes, options_.keepdims) : reduce_mean(in, axes, options_.keepdims);
  });
}

DEVTENSOR_DEFINITION PartialShape
layer_detail::GlobalPooling2DLayer::output_shape(const PartialShape& input_shape) const {
  expect_rank4(name_, input_shape, false);
  const std::int64_t channels = input_shape[channels_first_ ? 1 : 3];
  if (!options_.keepdims) return {input_shape[0], channels};
  return channels_first_ ? PartialShape{input_shape[0], channels, 1, 1} : PartialShape{input_shape[0], 1, 1, channels};
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
