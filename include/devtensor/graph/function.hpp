#pragma once
/// @file function.hpp
/// @brief Traced functions (TensorFlow's `tf.function`, SPEC 10.4): a callable traced into a graph
/// once per signature and replayed afterwards.
///
///     auto f = dt::function([](const dt::Tensor<float>& a, const dt::Tensor<float>& b) {
///       return dt::matmul(a, b) + 1.0f;
///     }, {.name = "f", .arg_names = {"a", "b"}});
///     auto c = f(a, b);   // traces (a: (_Arg), b: (_Arg), MatMul, add, Identity), then runs
///     auto d = f(a, b);   // same signature: replays the placed graph
///
/// The signature is, per argument: a tensor's dtype, shape and device; a variable's identity; any
/// other value by equality (a new value traces again). Host code in the callable runs only while
/// tracing. Variables are read and assigned through nodes that hold them (captured by handle):
/// assignments persist and later calls see them. Results equal eager execution of the callable
/// (the same kernels in the same order). A Function may be called from several threads.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/graph/executor.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {

/// A tensor argument's type and shape (TensorFlow's tf.TensorSpec), for `input_signature`.
struct TensorSpec {
  Shape shape;
  DType dtype = DType::DT_FLOAT;
  std::string name;

  template <Element T>
  static TensorSpec of(Shape shape, std::string name = {}) {
    return {std::move(shape), dtype_enum<T>(), std::move(name)};
  }
  /// TensorSpec(shape=(2,), dtype=tf.float32, name=None), as TensorFlow prints it.
  [[nodiscard]] std::string to_string() const {
    return "TensorSpec(shape=" + shape.to_python() + ", dtype=tf." + std::string(dtype_name(dtype)) +
           ", name=" + (name.empty() ? std::string("None") : "'" + name + "'") + ")";
  }
};

struct FunctionOptions {
  std::string name = "function";  // in logs: __inference_<name>_<id>, the retracing warning
  /// Names of the tensor arguments' placeholders (C++ cannot see parameter names): `x`, `x_1`, ...
  /// when not given.
  std::vector<std::string> arg_names{};
  /// Fixes the tensor arguments' dtypes and shapes: one trace; a call that does not match is
  /// InvalidArgumentError.
  std::optional<std::vector<TensorSpec>> input_signature{};
};

/// A traced graph for one signature, placed, with its executable (TensorFlow's ConcreteFunction).
class DEVTENSOR_EXPORT ConcreteFunction {
 public:
  ConcreteFunction(std::shared_ptr<graph::Graph> graph, std::vector<graph::Edge> args, std::vector<graph::Edge> outputs,
                   std::string name);

  /// Runs the graph on `args` (one tensor per placeholder) and returns the outputs' values.
  [[nodiscard]] std::vector<AnyTensor> call(const std::vector<AnyTensor>& args) const;
  /// Places the graph (once; the placement log then) and builds its executable.
  void prepare() const;

  /// `__inference_<name>_<id>`.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const graph::Graph& graph() const noexcept { return *graph_; }
  /// The nodes' names in graph order.
  [[nodiscard]] std::vector<std::string> node_names() const;

 private:
  std::shared_ptr<graph::Graph> graph_;
  std::vector<graph::Edge> args_;
  std::vector<graph::Edge> outputs_;
  std::string name_;
  mutable std::once_flag placed_;
  mutable std::shared_ptr<const graph::Executable> executable_;
  mutable const Device* call_device_ = nullptr;

  void place() const;
};

