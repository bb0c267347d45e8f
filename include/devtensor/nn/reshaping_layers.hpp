#pragma once
/// @file reshaping_layers.hpp
/// @brief Keras's layers that rearrange or rescale without variables: Reshape, ZeroPadding2D and
/// Rescaling (layer.hpp says what every layer is), with Keras's arguments, defaults and texts.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/conv_layers.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

struct ReshapeOptions {
  /// One example's shape (Keras's `input_shape=`): a Sequential starting with the layer builds.
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "reshape", "reshape_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (under a mixed one its output is rounded
  /// to the 16-bit type, as Keras casts a layer's inputs to its compute dtype).
  std::string dtype{};
};

/// ZeroPadding2D's `padding`: an int (every side), 2 ints (rows, columns: both sides alike) or two
/// (before, after) pairs (top/bottom, left/right), as Keras takes them.
class Padding2D {
 public:
  /// @throws InvalidArgumentError for a negative value.
  DEVTENSOR_HEADER_INLINE Padding2D(std::int64_t all);  // NOLINT: padding=1
  /// @throws InvalidArgumentError for other than 2 values or a negative one (Keras's texts).
  DEVTENSOR_HEADER_INLINE Padding2D(std::initializer_list<std::int64_t> rows_cols);
  /// @throws InvalidArgumentError for other than 2 pairs or a negative value (Keras's texts).
  DEVTENSOR_HEADER_INLINE Padding2D(std::initializer_list<std::pair<std::int64_t, std::int64_t>> sides);
  /// top, bottom, left, right.
  [[nodiscard]] const std::array<std::int64_t, 4>& sides() const noexcept { return sides_; }

 private:
  std::array<std::int64_t, 4> sides_{};
  std::string text_;  // as Python prints the argument
};

struct ZeroPadding2DOptions {
  std::string data_format = "channels_last";
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "zero_padding2d", "zero_padding2d_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (under a mixed one its output is rounded
  /// to the 16-bit type, as Keras casts a layer's inputs to its compute dtype).
  std::string dtype{};
};

struct RescalingOptions {
  double offset = 0.0;
  std::optional<PartialShape> input_shape = std::nullopt;
  /// Default: "rescaling", "rescaling_1", ...
  std::string name{};
  /// The layer's dtype policy; default: the global one (under a mixed one its output is rounded
  /// to the 16-bit type, as Keras casts a layer's inputs to its compute dtype).
  std::string dtype{};
};

namespace layer_detail {

class ReshapeLayer final : public LayerBase {
 public:
  DEVTENSOR_HEADER_INLINE ReshapeLayer(PartialShape target_shape, ReshapeOptions options);
  void build(const Shape& input_shape) override { (void)output_shape(input_shape.dims_vector()); }
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "Reshape"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  const PartialShape& target_shape() const noexcept { return target_; }

