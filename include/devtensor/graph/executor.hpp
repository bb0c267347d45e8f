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
  std::vector<std::shared_ptr<const Node>> nodes_;
  Placement placement_;
  std::vector<Edge> fetches_;
  std::vector<Edge> feeds_;
  std::vector<std::size_t> schedule_;
  std::vector<std::vector<int>> uses_;  // per node output: how many reads a run makes (inputs and fetches)
};

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION Executable::Executable(std::vector<std::shared_ptr<const Node>> nodes, Placement placement,
                                            std::vector<Edge> fetches, std::vector<Edge> feeds,
                                            std::vector<std::size_t> targets)
    : nodes_(std::move(nodes)), placement_(std::move(placement)), fetches_(std::move(fetches)), feeds_(std::move(feeds)) {
  const auto fed = [this](const Edge& e) { return std::find(feeds_.begin(), feeds_.end(), e) != feeds_.end(); };
  std::vector<bool> needed(nodes_.size(), false);
  std::vector<std::size_t> stack = std::move(targets);
  for (const auto& f : fetches_)
    if (!fed(f)) stack.push_back(f.node);
  while (!stack.empty()) {
    const auto i = stack.back();
    stack.pop_back();
    if (needed.at(i)) continue;
    needed[i] = true;
    for (const auto& e : nodes_[i]->inputs)
      if (!fed(e)) stack.push_back(e.node);
    for (auto c : nodes_[i]->control_inputs) stack.push_back(c);
  }
  uses_.resize(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!needed[i]) continue;
    const Node& node = *nodes_[i];
    if (node.kind == NodeKind::placeholder)
      throw InvalidArgumentError("You must feed a value for placeholder tensor '" + node.name + "' with dtype " +
                                 std::string(dtype_string(node.outputs[0].dtype)) + " and shape " +
                                 node.outputs[0].shape.to_string() + "\n\t [[{{node " + node.name + "}}]]");
    schedule_.push_back(i);
    uses_[i].assign(node.outputs.size(), 0);
  }
  for (auto i : schedule_)
    for (const auto& e : nodes_[i]->inputs)
      if (!fed(e)) ++uses_[e.node][e.output];
  for (const auto& f : fetches_)
    if (!fed(f)) ++uses_[f.node][f.output];
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> Executable::run(const std::vector<AnyTensor>& feeds,
                                                            ResourceStore* resources) const {
  std::vector<std::vector<AnyTensor>> values(nodes_.size());
  std::vector<std::vector<int>> left = uses_;
  const auto value_of = [&](const Edge& e) -> AnyTensor {
    for (std::size_t f = 0; f < feeds_.size(); ++f)
      if (feeds_[f] == e) return feeds[f];
    AnyTensor v = values[e.node][e.output];
    if (--left[e.node][e.output] == 0) values[e.node][e.output] = AnyTensor();  // its last use
    return v;
  };
  for (auto i : schedule_) {
    const Node& node = *nodes_[i];
    const Device& device = *placement_[i];
    std::vector<AnyTensor> inputs;
    inputs.reserve(node.inputs.size());
    for (const auto& e : node.inputs) {
      AnyTensor v = value_of(e);
      // An edge between devices is a copy (TensorFlow's _Send/_Recv pair), stream-ordered on GPUs.
      // A variable's handle carries no tensor (undefined): its readers are on its device.
      inputs.push_back(!v.defined() || v.storage->device == &device ? std::move(v) : copy_to(v, device, "_Recv"));
    }
    values[i] = node.run({device, resources}, inputs);
    if (values[i].size() != node.outputs.size())
      throw InternalError("Node " + node.name + " produced " + std::to_string(values[i].size()) + " outputs, expected " +
                          std::to_string(node.outputs.size()));
    for (std::size_t k = 0; k < values[i].size(); ++k)
      if (left[i][k] == 0) values[i][k] = AnyTensor();  // an output nobody reads
  }
  std::vector<AnyTensor> out;
  out.reserve(fetches_.size());
  for (const auto& f : fetches_) out.push_back(value_of(f));
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
