#pragma once
/// @file variables.hpp
/// @brief TensorFlow 1's resource variables in graphs (tf.compat.v1.Variable,
/// global_variables_initializer): nodes whose values live in the running Session.
///
/// A variable is a handle node (VarHandleOp) and the nodes that read and assign it, placed
/// together (a colocation group). Its value belongs to the Session that runs the graph,
/// as in TensorFlow 1, and does not exist until the session runs its initializer: reading it
/// before is FailedPreconditionError "Could not find variable <name> ... In TF1, it can also mean
/// the variable is uninitialized" (TensorFlow 2.21's text). Node names are TensorFlow 2.21's: `v`,
/// `v/Initializer/initial_value`, `v/IsInitialized/VarIsInitializedOp`, `v/Assign`,
/// `v/Read/ReadVariableOp`, `ReadVariableOp` for each later read, `init` for the initializer.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::compat::v1 {

namespace variable_detail {

/// The graph being built, or why a variable cannot be made.
graph::Graph& graph_for(std::string_view what);

/// Adds a node of a variable's colocation group and returns its index.
std::size_t add_variable_node(graph::Graph& graph, std::string name, const ops::OpInfo& op,
                              std::vector<graph::Edge> inputs, std::vector<graph::OutputSpec> outputs,
                              graph::NodeKernel run, std::optional<std::size_t> handle,
                              std::vector<graph::ResourceUse> resources = {});

/// The state of the variable whose handle is node `handle`, as nodes name it (graph::ResourceUse):
/// the handle node itself, which the graph keeps.
inline const void* state_of(const graph::Graph& graph, std::size_t handle) { return graph.node(handle).get(); }

/// The descriptions of a session's variable nodes: its handle, and the reads and assignments that
/// find its value in the session's resources (placed with the handle, run on the caller's thread).
inline constexpr ops::OpInfo VarHandleOp{"VarHandleOp", {.any_thread = false}};
inline constexpr ops::OpInfo VarIsInitializedOp{"VarIsInitializedOp", {.any_thread = false}};
inline constexpr ops::OpInfo ReadVariableOp{"ReadVariableOp", {.any_thread = false}};
inline constexpr ops::OpInfo AssignVariableOp{"AssignVariableOp", {.stateful = true, .any_thread = false}};

/// The nodes of a new variable (handle, IsInitialized, Assign, Read) around `initial`.
/// @returns {handle node, assign node, read output}.
struct VariableNodes {
  std::size_t handle = 0;
  std::size_t initializer = 0;
  AnyTensor snapshot;
};
VariableNodes make_variable(graph::Graph& graph, const std::string& scope, const AnyTensor& initial);

/// A ReadVariableOp of the variable whose handle is node `handle` named `shared_name`.
AnyTensor read(graph::Graph& graph, std::size_t handle, const std::string& shared_name, DType dtype,
               const Shape& shape);

/// An AssignVariableOp of `value` to the variable.
graph::Operation assign(graph::Graph& graph, std::size_t handle, const std::string& shared_name, const AnyTensor& value,
                        std::string_view name);

}  // namespace variable_detail

/// tf.compat.v1.Variable: a resource variable of a graph. Build it while its graph is current.
template <Element T>
class Variable {
 public:
  /// From host values of `shape` (one value fills it): the Const `<name>/Initializer/initial_value`.
  /// @throws FailedPreconditionError outside a graph; InvalidArgumentError as constant().
  Variable(const std::vector<T>& values, const Shape& shape, const OpOptions& options = {})
      : graph_(&variable_detail::graph_for("compat::v1::Variable")) {
    graph::NameScope scope(options.name.empty() ? "Variable" : options.name);
    AnyTensor initial;
    {
      graph::NameScope initializer("Initializer");
      initial = constant<T>(values, shape, {.name = "initial_value"});
    }
    init(scope.name(), initial);
  }
  /// From a tensor: symbolic (of this graph) or with values (captured).
  explicit Variable(const Tensor<T>& initial_value, const OpOptions& options = {})
      : graph_(&variable_detail::graph_for("compat::v1::Variable")) {
    if (!initial_value.defined())
      throw InvalidArgumentError("compat::v1::Variable: the initial value is an undefined tensor");
    graph::NameScope scope(options.name.empty() ? "Variable" : options.name);
    init(scope.name(), initial_value);
  }

