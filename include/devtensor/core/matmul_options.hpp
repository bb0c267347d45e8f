#pragma once
/// @file matmul_options.hpp
/// @brief The TF32 switch for GPU matmul (TensorFlow's
/// tf.config.experimental.enable_tensor_float_32_execution), the same in every build.

#include <atomic>

#include "devtensor/config.hpp"

namespace devtensor::config::experimental {

namespace tf32_detail {
DEVTENSOR_EXPORT inline std::atomic<bool>& state() noexcept {
  static std::atomic<bool> enabled{true};
  return enabled;
}
}  // namespace tf32_detail

/// Lets float32 matmuls and convolutions on GPUs that have TF32 tensor cores (Ampere and later)
/// round their inputs to 10 mantissa bits, several times faster. On by default, as TensorFlow's
/// (since 2.4); `false` makes GPU results agree with the CPU's to float32 accuracy. Takes effect
/// for the next op; CPUs are unaffected.
inline void enable_tensor_float_32_execution(bool enabled) noexcept { tf32_detail::state().store(enabled); }
[[nodiscard]] inline bool tensor_float_32_execution_enabled() noexcept { return tf32_detail::state().load(); }

}  // namespace devtensor::config::experimental
