#pragma once
// Walkthrough 8's op with registered bodies, shared by 08_custom_op.cpp (its CPU body) and
// 08_custom_op_cuda.cu (its CUDA body, built when the CUDA component exists).
#include <devtensor/devtensor.hpp>

#include <concepts>
#include <cstdint>
#include <string_view>

/// y = factor · x. Declares CPU and GPU kernels for float; the bodies come from the registry, so
/// the program decides at run time whether it can run on a GPU (TensorFlow's REGISTER_KERNEL_BUILDER).
struct ScaleOp {
  static constexpr std::string_view name = "Scale";
  template <devtensor::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<T, float>;
  template <class T>
  using body = void(const devtensor::LogicalDeviceInfo& device, const T* in, T* out, std::int64_t n, T factor);
};