  /// The variable's name, TensorFlow's `v:0`.
  [[nodiscard]] std::string name() const { return shared_name_ + ":0"; }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  /// Runs the assignment of the initial value (`v/Assign`): TensorFlow's `v.initializer`.
  [[nodiscard]] graph::Operation initializer() const { return {graph_->id(), initializer_, shared_name_ + "/Assign"}; }
  /// The read made with the variable (`v/Read/ReadVariableOp`).
  [[nodiscard]] const Tensor<T>& value() const noexcept { return snapshot_; }
  /// A new read (`ReadVariableOp`): its value when the session runs it, after the assignments it
  /// depends on.
  [[nodiscard]] Tensor<T> read_value() const {
    return variable_detail::read(*graph_, handle_, shared_name_, dtype_enum<T>(), shape_).template as<T>();
  }
  /// An assignment (`AssignVariableOp`) to run as a Session target.
  graph::Operation assign(const Tensor<T>& value, const OpOptions& options = {}) const {
    if (value.shape() != shape_)
      throw InvalidArgumentError("Cannot assign a tensor of shape " + value.shape().to_string() + " to variable " +
                                 name() + " of shape " + shape_.to_string());
    return variable_detail::assign(*graph_, handle_, shared_name_, value, options.name);
  }

 private:
  graph::Graph* graph_;
  std::string shared_name_;
  Shape shape_;
  std::size_t handle_ = 0;
  std::size_t initializer_ = 0;
  Tensor<T> snapshot_;

  void init(const std::string& scope, const AnyTensor& initial) {
    shared_name_ = scope;
    shape_ = initial.shape;
    const auto nodes = variable_detail::make_variable(*graph_, scope, initial);
    handle_ = nodes.handle;
    initializer_ = nodes.initializer;
    snapshot_ = nodes.snapshot.template as<T>();
  }
};

/// tf.compat.v1.global_variables_initializer(): a NoOp `init` that runs every variable's
/// initializer of the current graph.
/// @throws FailedPreconditionError outside a graph.
graph::Operation global_variables_initializer();

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION graph::Graph& variable_detail::graph_for(std::string_view what) {
  auto* graph = graph::building();
  if (!graph)
    throw FailedPreconditionError(std::string(what) +
                                  " builds graph nodes: make a graph current first (compat::v1::Graph::as_default, or "
                                  "compat::v1::disable_eager_execution). Eager programs use devtensor::Variable.");
  return *graph;
}

DEVTENSOR_DEFINITION std::size_t variable_detail::add_variable_node(
    graph::Graph& graph, std::string name, const ops::OpInfo& op, std::vector<graph::Edge> inputs,
    std::vector<graph::OutputSpec> outputs, graph::NodeKernel run, std::optional<std::size_t> handle,
    std::vector<graph::ResourceUse> resources) {
  graph::Node node;
  node.name = std::move(name);
  node.op = &op;
  node.resources = std::move(resources);
  node.inputs = std::move(inputs);
  node.colocated_with = handle;
  node.requested = current_graph_device_spec();
  node.outputs = std::move(outputs);
  node.run = std::move(run);
  return graph.add(std::move(node));
}

namespace variable_detail {
DEVTENSOR_DEFINITION graph::NodeKernel read_kernel(std::string shared_name, std::string node_name) {
  return [shared_name, node_name](const graph::RunContext& context, graph::NodeInputs, std::span<AnyTensor> out) {
    auto value = context.resources ? context.resources->find(shared_name) : std::nullopt;
    if (!value)
      throw FailedPreconditionError(
          "Could not find variable " + shared_name +
          ". This could mean that the variable has been deleted. In TF1, it can also mean the "
          "variable is uninitialized. Debug info: container=localhost, status error "
          "message=Container localhost does not exist. (Could not find resource: localhost/" +
          shared_name + ")\n\t [[{{node " + node_name + "}}]]");
    out[0] = AnyTensor(next_tensor_id(), value->dtype, value->shape, value->storage);
  };
}

DEVTENSOR_DEFINITION graph::NodeKernel assign_kernel(std::string shared_name) {
  return [shared_name](const graph::RunContext& context, graph::NodeInputs in, std::span<AnyTensor>) {
    if (!context.resources) throw InternalError("AssignVariableOp ran without a session's variables");
    context.resources->assign(shared_name, in[1]);  // tensors are immutable: sharing is a copy
  };
}
}  // namespace variable_detail

