#pragma once
/// @file keras_tensor.hpp
/// @brief Symbolic tensors for Keras's functional API: `nn::Input`, the KerasTensor a layer call on
/// symbolic tensors returns, and the node that records that call.
///
///     auto x = nn::Input({4}, {.name = "x"});          // (None, 4)
///     auto h = nn::Dense(8, {.activation = nn::Activation::relu})(x);
///     auto y = nn::Dense(1)(nn::Add()({h, nn::Dense(8)(x)}));
///     nn::Model model(x, y);                            // functional.hpp
///
/// A symbolic call computes no values: it builds the layer for the inputs' shapes (creating its
/// variables under the scope current at that moment, as Keras does) and records a LayerNode: the
/// layer, the KerasTensors it was called on, its output shapes and its node index (the layer's
/// n-th call: "dense[1][0]" in summaries). A model is the graph of these nodes between its inputs
/// and its outputs.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/nn/layer.hpp"

namespace devtensor {
namespace nn {

struct LayerNode;

/// A symbolic tensor: the output `index` of a recorded layer call.
class KerasTensor {
 public:
  KerasTensor(std::shared_ptr<const LayerNode> node, int index) : node_(std::move(node)), index_(index) {}

  /// Its shape, -1 for unknown dimensions (the batch unless Input fixed it).
  [[nodiscard]] const PartialShape& shape() const;
  [[nodiscard]] const std::shared_ptr<const LayerNode>& node() const noexcept { return node_; }
  [[nodiscard]] int index() const noexcept { return index_; }
  /// "dense[0][0]": the producing layer, its node index and this tensor's index.
  [[nodiscard]] std::string history() const;

 private:
  std::shared_ptr<const LayerNode> node_;
  int index_;
};

/// One call of a layer on symbolic tensors (an Input is a node without inputs).
struct LayerNode {
  std::shared_ptr<LayerBase> layer;
  std::vector<KerasTensor> inputs;
  std::vector<PartialShape> output_shapes;
  int node_index = 0;
};

/// Calls `layer` on symbolic tensors: builds it for their shapes and records the call.
/// @throws InvalidArgumentError when the layer cannot take those shapes.
std::vector<KerasTensor> call_symbolic(const std::shared_ptr<LayerBase>& layer, const std::vector<KerasTensor>& inputs);

/// The common half of every layer handle (Dense, Add, ...): calls on tensors and on symbolic
/// tensors, and what the layer is.
template <class Impl>
class LayerHandle {
 public:
  /// Runs the layer (building it on the first call).
  Tensor<float> operator()(const Tensor<float>& x, bool training = false) const { return (*impl_)(x, training); }
  /// Records a call on a symbolic tensor (the functional API).
  KerasTensor operator()(const KerasTensor& x) const { return call_symbolic(impl_, {x}).front(); }
  /// Records a call on several symbolic tensors (a merge such as Add or Concatenate).
  KerasTensor operator()(const std::vector<KerasTensor>& xs) const { return call_symbolic(impl_, xs).front(); }

  [[nodiscard]] std::shared_ptr<LayerBase> impl() const { return impl_; }
  [[nodiscard]] const std::string& name() const noexcept { return impl_->name(); }
  [[nodiscard]] bool built() const noexcept { return impl_->built(); }
  /// What the layer computes in (Keras's layer.dtype_policy, nn/mixed_precision.hpp).
  [[nodiscard]] const mixed_precision::DTypePolicy& dtype_policy() const noexcept { return impl_->dtype_policy(); }
  [[nodiscard]] DType compute_dtype() const noexcept { return impl_->compute_dtype(); }
  [[nodiscard]] std::vector<Variable<float>> trainable_variables() const { return impl_->trainable_variables(); }
  /// Keras's layer.trainable (LayerBase::set_trainable): `base.set_trainable(false)` freezes it.
  [[nodiscard]] bool trainable() const noexcept { return impl_->trainable(); }
  void set_trainable(bool trainable) const { impl_->set_trainable(trainable); }