 private:
  PartialShape target_;
  ReshapeOptions options_;
};

class ZeroPadding2DLayer final : public LayerBase {
 public:
  DEVTENSOR_HEADER_INLINE ZeroPadding2DLayer(const Padding2D& padding, ZeroPadding2DOptions options);
  void build(const Shape& input_shape) override { expect_rank4(name_, input_shape.dims_vector(), false); }
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  std::string type_name() const override { return "ZeroPadding2D"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  /// top, bottom, left, right.
  const std::array<std::int64_t, 4>& sides() const noexcept { return sides_; }
  const ZeroPadding2DOptions& options() const noexcept { return options_; }

 private:
  std::array<std::int64_t, 4> sides_;
  ZeroPadding2DOptions options_;
  bool channels_first_ = false;
};

class RescalingLayer final : public LayerBase {
 public:
  RescalingLayer(double scale, RescalingOptions options) : scale_(scale), options_(std::move(options)) {
    take_policy(options_.dtype);
    name_ = options_.name.empty() ? unique_name("rescaling") : options_.name;
  }
  void build(const Shape&) override {}
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  PartialShape output_shape(const PartialShape& input_shape) const override { return input_shape; }
  std::string type_name() const override { return "Rescaling"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  std::optional<PartialShape> declared_input_shape() const override { return with_batch(options_.input_shape); }
  double scale() const noexcept { return scale_; }
  const RescalingOptions& options() const noexcept { return options_; }

 private:
  double scale_;
  RescalingOptions options_;
};

}  // namespace layer_detail

/// Each example reshaped to `target_shape` (the batch dimension kept); one dimension may be -1,
/// inferred from the others. @throws InvalidArgumentError for a dimension below -1 or two -1s at
/// construction, and for a target of another size when the input's shape is known (Keras's texts).
class Reshape : public LayerHandle<layer_detail::ReshapeLayer> {
 public:
  explicit Reshape(PartialShape target_shape, ReshapeOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::ReshapeLayer>(std::move(target_shape), std::move(options))) {}
};

/// Zeros added around the rows and columns of NHWC (or, channels_first, NCHW) images.
class ZeroPadding2D : public LayerHandle<layer_detail::ZeroPadding2DLayer> {
 public:
  explicit ZeroPadding2D(const Padding2D& padding = 1, ZeroPadding2DOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::ZeroPadding2DLayer>(padding, std::move(options))) {}
};

/// x · scale + offset (Keras's preprocessing layer: `Rescaling(1.0 / 255)` for pixels).
class Rescaling : public LayerHandle<layer_detail::RescalingLayer> {
 public:
  explicit Rescaling(double scale, RescalingOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::RescalingLayer>(scale, std::move(options))) {}
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

// Keras: inputs, scale and offset cast to the compute dtype, x · scale + offset computed there.
DEVTENSOR_DEFINITION Tensor<float> layer_detail::RescalingLayer::call(const Tensor<float>& x, bool /*training*/) {
  return in_compute_dtype([&]<class D>() {
    const auto scaled = mul(in_compute<D>(x), scalar<D>(D(static_cast<float>(scale_))));
    return options_.offset == 0.0 ? scaled : add(scaled, scalar<D>(D(static_cast<float>(options_.offset))));
  });
}

namespace layer_detail {
/// "(a, b)" or "a": how Python prints an int or a tuple of ints.
inline std::string python_ints(std::span<const std::int64_t> values, bool tuple) {
  if (!tuple) return std::to_string(values.front());
  std::string s = "(";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}
/// Keras's text for a negative entry of `padding`.
[[noreturn]] inline void throw_negative_padding(std::string_view what, const std::string& received,
                                                std::int64_t value) {
  throw InvalidArgumentError("The `" + std::string(what) + "` argument must be a tuple of 2 integers. Received " +
                             std::string(what) + "=" + received + ", including values {" + std::to_string(value) +
                             "} that do not satisfy `value >= 0`");
}
inline const char* ordinal(std::size_t i) { return i == 0 ? "1st entry of padding" : "2nd entry of padding"; }
}  // namespace layer_detail

// Keras accepts a negative int (its int path skips the check) and fails later in the pad; here the
// layer refuses it at once with the tuple path's text.
DEVTENSOR_DEFINITION Padding2D::Padding2D(std::int64_t all) : sides_{all, all, all, all}, text_(std::to_string(all)) {
  if (all < 0) layer_detail::throw_negative_padding("padding", text_, all);
}

DEVTENSOR_DEFINITION Padding2D::Padding2D(std::initializer_list<std::int64_t> rows_cols) {
  const std::vector<std::int64_t> v(rows_cols);
  text_ = layer_detail::python_ints(v, true);
  if (v.size() != 2) throw InvalidArgumentError("`padding` should have two elements. Received: padding=" + text_ + ".");
  for (std::size_t i = 0; i < 2; ++i)
    if (v[i] < 0) layer_detail::throw_negative_padding(layer_detail::ordinal(i), std::to_string(v[i]), v[i]);
  sides_ = {v[0], v[0], v[1], v[1]};
}

DEVTENSOR_DEFINITION Padding2D::Padding2D(std::initializer_list<std::pair<std::int64_t, std::int64_t>> sides) {
  const std::vector<std::pair<std::int64_t, std::int64_t>> v(sides);
  text_ = "(";
  for (std::size_t i = 0; i < v.size(); ++i)
    text_ += (i ? ", (" : "(") + std::to_string(v[i].first) + ", " + std::to_string(v[i].second) + ")";
  text_ += ")";
  if (v.size() != 2) throw InvalidArgumentError("`padding` should have two elements. Received: padding=" + text_ + ".");
  for (std::size_t i = 0; i < 2; ++i) {
    const auto [before, after] = v[i];
    const std::string pair = "(" + std::to_string(before) + ", " + std::to_string(after) + ")";
    if (before < 0) layer_detail::throw_negative_padding(layer_detail::ordinal(i), pair, before);
    if (after < 0) layer_detail::throw_negative_padding(layer_detail::ordinal(i), pair, after);
  }
  sides_ = {v[0].first, v[0].second, v[1].first, v[1].second};
}

DEVTENSOR_DEFINITION layer_detail::ReshapeLayer::ReshapeLayer(PartialShape target_shape, ReshapeOptions options)
    : target_(std::move(target_shape)), options_(std::move(options)) {
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name("reshape") : options_.name;
  int unknown = 0;
  for (const std::int64_t d : target_) {
    if (d < -1)
      throw InvalidArgumentError(
          "Each dimension in `target_shape` must be a non-negative integer, or `-1` for a single "
          "unknown dimension. Received: target_shape=" +
          python_ints(target_, true) + ".");
    unknown += d == -1;
  }
  if (unknown > 1)
    throw InvalidArgumentError(
        "There must be at most one unknown dimension (-1) in `target_shape`. Received: "
        "target_shape=" +
        python_ints(target_, true) + ".");
}

DEVTENSOR_DEFINITION PartialShape layer_detail::ReshapeLayer::output_shape(const PartialShape& input_shape) const {
  if (input_shape.empty())
    throw InvalidArgumentError("Layer \"" + name_ +
                               "\" (Reshape) needs inputs with a batch dimension; received a scalar");
  PartialShape out{input_shape[0]};
  out.insert(out.end(), target_.begin(), target_.end());
  std::int64_t size = 1;
  for (std::size_t d = 1; d < input_shape.size(); ++d) {
    if (input_shape[d] < 0) return out;  // an unknown dimension: the -1 stays unknown, as Keras's
    size *= input_shape[d];
  }
  std::int64_t known = 1;
  std::size_t inferred = 0;
  for (std::size_t d = 0; d < target_.size(); ++d) {
    if (target_[d] == -1)
      inferred = d + 1;
    else
      known *= target_[d];
  }
  const PartialShape example(input_shape.begin() + 1, input_shape.end());
  const std::string received =
      "Received: input_shape=" + python_ints(example, true) + ", target_shape=" + python_ints(target_, true);
  if (inferred == 0) {
    if (known != size) throw InvalidArgumentError("The total size of the tensor must be unchanged. " + received);
  } else if (known == 0 || size % known != 0) {
    throw InvalidArgumentError(
        "The total size of the tensor must be unchanged, however, the input size cannot by "
        "divided by the specified dimensions in target_shape. " +
        received);
  } else {
    out[inferred] = size / known;
  }
  return out;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::ReshapeLayer::call(const Tensor<float>& x, bool /*training*/) {
  PartialShape dims = output_shape(x.shape().dims_vector());
  int unknown = 0;
  for (const std::int64_t d : dims) unknown += d < 0;
  if (unknown > 1)
    throw UnimplementedError("Layer \"" + name_ + "\" (Reshape): a target with -1 over an input of unknown " +
                             "dimensions besides the batch, " + python_shape(x.shape().dims_vector()) +
                             ", is not supported; give the input's shape");
  return in_compute_dtype([&]<class D>() { return reshape(in_compute<D>(x), dims); });
}

DEVTENSOR_DEFINITION layer_detail::ZeroPadding2DLayer::ZeroPadding2DLayer(const Padding2D& padding,
                                                                          ZeroPadding2DOptions options)
    : sides_(padding.sides()), options_(std::move(options)) {
  channels_first_ = channels_first(options_.data_format);
  take_policy(options_.dtype);
  name_ = options_.name.empty() ? unique_name("zero_padding2d") : options_.name;
}

DEVTENSOR_DEFINITION Tensor<float> layer_detail::ZeroPadding2DLayer::call(const Tensor<float>& x, bool /*training*/) {
  expect_rank4(name_, x.shape().dims_vector(), false);
  const std::pair<std::int64_t, std::int64_t> rows{sides_[0], sides_[1]}, cols{sides_[2], sides_[3]};
  return in_compute_dtype([&]<class D>() {
    if (channels_first_) return pad(in_compute<D>(x), {{0, 0}, {0, 0}, rows, cols});
    return pad(in_compute<D>(x), {{0, 0}, rows, cols, {0, 0}});
  });
}

DEVTENSOR_DEFINITION PartialShape
layer_detail::ZeroPadding2DLayer::output_shape(const PartialShape& input_shape) const {
  expect_rank4(name_, input_shape, false);
  PartialShape out = input_shape;
  const std::size_t rows = channels_first_ ? 2 : 1;
  if (out[rows] >= 0) out[rows] += sides_[0] + sides_[1];
  if (out[rows + 1] >= 0) out[rows + 1] += sides_[2] + sides_[3];
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
