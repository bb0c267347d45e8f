#pragma once
/// @file creation.hpp
/// @brief Tensors from values: constant, zeros, ones, fill, range.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "devtensor/ops/dispatch.hpp"
#if DEVTENSOR_CUDA_KERNELS
#include "devtensor/ops/cuda/kernels.cuh"
#endif

namespace devtensor {
inline namespace DEVTENSOR_ABI_NS {

/// A tensor of `shape` from `values` in row-major order; one value fills the whole shape.
/// Created on the requested device (TensorFlow's _EagerConst); a scope naming a device that does
/// not exist fails with NotFoundError whatever the soft-placement setting.
/// @throws InvalidArgumentError when the number of values does not fit the shape.
template <Element T>
Tensor<T> constant(const std::vector<T>& values, const Shape& shape) {
  const auto n = shape.num_elements();
  const auto count = static_cast<std::int64_t>(values.size());
  if (count != n && count != 1)
    throw InvalidArgumentError("constant: " + std::to_string(count) + " values do not fit shape " +
                               shape.to_string() + ", which has " + std::to_string(n) +
                               " elements. Pass one value per element, or a single value to fill "
                               "the shape.");
  const int device = place_constant();
  auto out = Tensor<T>::empty(shape, device, ops::EagerConst::name);
  // Values start on the host; a real GPU gets them by copy.
  std::vector<T> host;
  const T* src = nullptr;
  if constexpr (std::is_same_v<T, bool>) {
    static_assert(sizeof(bool) == 1);
    host.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) host.push_back(values[count == 1 ? 0 : static_cast<std::size_t>(i)]);
  } else if (count == 1 && n != 1) {
    host.assign(static_cast<std::size_t>(n), values[0]);
  }
  if constexpr (std::is_same_v<T, bool>) {
    // std::vector<bool> has no data(): copy element by element into a byte buffer.
    std::vector<unsigned char> bytes(host.begin(), host.end());
    detail::copy_bytes(out.mutable_data(), out.device_info(), bytes.data(), detail::host_buffer_device(),
                       bytes.size());
    return out;
  } else {
    src = host.empty() ? values.data() : host.data();
    detail::copy_bytes(out.mutable_data(), out.device_info(), src, detail::host_buffer_device(),
                       static_cast<std::size_t>(n) * sizeof(T));
    return out;
  }
}

template <Element T>
Tensor<T> constant(std::initializer_list<T> values, const Shape& shape) {
  return constant<T>(std::vector<T>(values), shape);
}
/// A vector (rank 1) from the values.
template <Element T>
Tensor<T> constant(std::initializer_list<T> values) {
  return constant<T>(std::vector<T>(values), Shape{static_cast<std::int64_t>(values.size())});
}
template <Element T>
Tensor<T> constant(const std::vector<T>& values) {
  return constant<T>(values, Shape{static_cast<std::int64_t>(values.size())});
}
/// A scalar (rank 0).
template <Element T>
Tensor<T> scalar(T value) {
  return constant<T>(std::vector<T>{value}, Shape{});
}

/// A tensor of `shape` with every element `value` (TensorFlow's Fill).
template <Element T>
Tensor<T> fill(const Shape& shape, std::type_identity_t<T> value) {
  const int device = op_detail::place<ops::Fill, T>();
  auto out = Tensor<T>::empty(shape, device, ops::Fill::name);
  T* o = out.mutable_data();
  const auto n = shape.num_elements();
#if DEVTENSOR_CUDA_KERNELS
  if (op_detail::run_gpu_kernel<ops::Fill, T>(device)) {
    ops::cuda::fill(device, o, n, static_cast<T>(value));
    return out;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) o[i] = value;
  return out;
}
template <Element T>
Tensor<T> zeros(const Shape& shape) {
  return fill<T>(shape, T{0});
}
template <Element T>
Tensor<T> ones(const Shape& shape) {
  return fill<T>(shape, T{1});
}

/// [start, start + delta, ...) up to `limit` (exclusive), as TensorFlow's range.
/// @throws InvalidArgumentError for delta == 0 or a delta that moves away from the limit.
template <Numeric T>
Tensor<T> range(T start, T limit, T delta = T{1}) {
  if (delta == T{0}) throw InvalidArgumentError("Requires delta != 0: 0 [Op:Range]");
  if ((delta > T{0} && start > limit) || (delta < T{0} && start < limit))
    throw InvalidArgumentError("Requires start <= limit when delta > 0 (or start >= limit when delta < 0): " +
                               std::to_string(start) + "/" + std::to_string(limit) + " [Op:Range]");
  std::int64_t n = 0;
  if constexpr (std::is_integral_v<T>)
    n = static_cast<std::int64_t>((std::abs(static_cast<double>(limit) - static_cast<double>(start)) +
                                   std::abs(static_cast<double>(delta)) - 1) /
                                  std::abs(static_cast<double>(delta)));
  else
    n = static_cast<std::int64_t>(std::ceil(std::abs((static_cast<double>(limit) - static_cast<double>(start)) /
                                                     static_cast<double>(delta))));
  const int device = op_detail::place<ops::Range, T>();
  auto out = Tensor<T>::empty(Shape{n}, device, ops::Range::name);
  T* o = out.mutable_data();
#if DEVTENSOR_CUDA_KERNELS
  if (op_detail::run_gpu_kernel<ops::Range, T>(device)) {
    ops::cuda::generate(device, o, n, [start, delta] DEVTENSOR_HD_LAMBDA (std::int64_t i) {
      return static_cast<T>(start + static_cast<T>(i) * delta);
    });
    return out;
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  return out;
}

}  // namespace DEVTENSOR_ABI_NS
}  // namespace devtensor
