#pragma once
/// @file session.hpp
/// @brief TensorFlow 1's face (`tf.compat.v1`): Graph, Session with a ConfigProto,
/// placeholder, disable_eager_execution.
///
///     namespace v1 = devtensor::compat::v1;
///     v1::Graph g;
///     dt::Tensor<float> c;
///     {
///       auto scope = g.as_default();                 // with g.as_default():
///       auto a = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3}, {.name = "a"});
///       auto b = dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}, {.name = "b"});
///       c = dt::matmul(a, b);                        // a node: nothing runs yet
///     }
///     v1::Session sess(g, {.log_device_placement = true});
///     std::cout << sess.run(c);                      // places the graph, runs MatMul's part:
///                                                    // [[22. 28.]
///                                                    //  [49. 64.]]
///
/// A Session places its whole graph at its first run (and again when nodes were added since),
/// caches one Executable per (fetches, feeds), and runs only what the fetches need. Several
/// threads may call run at once.

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/graph/executor.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/graph/variables.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/print.hpp"

namespace devtensor::compat::v1 {

/// TensorFlow's GPUOptions fields that devtensor honours.
struct GPUOptions {
  bool allow_growth = false;
  double per_process_gpu_memory_fraction = 0.0;  // 0: not set
  std::string visible_device_list{};             // "0,1": the physical GPUs this process uses
};

/// TensorFlow's RunOptions: FULL_TRACE (or SOFTWARE_TRACE, HARDWARE_TRACE, the same here) makes
/// Session::run time every node into a RunMetadata's step_stats (timeline.hpp).
struct RunOptions {
  enum TraceLevel { NO_TRACE = 0, SOFTWARE_TRACE = 1, HARDWARE_TRACE = 2, FULL_TRACE = 3 };
  TraceLevel trace_level = NO_TRACE;
};
/// What a traced run records (TensorFlow's RunMetadata): per device, each node's start, duration,
/// inputs and output shapes, for timeline::Timeline.
struct RunMetadata {
  StepStats step_stats;
};

/// TensorFlow's ConfigProto fields that devtensor honours. GPU options and
/// device_count configure the process's devices, which exist once per process: they apply when
/// the devices are not yet initialised, and a different value afterwards is FailedPreconditionError.
struct ConfigProto {
  bool log_device_placement = false;
  bool allow_soft_placement = false;  // a v1 session's default, unlike eager's
  GPUOptions gpu_options{};
  std::map<std::string, int> device_count{};  // {"GPU": 0} hides the GPUs; "CPU" must be 1
};

/// tf.Graph: a handle (copies share the graph).
class Graph {
 public:
  Graph() : impl_(std::make_shared<graph::Graph>()) {}
  explicit Graph(std::shared_ptr<graph::Graph> impl) : impl_(std::move(impl)) {
    if (!impl_) throw InvalidArgumentError("compat::v1::Graph needs a graph, got nullptr");
  }
  /// `with graph.as_default():` — ops on this thread build this graph until the scope ends.
  [[nodiscard]] graph::GraphScope as_default() const { return graph::GraphScope(impl_); }
  [[nodiscard]] const std::shared_ptr<graph::Graph>& impl() const noexcept { return impl_; }
  /// The nodes' names in the order they were made (as_graph_def().node).
  [[nodiscard]] std::vector<std::string> node_names() const {
    std::vector<std::string> out;
    for (const auto& n : impl_->snapshot()) out.push_back(n->name);
    return out;
  }
  /// The nodes themselves.
  [[nodiscard]] std::vector<std::shared_ptr<const graph::Node>> nodes() const { return impl_->snapshot(); }
  friend bool operator==(const Graph& a, const Graph& b) noexcept { return a.impl_ == b.impl_; }

