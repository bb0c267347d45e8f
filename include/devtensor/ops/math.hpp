#pragma once
/// @file math.hpp
/// @brief Elementwise math: add, sub, mul, div, maximum with NumPy broadcasting (and operators),
/// neg, square, sqrt, exp, log, relu, sigmoid, tanh, and add_n.

#include <atomic>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/dispatch.hpp"
#include "devtensor/ops/functors.hpp"

namespace devtensor {
namespace op_detail {

/// Runs a broadcasting binary op on `device` (already placed): Op's GPU body on a real GPU,
/// ops::cpu::binary with `f` elsewhere. `Differentiable` ops are recorded for GradientTape.
template <class Op, bool Differentiable = true, Element T, class F>
Tensor<T> binary_op_on(int device, const Shape& shape, const Tensor<T>& a, const Tensor<T>& b, F f) {
  const auto x = to_device(a, device, Op::name, 0);
  const auto y = to_device(b, device, Op::name, 1);
  auto out = Tensor<T>::empty(shape, device, Op::name);
  kernels::Binary<T>* body = nullptr;
  if constexpr (std::same_as<kernel_body_t<Op, T>, kernels::Binary<T>>) body = gpu_body<Op, T>(out.device_info());
  if (body)
    body(out.device_info(), x.data(), x.shape(), y.data(), y.shape(), out.mutable_data(), shape);
  else
    ops::cpu::binary(x.data(), x.shape(), y.data(), y.shape(), out.mutable_data(), shape, f);
  if constexpr (Differentiable) autodiff::record<Op>(out, {}, a, b);
  return out;
}
template <class Op, bool Differentiable = true, Element T>
Tensor<T> binary_op(const Tensor<T>& a, const Tensor<T>& b) {
  // No up-front defined() check: an undefined tensor's shape [] broadcasts with anything, so
  // to_device is the first to see it and names it ("Input 1 of AddV2 is an undefined tensor").
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), Op::name);  // shape errors first
  return binary_op_on<Op, Differentiable>(place<Op, T>(a, b), shape, a, b, ops::Functor<Op>{});
}

template <class Op, Element T>
Tensor<T> unary_op(const Tensor<T>& a) {
  const int device = place<Op, T>(a);
  const auto x = to_device(a, device, Op::name, 0);
  auto out = Tensor<T>::empty(x.shape(), device, Op::name);
  if (auto* body = gpu_body<Op, T>(out.device_info()))
    body(out.device_info(), x.data(), out.mutable_data(), x.num_elements());
  else
    ops::cpu::unary(x.data(), out.mutable_data(), x.num_elements(), ops::Functor<Op>{});
  autodiff::record<Op>(out, {}, a);
  return out;
}

}  // namespace op_detail

// Integer add, sub, mul, neg, abs and square wrap modulo 2^N (ops/functors.hpp).

/// a + b with broadcasting (TensorFlow's AddV2).
template <Numeric T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Add>(a, b);
}
template <Numeric T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Sub>(a, b);
}
template <Numeric T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Mul>(a, b);
}
/// a / b: true division for floating types (RealDiv), floor division for integers (FloorDiv, as
/// Python's //; INT_MIN // -1 wraps to INT_MIN). @throws InvalidArgumentError on integer division
/// by zero.
template <Numeric T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return op_detail::binary_op<ops::RealDiv>(a, b);
  } else {
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), ops::FloorDiv::name);
    const int device = op_detail::place<ops::FloorDiv, T>(a, b);
    const auto& info = Context::global().logical_devices()[static_cast<std::size_t>(device)];
    bool by_zero = false;
    Tensor<T> out;
    if (auto* body = op_detail::gpu_body<ops::FloorDiv, T>(info)) {
      // The kernel raises a flag in device memory, read back (a synchronisation) only here.
      const auto x = to_device(a, device, ops::FloorDiv::name, 0);
      const auto y = to_device(b, device, ops::FloorDiv::name, 1);
      out = Tensor<T>::empty(shape, device, ops::FloorDiv::name);
      auto flag = Tensor<std::int32_t>::empty(Shape{}, device, ops::FloorDiv::name);
      const std::int32_t zero = 0;
      detail::copy_bytes(flag.mutable_data(), info, &zero, detail::host_buffer_device(), sizeof zero);
      body(info, x.data(), x.shape(), y.data(), y.shape(), out.mutable_data(), shape, flag.mutable_data());
      by_zero = flag.item() != 0;
      autodiff::record<ops::FloorDiv>(out, {}, a, b);
    } else {
      std::atomic<int> raised{0};  // set from the CPU kernel's threads
      out = op_detail::binary_op_on<ops::FloorDiv>(device, shape, a, b, ops::FloorDivFunctor<std::atomic<int>>{&raised});
      by_zero = raised.load() != 0;
    }
    if (by_zero) throw InvalidArgumentError("Integer division by zero [Op:FloorDiv]");
    return out;
  }
}
template <Numeric T>
Tensor<T> maximum(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Maximum>(a, b);
}
template <Numeric T>
Tensor<T> minimum(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Minimum>(a, b);
}

