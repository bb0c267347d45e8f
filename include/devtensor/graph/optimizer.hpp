#pragma once
/// @file optimizer.hpp
/// @brief Rewrites of a placed graph before it runs (TensorFlow's grappler, SPEC 10.5): chains of
/// elementwise ops fused into one pass over memory, and a MatMul fused with the elementwise ops
/// that read its product (its epilogue: bias, activation), on devices whose buffers are host
/// memory. The options are TensorFlow's names (tf.config.optimizer.set_experimental_options).
///
/// Note [Fused elementwise chains]
/// A group is an elementwise node (its root) and the elementwise producers whose only reader is in
/// the group, all on one device, of one element type and of the root's fully defined shape S. Its
/// inputs from outside have S's elements, one value, or S's trailing dimensions (a bias). The
/// fused node runs the group's scalar functions block by block (kBlock elements): a block's values
/// stay in cache-sized registers between the ops, so the chain reads its inputs and writes its
/// result once instead of once per op. A MatMul whose only reader is the group joins it: the
/// product is written to the fused node's output and the chain runs over it there, block by
/// block (TensorFlow's _FusedMatMul with BiasAdd and Relu). Every op applies the same scalar
/// function to the same values as the unfused graph, so results are bitwise equal.
/// A run under a GradientTape runs the unfused graph, whose ops the tape records (executor.hpp).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// Which rewrites graphs get before they first run (TensorFlow's grappler options, by its names).
struct OptimizerOptions {
  /// Fusion (grappler's remapper): elementwise chains into one pass, MatMul with its epilogue.
  bool remapping = true;
};

namespace detail {
inline std::atomic<bool> remapping{true};
}  // namespace detail

/// The nodes `fetches` and `targets` need when `feeds` are given: reverse-reachable from them
/// through inputs and control inputs, stopping at fed outputs.
std::vector<bool> needed_nodes(const std::vector<std::shared_ptr<const Node>>& nodes, const std::vector<Edge>& fetches,
                               const std::vector<Edge>& feeds, std::vector<std::size_t> targets);

/// `nodes` rewritten as `options` allows (Note [Fused elementwise chains]): each fused group's root
/// replaced by the fused node (same position, name and device; op `_FusedElementwise` or
/// `_FusedMatMul`), the group's other nodes left without readers. Empty when nothing changed.
std::vector<std::shared_ptr<const Node>> optimize(const std::vector<std::shared_ptr<const Node>>& nodes,
                                                  const Placement& placement, const std::vector<Edge>& fetches,
                                                  const std::vector<Edge>& feeds, const std::vector<std::size_t>& targets,
                                                  const OptimizerOptions& options);

/// How a fused node reads an input from outside its group.
struct FusedInput {
  enum class Kind : unsigned char { full, scalar, suffix } kind = Kind::full;
  std::int64_t period = 0;  // suffix: the input's elements, repeated along S
};

/// One op of a fused group: its scalar function over registers (the group's inputs first, then
/// each op's result).
struct FusedStep {
  Pointwise::Block block = nullptr;
  int arity = 0;
  std::array<int, 2> args{};
};

/// The kernel of a fused node (Note [Fused elementwise chains]).
class FusedKernel {
 public:
  static constexpr std::int64_t kBlock = 256;       // elements a register holds
  static constexpr std::size_t kMaxRegisters = 32;  // inputs and steps of one group

  NodeKernel producer;               // a MatMul's kernel (its inputs are the node's first two), or empty
  std::vector<FusedInput> inputs;    // registers 0..: with a producer, register 0 is its product
  std::vector<FusedStep> steps;      // step j's result is register inputs.size() + j; the last is the output
  DType dtype = DType::DT_FLOAT;
  Shape shape;                       // S
  std::string op;

  void operator()(const RunContext& context, NodeInputs in, std::span<AnyTensor> out) const;

 private:
  void run_blocks(const std::byte* const* sources, std::byte* output, std::int64_t begin, std::int64_t end) const;
};

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

}  // namespace optimizer_detail