 private:
  std::shared_ptr<graph::Graph> impl_;
};

/// tf.compat.v1.disable_eager_execution(): from now on, ops on threads without a GraphScope build
/// the process's default graph instead of running. Call it at the start of the program.
void disable_eager_execution();
/// Undoes disable_eager_execution (tf.compat.v1.enable_eager_execution): ops run again on threads
/// without a GraphScope; the process's default graph is dropped.
void enable_eager_execution();
/// False once eager execution is disabled, or while a graph is current on this thread.
bool executing_eagerly();
/// The graph ops build now: the thread's current graph, else the process's default graph.
Graph get_default_graph();
/// A new, empty process default graph (tf.compat.v1.reset_default_graph).
void reset_default_graph();

/// tf.compat.v1.placeholder: a node fed at each Session::run.
/// @throws FailedPreconditionError when no graph is being built (eager execution).
template <Element T>
Tensor<T> placeholder(const Shape& shape, const OpOptions& options = {}) {
  auto* graph = graph::building();
  if (!graph)
    throw FailedPreconditionError(
        "placeholder() is not compatible with eager execution: build a graph first (compat::v1::Graph::as_default, or "
        "compat::v1::disable_eager_execution at the start of the program)");
  return graph::add_placeholder(*graph, options.name, dtype_enum<T>(), shape).template as<T>();
}
/// The same with dimensions that may be kUnknownDim (-1, TensorFlow's None): `placeholder<float>({-1, 3})`
/// is fed any number of rows of 3.
template <Element T>
Tensor<T> placeholder(std::initializer_list<std::int64_t> dims, const OpOptions& options = {}) {
  return placeholder<T>(Shape::partial(dims), options);
}

/// Host values with their shape, for a feed whose placeholder has unknown dimensions:
/// `{x, {{1, 2, 3, 4, 5, 6}, {2, 3}}}` feeds two rows to a (None, 3) placeholder (NumPy's
/// `np.array([[1, 2, 3], [4, 5, 6]])` in TensorFlow 1).
template <Element T>
struct ShapedValues {
  std::vector<T> values;
  Shape shape;
};

/// What Session::run returns for one fetch: the value, as TensorFlow 1 returns a NumPy array. It is
/// a Tensor<T> (every op and accessor takes it) that prints as NumPy prints an array
/// (`[[22. 28.]\n [49. 64.]]`, `3.0`), not as `tf.Tensor(...)`.
template <Element T>
class NdArray : public Tensor<T> {
 public:
  NdArray() = default;
  explicit NdArray(Tensor<T> value) : Tensor<T>(std::move(value)) {}
  [[nodiscard]] const Tensor<T>& tensor() const noexcept { return *this; }
};

/// NumPy's str() of the array (tensor/print.hpp's rules, numpy.set_printoptions' defaults).
template <Element T>
std::ostream& operator<<(std::ostream& os, const NdArray<T>& array) {
  if (!array.defined()) return os << "None";
  return os << format_values(array.tensor());
}

/// One entry of a feed_dict: a placeholder (or any tensor of the graph) and its value, from host
/// values (flat: the placeholder's shape, or a vector; with a shape: ShapedValues) or a tensor.
class Feed {
 public:
  template <Element T>
  Feed(const Tensor<T>& target, const ShapedValues<T>& value) : Feed(target, value.values, value.shape) {}
  template <Element T>
  Feed(const Tensor<T>& target, const std::vector<T>& values)
      : target_(target),
        dtype_(dtype_enum<T>()),
        shape_(static_cast<std::int64_t>(values.size()) == target.shape().num_elements()
                   ? target.shape()
                   : Shape{static_cast<std::int64_t>(values.size())}),
        bytes_(devtensor::host_bytes(values, static_cast<std::int64_t>(values.size()))) {}
  template <Element T>
  Feed(const Tensor<T>& target, const std::vector<T>& values, Shape shape)
      : target_(target),
        dtype_(dtype_enum<T>()),
        shape_(std::move(shape)),
        bytes_(devtensor::host_bytes(values, static_cast<std::int64_t>(values.size()))) {}
  template <Element T>
  Feed(const Tensor<T>& target, const Tensor<T>& value) : target_(target), dtype_(dtype_enum<T>()), value_(value) {
    if (value.symbolic())
      throw InvalidArgumentError("The value fed for '" + value.symbolic_ref()->name + "' is symbolic: feed values");
    shape_ = value.shape();
  }

