#pragma once
/// @file rewrites.hpp
/// @brief The graph optimiser's rewrites other than fusion (graph/optimizer.hpp runs them, in this
/// order): constant folding, then common subexpressions, arithmetic that returns an input, and
/// Identity bypasses. Each keeps results bitwise; the helpers find what a run needs and who reads it.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// TensorFlow's default cap on a folded constant (max_constant_size_in_bytes).
inline constexpr std::size_t kMaxFoldedBytes = std::size_t{10} << 20;

/// The nodes `fetches` and `targets` need when `feeds` are given: reverse-reachable from them
/// through inputs and control inputs, stopping at fed outputs.
std::vector<bool> needed_nodes(const std::vector<std::shared_ptr<const Node>>& nodes, const std::vector<Edge>& fetches,
                               const std::vector<Edge>& feeds, std::vector<std::size_t> targets);

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION std::vector<bool> needed_nodes(const std::vector<std::shared_ptr<const Node>>& nodes,
                                                    const std::vector<Edge>& fetches, const std::vector<Edge>& feeds,
                                                    std::vector<std::size_t> targets) {
  const auto fed = [&feeds](const Edge& e) { return std::find(feeds.begin(), feeds.end(), e) != feeds.end(); };
  std::vector<bool> needed(nodes.size(), false);
  std::vector<std::size_t> stack = std::move(targets);
  for (const auto& f : fetches)
    if (!fed(f)) stack.push_back(f.node);
  while (!stack.empty()) {
    const auto i = stack.back();
    stack.pop_back();
    if (needed.at(i)) continue;
    needed[i] = true;
    for (const auto& e : nodes[i]->inputs)
      if (!fed(e)) stack.push_back(e.node);
    for (auto c : nodes[i]->control_inputs) stack.push_back(c);
  }
  return needed;
}

