#pragma once
/// @file functional.hpp
/// @brief The graph of layer calls between a model's inputs and outputs (Keras's Functional): the
/// order it runs them in, the layers it lists, and running it on real tensors.
///
/// The graph is found from the outputs back to the inputs, and ordered as Keras orders it: every
/// node gets the depth of its longest path to an output (a shared layer the deepest of its nodes'),
/// nodes run from the deepest, and `layers()` lists the layers by decreasing depth, ties in the
/// order a depth-first walk from the outputs first meets them. So summaries and weights files list
/// layers as Keras does. The graph is itself a layer: a model called inside another model is one.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"

namespace devtensor {
namespace nn {
namespace layer_detail {

class FunctionalGraph final : public LayerBase {
 public:
  /// @throws InvalidArgumentError when an input is not an Input's tensor or an output depends on
  /// an Input that is not among `inputs`.
  /// `type`: what a summary of an enclosing model calls it ("Functional", "Sequential").
  FunctionalGraph(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, std::string name,
                  std::string type = "Functional");

  void build(const Shape&) override {}  // built: its layers were, when they were called
  void build_inputs(const std::vector<Shape>&) override {}
  DEVTENSOR_HEADER_INLINE Tensor<float> call(const Tensor<float>& x, bool training) override;
  DEVTENSOR_HEADER_INLINE std::vector<Tensor<float>> call_inputs(const std::vector<Tensor<float>>& xs,
                                                                 bool training) override;
  DEVTENSOR_HEADER_INLINE PartialShape output_shape(const PartialShape& input_shape) const override;
  DEVTENSOR_HEADER_INLINE std::vector<PartialShape> output_shapes(
      const std::vector<PartialShape>& input_shapes) const override;
  std::string type_name() const override { return type_; }
  DEVTENSOR_HEADER_INLINE std::vector<Variable<float>> variables() const override;
  /// Its layers' trainable variables (none while the graph itself is frozen).
  DEVTENSOR_HEADER_INLINE std::vector<Variable<float>> trainable_variables() const override;
  /// Freezes or thaws the graph and every layer in it, as Keras's model.trainable does.
  DEVTENSOR_HEADER_INLINE void set_trainable(bool trainable) override;

  [[nodiscard]] const std::vector<KerasTensor>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const std::vector<KerasTensor>& outputs() const noexcept { return outputs_; }
  /// The layers in Keras's order, the InputLayers included.
  [[nodiscard]] const std::vector<std::shared_ptr<LayerBase>>& layers() const noexcept { return layers_; }
  /// A chain: one node per depth, one input per node, no layer called twice (summaries then have
  /// no "Connected to" column).
  [[nodiscard]] bool sequential_like() const noexcept { return sequential_like_; }
  /// Whether a call checks its tensors against the Inputs' shapes (Keras's Functional does; its
  /// Sequential leaves it to the first layer, whose message names that layer).
  void set_checks_input_shapes(bool check) noexcept { checks_input_shapes_ = check; }
  /// "hidden[0][0], skip[0][0]": what `layer`'s calls in this graph take; "-" for an input.
  [[nodiscard]] DEVTENSOR_HEADER_INLINE std::string connections(const LayerBase& layer) const;

 private:
  std::vector<KerasTensor> inputs_;
  std::vector<KerasTensor> outputs_;
  std::vector<std::shared_ptr<const LayerNode>> nodes_;  // in the order they run
  std::vector<std::shared_ptr<LayerBase>> layers_;
  std::string type_;
  bool sequential_like_ = true;
  bool checks_input_shapes_ = true;