DEVTENSOR_DEFINITION std::vector<std::shared_ptr<const Node>> optimize(
    const std::vector<std::shared_ptr<const Node>>& nodes, const Placement& placement, const std::vector<Edge>& fetches,
    const std::vector<Edge>& feeds, const std::vector<std::size_t>& targets, const OptimizerOptions& options) {
  if (!options.remapping) return {};
  const std::size_t count = nodes.size();
  const auto needed = needed_nodes(nodes, fetches, feeds, targets);
  std::vector<int> readers(count, 0);
  std::vector<bool> pinned(count, false);  // its value must exist: fetched, fed, or a control input
  for (std::size_t i = 0; i < count; ++i) {
    if (!needed[i]) continue;
    for (const auto& e : nodes[i]->inputs) ++readers[e.node];
    for (auto c : nodes[i]->control_inputs) pinned[c] = true;
  }
  for (const auto& f : fetches) pinned[f.node] = true;
  for (const auto& f : feeds) pinned[f.node] = true;
  const auto shape_of = [&](const Edge& e) -> const Shape& { return nodes[e.node]->outputs.at(e.output).shape; };
  // An elementwise node a fused kernel can run: on host memory, fully defined, its inputs readable.
  const auto fusable = [&](std::size_t i) {
    const Node& node = *nodes[i];
    if (!needed[i] || node.kind != NodeKind::op || node.pointwise.arity == 0 || !node.run || node.stateful ||
        !node.control_inputs.empty() || node.outputs.size() != 1 || placement.at(i) == nullptr ||
        !placement[i]->host_memory())
      return false;
    const Shape& s = node.outputs[0].shape;
    if (!s.is_fully_defined() || s.num_elements() <= 0) return false;
    return std::all_of(node.inputs.begin(), node.inputs.end(), [&](const Edge& e) {
      return nodes[e.node]->outputs.at(e.output).dtype == node.outputs[0].dtype &&
             optimizer_detail::fused_input(shape_of(e), s).has_value();
    });
  };

  std::vector<std::shared_ptr<const Node>> out = nodes;
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
    const auto member_of = [&](std::size_t n) { return std::find(members.begin(), members.end(), n) - members.begin(); };
    const auto is_member = [&](std::size_t n) { return std::binary_search(members.begin(), members.end(), n); };

    // The group's inputs from outside, each once; a MatMul that only the group reads is computed
    // into the output first (its product is register 0).
    std::vector<Edge> outside;
    std::optional<std::size_t> producer;
    for (auto m : members)
      for (const auto& e : nodes[m]->inputs) {
        if (is_member(e.node) || std::find(outside.begin(), outside.end(), e) != outside.end()) continue;
        const Node& q = *nodes[e.node];
        if (!producer && q.op == "MatMul" && q.kind == NodeKind::op && q.run && !grouped[e.node] && !pinned[e.node] &&
            readers[e.node] == 1 && placement[e.node] == placement[root] && q.control_inputs.empty() &&
            q.inputs.size() == 2 && q.outputs.size() == 1 && q.outputs[0].shape == s && q.outputs[0].dtype == dtype) {
          producer = e.node;
          outside.insert(outside.begin(), e);
        } else {
          outside.push_back(e);
        }
      }
    if ((members.size() < 2 && !producer) || outside.size() + members.size() > FusedKernel::kMaxRegisters) continue;
    if (producer) grouped[*producer] = true;

    FusedKernel kernel;
    kernel.dtype = dtype;
    kernel.shape = s;
    kernel.op = producer ? "_FusedMatMul" : "_FusedElementwise";
    Node fused;
    fused.name = top.name;
    fused.op = kernel.op;
    fused.requested = top.requested;
    fused.kernel = top.kernel;
    fused.outputs = top.outputs;
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
      FusedStep step{node.pointwise.block, node.pointwise.arity, {}};
      for (std::size_t a = 0; a < node.inputs.size() && a < 2; ++a) {
        const Edge& e = node.inputs[a];
        step.args[a] = is_member(e.node) ? first_result + static_cast<int>(member_of(e.node))
                                         : static_cast<int>(std::find(outside.begin(), outside.end(), e) - outside.begin());
      }
      kernel.steps.push_back(step);
    }
    fused.run = std::move(kernel);
    out[root] = std::make_shared<const Node>(std::move(fused));
    changed = true;
  }
  if (!changed) return {};
  return out;
}