namespace optimizer_detail {

/// Who reads what in the part of a graph a run needs.
struct Uses {
  std::vector<bool> needed;
  std::vector<int> readers;  // input edges from needed nodes
  std::vector<bool> pinned;  // its value must exist as it is: fetched, fed, or a control input
  std::vector<bool> fed;
  std::vector<bool> fetched;
};

inline Uses uses_of(const std::vector<std::shared_ptr<const Node>>& nodes, const std::vector<Edge>& fetches,
                    const std::vector<Edge>& feeds, const std::vector<std::size_t>& targets) {
  const std::size_t count = nodes.size();
  Uses uses{needed_nodes(nodes, fetches, feeds, targets), std::vector<int>(count, 0), std::vector<bool>(count, false),
            std::vector<bool>(count, false), std::vector<bool>(count, false)};
  for (std::size_t i = 0; i < count; ++i) {
    if (!uses.needed[i]) continue;
    for (const auto& e : nodes[i]->inputs) ++uses.readers[e.node];
    for (auto c : nodes[i]->control_inputs) uses.pinned[c] = true;
  }
  for (const auto& f : fetches) uses.pinned[f.node] = uses.fetched[f.node] = true;
  for (const auto& f : feeds) uses.pinned[f.node] = uses.fed[f.node] = true;
  return uses;
}

/// Ops without inputs whose value is fixed by their attributes (not a random op nor a variable's
/// read): constant folding runs them (a gradient's Fill of ones).
inline bool deterministic_source(const Node& node) {
  return node.inputs.empty() && (node.type() == "Fill" || node.type() == "Range");
}

/// A folded node's small host values as its literal (for CSE and the arithmetic rewrites).
inline std::shared_ptr<const std::vector<std::byte>> small_literal(const std::vector<AnyTensor>& values,
                                                                   const Device& device) {
  if (values.size() != 1 || !values[0].defined() || !device.host_memory() || values[0].storage->bytes > 64)
    return nullptr;
  const auto* bytes = static_cast<const std::byte*>(values[0].storage->data);
  return std::make_shared<const std::vector<std::byte>>(bytes, bytes + values[0].storage->bytes);
}

/// Constant folding: runs each needed op node whose inputs are all constants (of its device, not
/// fed) once, and replaces those that unfolded nodes read, or that are fetched, by constants that
/// hold the value; literal Consts hold theirs too, so a replay copies no constant.
inline bool fold_constants(std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement,
                           const Uses& uses) {
  const std::size_t count = nodes.size();
  std::vector<std::vector<AnyTensor>> values(count);  // computed when a foldable reader needs them
  std::vector<bool> known(count, false);              // values[i] holds node i's outputs
  std::vector<bool> folded(count, false);
  const auto constant = [&](std::size_t c) {
    if (known[c]) return true;
    const Node& node = *nodes[c];
    if (node.kind != NodeKind::constant || uses.fed[c] || !node.run || placement.at(c) == nullptr) return false;
    if (node.outputs.size() != 1) return false;
    const Shape& shape = node.outputs[0].shape;
    if (!shape.is_fully_defined() ||
        static_cast<double>(shape.num_elements()) * static_cast<double>(dtype_size(node.outputs[0].dtype)) >
            static_cast<double>(kMaxFoldedBytes))
      return false;  // a large splat is expanded when it runs, as before
    values[c].resize(1);
    try {
      node.run({*placement[c], nullptr}, NodeInputs(nullptr, 0), values[c]);
    } catch (const Error&) {
      values[c].clear();
      return false;
    }
    known[c] = true;
    return true;
  };
  for (std::size_t i = 0; i < count; ++i) {
    const Node& node = *nodes[i];
    if (!uses.needed[i] || uses.fed[i] || node.kind != NodeKind::op || !node.run || node.traits().stateful ||
        node.traits().communication || !node.control_inputs.empty() ||
        (node.inputs.empty() && !deterministic_source(node)) || placement.at(i) == nullptr)
      continue;
    const bool foldable = std::all_of(node.inputs.begin(), node.inputs.end(), [&](const Edge& e) {
      return placement[e.node] == placement[i] && (folded[e.node] || constant(e.node));
    });
    if (!foldable) continue;
    std::vector<const AnyTensor*> in;
    for (const auto& e : node.inputs) in.push_back(&values[e.node].at(e.output));
    std::vector<AnyTensor> out(node.outputs.size());
    try {
      node.run({*placement[i], nullptr}, NodeInputs(in.data(), in.size()), out);
    } catch (const Error&) {
      continue;  // it fails again when the graph runs, where its error has a context
    }
    std::size_t bytes = 0;
    bool defined = true;
    for (const auto& v : out) {
      defined = defined && v.defined();
      if (v.defined()) bytes += v.storage->bytes;
    }
    if (!defined || bytes > kMaxFoldedBytes) continue;
    values[i] = std::move(out);
    known[i] = folded[i] = true;
  }
  std::vector<bool> read(count, false);  // by a needed node that stays
  for (std::size_t j = 0; j < count; ++j)
    if (uses.needed[j] && !folded[j])
      for (const auto& e : nodes[j]->inputs) read[e.node] = true;
  bool changed = false;
  for (std::size_t i = 0; i < count; ++i) {
    // A literal Const runs once too (its node copied its values into a new buffer at every run).
    const bool literal = uses.needed[i] && nodes[i]->literal && constant(i);
    if (!(folded[i] || literal) || (!read[i] && !uses.fetched[i])) continue;
    Node c;
    c.name = nodes[i]->name;
    c.op = &graph_ops::Const;
    c.kind = NodeKind::constant;
    c.requested = nodes[i]->requested;
    c.kernel = nodes[i]->kernel;
    c.outputs = nodes[i]->outputs;
    c.literal = folded[i] ? small_literal(values[i], *placement[i]) : nodes[i]->literal;  // see forward_edges
    // Readers never write into it: the node holds it, so it is never reusable (graph::reusable).
    c.run = [held = std::move(values[i])](const RunContext&, NodeInputs, std::span<AnyTensor> out) {
      for (std::size_t k = 0; k < held.size(); ++k) out[k] = held[k];
    };
    nodes[i] = std::make_shared<const Node>(std::move(c));
    changed = true;
  }
  return changed;
}

/// Whether `node` is a constant whose every element has the bits of `value` (float, double, int32, int64).
inline bool literal_equals(const Node& node, double value) {
  if (node.kind != NodeKind::constant || !node.literal || node.outputs.size() != 1 || node.literal->empty())
    return false;
  std::vector<std::byte> want;
  const auto as = [&want](auto v) {
    want.resize(sizeof v);
    std::memcpy(want.data(), &v, sizeof v);
  };
  switch (node.outputs[0].dtype) {
    case DType::DT_FLOAT: as(static_cast<float>(value)); break;
    case DType::DT_DOUBLE: as(value); break;
    case DType::DT_INT32: as(static_cast<std::int32_t>(value)); break;
    case DType::DT_INT64: as(static_cast<std::int64_t>(value)); break;
    default: return false;
  }
  const auto& bytes = *node.literal;
  if (bytes.size() % want.size() != 0) return false;
  for (std::size_t at = 0; at < bytes.size(); at += want.size())
    if (!std::equal(want.begin(), want.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at))) return false;
  return true;
}