// Explicit-tag forms: `add(devtensor::gpu, a, b)` (static CPU fallback, see with_kernel_device).
template <DeviceTag Tag, Numeric T>
Tensor<T> add(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Add, Tag, T>(tag, [&] { return add(a, b); });
}
template <DeviceTag Tag, Numeric T>
Tensor<T> sub(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Sub, Tag, T>(tag, [&] { return sub(a, b); });
}
template <DeviceTag Tag, Numeric T>
Tensor<T> mul(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Mul, Tag, T>(tag, [&] { return mul(a, b); });
}

template <Numeric T>
Tensor<T> neg(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Neg>(a);
}
template <Numeric T>
Tensor<T> abs(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Abs>(a);
}
template <Numeric T>
Tensor<T> square(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Square>(a);
}
template <Floating T>
Tensor<T> sqrt(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Sqrt>(a);
}
template <Floating T>
Tensor<T> exp(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Exp>(a);
}
template <Floating T>
Tensor<T> log(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Log>(a);
}
template <Numeric T>
Tensor<T> relu(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Relu>(a);
}
template <Floating T>
Tensor<T> sigmoid(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Sigmoid>(a);
}
template <Floating T>
Tensor<T> tanh(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Tanh>(a);
}

/// The elementwise sum of same-shaped tensors (TensorFlow's AddN).
/// @throws InvalidArgumentError for no inputs or shapes that differ.
template <Numeric T>
Tensor<T> add_n(const std::vector<Tensor<T>>& inputs) {
  if (inputs.empty()) throw InvalidArgumentError("add_n needs at least one input [Op:AddN]");
  require_defined_inputs(ops::AddN::name, inputs);
  for (std::size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].shape() != inputs[0].shape())
      throw InvalidArgumentError("Shapes of all inputs must match: values[0].shape = " +
                                 inputs[0].shape().to_string() + " != values[" + std::to_string(i) +
                                 "].shape = " + inputs[i].shape().to_string() + " [Op:AddN]");
  bool small = true;
  for (const auto& t : inputs) small = small && small_host_int_inputs(t);
  const int device = place_op(kernel_support<ops::AddN, T>, small);
  std::vector<Tensor<T>> local;
  local.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    local.push_back(to_device(inputs[i], device, ops::AddN::name, static_cast<int>(i)));
  auto out = Tensor<T>::empty(inputs[0].shape(), device, ops::AddN::name);
  T* o = out.mutable_data();
  const std::int64_t n = out.num_elements();
  if (auto* body = op_detail::gpu_body<ops::AddN, T>(out.device_info())) {
    std::vector<const T*> pointers;
    for (const auto& t : local) pointers.push_back(t.data());
    body(out.device_info(), o, pointers.data(), pointers.size(), n);
    autodiff::record_list<ops::AddN>(out, {}, inputs);
    return out;
  }
  backend::cpu::parallel_for(n, ops::cpu::kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
    const T* first = local[0].data();
    for (std::int64_t i = begin; i < end; ++i) o[i] = first[i];
    for (std::size_t k = 1; k < local.size(); ++k) {
      const T* x = local[k].data();
      for (std::int64_t i = begin; i < end; ++i) o[i] = arith::add(o[i], x[i]);
    }
  });
  autodiff::record_list<ops::AddN>(out, {}, inputs);
  return out;
}
template <DeviceTag Tag, Numeric T>
Tensor<T> add_n(Tag tag, const std::vector<Tensor<T>>& inputs) {
  return with_kernel_device<ops::AddN, Tag, T>(tag, [&] { return add_n(inputs); });
}

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