DEVTENSOR_DEFINITION variable_detail::VariableNodes variable_detail::make_variable(graph::Graph& graph,
                                                                                   const std::string& scope,
                                                                                   const AnyTensor& initial) {
  const graph::Edge value = graph.input_edge(initial, "AssignVariableOp");
  VariableNodes out;
  out.handle = add_variable_node(
      graph, scope, VarHandleOp, {}, {{DType::DT_INT64, Shape{}}},
      [](const graph::RunContext&, graph::NodeInputs, std::span<AnyTensor>) {},  // the handle: no tensor
      std::nullopt);
  {
    graph::NameScope is_initialized("IsInitialized");
    const std::string shared = scope;
    add_variable_node(graph, graph.unique_name("VarIsInitializedOp"), VarIsInitializedOp, {{out.handle, 0}},
                      {{DType::DT_BOOL, Shape{}}},
                      [shared](const graph::RunContext& context, graph::NodeInputs, std::span<AnyTensor> result) {
                        const bool found = context.resources && context.resources->find(shared).has_value();
                        auto storage = allocate_storage(context.device, 1, Shape{}, "bool", "VarIsInitializedOp");
                        copy_bytes(storage->data, context.device, &found, host_buffer_device(), 1);
                        result[0] = AnyTensor(next_tensor_id(), DType::DT_BOOL, Shape{}, std::move(storage));
                      },
                      out.handle, {{state_of(graph, out.handle), false}});
  }
  out.initializer = add_variable_node(graph, graph.unique_name("Assign"), AssignVariableOp, {{out.handle, 0}, value},
                                      {}, assign_kernel(scope), out.handle, {{state_of(graph, out.handle), true}});
  graph.add_to_collection("variables", out.initializer);
  graph::NameScope read_scope("Read");
  const std::string name = graph.unique_name("ReadVariableOp");
  const auto index = add_variable_node(graph, name, ReadVariableOp, {{out.handle, 0}}, {{initial.dtype, initial.shape}},
                                       read_kernel(scope, name), out.handle, {{state_of(graph, out.handle), false}});
  out.snapshot = graph::symbolic_output(graph, index, *graph.node(index), 0);
  return out;
}

DEVTENSOR_DEFINITION AnyTensor variable_detail::read(graph::Graph& graph, std::size_t handle,
                                                     const std::string& shared_name, DType dtype, const Shape& shape) {
  auto* current = graph::building();
  if (current != &graph)
    throw FailedPreconditionError("Variable " + shared_name +
                                  ":0 is read while its graph is not current: make it current "
                                  "(Graph::as_default) to add the read");
  const std::string name = graph.unique_name("ReadVariableOp");
  const auto index = add_variable_node(graph, name, ReadVariableOp, {{handle, 0}}, {{dtype, shape}},
                                       read_kernel(shared_name, name), handle, {{state_of(graph, handle), false}});
  return graph::symbolic_output(graph, index, *graph.node(index), 0);
}

DEVTENSOR_DEFINITION graph::Operation variable_detail::assign(graph::Graph& graph, std::size_t handle,
                                                              const std::string& shared_name, const AnyTensor& value,
                                                              std::string_view name) {
  if (graph::building() != &graph)
    throw FailedPreconditionError("Variable " + shared_name +
                                  ":0 is assigned while its graph is not current: make it "
                                  "current (Graph::as_default) to add the assignment");
  const graph::Edge edge = graph.input_edge(value, "AssignVariableOp");
  const std::string node_name = graph::node_name(graph, name, "AssignVariableOp");
  const auto index = add_variable_node(graph, node_name, AssignVariableOp, {{handle, 0}, edge}, {},
                                       assign_kernel(shared_name), handle, {{state_of(graph, handle), true}});
  return {graph.id(), index, node_name};
}

DEVTENSOR_DEFINITION graph::Operation global_variables_initializer() {
  auto& graph = variable_detail::graph_for("global_variables_initializer()");
  graph::Node node;
  node.name = graph.unique_name("init");
  node.op = &graph::graph_ops::NoOp;
  node.control_inputs = graph.collection("variables");
  node.requested = current_graph_device_spec();
  node.run = [](const graph::RunContext&, graph::NodeInputs, std::span<AnyTensor>) {};
  const std::string name = node.name;
  const auto index = graph.add(std::move(node));
  return {graph.id(), index, name};
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::compat::v1
