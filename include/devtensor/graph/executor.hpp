#pragma once
/// @file executor.hpp
/// @brief The executor: runs the part of a placed graph that some fetches need, node by node in
/// graph order through the nodes' kernels (the registry's bodies, as eager ops), each buffer freed
/// after its last use and each edge between devices a copy.
///
/// An Executable is built once per (fetches, feeds) and placement and is immutable, so several
/// threads may run it at once; each run keeps its values to itself.

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::graph {

/// A value given for a node output instead of computing it (a placeholder's feed).
struct FeedValue {
  Edge edge;
  AnyTensor value;
};

class DEVTENSOR_EXPORT Executable {
 public:
  /// The nodes `fetches` need, given that `feeds` are provided: reverse-reachable from the fetches
  /// and targets, stopping at fed outputs.
  /// @throws InvalidArgumentError "You must feed a value for placeholder tensor '<name>' with
  /// dtype <dtype> and shape <shape>" when a needed placeholder is not fed.
  Executable(std::vector<std::shared_ptr<const Node>> nodes, Placement placement, std::vector<Edge> fetches,
             std::vector<Edge> feeds, std::vector<std::size_t> targets = {});

  /// Runs with `feeds` (in the order of the constructor's feeds) and the variables in
  /// `resources`, and returns the fetches' values.
  [[nodiscard]] std::vector<AnyTensor> run(const std::vector<AnyTensor>& feeds, ResourceStore* resources = nullptr) const;

  /// The nodes a run executes, in order.
  [[nodiscard]] const std::vector<std::size_t>& schedule() const noexcept { return schedule_; }

 private:
  /// Where a value comes from: a feed (its position) or a node output's slot.
  struct Source {
    bool feed = false;
    std::size_t index = 0;
  };
  struct Step {
    const Node* node;
    const Device* device;
    std::size_t first_input;  // into inputs_
    std::size_t first_slot;   // the node's outputs: slots first_slot ..
  };

  std::vector<std::shared_ptr<const Node>> nodes_;
  Placement placement_;
  std::vector<std::size_t> schedule_;
  std::vector<Step> steps_;       // the schedule, resolved
  std::vector<Source> inputs_;    // every step's inputs, consecutive
  std::vector<Source> fetches_;
  std::vector<int> uses_;         // per slot: how many reads a run makes (inputs and fetches)
  std::size_t slots_ = 0;
  std::size_t max_inputs_ = 0;
};

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION Executable::Executable(std::vector<std::shared_ptr<const Node>> nodes, Placement placement,
                                            std::vector<Edge> fetches, std::vector<Edge> feeds,
                                            std::vector<std::size_t> targets)
    : nodes_(std::move(nodes)), placement_(std::move(placement)) {
  const auto feed_of = [&feeds](const Edge& e) -> std::optional<std::size_t> {
    for (std::size_t f = 0; f < feeds.size(); ++f)
      if (feeds[f] == e) return f;
    return std::nullopt;
  };
  std::vector<bool> needed(nodes_.size(), false);
  std::vector<std::size_t> stack = std::move(targets);
  for (const auto& f : fetches)
    if (!feed_of(f)) stack.push_back(f.node);
  while (!stack.empty()) {
    const auto i = stack.back();
    stack.pop_back();
    if (needed.at(i)) continue;
    needed[i] = true;
    for (const auto& e : nodes_[i]->inputs)
      if (!feed_of(e)) stack.push_back(e.node);
    for (auto c : nodes_[i]->control_inputs) stack.push_back(c);
  }
  std::vector<std::size_t> first_slot(nodes_.size(), 0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!needed[i]) continue;
    const Node& node = *nodes_[i];
    if (node.kind == NodeKind::placeholder)
      throw InvalidArgumentError("You must feed a value for placeholder tensor '" + node.name + "' with dtype " +
                                 std::string(dtype_string(node.outputs[0].dtype)) + " and shape " +
                                 node.outputs[0].shape.to_string() + "\n\t [[{{node " + node.name + "}}]]");
    schedule_.push_back(i);
    first_slot[i] = slots_;
    slots_ += node.outputs.size();
  }
  uses_.assign(slots_, 0);
  const auto source = [&](const Edge& e) -> Source {
    if (auto f = feed_of(e)) return {true, *f};
    const std::size_t slot = first_slot[e.node] + e.output;
    ++uses_[slot];
    return {false, slot};
  };
  for (auto i : schedule_) {
    const Node& node = *nodes_[i];
    steps_.push_back({&node, placement_.at(i), inputs_.size(), first_slot[i]});
    for (const auto& e : node.inputs) inputs_.push_back(source(e));
    max_inputs_ = std::max(max_inputs_, node.inputs.size());
  }
  for (const auto& f : fetches) fetches_.push_back(source(f));
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> Executable::run(const std::vector<AnyTensor>& feeds,
                                                            ResourceStore* resources) const {
  std::vector<AnyTensor> values(slots_);
  std::vector<int> left = uses_;
  const auto take = [&](const Source& s) -> AnyTensor {
    if (s.feed) return feeds[s.index];
    if (--left[s.index] == 0) return std::move(values[s.index]);  // its last use frees it
    return values[s.index];
  };
  std::vector<AnyTensor> inputs;
  inputs.reserve(max_inputs_);
  for (const auto& step : steps_) {
    const Node& node = *step.node;
    const Device& device = *step.device;
    inputs.clear();
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      AnyTensor v = take(inputs_[step.first_input + k]);
      // An edge between devices is a copy (TensorFlow's _Send/_Recv pair), stream-ordered on GPUs.
      // A variable's handle carries no tensor (undefined): its readers are on its device.
      const bool stays = !v.defined() || node.inputs_stay || v.storage->device == &device;
      inputs.push_back(stays ? std::move(v) : copy_to(v, device, "_Recv"));
    }
    const std::span<AnyTensor> outputs(values.data() + step.first_slot, node.outputs.size());
    node.run({device, resources}, inputs, outputs);
    for (std::size_t k = 0; k < outputs.size(); ++k)
      if (left[step.first_slot + k] == 0) outputs[k] = AnyTensor();  // an output nobody reads
  }
  std::vector<AnyTensor> out;
  out.reserve(fetches_.size());
  for (const auto& f : fetches_) out.push_back(take(f));
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