/// The input arithmetic `node` returns unchanged, bit for bit (OptimizerOptions), with the output's
/// shape and type; `input(k)`: input k after earlier rewrites. Not kept: a signalling NaN · 1 is quiet.
template <class Input>
std::optional<Edge> unchanged_operand(const std::vector<std::shared_ptr<const Node>>& nodes, const Node& node,
                                      Input input) {
  if (node.outputs.size() != 1) return std::nullopt;
  const auto keeps = [&](const Edge& e) {
    const OutputSpec& out = nodes[e.node]->outputs.at(e.output);
    return out.dtype == node.outputs[0].dtype && out.shape == node.outputs[0].shape;
  };
  const auto is = [&](std::size_t k, double value) { return literal_equals(*nodes[input(k).node], value); };
  const auto pick = [&](std::size_t k) { return keeps(input(k)) ? std::optional<Edge>(input(k)) : std::nullopt; };
  const bool integer = node.outputs[0].dtype == DType::DT_INT32 || node.outputs[0].dtype == DType::DT_INT64;
  if (node.type() == "Neg" && node.inputs.size() == 1) {
    const Node& inner = *nodes[input(0).node];
    if (inner.type() == "Neg" && inner.kind == NodeKind::op && inner.inputs.size() == 1 && keeps(inner.inputs[0]))
      return inner.inputs[0];
    return std::nullopt;
  }
  if (node.inputs.size() != 2) return std::nullopt;
  if (node.type() == "Mul") {
    if (is(1, 1)) return pick(0);
    if (is(0, 1)) return pick(1);
  } else if (node.type() == "RealDiv" && is(1, 1)) {
    return pick(0);
  } else if (node.type() == "Sub" && is(1, 0)) {  // +0 exactly: x − (+0) is x, −0 included
    return pick(0);
  } else if (node.type() == "AddV2" && integer) {
    if (is(1, 0)) return pick(0);
    if (is(0, 0)) return pick(1);
  }
  return std::nullopt;
}

/// Common subexpressions (`dedupe`), arithmetic that returns an input (`dedupe` too: TensorFlow's
/// arithmetic optimizer) and Identity bypasses (`bypass`): readers of a duplicate, of such
/// arithmetic or of a bypassed Identity read the node it stands for.
inline bool forward_edges(std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement, const Uses& uses,
                          bool dedupe, bool bypass) {
  const std::size_t count = nodes.size();
  std::vector<std::optional<Edge>> forward(count);  // single-output nodes only
  const auto resolve = [&](Edge e) {
    while (forward[e.node]) e = *forward[e.node];
    return e;
  };
  // An elementwise op's value is its scalar function (which names op and type) of its inputs; a
  // constant's is its literal on its device.
  std::map<std::array<std::uintptr_t, 6>, std::size_t> seen;
  std::map<std::tuple<const Device*, DType, std::string, std::vector<std::byte>>, std::size_t> literals;
  for (std::size_t i = 0; i < count; ++i) {
    const Node& node = *nodes[i];
    if (dedupe && uses.needed[i] && !uses.pinned[i] && node.kind == NodeKind::constant && node.literal &&
        node.outputs.size() == 1 && node.literal->size() <= 64) {  // scalars and small vectors
      auto [it, added] = literals.emplace(
          std::tuple{placement.at(i), node.outputs[0].dtype, node.outputs[0].shape.to_string(), *node.literal}, i);
      if (!added) forward[i] = Edge{it->second, 0};
      continue;
    }
    if (!uses.needed[i] || uses.pinned[i] || node.kind != NodeKind::op || !node.run || node.traits().stateful ||
        !node.control_inputs.empty() || node.outputs.size() != 1)
      continue;
    if (dedupe && node.fusion.pointwise.arity > 0 && node.inputs.size() <= 2) {
      const auto input = [&](std::size_t k) { return resolve(node.inputs[k]); };
      if (const auto kept = unchanged_operand(nodes, node, input);
          kept && placement.at(kept->node) == placement.at(i)) {
        forward[i] = *kept;
        continue;
      }
      std::array<std::uintptr_t, 6> key{reinterpret_cast<std::uintptr_t>(node.fusion.pointwise.block),
                                        reinterpret_cast<std::uintptr_t>(placement.at(i)),
                                        0,
                                        0,
                                        0,
                                        0};
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        const Edge e = resolve(node.inputs[k]);
        key[2 + 2 * k] = e.node + 1;
        key[3 + 2 * k] = e.output;
      }
      auto [it, added] = seen.emplace(key, i);
      if (!added) forward[i] = Edge{it->second, 0};
    } else if (bypass && node.type() == "Identity" && node.traits().pass_through && node.inputs.size() == 1) {
      const Edge in = resolve(node.inputs[0]);
      if (placement.at(in.node) == placement.at(i)) forward[i] = in;
    }
  }
  bool changed = false;
  for (std::size_t j = 0; j < count; ++j) {
    if (!uses.needed[j] || forward[j]) continue;
    const Node& node = *nodes[j];
    if (std::none_of(node.inputs.begin(), node.inputs.end(),
                     [&](const Edge& e) { return forward[e.node].has_value(); }))
      continue;
    auto rewired = std::make_shared<Node>(node);
    for (auto& e : rewired->inputs) e = resolve(e);
    nodes[j] = std::move(rewired);
    changed = true;
  }
  return changed;
}
}  // namespace optimizer_detail

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
