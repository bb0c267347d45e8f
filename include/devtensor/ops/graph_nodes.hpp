#pragma once
/// @file graph_nodes.hpp
/// @brief Adding nodes to a graph (ops/graph.hpp): op nodes, which run_op makes (their
/// description, type-erased kernel and the state they use: NodeSpec), Const and Placeholder nodes,
/// and the symbolic tensors that stand for their outputs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// The name a node gets: `requested` (an explicit name=; one ending in '/' exactly, without
/// it) or else `default_name`, made unique under the current scope.
std::string node_name(Graph& graph, std::string_view requested, std::string_view default_name);

/// What run_op hands a graph for a new op node, besides its name and inputs: what the op is (its
/// description and traits), its outputs, its kernel, and what the node must know beyond its op's
/// traits.
struct NodeSpec {
  const ops::OpInfo* op = nullptr;
  std::vector<OutputSpec> outputs{};
  NodeKernel run{};
  const KernelSupport* kernel = nullptr;  // the device types that run it (the registry's ops)
  std::optional<DeviceSpec> device{};     // placed exactly there (where a variable lives), not the scopes'
  std::vector<ResourceUse> resources{};   // the state it reads or changes
  FusionFacts fusion{};
};

/// Adds an op node named `name` (given, or the op's default; made unique) with the given inputs
/// (symbolic tensors of `graph`, or tensors with values, which are captured) and returns its
/// outputs as symbolic tensors. Only run_op calls it: every op node is made on run_op's path.
/// @throws InvalidArgumentError for a symbolic input of another graph.
std::vector<AnyTensor> add_op(Graph& graph, std::string_view name, std::span<const AnyTensor> inputs, NodeSpec spec);

/// Adds a Const node holding `bytes` (host values of `dtype`, row-major; one value fills the shape,
/// expanded when the node runs, as TensorFlow's TensorProto keeps one value) and returns its
/// output. @throws InvalidArgumentError for a shape of more than 2^63 - 1 bytes.
AnyTensor add_constant(Graph& graph, std::string_view name, DType dtype, const Shape& shape,
                       std::vector<std::byte> bytes);

/// Adds a Placeholder node (`_Arg` for a traced function's argument) and returns its output.
AnyTensor add_placeholder(Graph& graph, std::string_view name, DType dtype, const Shape& shape,
                          const ops::OpInfo& op = graph_ops::Placeholder);

/// For ops whose shape functions need every dimension (not marked `handles_unknown_dims`): `shape`
/// (`what`: "input 0", "output") must be fully defined.
/// @throws InvalidArgumentError naming the op and the shape, and what to do.
void require_fully_defined(std::string_view op, const Shape& shape, std::string_view what);

/// TensorFlow's tf.init_scope: ops run eagerly on this thread until the scope ends, even while a
/// graph is being built (how a variable created in a trace is made).
class [[nodiscard]] InitScope {
 public:
  InitScope() noexcept : previous_(detail::eager_forced()) { detail::eager_forced() = true; }
  InitScope(const InitScope&) = delete;
  InitScope& operator=(const InitScope&) = delete;
  ~InitScope() { detail::eager_forced() = previous_; }

 private:
  bool previous_;
};

namespace detail {
/// Runs the nodes symbolic tensor `value` of the current graph needs, once, and returns its value:
/// a variable created in a trace takes its initial value so (TensorFlow lifts initializers out of
/// the function). Set by graph/function.hpp; nullptr in a program without traced functions.
inline AnyTensor (*evaluate_now)(const AnyTensor& value) = nullptr;
/// Variables this thread created while building a graph (a trace that creates some traces again
/// without, as TensorFlow's tf.function), and whether creating one is refused now.
inline int& variables_created() noexcept { return this_thread_state().variables_created; }
inline bool& variable_creation_refused() noexcept { return this_thread_state().variable_creation_refused; }
}  // namespace detail

/// A variable being created while `graph::building()`: counts it, refuses it on a trace that may
/// not create variables (TensorFlow's text), and returns its initial value with values (evaluated
/// now when symbolic). @throws InvalidArgumentError.
AnyTensor variable_initial_value(const AnyTensor& initial);

/// A variable being created: while a graph is being built on this thread, its initial value as
/// variable_initial_value gives it (the variable is then made eagerly, TensorFlow's
/// tf.init_scope); nothing in eager execution. @throws InvalidArgumentError as that.
inline std::optional<AnyTensor> lifted_initial_value(const AnyTensor& initial) {
  if (!building()) [[likely]]
    return std::nullopt;
  return variable_initial_value(initial);
}

/// How many variables this thread has created while building graphs.
inline int variables_created_on_this_thread() noexcept { return detail::variables_created(); }
/// While it lives, creating a variable in a graph on this thread is refused (a retrace).
class [[nodiscard]] RefuseVariableCreation {
 public:
  RefuseVariableCreation() noexcept : previous_(detail::variable_creation_refused()) {
    detail::variable_creation_refused() = true;
  }
  RefuseVariableCreation(const RefuseVariableCreation&) = delete;
  RefuseVariableCreation& operator=(const RefuseVariableCreation&) = delete;
  ~RefuseVariableCreation() { detail::variable_creation_refused() = previous_; }

 private:
  bool previous_;
};
/// Installs what evaluates a symbolic initial value (graph/function.hpp does).
inline bool set_evaluate_now(AnyTensor (*evaluate)(const AnyTensor&)) noexcept {
  detail::evaluate_now = evaluate;
  return true;
}

