#pragma once
/// @file gradient_helpers.hpp
/// @brief What the ops' gradients share (their definitions call these). Gradients follow
/// TensorFlow's (math_grad.py, array_grad.py, nn_grad.py) and are written with devtensor's own ops,
/// found by argument-dependent lookup when a gradient is instantiated, so they run wherever those
/// ops are placed and are themselves differentiable (nested tapes give higher derivatives).

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_traits.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::ops {

/// Sums `g` over the axes along which a tensor of `shape` was broadcast to g's shape.
template <FloatingElement T>
Tensor<T> unbroadcast(const Tensor<T>& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  std::vector<std::int64_t> axes;
  const std::size_t lead = g.rank() - shape.rank();
  for (std::size_t d = 0; d < g.rank(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
  const Tensor<T> summed = axes.empty() ? g : reduce_sum(g, axes);
  return reshape(summed, shape.dims_vector());
}

/// unbroadcast of `g` to the shape `like` has when it runs (TensorFlow's BroadcastGradientArgs
/// and the Sum it feeds): a node while a graph is built, whose shapes are known at each run.
template <FloatingElement T>
struct Unbroadcast : TensorLevel {
  static constexpr std::string_view name = "Unbroadcast";
  // Its kernel runs ops itself, on its inputs where they are; a CUDA graph may record them (a
  // reduction the shapes fix).
  static constexpr OpTraits traits{.handles_unknown_dims = true, .communication = true, .any_thread = false};
  struct Attrs {};
  static Tensor<T> eager(const Attrs&, const Tensor<T>& g, const Tensor<T>& like) {
    return unbroadcast(g, like.shape());
  }
  static Tensor<T> graph(graph::Graph& graph, const Attrs&, const Tensor<T>& g, const Tensor<T>& like) {
    const AnyTensor inputs[2] = {AnyTensor(g), AnyTensor(like)};
    graph::NodeSpec spec{&info_of<Unbroadcast>, {{dtype_enum<T>(), like.shape()}}};
    spec.run = [](const graph::RunContext&, graph::NodeInputs in, std::span<AnyTensor> out) {
      out[0] = AnyTensor(unbroadcast(in[0].as<T>(), in[1].shape));
    };
    return graph::add_op(graph, name, inputs, std::move(spec)).front().template as<T>();
  }
};

/// The same to the shape `like` has. In a graph with unknown dimensions the broadcast axes are
/// found when the graph runs (TensorFlow's BroadcastGradientArgs): `(None, 3)` may be 1 or 5.
template <FloatingElement T>
Tensor<T> unbroadcast(const Tensor<T>& g, const Tensor<T>& like) {
  if (g.shape().is_fully_defined() && like.shape().is_fully_defined()) [[likely]]
    return unbroadcast(g, like.shape());
  return run_op<Unbroadcast<T>>({}, g, like);
}

/// `dy` of a reduction reshaped so that it broadcasts against the input (reduced axes as 1).
template <FloatingElement T>
Tensor<T> with_kept_dims(const Tensor<T>& dy, const Shape& input, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims = input.dims_vector();
  for (auto a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(dy, dims);
}

/// A scalar the backward pass needs (2 in d(x²), the count in d(mean)): made by Fill on the device
/// the gradient runs on, not copied from the host, so a step on a GPU has no host→device copy.
template <FloatingElement T>
Tensor<T> constant_like(T value) {
  return fill<T>(Shape{}, value);
}

}  // namespace devtensor::ops