  [[nodiscard]] const AnyTensor& target() const noexcept { return target_; }
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  /// The value as a tensor on `host`.
  [[nodiscard]] AnyTensor value(const Device& host) const;

 private:
  AnyTensor target_;
  DType dtype_;
  Shape shape_;
  std::vector<std::byte> bytes_;
  AnyTensor value_;
};

/// tf.compat.v1.Session.
class DEVTENSOR_EXPORT Session {
 public:
  /// A session on the default graph (get_default_graph()).
  explicit Session(const ConfigProto& config = {});
  Session(const Graph& graph, const ConfigProto& config = {});

  /// The value of one fetch, computing only what it needs.
  /// @throws InvalidArgumentError (placement, with TensorFlow's texts; an unfed placeholder; a feed of the wrong
  /// shape or dtype; a fetch that is not a tensor of this graph), and what the kernels throw.
  template <Element T>
  NdArray<T> run(const Tensor<T>& fetch, const std::vector<Feed>& feeds = {}) {
    return NdArray<T>(run(std::vector<AnyTensor>{AnyTensor(fetch)}, feeds).front().template as<T>());
  }
  /// The values of several fetches (any element types: `.as<T>()` each), after running `targets`
  /// and what they need (TensorFlow's run with Operations in the fetches).
  std::vector<AnyTensor> run(const std::vector<AnyTensor>& fetches, const std::vector<Feed>& feeds = {},
                             const std::vector<graph::Operation>& targets = {});
  /// The same, traced with `options.trace_level` into `run_metadata` (when not null): the nodes
  /// then run one after another, each timed (a GPU synchronised after each). A run without trace
  /// costs nothing more.
  std::vector<AnyTensor> run(const std::vector<AnyTensor>& fetches, const std::vector<Feed>& feeds,
                             const std::vector<graph::Operation>& targets, const RunOptions& options,
                             RunMetadata* run_metadata);
  /// Runs an operation for its effect (an initializer, an assignment).
  void run(const graph::Operation& target, const std::vector<Feed>& feeds = {}) { (void)run({}, feeds, {target}); }

  [[nodiscard]] const Graph& graph() const noexcept { return graph_; }
  [[nodiscard]] const ConfigProto& config() const noexcept { return config_; }

 private:
  Graph graph_;
  ConfigProto config_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<const graph::Node>> placed_nodes_;  // the snapshot placed
  graph::Placement placement_;
  std::map<std::string, std::shared_ptr<const graph::Executable>> executables_;  // by (fetches, feeds, targets)
  graph::ResourceStore variables_;  // the values of the graph's variables (TF1: per session)

