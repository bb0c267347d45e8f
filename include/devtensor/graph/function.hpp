#pragma once
/// @file function.hpp
/// @brief Traced functions (TensorFlow's `tf.function`): a callable traced into a graph
/// once per signature and replayed afterwards.
///
///     auto f = dt::function([](const dt::Tensor<float>& a, const dt::Tensor<float>& b) {
///       return dt::matmul(a, b) + 1.0f;
///     }, {.name = "f", .arg_names = {"a", "b"}});
///     auto c = f(a, b);   // traces (a: (_Arg), b: (_Arg), MatMul, add, Identity), then runs
///     auto d = f(a, b);   // same signature: replays the placed graph
///
/// The signature is, per argument: a tensor's dtype, shape and device; a variable's identity; any
/// other value by equality (a new value traces again). A trace whose shapes have unknown
/// dimensions (`input_signature` with kUnknownDim, or `reduce_retracing`) serves every call whose
/// shapes are compatible. Host code in the callable runs only while tracing. Variables are read
/// and assigned through nodes that hold them (captured by handle): assignments persist. Results equal eager execution
/// of the callable (the same kernels in the same order). A Function may be called from several threads.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/graph/cuda_graph.hpp"
#include "devtensor/graph/executor.hpp"
#include "devtensor/graph/nest.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/graph/signature.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {

struct FunctionOptions {
  std::string name = "function";  // in logs: __inference_<name>_<id>, the retracing warning
  /// Names of the tensor arguments' placeholders (C++ cannot see parameter names): `x`, `x_1`, ...
  /// when not given.
  std::vector<std::string> arg_names{};
  /// Fixes the tensor arguments' dtypes and shapes: one trace; a call that does not match is
  /// InvalidArgumentError.
  std::optional<std::vector<TensorSpec>> input_signature{};
  /// On a call whose shapes differ from an earlier trace's (same ranks), trace once with the
  /// dimensions that differ unknown, so that later shapes reuse that trace (TensorFlow's
  /// reduce_retracing=True).
  bool reduce_retracing = false;
  /// Replays each concrete function on its GPU as a CUDA graph after a warm-up call; its results
  /// are then overwritten by the next call (Note [CUDA-graph replay], graph/cuda_graph.hpp).
  bool cuda_graph = false;
};

/// A traced graph for one signature, placed, with its executable (TensorFlow's ConcreteFunction).
class DEVTENSOR_EXPORT ConcreteFunction {
 public:
  ConcreteFunction(std::shared_ptr<graph::Graph> graph, std::vector<graph::Edge> args, std::vector<graph::Edge> outputs,
                   std::string name, bool cuda_graph = false);

  /// Runs the graph on `args` (one tensor per placeholder) and returns the outputs' values.
  [[nodiscard]] std::vector<AnyTensor> call(const std::vector<AnyTensor>& args) const;
  /// Places the graph (once; the placement log then) and builds its executable.
  void prepare() const;

  /// `__inference_<name>_<id>`.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const graph::Graph& graph() const noexcept { return *graph_; }
  /// The nodes' names in graph order.
  [[nodiscard]] std::vector<std::string> node_names() const;
  /// The device each node runs on (full names, in graph order). Places the graph first.
  [[nodiscard]] std::vector<std::string> node_devices() const;
  /// The op types a call runs, in order, after the graph's optimisations (graph/optimizer.hpp):
  /// fused nodes are `_FusedElementwise` and `_FusedMatMul`. Places the graph first.
  [[nodiscard]] std::vector<std::string> optimized_ops() const {
    prepare();
    return executable_->scheduled_ops();
  }
  /// How many parts of its graph run at once, on threads of their own (Note [Independent parts
  /// run at once] in graph/inter_op.hpp); 0: one step after another.
  [[nodiscard]] std::size_t parts() const {
    prepare();
    return executable_->parts();
  }
  /// Its CUDA-graph replay (FunctionOptions::cuda_graph; null without): stage, launches, why not.
  [[nodiscard]] const graph::CudaGraphReplay* cuda_graph() const {
    prepare();
    return replay_.get();
  }

 private:
  std::shared_ptr<graph::Graph> graph_;
  std::vector<graph::Edge> args_;
  std::vector<graph::Edge> outputs_;
  std::string name_;
  mutable std::once_flag placed_;
  mutable std::shared_ptr<const graph::Executable> executable_;
  bool cuda_graph_ = false;
  mutable std::shared_ptr<graph::CudaGraphReplay> replay_;  // with cuda_graph_

  void place() const;
};

