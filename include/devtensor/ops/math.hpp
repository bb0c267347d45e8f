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
#if DEVTENSOR_CUDA_KERNELS
#include "devtensor/ops/cuda/kernels.cuh"
#endif

namespace devtensor {
inline namespace DEVTENSOR_ABI_NS {
// Not `detail`: a devtensor::detail inside the inline namespace would make devtensor::detail
// ambiguous everywhere.
namespace op_detail {

/// Runs a broadcasting binary op; `Differentiable` ops are recorded for GradientTape. `f` runs on
/// the CPU and, in nvcc TUs, in the CUDA kernel (a DEVTENSOR_HD_LAMBDA); `gpu_f` replaces it on
/// the GPU when the CPU form cannot run there.
template <class Op, bool Differentiable = true, Element T, class F, class GpuF = F>
Tensor<T> binary_op_on(int device, const Shape& shape, const Tensor<T>& a, const Tensor<T>& b, F f,
                       [[maybe_unused]] GpuF gpu_f) {
  const auto x = to_device(a, device, Op::name, 0);
  const auto y = to_device(b, device, Op::name, 1);
  auto out = Tensor<T>::empty(shape, device, Op::name);
#if DEVTENSOR_CUDA_KERNELS
  if (run_gpu_kernel<Op, T>(device))
    ops::cuda::zip(device, x.data(), x.shape(), y.data(), y.shape(), out.mutable_data(), shape, Op::name, gpu_f);
  else
#endif
    ops::cpu::binary(x.data(), x.shape(), y.data(), y.shape(), out.mutable_data(), shape, f);
  if constexpr (Differentiable) autodiff::record<Op>(out, {}, a, b);
  return out;
}
template <class Op, bool Differentiable = true, Element T, class F>
Tensor<T> binary_op(const Tensor<T>& a, const Tensor<T>& b, F f) {
  // No up-front defined() check: an undefined tensor's shape [] broadcasts with anything, so
  // to_device is the first to see it and names it ("Input 1 of AddV2 is an undefined tensor").
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), Op::name);  // shape errors first
  return binary_op_on<Op, Differentiable>(place<Op, T>(a, b), shape, a, b, f, f);
}

template <class Op, Element T, class F>
Tensor<T> unary_op(const Tensor<T>& a, F f) {
  const int device = place<Op, T>(a);
  const auto x = to_device(a, device, Op::name, 0);
  auto out = Tensor<T>::empty(x.shape(), device, Op::name);
#if DEVTENSOR_CUDA_KERNELS
  if (run_gpu_kernel<Op, T>(device))
    ops::cuda::map(device, x.data(), out.mutable_data(), x.num_elements(), f);
  else
#endif
    ops::cpu::unary(x.data(), out.mutable_data(), x.num_elements(), f);
  autodiff::record<Op>(out, {}, a);
  return out;
}

}  // namespace op_detail

// Integer add, sub, mul, neg, abs and square wrap modulo 2^N (core/arith.hpp says why).

