#pragma once
/// @file gradient_helpers.hpp
/// @brief What the ops' gradients share (their definitions call these). Gradients follow
/// TensorFlow's (math_grad.py, array_grad.py, nn_grad.py) and are written with devtensor's own ops,
/// found by argument-dependent lookup when a gradient is instantiated, so they run wherever those
/// ops are placed and are themselves differentiable (nested tapes give higher derivatives).

#include <cstdint>
#include <span>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::ops {

/// Sums `g` over the axes along which a tensor of `shape` was broadcast to g's shape.
template <Floating T>
Tensor<T> unbroadcast(const Tensor<T>& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  std::vector<std::int64_t> axes;
  const std::size_t lead = g.rank() - shape.rank();
  for (std::size_t d = 0; d < g.rank(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
  const Tensor<T> summed = axes.empty() ? g : reduce_sum(g, axes);
  return reshape(summed, shape.dims_vector());
}

/// unbroadcast as a graph node that runs it on the values (their shapes known then).
template <Floating T>
DEVTENSOR_COLD Tensor<T> unbroadcast_when_run(const Tensor<T>& g, const Tensor<T>& like) {
  auto* graph = graph::building();
  if (!graph) return unbroadcast(g, like.shape());  // tensors with values have known shapes
  const AnyTensor inputs[2] = {AnyTensor(g), AnyTensor(like)};
  return graph::add_eager_node(*graph, "Unbroadcast", inputs, {{dtype_enum<T>(), like.shape()}},
                               [](std::span<const AnyTensor> in) {
                                 return std::vector<AnyTensor>{AnyTensor(unbroadcast(in[0].as<T>(), in[1].shape))};
                               },
                               {.capturable = true})  // a reduction fixed by the shapes
      .front()
      .template as<T>();
}

/// The same to the shape `like` has. In a graph with unknown dimensions the broadcast axes are
/// found when the graph runs (TensorFlow's BroadcastGradientArgs): `(None, 3)` may be 1 or 5.
template <Floating T>
Tensor<T> unbroadcast(const Tensor<T>& g, const Tensor<T>& like) {
  if (g.shape().is_fully_defined() && like.shape().is_fully_defined()) [[likely]]
    return unbroadcast(g, like.shape());
  return unbroadcast_when_run(g, like);
}

/// `dy` of a reduction reshaped so that it broadcasts against the input (reduced axes as 1).
template <Floating T>
Tensor<T> with_kept_dims(const Tensor<T>& dy, const Shape& input, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims = input.dims_vector();
  for (auto a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(dy, dims);
}

/// A scalar the backward pass needs (2 in d(x²), the count in d(mean)): made by Fill on the device
/// the gradient runs on, not copied from the host, so a step on a GPU has no host→device copy.
template <Floating T>
Tensor<T> constant_like(T value) {
  return fill<T>(Shape{}, value);
}

}  // namespace devtensor::ops