namespace function_detail {

/// One argument's part of the signature, and the traced graph's stand-in for it.
template <class A>
struct Arg {
  static std::string key(const A& value) {
    if constexpr (std::is_arithmetic_v<A>) return std::to_string(value);
    else if constexpr (std::is_same_v<A, std::string>) return "'" + value + "'";
    else static_assert(sizeof(A) == 0, "function arguments are tensors, variables, numbers or strings");
  }
};
template <Element T>
struct Arg<Tensor<T>> {
  static std::string key(const Tensor<T>& t) {
    if (!t.defined()) throw InvalidArgumentError("A traced function was called with an undefined tensor");
    if (t.symbolic()) return "symbolic";  // a call inside another trace: inlined
    return std::string(dtype_name<T>()) + t.shape().to_string() + "@" + t.device();
  }
};
template <Element T>
struct Arg<Variable<T>> {
  static std::string key(const Variable<T>& v) { return "variable " + std::to_string(v.handle_id()); }
};

/// The outputs a callable may return: a tensor, a vector of tensors, a tuple of tensors, nothing.
template <class R>
struct Outputs;
template <>
struct Outputs<void> {
  static std::vector<AnyTensor> flatten() { return {}; }
  static void rebuild(const std::vector<AnyTensor>&) {}
};
template <Element T>
struct Outputs<Tensor<T>> {
  static std::vector<AnyTensor> flatten(const Tensor<T>& t) { return {AnyTensor(t)}; }
  static Tensor<T> rebuild(const std::vector<AnyTensor>& v) { return v.at(0).template as<T>(); }
};
template <Element T>
struct Outputs<std::vector<Tensor<T>>> {
  static std::vector<AnyTensor> flatten(const std::vector<Tensor<T>>& ts) { return {ts.begin(), ts.end()}; }
  static std::vector<Tensor<T>> rebuild(const std::vector<AnyTensor>& v) {
    std::vector<Tensor<T>> out;
    for (const auto& t : v) out.push_back(t.template as<T>());
    return out;
  }
};
template <Element... Ts>
struct Outputs<std::tuple<Tensor<Ts>...>> {
  static std::vector<AnyTensor> flatten(const std::tuple<Tensor<Ts>...>& ts) {
    return std::apply([](const auto&... t) { return std::vector<AnyTensor>{AnyTensor(t)...}; }, ts);
  }
  static std::tuple<Tensor<Ts>...> rebuild(const std::vector<AnyTensor>& v) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<Tensor<Ts>...>{v.at(I).template as<Ts>()...};
    }(std::index_sequence_for<Ts...>{});
  }
};

/// Checks one tensor argument against its TensorSpec (TensorFlow's binding error, as text).
std::string mismatch(const AnyTensor& t, const TensorSpec& spec);

/// Adds the output Identity nodes and their _Retval nodes: the outputs' edges.
std::vector<graph::Edge> add_outputs(graph::Graph& graph, const std::vector<AnyTensor>& outputs);

/// TensorFlow's frequent-tracing detector: warns (SPEC 10.4's text, at most twice per function)
/// when 5 or more of the recent calls traced; the window keeps at most 5 calls before the oldest
/// trace in it.
class RetracingDetector {
 public:
  void called(bool traced, const std::string& name);

 private:
  std::deque<int> calls_per_trace_;  // calls since each recent trace, that one included
  int calls_ = 0;
  int warnings_ = 0;
};

/// A process-unique number for `__inference_<name>_<id>`.
std::uint64_t next_function_id();

}  // namespace function_detail