  template <class T>
  T only_output(std::vector<T> outputs) const {
    if (outputs.size() != 1)
      throw InvalidArgumentError("Model \"" + name_ + "\" has " + std::to_string(outputs.size()) +
                                 " outputs; call it with call_inputs, which returns them all");
    return std::move(outputs.front());
  }
};

}  // namespace layer_detail

/// The layers `layer` tracks when it is a model called inside another (Keras's order; a
/// Sequential's without its Input); empty for any other layer.
[[nodiscard]] inline std::vector<std::shared_ptr<LayerBase>> tracked_sublayers(const LayerBase& layer) {
  const auto* graph = dynamic_cast<const layer_detail::FunctionalGraph*>(&layer);
  if (!graph) return {};
  std::vector<std::shared_ptr<LayerBase>> out;
  for (const auto& l : graph->layers())
    if (graph->type_name() != "Sequential" || !dynamic_cast<const layer_detail::InputLayer*>(l.get())) out.push_back(l);
  return out;
}

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Tensor<float> layer_detail::FunctionalGraph::call(const Tensor<float>& x, bool training) {
  return only_output(call_inputs({x}, training));
}

DEVTENSOR_DEFINITION PartialShape layer_detail::FunctionalGraph::output_shape(const PartialShape& input_shape) const {
  return only_output(output_shapes({input_shape}));
}

DEVTENSOR_DEFINITION layer_detail::FunctionalGraph::FunctionalGraph(std::vector<KerasTensor> inputs,
                                                                    std::vector<KerasTensor> outputs, std::string name,
                                                                    std::string type)
    : inputs_(std::move(inputs)), outputs_(std::move(outputs)), type_(std::move(type)) {
  name_ = std::move(name);
  built_ = true;
  if (inputs_.empty() || outputs_.empty())
    throw InvalidArgumentError("Model \"" + name_ + "\" needs at least one input and one output");
  std::set<const LayerNode*> input_nodes;
  for (const auto& in : inputs_) {
    if (!dynamic_cast<const InputLayer*>(in.node()->layer.get()))
      throw InvalidArgumentError("Model \"" + name_ + "\": its inputs must be tensors that nn::Input returned; " +
                                 in.history() + " is the output of a " + in.node()->layer->type_name() + " layer");
    input_nodes.insert(in.node().get());
  }

  // Keras's map_graph: a depth-first walk from the outputs, nodes listed after their inputs,
  // layers numbered in the order the walk meets them.
  std::vector<std::shared_ptr<const LayerNode>> post_order;
  std::map<const LayerBase*, int> layer_index;
  std::set<const LayerNode*> finished;
  const auto walk = [&](const auto& self, const KerasTensor& t, const KerasTensor& output) -> void {
    const auto& node = t.node();
    if (finished.contains(node.get())) return;
    layer_index.try_emplace(node->layer.get(), static_cast<int>(layer_index.size()));
    if (node->inputs.empty() && !input_nodes.contains(node.get()))
      throw InvalidArgumentError("Graph disconnected: the output " + output.history() + " of model \"" + name_ +
                                 "\" depends on the Input \"" + node->layer->name() +
                                 "\", which is not among the model's inputs. Pass every Input it depends on to "
                                 "Model(inputs, outputs).");
    for (const auto& in : node->inputs) self(self, in, output);
    finished.insert(node.get());
    post_order.push_back(node);
  };
  for (const auto& out : outputs_) walk(walk, out, out);

  // Depths: an output's node is 0; a node is one deeper than the deepest node that reads it.
  std::map<const LayerNode*, int> node_depth;
  std::map<const LayerBase*, int> layer_depth;
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const LayerNode* node = it->get();
    int depth = std::max(node_depth[node], layer_depth[node->layer.get()]);
    layer_depth[node->layer.get()] = depth;
    node_depth[node] = depth;
    for (const auto& in : node->inputs) {
      int& parent = node_depth[in.node().get()];
      parent = std::max(parent, depth + 1);
    }
  }
  for (const auto& in : inputs_)  // an input no output uses is still the model's
    if (!finished.contains(in.node().get())) {
      layer_depth[in.node()->layer.get()] = 0;
      layer_index[in.node()->layer.get()] = -1;
      node_depth[in.node().get()] = 0;
      post_order.push_back(in.node());
    }

  // Nodes run from the deepest; within a depth, in the order the walk finished them.
  nodes_ = post_order;
  std::stable_sort(nodes_.begin(), nodes_.end(),
                   [&](const auto& a, const auto& b) { return node_depth[a.get()] > node_depth[b.get()]; });
  std::map<const LayerBase*, std::shared_ptr<LayerBase>> layer_of;
  for (const auto& node : nodes_) layer_of.try_emplace(node->layer.get(), node->layer);
  for (const auto& [layer, handle] : layer_of) layers_.push_back(handle);
  std::sort(layers_.begin(), layers_.end(), [&](const auto& a, const auto& b) {
    const int da = layer_depth[a.get()], db = layer_depth[b.get()];
    return da != db ? da > db : layer_index[a.get()] < layer_index[b.get()];
  });