namespace function_detail {

/// Adds the output Identity nodes and their _Retval nodes: the outputs' edges.
std::vector<graph::Edge> add_outputs(graph::Graph& graph, const std::vector<AnyTensor>& outputs);

/// A process-unique number for `__inference_<name>_<id>`.
std::uint64_t next_function_id();

/// The value of symbolic tensor `value` of the graph this thread builds: the nodes it needs,
/// placed and run once, eagerly (a variable's initial value in a trace).
/// @throws InvalidArgumentError when it depends on the function's arguments.
AnyTensor evaluate_now(const AnyTensor& value);
inline const bool evaluate_now_installed = graph::set_evaluate_now(&evaluate_now);

/// A trace: its concrete function and the callable's traced result (its structure, for
/// rebuilding each call's result; a `const R`).
struct Trace {
  std::shared_ptr<const ConcreteFunction> concrete;
  std::shared_ptr<const void> result;
};

/// What a Function keeps that does not depend on its callable: the traces by signature, the
/// input_signature check, the retracing detector and the call of a trace. One class for every
/// Function, compiled once in compiled mode; Function<F> adds only what needs F and the
/// arguments' types (flattening, the signature's key, tracing, rebuilding the result). Keeping the
/// map and deque of traces out of Function<F> halved the code a TU of many traced lambdas emits.
class DEVTENSOR_EXPORT TraceCache {
 public:
  /// Traces the callable for the shapes it is given.
  using Tracer = FunctionRef<Trace(const std::vector<Shape>&)>;

  explicit TraceCache(FunctionOptions options) : options_(std::move(options)) {}

  /// The trace whose signature is `key` (the arguments' types and non-tensor values) and whose
  /// shapes `tensors` have; else a new one, made by `trace` (twice when the first trace created
  /// variables, as TensorFlow). The reference stays valid: traces are never removed.
  /// @throws InvalidArgumentError when `tensors` do not match the input_signature.
  const Trace& find_or_trace(const std::string& key, const std::vector<AnyTensor>& tensors, Tracer trace);
  /// Runs `trace` on `inputs`: placed (and logged) first, as TensorFlow logs it.
  static std::vector<AnyTensor> run(const Trace& trace, const std::vector<AnyTensor>& inputs);

  [[nodiscard]] const FunctionOptions& options() const noexcept { return options_; }
  /// The concrete function traced last; null before the first trace.
  [[nodiscard]] std::shared_ptr<const ConcreteFunction> last_traced() const {
    std::lock_guard lock(mutex_);
    return last_traced_;
  }
  [[nodiscard]] int tracing_count() const {
    std::lock_guard lock(mutex_);
    return traces_;
  }

 private:
  /// A trace with its tensor arguments' shapes (unknown dimensions match any).
  struct Entry {
    std::vector<Shape> shapes;
    Trace trace;
  };

  FunctionOptions options_;
  mutable std::mutex mutex_;
  // By the signature without the tensors' shapes (types, values, dtypes, ranks, devices); the
  // traces of one key in the order they were made (a deque: a call keeps a reference to its entry
  // while another thread adds one).
  std::map<std::string, std::deque<Entry>> traces_by_signature_;
  int traces_ = 0;
  std::shared_ptr<const ConcreteFunction> last_traced_;
  RetracingDetector retracing_;

  void check_signature(const std::vector<AnyTensor>& tensors) const;
  std::vector<Shape> shapes_to_trace(const std::deque<Entry>& traces, const std::vector<AnyTensor>& tensors) const;
};

}  // namespace function_detail

/// tf.function: `f` traced once per signature, its graph replayed afterwards.
template <class F>
class Function {
 public:
  Function(F f, FunctionOptions options) : f_(std::move(f)), cache_(std::move(options)) {}

  /// Traces on a new signature, then runs the concrete function. Inside another trace the
  /// callable is inlined into that graph.
  template <class... Args>
  auto operator()(const Args&... args) {
    using R = std::invoke_result_t<F&, const Args&...>;
    if (graph::building()) return f_(args...);  // a call inside a trace: its ops join that graph
    std::vector<AnyTensor> inputs;
    (function_detail::Nest<Args>::flatten(args, inputs), ...);
    const function_detail::Trace& entry = entry_for(inputs, args...);
    const auto outputs = function_detail::TraceCache::run(entry, inputs);
    if constexpr (std::is_void_v<R>) {
      return;
    } else {
      std::size_t next = 0;  // the traced result's structure, its tensors replaced by this run's
      return function_detail::Nest<R>::rebuild(*static_cast<const R*>(entry.result.get()), outputs, next);
    }
  }