/// a + b with broadcasting (TensorFlow's AddV2).
template <Numeric T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Add>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return arith::add(x, y); });
}
template <Numeric T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Sub>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return arith::sub(x, y); });
}
template <Numeric T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Mul>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return arith::mul(x, y); });
}
/// a / b: true division for floating types (RealDiv), floor division for integers (FloorDiv, as
/// Python's //; INT_MIN // -1 wraps to INT_MIN). @throws InvalidArgumentError on integer division
/// by zero.
template <Numeric T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return op_detail::binary_op<ops::RealDiv>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return x / y; });
  } else {
    std::atomic<bool> by_zero{false};  // set from the CPU kernel's threads
    const auto cpu_f = [&by_zero](T x, T y) {
      if (y == 0) {
        by_zero.store(true, std::memory_order_relaxed);
        return T{0};
      }
      return arith::floor_div(x, y);
    };
    const Shape shape = broadcast_shapes(a.shape(), b.shape(), ops::FloorDiv::name);
    const int device = op_detail::place<ops::FloorDiv, T>(a, b);
#if DEVTENSOR_CUDA_KERNELS
    // On a GPU the kernel raises a flag in device memory, read back (a synchronisation) only here.
    std::shared_ptr<detail::TensorStorage> flag;
    int* device_flag = nullptr;
    if (op_detail::run_gpu_kernel<ops::FloorDiv, T>(device)) {
      flag = detail::allocate_storage(device, sizeof(int), Shape{}, "DT_INT32", ops::FloorDiv::name);
      device_flag = static_cast<int*>(flag->data);
      ops::cuda::fill(device, device_flag, 1, 0);
    }
    const auto gpu_f = [device_flag] DEVTENSOR_HD_LAMBDA (T x, T y) {
      if (y == 0) {
        *device_flag = 1;  // benign race: every writer stores 1
        return T{0};
      }
      return arith::floor_div(x, y);
    };
    auto out = op_detail::binary_op_on<ops::FloorDiv>(device, shape, a, b, cpu_f, gpu_f);
    if (flag) {
      int raised = 0;
      detail::copy_bytes(&raised, detail::host_buffer_device(), device_flag, *flag->device, sizeof raised);
      if (raised) by_zero.store(true);
    }
#else
    auto out = op_detail::binary_op_on<ops::FloorDiv>(device, shape, a, b, cpu_f, cpu_f);
#endif
    if (by_zero.load()) throw InvalidArgumentError("Integer division by zero [Op:FloorDiv]");
    return out;
  }
}
template <Numeric T>
Tensor<T> maximum(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Maximum>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return x > y ? x : y; });
}
template <Numeric T>
Tensor<T> minimum(const Tensor<T>& a, const Tensor<T>& b) {
  return op_detail::binary_op<ops::Minimum>(a, b, [] DEVTENSOR_HD_LAMBDA (T x, T y) { return x < y ? x : y; });
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
  return op_detail::unary_op<ops::Neg>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return arith::neg(x); });
}
template <Numeric T>
Tensor<T> abs(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Abs>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return arith::abs(x); });
}
template <Numeric T>
Tensor<T> square(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Square>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return arith::mul(x, x); });
}
template <Floating T>
Tensor<T> sqrt(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Sqrt>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return std::sqrt(x); });
}
template <Floating T>
Tensor<T> exp(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Exp>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return std::exp(x); });
}
template <Floating T>
Tensor<T> log(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Log>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return std::log(x); });
}
template <Numeric T>
Tensor<T> relu(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Relu>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return x > T{0} ? x : T{0}; });
}
template <Floating T>
Tensor<T> sigmoid(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Sigmoid>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return T{1} / (T{1} + std::exp(-x)); });
}
template <Floating T>
Tensor<T> tanh(const Tensor<T>& a) {
  return op_detail::unary_op<ops::Tanh>(a, [] DEVTENSOR_HD_LAMBDA (T x) { return std::tanh(x); });
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
  if constexpr (!has_kernel_v<ops::AddN, gpu_t, T>) op_detail::require_host_memory(device, ops::AddN::name);
  std::vector<Tensor<T>> local;
  local.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    local.push_back(to_device(inputs[i], device, ops::AddN::name, static_cast<int>(i)));
  auto out = Tensor<T>::empty(inputs[0].shape(), device, ops::AddN::name);
  T* o = out.mutable_data();
  const std::int64_t n = out.num_elements();
#if DEVTENSOR_CUDA_KERNELS
  if (op_detail::run_gpu_kernel<ops::AddN, T>(device)) {
    std::vector<const T*> pointers;
    for (const auto& t : local) pointers.push_back(t.data());
    ops::cuda::sum_into(device, o, pointers, n);
    autodiff::record_list<ops::AddN>(out, {}, inputs);
    return out;
  }
#endif
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

}  // namespace DEVTENSOR_ABI_NS
}  // namespace devtensor
