#pragma once
/// @file grad_ops.hpp
/// @brief The kernels gradients use that are not user ops: ReluGrad, SigmoidGrad, TanhGrad,
/// SqrtGrad (recorded, so that nested tapes give second derivatives) and the comparison masks
/// GreaterEqual and Equal (1 or 0 in the input's type; piecewise constant, so never recorded).

#include "devtensor/ops/math.hpp"

namespace devtensor {
namespace grad_ops {

/// dy where the ReLU's input (or output) is positive, else 0.
template <Numeric T>
Tensor<T> relu_grad(const Tensor<T>& dy, const Tensor<T>& features) {
  return op_detail::binary_op<ops::ReluGrad>(dy, features);
}
/// dy · y · (1 − y) for y = sigmoid(x).
template <Floating T>
Tensor<T> sigmoid_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return op_detail::binary_op<ops::SigmoidGrad>(y, dy);
}
/// dy · (1 − y²) for y = tanh(x).
template <Floating T>
Tensor<T> tanh_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return op_detail::binary_op<ops::TanhGrad>(y, dy);
}
/// dy / (2 y) for y = sqrt(x).
template <Floating T>
Tensor<T> sqrt_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return op_detail::binary_op<ops::SqrtGrad>(y, dy);
}
/// 1 where a >= b, else 0 (broadcasting).
template <Numeric T>
Tensor<T> greater_equal(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::GreaterEqual, false>(a, b);
}
/// 1 where a == b, else 0 (broadcasting).
template <Numeric T>
Tensor<T> equal(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Equal, false>(a, b);
}

}  // namespace grad_ops
}  // namespace devtensor
