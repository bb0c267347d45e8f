#pragma once
/// @file reduction.hpp
/// @brief reduce_sum, reduce_mean, reduce_max over all axes, one axis or several, with keepdims.

#include <optional>
#include <string>
#include <vector>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/ops/cpu/reduce.hpp"
#include "devtensor/ops/dispatch.hpp"

namespace devtensor {
namespace op_detail {

template <class Op, Numeric T>
Tensor<T> reduction(const Tensor<T>& t, const std::optional<std::vector<std::int64_t>>& axes,
                    bool keepdims, ops::cpu::ReduceKind kind) {
  require_defined_inputs(Op::name, t);
  const Shape& shape = t.shape();
  std::vector<bool> reduce(shape.rank(), !axes.has_value());
  if (axes) {
    for (auto a : *axes) {
      const std::size_t axis = shape.axis(a, "Invalid reduction dimension: axis");
      if (reduce[axis])
        throw InvalidArgumentError("Axis " + std::to_string(a) + " specified more than once [Op:" +
                                   std::string(Op::name) + "]");
      reduce[axis] = true;
    }
  }
  std::vector<std::int64_t> out_dims;
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (!reduce[d]) out_dims.push_back(shape[d]);
    else if (keepdims) out_dims.push_back(1);
  }
  const Shape out_shape(std::move(out_dims));
  const int device = place<Op, T>(t);
  const auto x = to_device(t, device, Op::name, 0);
  auto out = Tensor<T>::empty(out_shape, device, Op::name);
  if (auto* body = gpu_body<Op, T>(out.device_info())) {
    body(out.device_info(), x.data(), shape, reduce, out.mutable_data());
  } else {
    ops::cpu::reduce(x.data(), shape, reduce, kind, out.mutable_data());
  }
  if (autodiff::tapes_active()) {
    detail::OpAttrs attrs;
    for (std::size_t d = 0; d < shape.rank(); ++d)
      if (reduce[d]) attrs.list.push_back(static_cast<std::int64_t>(d));
    autodiff::record<Op>(out, std::move(attrs), t);
  }
  return out;
}

}  // namespace op_detail

/// Sum over every axis (axes = std::nullopt), the given axes (negative counts from the end), with
/// reduced axes kept as size 1 when `keepdims`. @throws InvalidArgumentError for an axis out of
/// range or given twice.
template <Numeric T>
Tensor<T> reduce_sum(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                     bool keepdims = false) {
  return op_detail::reduction<ops::Sum>(t, axes, keepdims, ops::cpu::ReduceKind::sum);
}
/// The mean; integer types divide with truncation, as TensorFlow does.
template <Numeric T>
Tensor<T> reduce_mean(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                      bool keepdims = false) {
  return op_detail::reduction<ops::Mean>(t, axes, keepdims, ops::cpu::ReduceKind::mean);
}
template <Numeric T>
Tensor<T> reduce_max(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes = std::nullopt,
                     bool keepdims = false) {
  return op_detail::reduction<ops::Max>(t, axes, keepdims, ops::cpu::ReduceKind::max);
}
template <Numeric T>
Tensor<T> reduce_sum(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_sum(t, std::vector<std::int64_t>{axis}, keepdims);
}
template <Numeric T>
Tensor<T> reduce_mean(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_mean(t, std::vector<std::int64_t>{axis}, keepdims);
}
template <Numeric T>
Tensor<T> reduce_max(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_max(t, std::vector<std::int64_t>{axis}, keepdims);
}

}  // namespace devtensor
