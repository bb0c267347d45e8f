#pragma once
/// @file graph.hpp
/// @brief The graph that ops build instead of running while one is being built (TensorFlow's
/// graph half): nodes with TensorFlow's names, symbolic tensors, name scopes, the thread's
/// current graph.
///
/// While a graph is current on a thread (`GraphScope`, compat::v1::Graph::as_default,
/// compat::v1::disable_eager_execution), run_op does not run an op: it adds a node (op type,
/// a unique name, inputs, the DeviceScope stack's request, the kernel table, the output shapes and
/// a type-erased kernel that runs the op later on the device the graph placer chooses) and returns
/// symbolic tensors (Tensor::symbolic()) that stand for the node's outputs. A tensor with values
/// used by a node is captured as a Const node. ops/graph_nodes.hpp adds nodes; graph/ places and
/// runs graphs.
///
/// Note [Automatic control dependencies]
/// Nodes that read or change state say which (Node::resources: a variable's component, an
/// optimizer's slots, standard output), and Graph::add orders each after the earlier nodes that use
/// the same state, as TensorFlow's automatic control dependencies do in a tf.function: a read after
/// the write before it, a write after that write and every read since, a node of unknown effects
/// (all state) after everything before it and before everything after. Nodes of other state, and
/// reads of the same state, stay unordered, so independent replicas still run at once. The order
/// is the order the program made the nodes in (a MirroredStrategy traces its replicas one after
/// another, as TensorFlow's does). The edges order, they do not pull in: a node runs because its
/// value is needed or because it is stateful (a traced function runs every stateful node).
///
/// Note [Graph mode costs the eager path one load]
/// run_op asks `graph::building()` first. It reads one process-wide counter of the graph scopes
/// open on any thread (plus one while eager execution is disabled); only when it is not zero does
/// it look at the thread's current graph.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/ops/graph_node.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/thread_state.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::graph {

/// A graph: nodes in the order they were made (which is a topological order: a node's inputs
/// exist before it), TensorFlow's unique names and name scopes. Nodes are immutable once added;
/// adding is thread-safe, and readers work on a snapshot.
class DEVTENSOR_EXPORT Graph {
 public:
  Graph() : id_(next_id()) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Process-unique: symbolic tensors name their graph by it.
  [[nodiscard]] std::uint64_t id() const noexcept { return id_; }

  /// The nodes so far.
  [[nodiscard]] std::vector<std::shared_ptr<const Node>> snapshot() const {
    std::lock_guard lock(mutex_);
    return nodes_;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return nodes_.size();
  }
  /// Node `i` (i < size()).
  [[nodiscard]] std::shared_ptr<const Node> node(std::size_t i) const {
    std::lock_guard lock(mutex_);
    return nodes_.at(i);
  }
  /// The node named `name`, or nullptr.
  [[nodiscard]] std::shared_ptr<const Node> find(std::string_view name) const;

  /// TensorFlow's Graph.unique_name: `name` under the current name scope, made unique
  /// case-insensitively with `_1`, `_2`, ... (skipping names taken), and marked as used.
  std::string unique_name(std::string_view name);

  /// The current name scope ("" or "outer/inner").
  [[nodiscard]] std::string name_scope() const;

  /// Adds `node` (its name already unique) and returns its position, ordered after the earlier
  /// nodes that use its resources (Note [Automatic control dependencies]).
  std::size_t add(Node node);

  /// Adds node `index` to collection `name` ("variables": what global_variables_initializer runs).
  void add_to_collection(const std::string& name, std::size_t index) {
    std::lock_guard lock(mutex_);
    collections_[name].push_back(index);
  }
  [[nodiscard]] std::vector<std::size_t> collection(const std::string& name) const {
    std::lock_guard lock(mutex_);
    auto it = collections_.find(name);
    return it == collections_.end() ? std::vector<std::size_t>{} : it->second;
  }