  /// The concrete function for these arguments' signature, traced if new.
  template <class... Args>
  std::shared_ptr<const ConcreteFunction> get_concrete_function(const Args&... args) {
    std::vector<AnyTensor> inputs;
    (function_detail::Nest<Args>::flatten(args, inputs), ...);
    return entry_for(inputs, args...).concrete;
  }

  /// The concrete function traced last (the graph of the latest new signature); null before a call.
  [[nodiscard]] std::shared_ptr<const ConcreteFunction> last_concrete_function() const { return cache_.last_traced(); }

  /// How many times the callable was traced (TensorFlow's experimental_get_tracing_count).
  [[nodiscard]] int experimental_get_tracing_count() const { return cache_.tracing_count(); }

 private:
  F f_;
  function_detail::TraceCache cache_;

  template <class... Args>
  const function_detail::Trace& entry_for(const std::vector<AnyTensor>& tensors, const Args&... args) {
    // The argument types, then their values; built in the thread's buffer (no allocation per call).
    thread_local std::string key;
    key.assign(typeid(std::tuple<Args...>).name());
    key += ':';
    (function_detail::Nest<Args>::key(args, key), ...);
    return cache_.find_or_trace(key, tensors, [&](const std::vector<Shape>& shapes) { return trace(shapes, args...); });
  }

  template <class... Args>
  function_detail::Trace trace(const std::vector<Shape>& shapes, const Args&... args) {
    using R = std::invoke_result_t<F&, const Args&...>;
    const FunctionOptions& options = cache_.options();
    auto graph = std::make_shared<graph::Graph>();
    graph::GraphScope scope(graph);
    function_detail::ArgMaker make(*graph, options.arg_names, shapes);
    // Braces: the stand-ins are made left to right, so placeholders take the names in order.
    std::tuple<Args...> stand_ins{function_detail::Nest<Args>::stand_in(args, make)...};
    std::vector<AnyTensor> outputs;
    std::shared_ptr<const void> result;
    if constexpr (std::is_void_v<R>) {
      std::apply(f_, stand_ins);
    } else {
      auto traced = std::make_shared<const R>(std::apply(f_, stand_ins));
      function_detail::Nest<R>::flatten(*traced, outputs);
      result = std::move(traced);
    }
    auto out_edges = function_detail::add_outputs(*graph, outputs);
    auto concrete = std::make_shared<const ConcreteFunction>(
        graph, make.take_edges(), std::move(out_edges),
        "__inference_" + options.name + "_" + std::to_string(function_detail::next_function_id()), options.cuda_graph);
    return {std::move(concrete), std::move(result)};
  }
};

/// tf.function(f): see Function.
template <class F>
Function<F> function(F f, FunctionOptions options = {}) {
  return Function<F>(std::move(f), std::move(options));
}

namespace graph {
/// A step of float tensors, a seed (one int64, new every step: what Dropout draws from) and a
/// count (a batch's examples): Keras's fit, evaluate and predict.
using TracedStep = std::function<std::vector<Tensor<float>>(const std::vector<Tensor<float>>&,
                                                            const Tensor<std::int64_t>&, std::int64_t)>;
/// `step` as a Function named `name` (nn/model_training.hpp traces its steps so), replayed as a
/// CUDA graph with `cuda_graph` (FunctionOptions::cuda_graph).
TracedStep traced_step(TracedStep step, std::string name, bool cuda_graph = false);
/// The graph a step made by traced_step traced last (Keras's `model.train_function`'s graph);
/// null for another callable or before its first call.
std::shared_ptr<const ConcreteFunction> last_concrete_function(const TracedStep& step);
}  // namespace graph

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION ConcreteFunction::ConcreteFunction(std::shared_ptr<graph::Graph> graph,
                                                        std::vector<graph::Edge> args, std::vector<graph::Edge> outputs,
                                                        std::string name, bool cuda_graph)
    : graph_(std::move(graph)),
      args_(std::move(args)),
      outputs_(std::move(outputs)),
      name_(std::move(name)),
      cuda_graph_(cuda_graph) {}

DEVTENSOR_DEFINITION std::vector<std::string> ConcreteFunction::node_names() const {
  std::vector<std::string> out;
  for (const auto& n : graph_->snapshot()) out.push_back(n->name);
  return out;
}

DEVTENSOR_DEFINITION std::vector<std::string> ConcreteFunction::node_devices() const {
  prepare();
  std::vector<std::string> out;
  for (const Device* device : executable_->placement()) out.push_back(device ? device->full_name : std::string());
  return out;
}