/// tf.function: `f` traced once per signature, its graph replayed afterwards.
template <class F>
class Function {
 public:
  Function(F f, FunctionOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  /// Traces on a new signature, then runs the concrete function. Inside another trace the
  /// callable is inlined into that graph.
  template <class... Args>
  auto operator()(const Args&... args) {
    using R = std::invoke_result_t<F&, const Args&...>;
    if (graph::building()) return f_(args...);  // a call inside a trace: its ops join that graph
    bool traced = false;
    auto concrete = concrete_for(traced, args...);
    std::vector<AnyTensor> inputs;
    (collect(inputs, args), ...);
    concrete->prepare();  // placed (and logged) before the call's own line, as TensorFlow's
    if (Context::global().log_device_placement() && log_enabled(LogSource::cpp_runtime, LogSeverity::info))
      log(LogSeverity::info, "Executing op " + concrete->name() + " in device " + call_device().full_name);
    const auto outputs = concrete->call(inputs);
    if constexpr (std::is_void_v<R>) return;
    else return function_detail::Outputs<R>::rebuild(outputs);
  }

  /// The concrete function for these arguments' signature, traced if new.
  template <class... Args>
  std::shared_ptr<const ConcreteFunction> get_concrete_function(const Args&... args) {
    bool traced = false;
    return concrete_for(traced, args...);
  }

  /// How many times the callable was traced (TensorFlow's experimental_get_tracing_count).
  [[nodiscard]] int experimental_get_tracing_count() const {
    std::lock_guard lock(mutex_);
    return traces_;
  }

 private:
  F f_;
  FunctionOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const ConcreteFunction>> concrete_;
  int traces_ = 0;
  function_detail::RetracingDetector retracing_;

  template <class A>
  static void collect(std::vector<AnyTensor>& out, const A& a) {
    if constexpr (requires { typename A::value_type; requires std::same_as<A, Tensor<typename A::value_type>>; })
      out.emplace_back(a);
  }

  static const Device& call_device() { return place_constant(); }

  template <class... Args>
  std::shared_ptr<const ConcreteFunction> concrete_for(bool& traced, const Args&... args) {
    std::string key;
    ((key += function_detail::Arg<Args>::key(args) + ";"), ...);
    check_signature(args...);
    std::lock_guard lock(mutex_);
    auto& slot = concrete_[key];
    traced = slot == nullptr;
    if (traced) {
      try {
        slot = trace(args...);
      } catch (...) {
        concrete_.erase(key);
        throw;
      }
      ++traces_;
    }
    retracing_.called(traced, options_.name);
    return slot;
  }

  template <class... Args>
  void check_signature(const Args&... args) const {
    if (!options_.input_signature) return;
    std::vector<AnyTensor> tensors;
    (collect(tensors, args), ...);
    const auto& specs = *options_.input_signature;
    std::string why;
    if (tensors.size() != specs.size())
      why = "expected " + std::to_string(specs.size()) + " tensor arguments, got " + std::to_string(tensors.size());
    for (std::size_t i = 0; why.empty() && i < tensors.size(); ++i) why = function_detail::mismatch(tensors[i], specs[i]);
    if (!why.empty()) {
      std::string signature;
      for (std::size_t i = 0; i < specs.size(); ++i)
        signature += (i ? ", " : "") + (i < options_.arg_names.size() ? options_.arg_names[i] : std::string("x")) + ": " +
                     specs[i].to_string();
      throw InvalidArgumentError("Binding inputs to tf.function failed due to `" + why + "`. for signature: (" + signature +
                                 ") of function " + options_.name);
    }
  }

  template <class... Args>
  std::shared_ptr<const ConcreteFunction> trace(const Args&... args) {
    auto graph = std::make_shared<graph::Graph>();
    std::vector<graph::Edge> arg_edges;
    std::vector<AnyTensor> outputs;
    {
      graph::GraphScope scope(graph);
      std::size_t tensor_index = 0;
      const auto stand_in = [&]<class A>(const A& a) -> A {
        if constexpr (requires { typename A::value_type; requires std::same_as<A, Tensor<typename A::value_type>>; }) {
          using T = typename A::value_type;
          const std::string name = tensor_index < options_.arg_names.size() ? options_.arg_names[tensor_index] : "x";
          ++tensor_index;
          auto placeholder = graph::add_placeholder(*graph, name, dtype_enum<T>(), a.shape(), "_Arg");
          const auto& ref = *placeholder.storage->symbolic;
          arg_edges.push_back({ref.node, ref.output});
          return placeholder.template as<T>();
        } else {
          return a;
        }
      };
      using R = std::invoke_result_t<F&, const Args&...>;
      std::tuple<Args...> stand_ins{stand_in(args)...};  // braces: made left to right, as named
      if constexpr (std::is_void_v<R>) std::apply(f_, stand_ins);
      else outputs = function_detail::Outputs<R>::flatten(std::apply(f_, stand_ins));
      arg_edges.shrink_to_fit();
      auto out_edges = function_detail::add_outputs(*graph, outputs);
      return std::make_shared<const ConcreteFunction>(
          graph, std::move(arg_edges), std::move(out_edges),
          "__inference_" + options_.name + "_" + std::to_string(function_detail::next_function_id()));
    }
  }
};

/// tf.function(f): see Function.
template <class F>
Function<F> function(F f, FunctionOptions options = {}) {
  return Function<F>(std::move(f), std::move(options));
}

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION ConcreteFunction::ConcreteFunction(std::shared_ptr<graph::Graph> graph, std::vector<graph::Edge> args,
                                                        std::vector<graph::Edge> outputs, std::string name)
    : graph_(std::move(graph)), args_(std::move(args)), outputs_(std::move(outputs)), name_(std::move(name)) {}

DEVTENSOR_DEFINITION std::vector<std::string> ConcreteFunction::node_names() const {
  std::vector<std::string> out;
  for (const auto& n : graph_->snapshot()) out.push_back(n->name);
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
    if (nodes[i]->stateful) stateful.push_back(i);
  executable_ = std::make_shared<const graph::Executable>(std::move(nodes), std::move(placement), outputs_, args_, stateful);
}

DEVTENSOR_DEFINITION void ConcreteFunction::prepare() const {
  std::call_once(placed_, [this] { place(); });
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> ConcreteFunction::call(const std::vector<AnyTensor>& args) const {
  prepare();
  return executable_->run(args);
}

DEVTENSOR_DEFINITION std::string function_detail::mismatch(const AnyTensor& t, const TensorSpec& spec) {
  if (t.dtype == spec.dtype && t.shape == spec.shape) return {};
  return "Can not cast " + TensorSpec{t.shape, t.dtype, {}}.to_string() + " to " + spec.to_string();
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
    identity.op = "Identity";
    identity.inputs = {input};
    identity.requested = DeviceSpec();
    identity.outputs = {{out.dtype, out.shape}};
    identity.pass_through = true;
    // The output keeps its producer's identity, so that a tape around the call differentiates
    // through the ops the graph ran (they record as eager ops do).
    identity.run = [](const graph::RunContext&, std::span<const AnyTensor> in, std::span<AnyTensor> result) { result[0] = in[0]; };
    const auto index = graph.add(std::move(identity));
    edges.push_back({index, 0});
    std::string retval = name;
    retval[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(retval[0])));
    graph::Node ret;
    ret.name = graph.unique_name(retval + "_RetVal");
    ret.op = "_Retval";
    ret.inputs = {{index, 0}};
    ret.pass_through = true;
    ret.run = [](const graph::RunContext&, std::span<const AnyTensor>, std::span<AnyTensor>) {};
    graph.add(std::move(ret));
  }
  return edges;
}

