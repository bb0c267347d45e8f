#pragma once
/// @file math.hpp
/// @brief Elementwise math (ops/elementwise.hpp: add, sub, mul, div, maximum, minimum with NumPy
/// broadcasting, neg, abs, square, sqrt, exp, log, relu, sigmoid, tanh, add_n) and its operators.

#include <type_traits>

#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/elementwise.hpp"

namespace devtensor {

// Operators. A scalar operand becomes a rank-0 constant and broadcasts.
template <Numeric T>
Tensor<T> operator+(const Tensor<T>& a, const Tensor<T>& b) { return add(a, b); }
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a, const Tensor<T>& b) { return sub(a, b); }
template <Numeric T>
Tensor<T> operator*(const Tensor<T>& a, const Tensor<T>& b) { return mul(a, b); }
template <Numeric T>
Tensor<T> operator/(const Tensor<T>& a, const Tensor<T>& b) { return div(a, b); }
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a) { return neg(a); }
template <Numeric T>
Tensor<T> operator+(const Tensor<T>& a, std::type_identity_t<T> b) { return add(a, scalar<T>(b)); }
template <Numeric T>
Tensor<T> operator+(std::type_identity_t<T> a, const Tensor<T>& b) { return add(scalar<T>(a), b); }
template <Numeric T>
Tensor<T> operator-(const Tensor<T>& a, std::type_identity_t<T> b) { return sub(a, scalar<T>(b)); }
template <Numeric T>
Tensor<T> operator-(std::type_identity_t<T> a, const Tensor<T>& b) { return sub(scalar<T>(a), b); }
template <Numeric T>
Tensor<T> operator*(const Tensor<T>& a, std::type_identity_t<T> b) { return mul(a, scalar<T>(b)); }
template <Numeric T>
Tensor<T> operator*(std::type_identity_t<T> a, const Tensor<T>& b) { return mul(scalar<T>(a), b); }
template <Numeric T>
Tensor<T> operator/(const Tensor<T>& a, std::type_identity_t<T> b) { return div(a, scalar<T>(b)); }
template <Numeric T>
Tensor<T> operator/(std::type_identity_t<T> a, const Tensor<T>& b) { return div(scalar<T>(a), b); }

}  // namespace devtensor