  graph::Edge edge_of(const AnyTensor& t, const char* role) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION void disable_eager_execution() {
  if (!graph::process_graph()) graph::set_process_graph(std::make_shared<graph::Graph>());
}

DEVTENSOR_DEFINITION void enable_eager_execution() { graph::set_process_graph(nullptr); }

DEVTENSOR_DEFINITION bool executing_eagerly() { return graph::building() == nullptr; }

namespace session_detail {
/// The default graph that get_default_graph returns while eager execution is on; `replace` makes a
/// new one.
DEVTENSOR_DEFINITION std::shared_ptr<graph::Graph> eager_default_graph(bool replace = false) {
  static std::mutex mutex;
  static std::shared_ptr<graph::Graph> graph;
  std::lock_guard lock(mutex);
  if (!graph || replace) graph = std::make_shared<graph::Graph>();
  return graph;
}
}  // namespace session_detail

DEVTENSOR_DEFINITION Graph get_default_graph() {
  if (auto current = graph::current_graph()) return Graph(std::move(current));
  return Graph(session_detail::eager_default_graph());
}

DEVTENSOR_DEFINITION void reset_default_graph() {
  if (graph::process_graph())
    graph::set_process_graph(std::make_shared<graph::Graph>());
  else
    (void)session_detail::eager_default_graph(true);
}

DEVTENSOR_DEFINITION AnyTensor Feed::value(const Device& host) const {
  if (value_.defined()) return value_;
  auto storage = allocate_storage(host, bytes_.size(), shape_, dtype_string(dtype_), "Placeholder");
  copy_bytes(storage->data, host, bytes_.data(), host_buffer_device(), bytes_.size());
  return AnyTensor(next_tensor_id(), dtype_, shape_, std::move(storage));
}

namespace session_detail {

/// Applies a ConfigProto's device options to the process configuration.
DEVTENSOR_DEFINITION void apply_device_options(const ConfigProto& config) {
  const auto& gpu = config.gpu_options;
  for (const auto& [type, count] : config.device_count) {
    if (type == "CPU" && count == 1) continue;
    if (type != "GPU" || count < 0)
      throw InvalidArgumentError("ConfigProto device_count {\"" + type + "\": " + std::to_string(count) +
                                 "}: devtensor honours GPU counts (and CPU: 1); the process has one CPU device");
  }
  const bool gpu_options = gpu.allow_growth || gpu.per_process_gpu_memory_fraction > 0 ||
                           !gpu.visible_device_list.empty() || config.device_count.contains("GPU");
  if (!gpu_options) return;
  auto gpus = config::get_visible_devices("GPU");
  if (!gpu.visible_device_list.empty()) {
    const auto physical = config::list_physical_devices("GPU");  // visible_device_list indexes these
    std::vector<config::PhysicalDevice> visible;
    std::size_t start = 0;
    while (start <= gpu.visible_device_list.size()) {
      const auto end = std::min(gpu.visible_device_list.find(',', start), gpu.visible_device_list.size());
      const std::string item = gpu.visible_device_list.substr(start, end - start);
      std::size_t used = 0;
      int index = -1;
      try {
        index = std::stoi(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size() || index < 0 || static_cast<std::size_t>(index) >= physical.size())
        throw InvalidArgumentError("'visible_device_list' listed an invalid GPU id '" + item +
                                   "' but visible device count is " + std::to_string(physical.size()));
      visible.push_back(physical[static_cast<std::size_t>(index)]);
      start = end + 1;
    }
    gpus = visible;
  }
  if (auto it = config.device_count.find("GPU");
      it != config.device_count.end() && static_cast<std::size_t>(it->second) < gpus.size())
    gpus.resize(static_cast<std::size_t>(it->second));
  if (!gpu.visible_device_list.empty() || config.device_count.contains("GPU")) config::set_visible_devices(gpus, "GPU");
  if (gpu.allow_growth)
    for (const auto& d : gpus) config::experimental::set_memory_growth(d, true);
  if (gpu.per_process_gpu_memory_fraction > 0)
    config::experimental::set_memory_fraction(gpu.per_process_gpu_memory_fraction);
}

}  // namespace session_detail

DEVTENSOR_DEFINITION Session::Session(const ConfigProto& config) : Session(get_default_graph(), config) {}

DEVTENSOR_DEFINITION Session::Session(const Graph& graph, const ConfigProto& config) : graph_(graph), config_(config) {
  session_detail::apply_device_options(config_);
  const DeviceSet& devices = Context::global().devices("the first Session");
  if (!config_.log_device_placement) return;
  std::string mapping;
  for (const auto& d : devices)
    if (!d.physical_device_desc.empty()) mapping += "\n" + d.full_name + " -> " + d.physical_device_desc;
  log(LogSeverity::info,
      mapping.empty() ? std::string("Device mapping: no known devices.") : "Device mapping:" + mapping);
}

DEVTENSOR_DEFINITION graph::Edge Session::edge_of(const AnyTensor& t, const char* role) const {
  if (!t.defined())
    throw InvalidArgumentError(std::string(role) + " is an undefined tensor: pass a tensor of the session's graph");
  const auto& ref = t.storage->symbolic;
  if (!ref)
    throw InvalidArgumentError(std::string(role) + " has values already: it is not a tensor of a graph. " +
                               "Pass the symbolic tensors that ops return while the graph is built");
  if (ref->graph_id != graph_.impl()->id())
    throw InvalidArgumentError("Tensor " + ref->name + " is not an element of this graph: " + role +
                               " must come from the session's graph");
  return {ref->node, ref->output};
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> Session::run(const std::vector<AnyTensor>& fetches,
                                                         const std::vector<Feed>& feeds,
                                                         const std::vector<graph::Operation>& targets) {
  return run(fetches, feeds, targets, RunOptions{}, nullptr);
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> Session::run(const std::vector<AnyTensor>& fetches,
                                                         const std::vector<Feed>& feeds,
                                                         const std::vector<graph::Operation>& targets,
                                                         const RunOptions& options, RunMetadata* run_metadata) {
  std::vector<graph::Edge> fetch_edges, feed_edges;
  std::string key;
  for (const auto& f : fetches) {
    fetch_edges.push_back(edge_of(f, "A fetch"));
    key += std::to_string(fetch_edges.back().node) + ":" + std::to_string(fetch_edges.back().output) + ",";
  }
  key += "|";
  for (const auto& f : feeds) {
    feed_edges.push_back(edge_of(f.target(), "A feed's target"));
    key += std::to_string(feed_edges.back().node) + ":" + std::to_string(feed_edges.back().output) + ",";
  }
  key += "|";
  std::vector<std::size_t> target_nodes;
  for (const auto& t : targets) {
    if (t.graph_id != graph_.impl()->id())
      throw InvalidArgumentError("Operation " + t.name +
                                 " is not an element of this graph: targets must come from the "
                                 "session's graph");
    target_nodes.push_back(t.node);
    key += std::to_string(t.node) + ",";
  }
  const DeviceSet& devices = Context::global().devices("the first Session");
  std::vector<AnyTensor> feed_values;
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    const auto& ref = *feeds[i].target().storage->symbolic;
    const auto& expected = feeds[i].target().shape;
    if (!feeds[i].shape().is_compatible_with(expected))
      throw InvalidArgumentError("Cannot feed value of shape " + feeds[i].shape().to_python() + " for Tensor " +
                                 ref.name + ", which has shape " + expected.to_python() +
                                 (feeds[i].shape().rank() == 1 && expected.rank() > 1
                                      ? ". Give flat values their shape: {placeholder, {values, {rows, ...}}}"
                                      : ""));
    feed_values.push_back(feeds[i].value(devices.host_cpu()));
  }
  std::shared_ptr<const graph::Executable> executable;
  {
    std::lock_guard lock(mutex_);
    if (graph_.impl()->size() != placed_nodes_.size()) {  // first run, or nodes added since
      auto nodes = graph_.impl()->snapshot();
      placement_ = graph::place(nodes, devices, {config_.allow_soft_placement, config_.log_device_placement});
      placed_nodes_ = std::move(nodes);
      executables_.clear();
    }
    auto& cached = executables_[key];
    if (!cached) {
      try {
        const auto optimizer = config::optimizer::get_experimental_options();
        cached = std::make_shared<const graph::Executable>(placed_nodes_, placement_, fetch_edges, feed_edges,
                                                           target_nodes, &optimizer);
      } catch (...) {
        executables_.erase(key);
        throw;
      }
    }
    executable = cached;
  }
  const bool traced = options.trace_level != RunOptions::NO_TRACE && run_metadata;
  if (!traced && !profiler::active()) return executable->run(feed_values, &variables_);
  std::vector<graph::Executable::TracedStep> trace;
  auto values = executable->run_traced(feed_values, &variables_, trace);
  auto stats = graph::step_stats(trace);
  if (traced) run_metadata->step_stats = stats;
  profiler::add(std::move(stats));
  return values;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::compat::v1
