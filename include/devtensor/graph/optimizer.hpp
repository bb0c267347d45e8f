#pragma once
/// @file optimizer.hpp
/// @brief Rewrites of a placed graph before it runs (TensorFlow's grappler), in this
/// order: constant folding, common subexpressions, arithmetic that returns an input and Identity
/// bypasses (graph/rewrites.hpp), then fusion of chains of elementwise ops into one pass over
/// memory and of a MatMul or (on CPUs) a Conv2D with the elementwise ops that read its product
/// (its epilogue: bias, activation), on devices whose buffers are host memory. The options are TensorFlow's names
/// (tf.config.optimizer.set_experimental_options).
///
/// Note [Fused elementwise chains]
/// A group is an elementwise node (its root) and the elementwise producers whose only reader is in
/// the group, all on one device, of one element type and of the root's fully defined shape S. Its
/// inputs from outside have S's elements, one value, or S's trailing dimensions (a bias). The
/// fused node runs the group's scalar functions block by block (kBlock elements): a block's values
/// stay in cache-sized registers between the ops, so the chain reads its inputs and writes its
/// result once instead of once per op. A MatMul whose only reader is the group joins it: the
/// product is written to the fused node's output and the chain runs over it there, block by
/// block (TensorFlow's _FusedMatMul with BiasAdd and Relu); a Conv2D on a CPU the same way
/// (_FusedConv2D: BiasAdd over channels last is an add of a row). A Sum or Mean over trailing axes
/// whose input is the group's result joins it at the end (`_FusedReduction`): on a CPU each
/// block's results are added to their rows' sums as the CPU reduction kernel adds them (one double
/// per row, element by element), so the chain's result is never written to memory. Every op
/// applies the same scalar function to the same values as the unfused graph, so results are
/// bitwise equal. On a GPU the chain kernel cuts the rows into blocks and adds them as the GPU
/// reduction does (Note [Fused chains on a GPU]).
/// A run under a GradientTape runs the unfused graph, whose ops the tape records (executor.hpp).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/graph/placer.hpp"
// The passes' definitions need the fused kernels and the rewrites (and through them every op's
// definition); compiled mode (Note [Compiled mode]) keeps them in src/devtensor.cpp, so a program
// that traces functions does not parse every op family.
#if DEVTENSOR_HEADER_DEFINITIONS
#include "devtensor/graph/fused_kernel.hpp"
#include "devtensor/graph/rewrites.hpp"
#endif
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// Which rewrites graphs get before they first run (TensorFlow's grappler options, by its names),
/// in this order. Each keeps results bitwise (Note [Fused elementwise chains]).
struct OptimizerOptions {
  /// Nodes whose inputs are all constants run once, when the graph is optimised, and become
  /// constants (outputs up to kMaxFoldedBytes; a node that fails then is left to fail when run).
  bool constant_folding = true;
  /// Common subexpressions: an elementwise op applied twice to the same inputs is computed once,
  /// equal small constants are one. Arithmetic that returns an input unchanged is skipped: x·1,
  /// 1·x, x/1, x − 0, −(−x), and x + 0 for integers (for floats −0 + 0 is +0).
  bool arithmetic_optimization = true;
  /// Identity nodes between two nodes of one device are bypassed (not a fetched one).
  bool dependency_optimization = true;
  /// Fusion (grappler's remapper): elementwise chains into one pass, MatMul with its epilogue.
  bool remapping = true;
};

namespace detail {
inline std::atomic<bool> constant_folding{true};
inline std::atomic<bool> arithmetic_optimization{true};
inline std::atomic<bool> dependency_optimization{true};
inline std::atomic<bool> remapping{true};
}  // namespace detail

/// `nodes` rewritten as `options` allows: folded nodes become `Const` nodes, readers of duplicates
/// and of bypassed Identity nodes read the kept node, and each fused group's root is replaced by
/// the fused node (Note [Fused elementwise chains]; `_FusedElementwise`, `_FusedMatMul`, `_FusedConv2D`,
/// `_FusedReduction`, which replaces the reduction instead).
/// A rewritten node keeps its position, name and device; nodes nothing reads any more are left in
/// place (the executor does not run them). Empty when nothing changed.
std::vector<std::shared_ptr<const Node>> optimize(const std::vector<std::shared_ptr<const Node>>& nodes,
                                                  const Placement& placement, const std::vector<Edge>& fetches,
                                                  const std::vector<Edge>& feeds,
                                                  const std::vector<std::size_t>& targets,
                                                  const OptimizerOptions& options);

