#pragma once
/// @file sequential.hpp
/// @brief Sequential: a Model whose graph is a chain of layers it makes itself (model.hpp trains it).
///
/// The model builds when its input shape is known: at construction when the first layer declares
/// an input_dim, else on the first call (real or symbolic). Building makes the chain as the
/// functional API would (an Input, then each layer called on the last one's output), so a
/// Sequential runs, trains and nests as any Model; its summary lists its own layers, without the
/// Input, as Keras's does.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/model.hpp"

namespace devtensor {
namespace nn {

class Sequential : public Model {
 public:
  /// Built inside a distribution strategy's scope, the model trains across its replicas.
  explicit Sequential(std::vector<Layer> layers = {}, std::string name = "");

  /// Appends a layer; builds it at once when the model's output shape is known.
  /// @throws InvalidArgumentError when the layer cannot take the model's output.
  void add(Layer layer);

  /// The layers, in order (without the Input Keras keeps inside).
  [[nodiscard]] const std::vector<Layer>& layers() const noexcept { return layers_; }
  [[nodiscard]] std::vector<std::shared_ptr<LayerBase>> tracked_layers() const override;

 protected:
  /// @throws InvalidArgumentError for an empty model.
  void build_graph(const Shape& input_shape) override;
  bool summary_connections() const override { return false; }

 private:
  std::vector<Layer> layers_;
  /// The chain's Input and its last output, once built.
  std::optional<KerasTensor> input_;
  std::optional<KerasTensor> output_;

  void chain(const Layer& layer);
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Sequential::Sequential(std::vector<Layer> layers, std::string name)
    : Model(name.empty() ? unique_name("sequential") : std::move(name)) {
  for (auto& l : layers) add(std::move(l));
}

DEVTENSOR_DEFINITION void Sequential::add(Layer layer) {
  if (input_) {
    chain(layer);
  } else if (layers_.empty()) {
    if (auto declared = layer->declared_input_shape()) {
      layers_.push_back(layer);
      try {
        PartialShape dims = *declared;
        for (auto& d : dims)
          if (d < 0) d = 1;
        build_graph(Shape(dims));
      } catch (...) {
        layers_.pop_back();
        throw;
      }
      return;
    }
  }
  layers_.push_back(std::move(layer));
}

DEVTENSOR_DEFINITION void Sequential::chain(const Layer& layer) {
  std::unique_ptr<distribute::StrategyScopeGuard> scope;
  if (strategy_) scope = strategy_->enter_scope();  // so that the variables are mirrored
  KerasTensor out = call_symbolic(layer.impl(), {*output_}).front();
  graph_ = std::make_shared<layer_detail::FunctionalGraph>(std::vector{*input_}, std::vector{out}, name_, "Sequential");
  graph_->set_checks_input_shapes(false);
  if (!trainable()) graph_->set_trainable(false);  // a model frozen before it was built
  output_ = out;
  forget_traced_steps();
}

DEVTENSOR_DEFINITION void Sequential::build_graph(const Shape& input_shape) {
  if (input_) return;
  if (layers_.empty()) throw InvalidArgumentError("Sequential model \"" + name_ + "\" has no layers; add() some first");
  PartialShape batch_shape = input_shape.dims_vector();
  if (!batch_shape.empty()) batch_shape[0] = -1;
  const std::vector<Layer> layers = std::move(layers_);
  layers_.clear();
  input_ = input_with_batch_shape(batch_shape);
  output_ = input_;
  try {
    for (const auto& layer : layers) {
      chain(layer);
      layers_.push_back(layer);
    }
  } catch (...) {  // the model stays unbuilt, its layers as they were
    layers_ = layers;
    input_.reset();
    output_.reset();
    graph_.reset();
    throw;
  }
}

DEVTENSOR_DEFINITION std::vector<std::shared_ptr<LayerBase>> Sequential::tracked_layers() const {
  std::vector<std::shared_ptr<LayerBase>> out;
  for (const auto& l : layers_) out.push_back(l.impl());
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
