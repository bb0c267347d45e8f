#pragma once
/// @file merging.hpp
/// @brief Layers that merge branches of a functional model: Add and Concatenate.
///
///     auto y = nn::Add()({hidden, skip});               // element-wise sum, equal shapes
///     auto z = nn::Concatenate()({y, x});               // along the last axis
///
/// Called on one tensor they raise Keras's "A merge layer should be called on a list of inputs".

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

struct MergeOptions {
  /// Default: "add", "add_1", ... (or "concatenate", ...).
  std::string name{};
  /// The layer's dtype policy; default: the global one (under a mixed one the inputs are rounded
  /// to the 16-bit type and merged there, as Keras's).
  std::string dtype{};
};

namespace layer_detail {

/// What Add and Concatenate share: a list of inputs, no variables.
class MergeLayer : public LayerBase {
 public:
  void build(const Shape& input_shape) override { throw not_a_list(input_shape.to_python()); }
  Tensor<float> call(const Tensor<float>& x, bool) override { throw not_a_list(x.shape().to_python()); }
  PartialShape output_shape(const PartialShape& input_shape) const override {
    throw not_a_list(python_shape(input_shape));
  }
  std::vector<Variable<float>> variables() const override { return {}; }

  void build_inputs(const std::vector<Shape>& input_shapes) override {
    std::vector<PartialShape> shapes;
    for (const auto& s : input_shapes) shapes.push_back(s.dims_vector());
    (void)output_shapes(shapes);  // validates
  }

  InvalidArgumentError not_a_list(const std::string& shape) const {
    return InvalidArgumentError("A merge layer should be called on a list of inputs. Received: input_shape=" + shape +
                                " (not a list of shapes)");
  }

 protected:
  void require_two_or_more(std::size_t n) const {
    if (n < 2)
      throw InvalidArgumentError(
          "A `" + type_name() +
          "` layer should be called on a list of at least 2 inputs. Received: " + std::to_string(n) + " input(s).");
  }
};

class AddLayer final : public MergeLayer {
 public:
  explicit AddLayer(MergeOptions options) {
    take_policy(options.dtype);
    name_ = options.name.empty() ? unique_name("add") : std::move(options.name);
  }
  std::string type_name() const override { return "Add"; }
  DEVTENSOR_HEADER_INLINE std::vector<PartialShape> output_shapes(
      const std::vector<PartialShape>& shapes) const override;
  DEVTENSOR_HEADER_INLINE std::vector<Tensor<float>> call_inputs(const std::vector<Tensor<float>>& xs, bool) override;
};

class ConcatenateLayer final : public MergeLayer {
 public:
  ConcatenateLayer(std::int64_t axis, MergeOptions options) : axis_(axis) {
    take_policy(options.dtype);
    name_ = options.name.empty() ? unique_name("concatenate") : std::move(options.name);
  }
  std::string type_name() const override { return "Concatenate"; }
  std::int64_t axis() const noexcept { return axis_; }
  DEVTENSOR_HEADER_INLINE std::vector<PartialShape> output_shapes(
      const std::vector<PartialShape>& shapes) const override;
  DEVTENSOR_HEADER_INLINE std::vector<Tensor<float>> call_inputs(const std::vector<Tensor<float>>& xs, bool) override;

 private:
  std::int64_t axis_;
};

}  // namespace layer_detail

/// The element-wise sum of its inputs, which must have the same shape.
class Add : public LayerHandle<layer_detail::AddLayer> {
 public:
  explicit Add(MergeOptions options = {}) : LayerHandle(std::make_shared<layer_detail::AddLayer>(std::move(options))) {}
  using LayerHandle::operator();
  /// Merges tensors; a merge layer has no one-tensor call (Keras: "should be called on a list").
  Tensor<float> operator()(const std::vector<Tensor<float>>& xs) const { return impl_->invoke(xs, false).front(); }
  KerasTensor operator()(const KerasTensor& x) const { throw impl_->not_a_list(python_shape(x.shape())); }
};

