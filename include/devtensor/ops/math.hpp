#pragma once
/// @file math.hpp
/// @brief Elementwise math (ops/elementwise.hpp: add, sub, mul, div, maximum, minimum with NumPy
/// broadcasting, neg, abs, square, sqrt, exp, log, relu, sigmoid, tanh, add_n) and its operators.

#include <string>
#include <string_view>
#include <type_traits>

#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/elementwise.hpp"

namespace devtensor {

// Operators. A scalar operand becomes a rank-0 constant and broadcasts. In a graph they name their
// nodes as TensorFlow's Python operators do: `add`, `sub`, `mul`, `truediv`, and a scalar operand
// `<op>/y` (`<op>/x` on the left).
namespace op_detail {
template <Numeric T, class F>
Tensor<T> scalar_operator(std::string_view name, const Tensor<T>& a, T b, bool scalar_left, F op) {
  graph::NameScope scope(name);  // nothing outside a graph
  if (!scope.active()) [[likely]]
    return scalar_left ? op(scalar<T>(b), a, OpOptions{}) : op(a, scalar<T>(b), OpOptions{});
  const auto s = scalar<T>(b, {.name = scalar_left ? "x" : "y"});
  const std::string exact = scope.name() + "/";  // the op takes the scope's name itself
  return scalar_left ? op(s, a, {.name = exact}) : op(a, s, {.name = exact});
}
inline constexpr auto add_fn = [](const auto& x, const auto& y, const OpOptions& o) { return add(x, y, o); };
inline constexpr auto sub_fn = [](const auto& x, const auto& y, const OpOptions& o) { return sub(x, y, o); };
inline constexpr auto mul_fn = [](const auto& x, const auto& y, const OpOptions& o) { return mul(x, y, o); };
inline constexpr auto div_fn = [](const auto& x, const auto& y, const OpOptions& o) { return div(x, y, o); };
}  // namespace op_detail

template <Numeric T>
Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) {
  return add(a, b, {.name = "add"});
}
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) {
  return sub(a, b, {.name = "sub"});
}
template <Numeric T>
Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) {
  return mul(a, b, {.name = "mul"});
}
template <Numeric T>
Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) {
  return div(a, b, {.name = "truediv"});
}
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a) {
  return neg(a);
}
template <Numeric T>
Tensor<T> operator+(const Tensor<T>& a, std::type_identity_t<T> b) {
  return op_detail::scalar_operator<T>("add", a, b, false, op_detail::add_fn);
}
template <Numeric T>
Tensor<T> operator+(std::type_identity_t<T> a, const Tensor<T>& b) {
  return op_detail::scalar_operator<T>("add", b, a, true, op_detail::add_fn);
}
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a, std::type_identity_t<T> b) {
  return op_detail::scalar_operator<T>("sub", a, b, false, op_detail::sub_fn);
}
template <Numeric T>
Tensor<T> operator-(std::type_identity_t<T> a, const Tensor<T>& b) {
  return op_detail::scalar_operator<T>("sub", b, a, true, op_detail::sub_fn);
}
template <Numeric T>
Tensor<T> operator*(const Tensor<T>& a, std::type_identity_t<T> b) {
  return op_detail::scalar_operator<T>("mul", a, b, false, op_detail::mul_fn);
}
template <Numeric T>
Tensor<T> operator*(std::type_identity_t<T> a, const Tensor<T>& b) {
  return op_detail::scalar_operator<T>("mul", b, a, true, op_detail::mul_fn);
}
template <Numeric T>
Tensor<T> operator/(const Tensor<T>& a, std::type_identity_t<T> b) {
  return op_detail::scalar_operator<T>("truediv", a, b, false, op_detail::div_fn);
}
template <Numeric T>
Tensor<T> operator/(std::type_identity_t<T> a, const Tensor<T>& b) {
  return op_detail::scalar_operator<T>("truediv", b, a, true, op_detail::div_fn);
}

}  // namespace devtensor
