#pragma once
/// @file host_function.hpp
/// @brief ops::HostFunction: an op whose kernel is host code over its inputs' values (TensorFlow's
/// tf.py_function, EagerPyFunc), named and described by a kind: a strategy's reductions across
/// replicas (distribute/strategy_ops.hpp) and users' ops of host code are defined so. Run through
/// run_op: now, or, while a graph is built, a node that runs the code at every run of the graph.
///
///     struct Twice {                                              // the op's kind
///       static constexpr std::string_view name = "Twice";
///       static constexpr dt::ops::OpTraits traits{.communication = true, .any_thread = false};
///     };
///     auto out = dt::run_op<dt::ops::HostFunction<Twice>>(
///         {[](std::span<const dt::AnyTensor> v) { return std::vector<dt::AnyTensor>{v[0].as<float>() * 2.0f}; },
///          {{dt::DType::DT_FLOAT, x.shape()}}},
///         std::vector<dt::AnyTensor>{x});

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_traits.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::ops {

/// An op of host code over tensor values. `Kind` gives its `name` and its `traits`: most such
/// code reads its inputs where they are (`communication`) and needs the caller's thread (its
/// scopes: `any_thread = false`); a CUDA graph records it only when it says its code merely queues
/// device work that the inputs' shapes and addresses fix (`capturable`). A kind may also give
/// `across_processes_traits`, used when the attributes say the code talks to other processes.
template <class Kind>
struct HostFunction : TensorLevel {
  static constexpr std::string_view name = Kind::name;
  static constexpr OpTraits traits = Kind::traits;
  static constexpr OpInfo across_processes_info{name, [] {
                                                  if constexpr (requires { Kind::across_processes_traits; })
                                                    return Kind::across_processes_traits;
                                                  else
                                                    return Kind::traits;
                                                }()};
  using Body = std::function<std::vector<AnyTensor>(std::span<const AnyTensor>)>;
  struct Attrs {
    Body body;
    std::vector<graph::OutputSpec> outputs;  // what `body` returns: a node's outputs
    bool across_processes = false;           // the code talks to other processes at every run
  };

  static std::vector<AnyTensor> eager(const Attrs& a, std::span<const AnyTensor> inputs) { return a.body(inputs); }

  static std::vector<AnyTensor> graph(graph::Graph& graph, const Attrs& a, std::span<const AnyTensor> inputs) {
    graph::NodeSpec spec{a.across_processes ? &across_processes_info : &info_of<HostFunction>, a.outputs};
    spec.run = [body = a.body, expected = a.outputs.size()](const graph::RunContext&, graph::NodeInputs in,
                                                            std::span<AnyTensor> out) {
      std::vector<AnyTensor> values;  // the code takes its inputs as a span of values
      values.reserve(in.size());
      for (const auto& v : in) values.push_back(v);
      auto results = body(values);
      if (results.size() != expected)
        throw InternalError(std::string(name) + " produced " + std::to_string(results.size()) +
                            " values, its node has " + std::to_string(expected) + " outputs");
      for (std::size_t i = 0; i < results.size(); ++i) out[i] = std::move(results[i]);
    };
    return graph::add_op(graph, name, inputs, std::move(spec));
  }
};

}  // namespace devtensor::ops
