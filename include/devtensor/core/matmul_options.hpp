#pragma once
/// @file matmul_options.hpp
/// @brief The TF32 switch for GPU matmul (TensorFlow's
/// tf.config.experimental.enable_tensor_float_32_execution), the same in every build.

#include <atomic>

#include "devtensor/config.hpp"

namespace devtensor::config::experimental {

namespace tf32_detail {
DEVTENSOR_EXPORT inline std::atomic<bool>& state() noexcept {
  static std::atomic<bool> enabled{false};
  return enabled;
}
}  // namespace tf32_detail

/// Lets fp32 matmul on GPUs use TF32 tensor cores (inputs rounded to 10 mantissa bits). Off by
/// default in devtensor (TensorFlow's default is on): GPU and CPU results then agree to fp32
/// accuracy. Takes effect for the next matmul; CPUs are unaffected.
inline void enable_tensor_float_32_execution(bool enabled) noexcept { tf32_detail::state().store(enabled); }
[[nodiscard]] inline bool tensor_float_32_execution_enabled() noexcept { return tf32_detail::state().load(); }

}  // namespace devtensor::config::experimental