DEVTENSOR_DEFINITION void function_detail::RetracingDetector::called(bool traced, const std::string& name) {
  constexpr int kThreshold = 5;
  constexpr int kMaxWarnings = 2;
  ++calls_;
  if (!traced) {
    if (calls_per_trace_.empty()) calls_per_trace_.push_back(0);
    ++calls_per_trace_.back();
    return;
  }
  calls_per_trace_.push_back(1);
  while (!calls_per_trace_.empty() && calls_ - calls_per_trace_.front() > kThreshold) {
    calls_ -= calls_per_trace_.front();
    calls_per_trace_.pop_front();
  }
  if (warnings_ >= kMaxWarnings || static_cast<int>(calls_per_trace_.size()) < kThreshold) return;
  ++warnings_;
  log(LogSeverity::warning,
      std::to_string(calls_per_trace_.size()) + " out of the last " + std::to_string(calls_) + " calls to <function " + name +
          "> triggered tf.function retracing. Tracing is expensive and the excessive number of tracings could be due to "
          "(1) creating @tf.function repeatedly in a loop, (2) passing tensors with different shapes, (3) passing Python "
          "objects instead of tensors. For (1), please define your @tf.function outside of the loop. For (2), "
          "@tf.function has reduce_retracing=True option that can avoid unnecessary retracing. For (3), please refer to "
          "https://www.tensorflow.org/guide/function#controlling_retracing and "
          "https://www.tensorflow.org/api_docs/python/tf/function for  more details.");
}

DEVTENSOR_DEFINITION std::uint64_t function_detail::next_function_id() {
  static std::atomic<std::uint64_t> ids{0};
  return ids.fetch_add(1, std::memory_order_relaxed) + 1;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