 protected:
  explicit LayerHandle(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

struct InputOptions {
  /// Default: "input_layer", "input_layer_1", ...
  std::string name{};
  /// A fixed batch size; by default the batch dimension is unknown.
  std::optional<std::int64_t> batch_size = std::nullopt;
};

namespace layer_detail {

/// The layer behind an Input: it has no variables and passes its tensor on.
class InputLayer final : public LayerBase {
 public:
  InputLayer(PartialShape batch_shape, std::string name) : batch_shape_(std::move(batch_shape)) {
    name_ = name.empty() ? unique_name("input_layer") : std::move(name);
    built_ = true;
  }
  void build(const Shape&) override {}
  Tensor<float> call(const Tensor<float>& x, bool) override { return x; }
  PartialShape output_shape(const PartialShape&) const override { return batch_shape_; }
  std::string type_name() const override { return "InputLayer"; }
  std::vector<Variable<float>> variables() const override { return {}; }
  const PartialShape& batch_shape() const noexcept { return batch_shape_; }

 private:
  PartialShape batch_shape_;
};

}  // namespace layer_detail

/// A symbolic input of `shape` (without the batch dimension), as Keras's Input(shape=...).
/// @throws InvalidArgumentError for a negative dimension or batch size below 1.
KerasTensor Input(const PartialShape& shape, InputOptions options = {});

/// An input with the whole batch shape given (-1 unknown); what Sequential uses for its input.
KerasTensor input_with_batch_shape(PartialShape batch_shape, std::string name = {});

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION const PartialShape& KerasTensor::shape() const {
  return node_->output_shapes.at(static_cast<std::size_t>(index_));
}

DEVTENSOR_DEFINITION std::string KerasTensor::history() const {
  return node_->layer->name() + "[" + std::to_string(node_->node_index) + "][" + std::to_string(index_) + "]";
}

DEVTENSOR_DEFINITION std::vector<KerasTensor> call_symbolic(const std::shared_ptr<LayerBase>& layer,
                                                            const std::vector<KerasTensor>& inputs) {
  if (inputs.empty())
    throw InvalidArgumentError("Layer \"" + layer->name() + "\" was called on an empty list of inputs");
  std::vector<PartialShape> shapes;
  std::vector<Shape> batch_shapes;  // an unknown batch builds as a batch of 1
  for (const auto& x : inputs) {
    shapes.push_back(x.shape());
    PartialShape dims = x.shape();
    for (auto& d : dims)
      if (d < 0) d = 1;
    batch_shapes.emplace_back(dims);
  }
  auto output_shapes = layer->output_shapes(shapes);  // checks the shapes, unknown dimensions included
  layer->ensure_built(batch_shapes);
  auto node = std::make_shared<LayerNode>();
  node->layer = layer;
  node->inputs = inputs;
  node->output_shapes = std::move(output_shapes);
  node->node_index = layer->take_node_index();
  layer->set_last_output_shapes(node->output_shapes);
  std::vector<KerasTensor> out;
  for (std::size_t i = 0; i < node->output_shapes.size(); ++i) out.emplace_back(node, static_cast<int>(i));
  return out;
}

DEVTENSOR_DEFINITION KerasTensor input_with_batch_shape(PartialShape batch_shape, std::string name) {
  auto layer = std::make_shared<layer_detail::InputLayer>(batch_shape, std::move(name));
  auto node = std::make_shared<LayerNode>();
  node->layer = layer;
  node->output_shapes = {std::move(batch_shape)};
  node->node_index = layer->take_node_index();
  layer->set_last_output_shapes(node->output_shapes);
  return KerasTensor(std::move(node), 0);
}

DEVTENSOR_DEFINITION KerasTensor Input(const PartialShape& shape, InputOptions options) {
  if (options.batch_size && *options.batch_size < 1)
    throw InvalidArgumentError("Input: batch_size must be positive, got " + std::to_string(*options.batch_size));
  PartialShape batch_shape{options.batch_size.value_or(-1)};
  for (const auto d : shape) {
    if (d < -1)
      throw InvalidArgumentError("Input: the dimensions of `shape` must be >= 0 (or -1: unknown); got " +
                                 python_shape(shape));
    batch_shape.push_back(d);
  }
  return input_with_batch_shape(std::move(batch_shape), std::move(options.name));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