/// Its inputs joined along `axis` (default the last); the other dimensions must agree.
class Concatenate : public LayerHandle<layer_detail::ConcatenateLayer> {
 public:
  explicit Concatenate(std::int64_t axis = -1, MergeOptions options = {})
      : LayerHandle(std::make_shared<layer_detail::ConcatenateLayer>(axis, std::move(options))) {}
  using LayerHandle::operator();
  /// Merges tensors; a merge layer has no one-tensor call (Keras: "should be called on a list").
  Tensor<float> operator()(const std::vector<Tensor<float>>& xs) const { return impl_->invoke(xs, false).front(); }
  KerasTensor operator()(const KerasTensor& x) const { throw impl_->not_a_list(python_shape(x.shape())); }
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::vector<PartialShape> layer_detail::AddLayer::output_shapes(
    const std::vector<PartialShape>& shapes) const {
  require_two_or_more(shapes.size());
  PartialShape out = shapes[0];
  for (const auto& s : shapes) {
    bool compatible = s.size() == out.size();
    for (std::size_t d = 1; compatible && d < s.size(); ++d) compatible = s[d] == out[d] || s[d] < 0 || out[d] < 0;
    if (!compatible)
      throw InvalidArgumentError("Inputs have incompatible shapes. Received shapes " +
                                 python_shape({out.begin() + (out.empty() ? 0 : 1), out.end()}) + " and " +
                                 python_shape({s.begin() + (s.empty() ? 0 : 1), s.end()}));
    for (std::size_t d = 0; d < s.size(); ++d)
      if (out[d] < 0) out[d] = s[d];
  }
  return {out};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> layer_detail::AddLayer::call_inputs(
    const std::vector<Tensor<float>>& xs, bool) {
  require_two_or_more(xs.size());
  for (std::size_t i = 1; i < xs.size(); ++i)
    if (xs[i].shape() != xs[0].shape())
      throw InvalidArgumentError("Layer \"" + name_ + "\": inputs have incompatible shapes. Received shapes " +
                                 xs[0].shape().to_python() + " and " + xs[i].shape().to_python());
  // Keras adds left to right in the compute dtype (each partial sum rounded there).
  return {in_compute_dtype([&]<class D>() {
    Tensor<D> sum = in_compute<D>(xs[0]);
    for (std::size_t i = 1; i < xs.size(); ++i) sum = add(sum, in_compute<D>(xs[i]));
    return sum;
  })};
}

DEVTENSOR_DEFINITION std::vector<PartialShape> layer_detail::ConcatenateLayer::output_shapes(
    const std::vector<PartialShape>& shapes) const {
  require_two_or_more(shapes.size());
  const auto rank = static_cast<std::int64_t>(shapes[0].size());
  const std::int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  const auto mismatch = [&] {
    std::string list = "[";
    for (std::size_t i = 0; i < shapes.size(); ++i) list += (i ? ", " : "") + python_shape(shapes[i]);
    return InvalidArgumentError(
        "A `Concatenate` layer requires inputs with matching shapes except for the "
        "concatenation axis. Received: input_shape=" +
        list + "]");
  };
  if (axis < 0 || axis >= rank) throw mismatch();
  PartialShape out = shapes[0];
  for (std::size_t i = 1; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    if (s.size() != out.size()) throw mismatch();
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (static_cast<std::int64_t>(d) == axis) {
        out[d] = out[d] < 0 || s[d] < 0 ? -1 : out[d] + s[d];
      } else if (s[d] >= 0 && out[d] >= 0 && s[d] != out[d]) {
        throw mismatch();
      } else if (out[d] < 0) {
        out[d] = s[d];
      }
    }
  }
  return {out};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> layer_detail::ConcatenateLayer::call_inputs(
    const std::vector<Tensor<float>>& xs, bool) {
  require_two_or_more(xs.size());
  return {in_compute_dtype([&]<class D>() {
    if constexpr (std::is_same_v<D, float>) {
      return concat(xs, axis_);
    } else {
      std::vector<Tensor<D>> parts;
      parts.reserve(xs.size());
      for (const auto& x : xs) parts.push_back(in_compute<D>(x));
      return concat(parts, axis_);
    }
  })};
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