DEVTENSOR_DEFINITION void ConcreteFunction::place() const {
  auto& context = Context::global();
  const DeviceSet& devices = context.devices("the first traced function");
  auto nodes = graph_->snapshot();
  const bool log = context.log_device_placement() && log_enabled(LogSource::cpp_runtime, LogSeverity::info);
  auto placement = graph::place(nodes, devices, {context.soft_device_placement(), log});
  std::vector<std::size_t> stateful;  // run at every call (TensorFlow's automatic control dependencies)
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i]->traits().stateful) stateful.push_back(i);
  const auto optimizer = config::optimizer::get_experimental_options();
  executable_ = std::make_shared<const graph::Executable>(std::move(nodes), std::move(placement), outputs_, args_,
                                                          stateful, &optimizer);
  if (cuda_graph_) replay_ = std::make_shared<graph::CudaGraphReplay>(executable_, name_);
}

DEVTENSOR_DEFINITION void ConcreteFunction::prepare() const {
  std::call_once(placed_, [this] { place(); });
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> ConcreteFunction::call(const std::vector<AnyTensor>& args) const {
  prepare();
  if (profiler::active()) {  // traced node by node into the profile; a CUDA graph waits meanwhile
    std::vector<graph::Executable::TracedStep> trace;
    auto values = executable_->run_traced(args, nullptr, trace);
    profiler::add(graph::step_stats(trace));
    return values;
  }
  return replay_ ? replay_->run(args) : executable_->run(args);
}

DEVTENSOR_DEFINITION const function_detail::Trace& function_detail::TraceCache::find_or_trace(
    const std::string& key, const std::vector<AnyTensor>& tensors, Tracer trace) {
  check_signature(tensors);
  std::lock_guard lock(mutex_);
  if (auto it = traces_by_signature_.find(key); it != traces_by_signature_.end())
    if (const Entry* found = match(it->second, tensors)) {
      retracing_.called(false, options_.name);
      return found->trace;
    }
  const std::string signature = key;  // the caller's buffer is its thread's: a trace may call other functions
  auto& traces = traces_by_signature_[signature];
  Entry entry{shapes_to_trace(traces, tensors), {}};
  try {
    const int variables_before = graph::variables_created_on_this_thread();
    entry.trace = trace(entry.shapes);
    if (graph::variables_created_on_this_thread() != variables_before) {
      // As TensorFlow: a trace that created variables is traced again, and that trace (like
      // every later one) may not create any; the variables are the first trace's.
      ++traces_;
      graph::RefuseVariableCreation refuse;
      entry.trace = trace(entry.shapes);
    }
  } catch (...) {
    if (traces.empty()) traces_by_signature_.erase(signature);
    throw;
  }
  last_traced_ = entry.trace.concrete;
  traces.push_back(std::move(entry));
  ++traces_;
  retracing_.called(true, options_.name);
  return traces.back().trace;
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> function_detail::TraceCache::run(const Trace& trace,
                                                                             const std::vector<AnyTensor>& inputs) {
  trace.concrete->prepare();  // placed (and logged) before the call's own line, as TensorFlow's
  if (Context::global().log_device_placement() && log_enabled(LogSource::cpp_runtime, LogSeverity::info))
    log(LogSeverity::info, "Executing op " + trace.concrete->name() + " in device " + place_constant().full_name);
  return trace.concrete->call(inputs);
}

DEVTENSOR_DEFINITION void function_detail::TraceCache::check_signature(const std::vector<AnyTensor>& tensors) const {
  if (!options_.input_signature) return;
  const auto& specs = *options_.input_signature;
  std::string why;
  if (tensors.size() != specs.size())
    why = "expected " + std::to_string(specs.size()) + " tensor arguments, got " + std::to_string(tensors.size());
  for (std::size_t i = 0; why.empty() && i < tensors.size(); ++i) why = mismatch(tensors[i], specs[i]);
  if (why.empty()) return;
  std::string signature;
  for (std::size_t i = 0; i < specs.size(); ++i)
    signature += (i ? ", " : "") + (i < options_.arg_names.size() ? options_.arg_names[i] : std::string("x")) + ": " +
                 specs[i].to_string();
  throw InvalidArgumentError("Binding inputs to tf.function failed due to `" + why + "`. for signature: (" + signature +
                             ") of function " + options_.name);
}

/// The shapes a new trace takes: the input_signature's; under reduce_retracing, the latest
/// trace's with the dimensions that differ from the call's unknown; else the call's.
DEVTENSOR_DEFINITION std::vector<Shape> function_detail::TraceCache::shapes_to_trace(
    const std::deque<Entry>& traces, const std::vector<AnyTensor>& tensors) const {
  std::vector<Shape> shapes;
  if (options_.input_signature) {
    for (const auto& spec : *options_.input_signature) shapes.push_back(spec.shape);
    return shapes;
  }
  if (options_.reduce_retracing && !traces.empty()) return relaxed_shapes(traces.back().shapes, tensors);
  for (const auto& t : tensors) shapes.push_back(t.shape);
  return shapes;
}

DEVTENSOR_DEFINITION std::vector<graph::Edge> function_detail::add_outputs(graph::Graph& graph,
                                                                           const std::vector<AnyTensor>& outputs) {
  std::vector<graph::Edge> edges;
  for (const auto& out : outputs) {
    if (!out.defined()) throw InvalidArgumentError("A traced function returned an undefined tensor");
    // Every output passes through an Identity (TensorFlow's), then a _Retval names it.
    const std::string name = graph.unique_name("Identity");
    const graph::Edge input = graph.input_edge(out, "Identity");
    graph::Node identity;
    identity.name = name;
    identity.op = &graph::graph_ops::OutputIdentity;
    identity.inputs = {input};
    identity.requested = DeviceSpec();
    identity.outputs = {{out.dtype, out.shape}};
    // The output keeps its producer's identity, so that a tape around the call differentiates
    // through the ops the graph ran (they record as eager ops do).
    identity.run = [](const graph::RunContext&, graph::NodeInputs in, std::span<AnyTensor> result) {
      result[0] = in[0];
    };
    const auto index = graph.add(std::move(identity));
    edges.push_back({index, 0});
    std::string retval = name;
    retval[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(retval[0])));
    graph::Node ret;
    ret.name = graph.unique_name(retval + "_RetVal");
    ret.op = &graph::graph_ops::Retval;
    ret.inputs = {{index, 0}};
    ret.run = [](const graph::RunContext&, graph::NodeInputs, std::span<AnyTensor>) {};
    graph.add(std::move(ret));
  }
  return edges;
}

DEVTENSOR_DEFINITION AnyTensor function_detail::evaluate_now(const AnyTensor& value) {
  graph::Graph* graph = graph::building();
  const auto& ref = value.storage->symbolic;
  if (!graph || !ref || ref->graph_id != graph->id())
    throw InvalidArgumentError("evaluate_now: '" + (ref ? ref->name : std::string("a tensor")) +
                               "' is not a symbolic tensor of the graph being built");
  auto nodes = graph->snapshot();
  nodes.resize(ref->node + 1);  // what it needs was made before it
  graph::InitScope eagerly;
  auto& context = Context::global();
  const DeviceSet& devices = context.devices("a variable created in a trace");
  auto placement = graph::place(nodes, devices, {/*soft=*/true, /*log=*/false});
  try {
    const graph::Executable executable(std::move(nodes), std::move(placement), {{ref->node, ref->output}}, {});
    return executable.run({}).front();
  } catch (const InvalidArgumentError& e) {
    const std::string what = e.what();
    if (what.find("You must feed a value for placeholder") == std::string::npos) throw;
    throw InvalidArgumentError(
        "The initial value of a variable created in a traced function depends on the function's "
        "arguments (" +
        what.substr(0, what.find('\n')) +
        "). Variables are created once, "
        "outside the graph (TensorFlow's tf.init_scope): give it a value that does not depend on "
        "the arguments, or create it outside the function");
  }
}

namespace function_detail {
/// What traced_step returns: a callable over its Function, which last_concrete_function finds.
struct TracedStepCall {
  std::shared_ptr<Function<graph::TracedStep>> traced;
  std::vector<Tensor<float>> operator()(const std::vector<Tensor<float>>& tensors, const Tensor<std::int64_t>& seed,
                                        std::int64_t count) const {
    return (*traced)(tensors, seed, count);
  }
};
}  // namespace function_detail

DEVTENSOR_DEFINITION graph::TracedStep graph::traced_step(TracedStep step, std::string name, bool cuda_graph) {
  return function_detail::TracedStepCall{std::make_shared<Function<TracedStep>>(
      std::move(step), FunctionOptions{.name = std::move(name), .cuda_graph = cuda_graph})};
}

DEVTENSOR_DEFINITION std::shared_ptr<const ConcreteFunction> graph::last_concrete_function(const TracedStep& step) {
  const auto* call = step.target<function_detail::TracedStepCall>();
  return call ? call->traced->last_concrete_function() : nullptr;
}

DEVTENSOR_DEFINITION std::uint64_t function_detail::next_function_id() {
  static std::atomic<std::uint64_t> ids{0};
  return ids.fetch_add(1, std::memory_order_relaxed) + 1;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