DEVTENSOR_DEFINITION void FusedKernel::operator()(const RunContext& context, NodeInputs in,
                                                  std::span<AnyTensor> out) const {
  const std::int64_t n = shape.num_elements();
  const std::size_t width = dtype_size(dtype);
  std::array<const std::byte*, kMaxRegisters> sources{};
  std::size_t first = 0;  // the node's first input that is a register
  if (producer) {
    // The product goes to the output slot (reusing the last run's buffer when nobody holds it);
    // the chain then runs over it there.
    const AnyTensor* operands[2] = {&in[0], &in[1]};
    producer(context, NodeInputs(operands, 2), out.first(1));
    first = 2;
  } else if (!reusable(out[0], dtype, shape, context.device)) {
    out[0] = AnyTensor(next_tensor_id(), dtype, shape,
                       allocate_storage(context.device, static_cast<std::size_t>(n) * width, shape, dtype_string(dtype), op));
  }
  if (!out[0].defined() || out[0].storage->bytes != static_cast<std::size_t>(n) * width)
    throw InternalError(op + " " + out[0].shape.to_string() + ": its output must have shape " + shape.to_string());
  for (std::size_t k = producer ? 1 : 0; k < inputs.size(); ++k) {
    const AnyTensor& value = in[first + k - (producer ? 1 : 0)];
    const std::int64_t expected = inputs[k].kind == FusedInput::Kind::full ? n : inputs[k].period;
    if (value.shape.num_elements() != expected)
      throw InternalError(op + ": input " + value.shape.to_string() + " does not fit " + shape.to_string());
    sources[k] = static_cast<const std::byte*>(value.storage->data);
  }
  auto* output = static_cast<std::byte*>(out[0].storage->data);
  if (producer) sources[0] = output;
  backend::cpu::parallel_for(n, std::int64_t{1} << 18, [&](std::int64_t begin, std::int64_t end) {
    run_blocks(sources.data(), output, begin, end);
  });
}

DEVTENSOR_DEFINITION void FusedKernel::run_blocks(const std::byte* const* sources, std::byte* output, std::int64_t begin,
                                                  std::int64_t end) const {
  const std::size_t width = dtype_size(dtype);
  const std::size_t registers = inputs.size() + steps.size();
  const std::size_t register_bytes = static_cast<std::size_t>(kBlock) * width;
  thread_local std::vector<std::byte> scratch;  // the registers, kept per thread
  if (scratch.size() < registers * register_bytes) scratch.resize(registers * register_bytes);
  const auto reg = [&](std::size_t r) { return scratch.data() + r * register_bytes; };
  std::array<const void*, kMaxRegisters> at{};
  const std::int64_t first_block = std::min(kBlock, end - begin);
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].kind == FusedInput::Kind::scalar)  // the value repeated, once
      for (std::size_t i = 0; i < static_cast<std::size_t>(first_block); ++i) std::memcpy(reg(k) + i * width, sources[k], width);
  for (std::int64_t start = begin; start < end; start += kBlock) {
    const std::int64_t len = std::min(kBlock, end - start);
    const std::size_t offset = static_cast<std::size_t>(start) * width;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      switch (inputs[k].kind) {
        case FusedInput::Kind::full:
          // The product is staged: the last step writes where it reads.
          if (k == 0 && producer) {
            std::memcpy(reg(0), sources[0] + offset, static_cast<std::size_t>(len) * width);
            at[0] = reg(0);
          } else {
            at[k] = sources[k] + offset;
          }
          break;
        case FusedInput::Kind::scalar:
          at[k] = reg(k);
          break;
        case FusedInput::Kind::suffix: {  // the period's elements from start % period on
          const std::int64_t period = inputs[k].period;
          std::int64_t phase = start % period;
          for (std::int64_t done = 0; done < len;) {
            const std::int64_t take = std::min(period - phase, len - done);
            std::memcpy(reg(k) + static_cast<std::size_t>(done) * width, sources[k] + static_cast<std::size_t>(phase) * width,
                        static_cast<std::size_t>(take) * width);
            done += take;
            phase = 0;
          }
          at[k] = reg(k);
          break;
        }
      }
    }
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const FusedStep& step = steps[j];
      const void* operands[2] = {at[static_cast<std::size_t>(step.args[0])],
                                 step.arity > 1 ? at[static_cast<std::size_t>(step.args[1])] : nullptr};
      void* result = j + 1 == steps.size() ? static_cast<void*>(output + offset) : reg(inputs.size() + j);
      step.block(operands, result, static_cast<std::size_t>(len));
      at[inputs.size() + j] = result;
    }
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph

namespace devtensor::config::optimizer {

/// TensorFlow's tf.config.optimizer.set_experimental_options: applies to graphs placed afterwards.
inline void set_experimental_options(const graph::OptimizerOptions& options) noexcept {
  graph::detail::remapping.store(options.remapping);
}
/// TensorFlow's tf.config.optimizer.get_experimental_options.
[[nodiscard]] inline graph::OptimizerOptions get_experimental_options() noexcept {
  return {graph::detail::remapping.load()};
}

}  // namespace devtensor::config::optimizer