  /// The Const node that holds eager tensor `value` in this graph (one per tensor: TensorFlow's
  /// captures).
  Edge capture(const AnyTensor& value);

  /// Where a node input `t` comes from: its node when it is a symbolic tensor of this graph, a
  /// capture when it has values. @throws InvalidArgumentError for a tensor of another graph.
  Edge input_edge(const AnyTensor& t, std::string_view op);

 private:
  friend class NameScope;
  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> ids{0};
    return ids.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::string unique_name_locked(std::string_view name);

  const std::uint64_t id_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const Node>> nodes_;
  std::unordered_map<std::string, int> names_in_use_;  // lower-cased
  // Each thread's name-scope stack (full names): threads build one graph with their own scopes,
  // as TensorFlow's graph keeps them thread-local.
  std::unordered_map<std::thread::id, std::vector<std::string>> scopes_;
  [[nodiscard]] const std::string* scope_locked() const {
    auto it = scopes_.find(std::this_thread::get_id());
    return it == scopes_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  std::unordered_map<std::uint64_t, Edge> captures_;  // eager tensor id -> its Const node
  // Per resource, the uses a new node must follow (Note [Automatic control dependencies]).
  struct ResourceOrder {
    std::optional<std::size_t> last_write;
    std::vector<std::size_t> reads;  // since the last write
  };
  std::unordered_map<const void*, ResourceOrder> resource_order_;
  std::optional<std::size_t> last_barrier_;  // the latest node that uses all state
  void order_by_resources_locked(Node& node, std::size_t index);
  std::unordered_map<std::string, std::vector<std::size_t>> collections_;
};

/// A node run for its effect (TensorFlow's Operation as a Session::run target).
struct Operation {
  std::uint64_t graph_id = 0;
  std::size_t node = 0;
  std::string name;
};

namespace detail {
/// Graph scopes open on any thread, plus one while eager execution is disabled (Note [Graph mode
/// costs the eager path one load]).
inline constinit std::atomic<int> graph_users{0};
/// The graph this thread builds (the innermost GraphScope's), or nullptr.
inline std::shared_ptr<Graph>& thread_graph() noexcept { return this_thread_state().graph; }
/// The process's default graph while eager execution is disabled (compat::v1), or nullptr.
inline std::shared_ptr<Graph>& process_graph_slot() noexcept {
  static std::shared_ptr<Graph> graph;
  return graph;
}
inline std::mutex& process_graph_mutex() noexcept {
  static std::mutex mutex;
  return mutex;
}
/// True inside an InitScope (ops/graph_nodes.hpp): this thread runs ops eagerly whatever graph is
/// current.
inline bool& eager_forced() noexcept { return this_thread_state().eager_forced; }
Graph* current_slow() noexcept;
}  // namespace detail

/// The process's default graph (TF1 with eager execution disabled): every thread without a
/// GraphScope builds it. `graph` replaces it; nullptr drops it, and ops run eagerly again.
void set_process_graph(std::shared_ptr<Graph> graph);
/// The process's default graph, or nullptr while eager execution is on.
std::shared_ptr<Graph> process_graph();
/// The graph this thread builds: its innermost GraphScope's, else the process's, else nullptr.
std::shared_ptr<Graph> current_graph();

/// The graph being built on this thread, or nullptr (eager execution).
inline Graph* building() noexcept {
  if (detail::graph_users.load(std::memory_order_relaxed) == 0) [[likely]]
    return nullptr;
  return detail::current_slow();
}

/// Makes `graph` the thread's current graph until the scope ends (TensorFlow's
/// `with graph.as_default():`). Scopes nest and must end in reverse order.
class [[nodiscard]] GraphScope {
 public:
  explicit GraphScope(std::shared_ptr<Graph> graph) : previous_(std::move(detail::thread_graph())) {
    if (!graph) throw InvalidArgumentError("GraphScope needs a graph, got nullptr");
    detail::thread_graph() = std::move(graph);
    detail::graph_users.fetch_add(1, std::memory_order_relaxed);
  }
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;
  ~GraphScope() {
    detail::thread_graph() = std::move(previous_);
    detail::graph_users.fetch_sub(1, std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<Graph> previous_;
};

/// TensorFlow's `with tf.name_scope("foo"):` in the current graph: node names made inside start
/// with the scope's unique name ("foo/", then "foo_1/" for the next scope named foo). A name
/// ending in '/' is taken as a full scope name, unchanged. Outside a graph it does nothing.
class [[nodiscard]] NameScope {
 public:
  explicit NameScope(std::string_view name);
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  ~NameScope();
  /// The scope's full name without the trailing '/' ("foo_1"): an op named so takes it exactly.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Whether a graph is being built (else the scope does nothing).
  [[nodiscard]] bool active() const noexcept { return graph_ != nullptr; }

 private:
  Graph* graph_;
  std::string name_;
};

/// A new tensor on `device` with `value`'s elements (any element type).
AnyTensor copy_to(const AnyTensor& value, const Device& device, std::string_view op);

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION void set_process_graph(std::shared_ptr<Graph> graph) {
  std::lock_guard lock(detail::process_graph_mutex());
  auto& slot = detail::process_graph_slot();
  const int change = (graph ? 1 : 0) - (slot ? 1 : 0);
  slot = std::move(graph);
  detail::graph_users.fetch_add(change, std::memory_order_relaxed);
}

DEVTENSOR_DEFINITION std::shared_ptr<Graph> process_graph() {
  std::lock_guard lock(detail::process_graph_mutex());
  return detail::process_graph_slot();
}

DEVTENSOR_DEFINITION std::shared_ptr<Graph> current_graph() {
  if (detail::eager_forced()) return nullptr;
  if (auto& own = detail::thread_graph()) return own;
  return process_graph();
}

DEVTENSOR_DEFINITION Graph* detail::current_slow() noexcept {
  if (eager_forced()) return nullptr;
  if (auto& own = thread_graph()) return own.get();
  std::lock_guard lock(process_graph_mutex());
  return process_graph_slot().get();
}

DEVTENSOR_DEFINITION std::shared_ptr<const Node> Graph::find(std::string_view name) const {
  std::lock_guard lock(mutex_);
  for (const auto& n : nodes_)
    if (n->name == name) return n;
  return nullptr;
}

DEVTENSOR_DEFINITION std::string Graph::unique_name(std::string_view name) {
  std::lock_guard lock(mutex_);
  return unique_name_locked(name);
}

DEVTENSOR_DEFINITION std::string Graph::unique_name_locked(std::string_view base) {
  // TensorFlow's ops.Graph.unique_name, case-insensitive.
  const std::string* scope = scope_locked();
  std::string name = scope ? *scope + "/" + std::string(base) : std::string(base);
  std::string key = name;
  for (auto& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int i = names_in_use_[key]++;
  if (i == 0) return name;
  const std::string base_key = key;
  while (names_in_use_.contains(key)) key = base_key + "_" + std::to_string(i++);
  names_in_use_[key] = 1;
  return name + "_" + std::to_string(i - 1);
}

DEVTENSOR_DEFINITION std::string Graph::name_scope() const {
  std::lock_guard lock(mutex_);
  const std::string* scope = scope_locked();
  return scope ? *scope : std::string();
}

DEVTENSOR_DEFINITION std::size_t Graph::add(Node node) {
  std::lock_guard lock(mutex_);
  const std::size_t index = nodes_.size();
  if (!node.resources.empty()) order_by_resources_locked(node, index);
  nodes_.push_back(std::make_shared<const Node>(std::move(node)));
  return index;
}

DEVTENSOR_DEFINITION void Graph::order_by_resources_locked(Node& node, std::size_t index) {
  std::vector<std::size_t>& after = node.after;
  const auto follow = [&after, index](std::size_t earlier) {
    if (earlier != index && std::find(after.begin(), after.end(), earlier) == after.end()) after.push_back(earlier);
  };
  const bool barrier = std::any_of(node.resources.begin(), node.resources.end(),
                                   [](const ResourceUse& use) { return use.resource == nullptr; });
  if (barrier) {  // after every earlier use of any state; every later use follows it
    if (last_barrier_) follow(*last_barrier_);
    for (auto& [resource, order] : resource_order_) {
      if (order.last_write) follow(*order.last_write);
      for (auto r : order.reads) follow(r);
      order.last_write = index;
      order.reads.clear();
    }
    last_barrier_ = index;
  } else {
    for (const auto& use : node.resources) {
      auto [it, added] = resource_order_.try_emplace(use.resource);
      ResourceOrder& order = it->second;
      if (added) order.last_write = last_barrier_;  // state first used after a barrier follows it
      if (order.last_write) follow(*order.last_write);
      if (use.writes) {
        for (auto r : order.reads) follow(r);
        order.reads.clear();
        order.last_write = index;
      } else {
        order.reads.push_back(index);
      }
    }
  }
  std::sort(after.begin(), after.end());
}

DEVTENSOR_DEFINITION AnyTensor copy_to(const AnyTensor& value, const Device& device, std::string_view op) {
  const std::size_t bytes = value.bytes();
  auto storage = allocate_storage(device, bytes, value.shape, dtype_string(value.dtype), op);
  copy_bytes(storage->data, device, value.storage->data, *value.storage->device, bytes);
  return AnyTensor(next_tensor_id(), value.dtype, value.shape, std::move(storage));
}

DEVTENSOR_DEFINITION Edge Graph::capture(const AnyTensor& value) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = captures_.find(value.id); it != captures_.end()) return it->second;
  }
  Node node;
  node.name = unique_name("Const");
  node.op = &graph_ops::Const;
  node.kind = NodeKind::constant;
  node.requested = current_graph_device_spec();
  node.outputs = {{value.dtype, value.shape}};
  node.run = [value](const RunContext& context, NodeInputs, std::span<AnyTensor> out) {
    out[0] = value.storage->device == &context.device
                 ? AnyTensor(next_tensor_id(), value.dtype, value.shape, value.storage)
                 : copy_to(value, context.device, "Const");
  };
  const Edge edge{add(std::move(node)), 0};
  std::lock_guard lock(mutex_);
  captures_.emplace(value.id, edge);
  return edge;
}

DEVTENSOR_DEFINITION Edge Graph::input_edge(const AnyTensor& t, std::string_view op) {
  if (const auto& ref = t.storage->symbolic) {
    if (ref->graph_id != id_)
      throw InvalidArgumentError("Tensor '" + ref->name + "' must be from the same graph as the op " + std::string(op) +
                                 " being added: it belongs to another graph. Build each graph's ops under its own "
                                 "GraphScope.");
    return {ref->node, ref->output};
  }
  return capture(t);  // a tensor with values: a Const node (TF's capture)
}

DEVTENSOR_DEFINITION NameScope::NameScope(std::string_view name) : graph_(building()) {
  if (!graph_) return;
  std::lock_guard lock(graph_->mutex_);
  if (!name.empty() && name.back() == '/')
    name_ = std::string(name.substr(0, name.size() - 1));
  else
    name_ = graph_->unique_name_locked(name);
  graph_->scopes_[std::this_thread::get_id()].push_back(name_);
}

DEVTENSOR_DEFINITION NameScope::~NameScope() {
  if (!graph_) return;
  std::lock_guard lock(graph_->mutex_);
  auto it = graph_->scopes_.find(std::this_thread::get_id());
  if (it == graph_->scopes_.end()) return;
  if (!it->second.empty()) it->second.pop_back();
  if (it->second.empty()) graph_->scopes_.erase(it);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph
