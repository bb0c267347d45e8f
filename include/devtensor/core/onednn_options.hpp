#pragma once
/// @file onednn_options.hpp
/// @brief The oneDNN switch for CPU convolutions (TensorFlow's TF_ENABLE_ONEDNN_OPTS), the same in
/// every build: it matters only in a program that links the onednn component.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <strings.h>  // strcasecmp

#include "devtensor/config.hpp"

namespace devtensor::config::experimental {

namespace onednn_detail {
enum class Switch : int { from_env = -1, off = 0, on = 1 };
DEVTENSOR_EXPORT inline std::atomic<Switch>& state() noexcept {
  static std::atomic<Switch> value{Switch::from_env};
  return value;
}
/// TensorFlow's ReadBoolFromEnvVar: "0"/"false" and "1"/"true" (any case); anything else is not a
/// boolean (nullopt: TensorFlow logs an error and keeps its default).
inline std::optional<bool> parse_bool(const char* text) noexcept {
  if (text == nullptr) return std::nullopt;
  if (std::strcmp(text, "1") == 0 || strcasecmp(text, "true") == 0) return true;
  if (std::strcmp(text, "0") == 0 || strcasecmp(text, "false") == 0) return false;
  return std::nullopt;
}
}  // namespace onednn_detail

/// Beyond TensorFlow (whose switch is the environment variable alone): whether float32 Conv2D and
/// its two backprops on CPUs run through oneDNN when the program links devtensor::onednn. On by
/// default, as TensorFlow's oneDNN kernels are on Linux x86; off, they run devtensor's im2col +
/// CBLAS bodies. Results differ between the two in float32 round-off only. Takes effect for the
/// next convolution.
inline void enable_onednn_opts(bool enabled) noexcept {
  onednn_detail::state().store(enabled ? onednn_detail::Switch::on : onednn_detail::Switch::off);
}

/// The switch: set by enable_onednn_opts, else TF_ENABLE_ONEDNN_OPTS read once ("0" or "false"
/// turn oneDNN off; unset or unreadable leave it on).
[[nodiscard]] inline bool onednn_opts_enabled() noexcept {
  using onednn_detail::Switch;
  Switch value = onednn_detail::state().load(std::memory_order_relaxed);
  if (value == Switch::from_env) {
    const std::optional<bool> env =
        onednn_detail::parse_bool(std::getenv("TF_ENABLE_ONEDNN_OPTS"));  // NOLINT(concurrency-mt-unsafe)
    Switch expected = Switch::from_env;
    const Switch read = env.value_or(true) ? Switch::on : Switch::off;
    value = onednn_detail::state().compare_exchange_strong(expected, read) ? read : expected;
  }
  return value == Switch::on;
}

}  // namespace devtensor::config::experimental