#if DEVTENSOR_HEADER_DEFINITIONS

namespace optimizer_detail {

/// How an input of static shape `input` broadcasts against S, if a fused node can read it so.
inline std::optional<FusedInput> fused_input(const Shape& input, const Shape& s) {
  if (!input.is_fully_defined()) return std::nullopt;
  const std::int64_t n = input.num_elements();
  if (n == s.num_elements()) return FusedInput{FusedInput::Kind::full, n};
  if (n == 1) return FusedInput{FusedInput::Kind::scalar, 1};
  const auto dims = input.dims();
  std::size_t lead = 0;  // leading ones broadcast as if absent
  while (lead < dims.size() && dims[lead] == 1) ++lead;
  const std::size_t rank = dims.size() - lead;
  if (rank > s.rank()) return std::nullopt;
  for (std::size_t d = 0; d < rank; ++d)
    if (dims[lead + d] != s[s.rank() - rank + d]) return std::nullopt;
  return FusedInput{FusedInput::Kind::suffix, n};
}

/// The chain after a MatMul as cuBLASLt's epilogue, when it is one (Note [GEMM epilogues] in
/// ops/fused_chain.hpp): an add of a bias over the last dimension, a Relu, or both in that order.
inline std::optional<FusedKernel::GemmEpilogue> gemm_epilogue(const FusedKernel& kernel, const GemmAttrs& gemm) {
  const int add = ops::fused_chain::code_of("AddV2", kernel.dtype);
  const int relu = ops::fused_chain::code_of("Relu", kernel.dtype);
  const int first_result = static_cast<int>(kernel.inputs.size());
  const auto& steps = kernel.steps;
  if (!gemm.gemm || kernel.shape.rank() != 2 || add < 0 || relu < 0) return std::nullopt;
  FusedKernel::GemmEpilogue epilogue{gemm, -1, false};
  std::size_t j = 0;
  int value = 0;  // the register that holds the epilogue's result so far: the product first
  if (j < steps.size() && steps[j].code == add && steps[j].arity == 2) {
    const auto [x, y] = steps[j].args;
    const int bias = x == 0 ? y : y == 0 ? x : -1;
    if (bias > 0 && bias < first_result &&
        kernel.inputs[static_cast<std::size_t>(bias)].kind == FusedInput::Kind::suffix &&
        kernel.inputs[static_cast<std::size_t>(bias)].period == kernel.shape[1]) {
      epilogue.bias = bias;
      value = first_result + static_cast<int>(j++);
    }
  }
  if (j < steps.size() && steps[j].code == relu && steps[j].args[0] == value) {
    epilogue.relu = true;
    ++j;
  }
  if (j != steps.size() || (epilogue.bias < 0 && !epilogue.relu)) return std::nullopt;
  return epilogue;
}

/// Fusion (Note [Fused elementwise chains]).
inline bool fuse(std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement, const Uses& uses);

}  // namespace optimizer_detail

DEVTENSOR_DEFINITION std::vector<std::shared_ptr<const Node>> optimize(
    const std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement, const std::vector<Edge>& fetches,
    const std::vector<Edge>& feeds, const std::vector<std::size_t>& targets, const OptimizerOptions& options) {
  using namespace optimizer_detail;
  std::vector<std::shared_ptr<const Node>> out = nodes;
  bool changed = false;
  if (options.constant_folding) changed |= fold_constants(out, placement, uses_of(out, fetches, feeds, targets));
  if (options.arithmetic_optimization || options.dependency_optimization)
    changed |= forward_edges(out, placement, uses_of(out, fetches, feeds, targets), options.arithmetic_optimization,
                             options.dependency_optimization);
  if (options.remapping) changed |= fuse(out, placement, uses_of(out, fetches, feeds, targets));
  if (!changed) return {};
  return out;
}