  std::map<int, int> nodes_at_depth;
  std::map<const LayerBase*, int> nodes_of_layer;
  for (const auto& node : nodes_) {
    if (++nodes_at_depth[node_depth[node.get()]] > 1 || node->inputs.size() > 1) sequential_like_ = false;
    if (++nodes_of_layer[node->layer.get()] > 1) sequential_like_ = false;
  }
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> layer_detail::FunctionalGraph::call_inputs(
    const std::vector<Tensor<float>>& xs, bool training) {
  if (xs.size() != inputs_.size())
    throw InvalidArgumentError("Model \"" + name_ + "\" expects " + std::to_string(inputs_.size()) +
                               " input(s), but it received " + std::to_string(xs.size()) + " input tensors.");
  std::unordered_map<const LayerNode*, std::vector<Tensor<float>>> values;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const PartialShape& expected = inputs_[i].shape();
    const Shape& found = xs[i].shape();
    bool compatible = !checks_input_shapes_ || found.rank() == expected.size();
    for (std::size_t d = 0; compatible && checks_input_shapes_ && d < expected.size(); ++d)
      compatible = expected[d] < 0 || expected[d] == found[d];
    if (!compatible)
      throw InvalidArgumentError("Input " + std::to_string(i) + " with name '" + inputs_[i].node()->layer->name() +
                                 "' of layer '" + name_ + "' is incompatible with the layer: expected shape=" +
                                 python_shape(expected) + ", found shape=" + found.to_python());
    values[inputs_[i].node().get()] = {xs[i]};
  }
  for (const auto& node : nodes_) {
    if (node->inputs.empty()) continue;  // an Input: fed above
    std::vector<Tensor<float>> args;
    for (const auto& in : node->inputs)
      args.push_back(values.at(in.node().get()).at(static_cast<std::size_t>(in.index())));
    values[node.get()] = node->layer->invoke(args, training);
  }
  std::vector<Tensor<float>> out;
  for (const auto& o : outputs_) out.push_back(values.at(o.node().get()).at(static_cast<std::size_t>(o.index())));
  return out;
}

DEVTENSOR_DEFINITION std::vector<PartialShape> layer_detail::FunctionalGraph::output_shapes(
    const std::vector<PartialShape>& input_shapes) const {
  if (input_shapes.size() != inputs_.size())
    throw InvalidArgumentError("Model \"" + name_ + "\" expects " + std::to_string(inputs_.size()) +
                               " input(s), but it received " + std::to_string(input_shapes.size()) + " input tensors.");
  std::vector<PartialShape> out;
  for (const auto& o : outputs_) {
    PartialShape shape = o.shape();
    if (!shape.empty() && !input_shapes[0].empty()) shape[0] = input_shapes[0][0];  // the caller's batch
    out.push_back(std::move(shape));
  }
  return out;
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> layer_detail::FunctionalGraph::variables() const {
  std::vector<Variable<float>> out;
  for (const auto& layer : layers_)
    for (auto& v : layer->variables()) out.push_back(v);
  return out;
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> layer_detail::FunctionalGraph::trainable_variables() const {
  std::vector<Variable<float>> out;
  if (!trainable_) return out;
  for (const auto& layer : layers_)
    for (auto& v : layer->trainable_variables()) out.push_back(v);
  return out;
}

DEVTENSOR_DEFINITION void layer_detail::FunctionalGraph::set_trainable(bool trainable) {
  for (const auto& layer : layers_) layer->set_trainable(trainable);
  trainable_ = trainable;
}

DEVTENSOR_DEFINITION std::string layer_detail::FunctionalGraph::connections(const LayerBase& layer) const {
  std::vector<const LayerNode*> calls;
  for (const auto& node : nodes_)
    if (node->layer.get() == &layer) calls.push_back(node.get());
  std::sort(calls.begin(), calls.end(), [](const auto* a, const auto* b) { return a->node_index < b->node_index; });
  std::string out;
  for (const auto* node : calls)
    for (const auto& in : node->inputs) out += (out.empty() ? "" : ", ") + in.history();
  return out.empty() ? "-" : out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