/// The symbolic tensor for output `output` of `node` in `graph`.
AnyTensor symbolic_output(const Graph& graph, std::size_t node_index, const Node& node, std::size_t output);

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION std::string node_name(Graph& graph, std::string_view requested, std::string_view default_name) {
  if (!requested.empty() && requested.back() == '/') return std::string(requested.substr(0, requested.size() - 1));
  return graph.unique_name(requested.empty() ? default_name : requested);
}

DEVTENSOR_DEFINITION void require_fully_defined(std::string_view op, const Shape& shape, std::string_view what) {
  if (shape.is_fully_defined()) return;
  throw InvalidArgumentError(
      std::string(op) + " needs fully defined shapes in a graph, but its " + std::string(what) + " has shape " +
      shape.to_python() +
      ". Give the function fully defined shapes (an input_signature or placeholder without None, "
      "or no reduce_retracing) [Op:" +
      std::string(op) + "]");
}

DEVTENSOR_DEFINITION AnyTensor variable_initial_value(const AnyTensor& initial) {
  if (detail::variable_creation_refused())
    throw InvalidArgumentError(
        "tf.function only supports singleton tf.Variables created on the first call. Make sure the tf.Variable is only "
        "created once or created outside tf.function. See "
        "https://www.tensorflow.org/guide/function#creating_tfvariables "
        "for more information.");
  ++detail::variables_created();
  if (!initial.storage->symbolic) return initial;
  if (!detail::evaluate_now)
    throw InvalidArgumentError(
        "A variable created while a graph is built needs its initial value's nodes run now: "
        "include devtensor/graph/function.hpp (devtensor.hpp does)");
  return detail::evaluate_now(initial);
}

DEVTENSOR_DEFINITION AnyTensor symbolic_output(const Graph& graph, std::size_t node_index, const Node& node,
                                               std::size_t output) {
  const auto& spec = node.outputs.at(output);
  return AnyTensor(next_tensor_id(), spec.dtype, spec.shape,
                   symbolic_storage({graph.id(), node_index, output, node.output_name(output),
                                     node.requested.is_empty() ? std::string() : node.requested.to_string()}));
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> add_op(Graph& graph, std::string_view name,
                                                   std::span<const AnyTensor> inputs, NodeSpec spec) {
  Node node;
  node.op = spec.op;
  node.kernel = spec.kernel;
  node.requested = spec.device ? std::move(*spec.device) : current_graph_device_spec();
  node.outputs = std::move(spec.outputs);
  node.run = std::move(spec.run);
  node.resources = std::move(spec.resources);
  node.fusion = spec.fusion;
  node.inputs.reserve(inputs.size());
  for (const auto& in : inputs) node.inputs.push_back(graph.input_edge(in, spec.op->name));
  node.name = node_name(graph, name, spec.op->name);
  const auto n = node.outputs.size();
  const auto index = graph.add(std::move(node));
  const auto added = graph.node(index);
  std::vector<AnyTensor> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(symbolic_output(graph, index, *added, i));
  return out;
}

DEVTENSOR_DEFINITION AnyTensor add_constant(Graph& graph, std::string_view name, DType dtype, const Shape& shape,
                                            std::vector<std::byte> bytes) {
  Node node;
  node.name = node_name(graph, name, "Const");
  node.op = &graph_ops::Const;
  node.kind = NodeKind::constant;
  node.requested = current_graph_device_spec();
  node.outputs = {{dtype, shape}};
  const std::size_t total = checked_byte_count(shape.num_elements(), dtype_size(dtype), "Const");
  node.literal = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  node.run = [dtype, shape, total, literal = node.literal](const RunContext& context, NodeInputs,
                                                           std::span<AnyTensor> out) {
    const std::vector<std::byte>& values = *literal;
    // The device's allocator first: its limit, not the host's memory, bounds a large splat.
    auto storage = allocate_storage(context.device, total, shape, dtype_string(dtype), "Const");
    if (values.size() == total) {
      copy_bytes(storage->data, context.device, values.data(), host_buffer_device(), total);
    } else if (total > 0) {  // one value: copied in chunks of up to 1 MiB of repeats
      std::vector<std::byte> chunk;
      const std::size_t width = values.size();
      chunk.reserve(std::min<std::size_t>(total, std::size_t{1} << 20) / width * width);
      while (chunk.size() + width <= chunk.capacity()) chunk.insert(chunk.end(), values.begin(), values.end());
      for (std::size_t at = 0; at < total; at += chunk.size())
        copy_bytes(static_cast<std::byte*>(storage->data) + at, context.device, chunk.data(), host_buffer_device(),
                   std::min(chunk.size(), total - at));
    }
    out[0] = AnyTensor(next_tensor_id(), dtype, shape, std::move(storage));
  };
  const auto index = graph.add(std::move(node));
  return symbolic_output(graph, index, *graph.node(index), 0);
}

DEVTENSOR_DEFINITION AnyTensor add_placeholder(Graph& graph, std::string_view name, DType dtype, const Shape& shape,
                                               const ops::OpInfo& op) {
  Node node;
  node.name = node_name(graph, name, op.name);
  node.op = &op;
  node.kind = NodeKind::placeholder;
  node.requested = current_graph_device_spec();
  node.outputs = {{dtype, shape}};
  const auto index = graph.add(std::move(node));
  return symbolic_output(graph, index, *graph.node(index), 0);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