inline bool optimizer_detail::fuse(std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement,
                                   const Uses& uses) {
  const std::size_t count = nodes.size();
  const auto& needed = uses.needed;
  const auto& readers = uses.readers;
  const auto& pinned = uses.pinned;
  const auto shape_of = [&](const Edge& e) -> const Shape& { return nodes[e.node]->outputs.at(e.output).shape; };
  // An elementwise node a fused kernel can run: on host memory, or on a GPU whose chain kernel
  // knows its op (Note [Fused chains on a GPU]); fully defined, its inputs readable.
  const ops::GpuFusedChain* gpu_chain = ops::gpu_fused_chain();
  const auto fusable = [&](std::size_t i) {
    const Node& node = *nodes[i];
    if (!needed[i] || node.kind != NodeKind::op || node.fusion.pointwise.arity == 0 || !node.run ||
        node.traits().stateful || !node.control_inputs.empty() || node.outputs.size() != 1 ||
        placement.at(i) == nullptr)
      return false;
    if (!placement[i]->host_memory() &&
        (!gpu_chain || ops::fused_chain::code_of(node.type(), node.outputs[0].dtype) < 0))
      return false;
    const Shape& s = node.outputs[0].shape;
    if (!s.is_fully_defined() || s.num_elements() <= 0) return false;
    return std::all_of(node.inputs.begin(), node.inputs.end(), [&](const Edge& e) {
      return nodes[e.node]->outputs.at(e.output).dtype == node.outputs[0].dtype &&
             optimizer_detail::fused_input(shape_of(e), s).has_value();
    });
  };

  // A node's reader, when it has one (readers[i] == 1).
  std::vector<std::size_t> reader_of(count, count);
  for (std::size_t j = 0; j < count; ++j)
    if (needed[j])
      for (const auto& e : nodes[j]->inputs) reader_of[e.node] = j;
  // A Sum or Mean over trailing axes that reads only the group's result, on the CPU (whose
  // reduction kernel the fused node repeats bit for bit) or on a GPU with the chain kernel (which
  // cuts rows and adds as the GPU reduction does).
  const auto reduces = [&](std::size_t root, std::size_t q) {
    if (q == count || pinned[root] || readers[root] != 1) return false;
    const Node& r = *nodes[q];
    const Shape& s = nodes[root]->outputs[0].shape;
    const DType dtype = nodes[root]->outputs[0].dtype;
    return r.fusion.row_reduction.row > 0 && r.kind == NodeKind::op && r.run && !r.traits().stateful &&
           r.control_inputs.empty() && r.inputs.size() == 1 && r.inputs[0] == Edge{root, 0} && r.outputs.size() == 1 &&
           r.outputs[0].dtype == dtype && (dtype == DType::DT_FLOAT || dtype == DType::DT_DOUBLE) &&
           placement[q] == placement[root] &&
           (!placement[root]->is_gpu || (!placement[root]->host_memory() && gpu_chain)) &&
           s.num_elements() % r.fusion.row_reduction.row == 0;
  };

  std::vector<std::shared_ptr<const Node>>& out = nodes;
  bool changed = false;
  std::vector<bool> grouped(count, false);
  for (std::size_t root = count; root-- > 0;) {
    if (grouped[root] || !fusable(root)) continue;
    const Node& top = *nodes[root];
    const Shape& s = top.outputs[0].shape;
    const DType dtype = top.outputs[0].dtype;
    std::vector<std::size_t> members{root};
    grouped[root] = true;
    for (std::size_t w = 0; w < members.size() && members.size() < FusedKernel::kMaxRegisters / 2; ++w)
      for (const auto& e : nodes[members[w]]->inputs) {
        const std::size_t p = e.node;
        if (grouped[p] || pinned[p] || readers[p] != 1 || placement[p] != placement[root] || !fusable(p) ||
            !(nodes[p]->outputs[0].shape == s))
          continue;
        members.push_back(p);
        grouped[p] = true;
      }
    std::sort(members.begin(), members.end());
    const auto member_of = [&](std::size_t n) {
      return std::find(members.begin(), members.end(), n) - members.begin();
    };
    const auto is_member = [&](std::size_t n) { return std::binary_search(members.begin(), members.end(), n); };

    // The group's inputs from outside, each once; a MatMul that only the group reads is computed
    // into the output first (its product is register 0).
    std::vector<Edge> outside;
    std::optional<std::size_t> producer;
    for (auto m : members)
      for (const auto& e : nodes[m]->inputs) {
        if (is_member(e.node) || std::find(outside.begin(), outside.end(), e) != outside.end()) continue;
        const Node& q = *nodes[e.node];
        // A Conv2D joins on host memory only (no GPU chain kernel runs after a convolution).
        const bool gemm_producer = q.type() == "MatMul" && (placement[root]->host_memory() || gpu_chain);
        const bool conv_producer = q.type() == "Conv2D" && placement[root]->host_memory();
        if (!producer && (gemm_producer || conv_producer) && q.kind == NodeKind::op && q.run && !grouped[e.node] &&
            !pinned[e.node] && readers[e.node] == 1 && placement[e.node] == placement[root] &&
            q.control_inputs.empty() && q.inputs.size() == 2 && q.outputs.size() == 1 && q.outputs[0].shape == s &&
            q.outputs[0].dtype == dtype) {
          producer = e.node;
          outside.insert(outside.begin(), e);
        } else {
          outside.push_back(e);
        }
      }
    std::optional<std::size_t> reducer;
    if (!producer && reduces(root, reader_of[root])) reducer = reader_of[root];
    if ((members.size() < 2 && !producer && !reducer) || outside.size() + members.size() > FusedKernel::kMaxRegisters)
      continue;
    if (producer) grouped[*producer] = true;

    FusedKernel kernel;
    kernel.dtype = dtype;
    kernel.shape = s;
    const ops::OpInfo& fused_op = producer
                                      ? (nodes[*producer]->type() == "Conv2D" ? fused_ops::Conv2D : fused_ops::MatMul)
                                  : reducer ? fused_ops::Reduction
                                            : fused_ops::Elementwise;
    kernel.op = std::string(fused_op.name);
    const Node& replaced = *nodes[reducer.value_or(root)];  // a reduction's node holds the group
    Node fused;
    fused.name = replaced.name;
    fused.op = &fused_op;
    fused.requested = replaced.requested;
    fused.kernel = replaced.kernel;
    fused.outputs = replaced.outputs;
    if (reducer) {
      kernel.reduction = replaced.fusion.row_reduction;
      kernel.reduced_shape = replaced.outputs[0].shape;
    }
    if (producer) {
      kernel.producer = nodes[*producer]->run;
      fused.inputs = nodes[*producer]->inputs;
    }
    for (std::size_t k = 0; k < outside.size(); ++k) {
      kernel.inputs.push_back(*optimizer_detail::fused_input(shape_of(outside[k]), s));
      if (k > 0 || !producer) fused.inputs.push_back(outside[k]);
    }
    const auto first_result = static_cast<int>(outside.size());
    for (auto m : members) {
      const Node& node = *nodes[m];
      FusedStep step{node.fusion.pointwise.block, node.fusion.pointwise.arity, {}, -1};
      if (!placement[root]->host_memory())
        step.code = static_cast<std::int16_t>(ops::fused_chain::code_of(node.type(), node.outputs[0].dtype));
      for (std::size_t a = 0; a < node.inputs.size() && a < 2; ++a) {
        const Edge& e = node.inputs[a];
        step.args[a] = is_member(e.node)
                           ? first_result + static_cast<int>(member_of(e.node))
                           : static_cast<int>(std::find(outside.begin(), outside.end(), e) - outside.begin());
      }
      kernel.steps.push_back(step);
    }
    if (producer && !placement[root]->host_memory())
      kernel.epilogue = gemm_epilogue(kernel, nodes[*producer]->fusion.gemm).value_or(FusedKernel::GemmEpilogue{});
    fused.run = std::move(kernel);
    out[reducer.value_or(root)] = std::make_shared<const Node>(std::move(fused));
    changed = true;
  }
  return changed;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph

namespace devtensor::config::optimizer {

/// TensorFlow's tf.config.optimizer.set_experimental_options: applies to graphs placed afterwards.
inline void set_experimental_options(const graph::OptimizerOptions& options) noexcept {
  graph::detail::constant_folding.store(options.constant_folding);
  graph::detail::arithmetic_optimization.store(options.arithmetic_optimization);
  graph::detail::dependency_optimization.store(options.dependency_optimization);
  graph::detail::remapping.store(options.remapping);
}
/// TensorFlow's tf.config.optimizer.get_experimental_options.
[[nodiscard]] inline graph::OptimizerOptions get_experimental_options() noexcept {
  return {graph::detail::constant_folding.load(), graph::detail::arithmetic_optimization.load(),
          graph::detail::dependency_optimization.load(), graph::detail::remapping.load()};
}

}  // namespace devtensor::config::optimizer
