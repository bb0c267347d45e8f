#pragma once
/// @file environment.hpp
/// @brief The environment variables devtensor reads at discovery and initialisation (TensorFlow's
/// TF_FORCE_GPU_ALLOW_GROWTH, TF_ENABLE_GPU_GARBAGE_COLLECTION, TF_DEVICE_MIN_SYS_MEMORY_IN_MB and
/// devtensor's DEVTENSOR_SIMULATED_GPUS), each parsed by a function of its text, with TensorFlow's
/// messages for values it cannot parse.

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/device_name_parser.hpp"
#include "devtensor/device/spec.hpp"

namespace devtensor {

/// Parses DEVTENSOR_SIMULATED_GPUS: "N" or "NxSIZE", SIZE a positive integer followed by KiB, MiB
/// or GiB. @throws InvalidArgumentError "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed".
inline SimulatedGpus parse_simulated_gpus(std::string_view value) {
  const auto fail = [&]() -> InvalidArgumentError {
    return InvalidArgumentError(
        "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed: '" + std::string(value) +
        "'. Valid values are N or NxSIZE with N a non-negative integer and SIZE a positive integer "
        "followed by KiB, MiB or GiB, e.g. 2 or 2x16GiB.");
  };
  const auto digits = [&](std::string_view s, std::uint64_t limit) -> std::uint64_t {
    if (s.empty() || s.size() > 12) throw fail();
    std::uint64_t n = 0;
    for (char c : s) {
      if (!detail::is_ascii_digit(c)) throw fail();
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (n > limit) throw fail();
    return n;
  };
  SimulatedGpus result;
  const auto x = value.find('x');
  result.count = static_cast<int>(digits(value.substr(0, x), 4096));
  if (x == std::string_view::npos) return result;
  std::string_view size = value.substr(x + 1);
  std::uint64_t unit = 0;
  for (auto [suffix, bytes] : {std::pair{std::string_view("KiB"), kKiB}, {"MiB", kMiB}, {"GiB", kGiB}}) {
    if (size.size() > suffix.size() && size.substr(size.size() - suffix.size()) == suffix) {
      unit = bytes;
      size.remove_suffix(suffix.size());
    }
  }
  if (unit == 0) throw fail();
  const std::uint64_t amount = digits(size, (std::uint64_t{1} << 50) / unit);
  if (amount == 0) throw fail();
  result.memory_bytes = amount * unit;
  return result;
}

namespace detail {

/// Log lines produced while the Context's lock is held, written once it is released (a log sink
/// may call back into devtensor).
using DeferredLogs = std::vector<std::pair<LogSeverity, std::string>>;

/// The variable's value, or std::nullopt when it is not set.
inline std::optional<std::string> getenv_value(const char* name) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads use it
  return value ? std::optional<std::string>(value) : std::nullopt;
}

/// TF_FORCE_GPU_ALLOW_GROWTH: exactly "true" or "false" overrides the configured growth (with a
/// warning when it changes it); anything else is an error line and the configured value stays.
bool allow_growth_with_override(bool configured, const std::optional<std::string>& env, DeferredLogs& logs);

/// TF_ENABLE_GPU_GARBAGE_COLLECTION: exactly "true" or "false", default true; anything else is an
/// error line and the default.
bool gpu_garbage_collection(const std::optional<std::string>& env, DeferredLogs& logs);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION bool allow_growth_with_override(bool configured, const std::optional<std::string>& env,
                                                     DeferredLogs& logs) {
  if (!env) return configured;
  const std::string original = configured ? "1" : "0";
  if (*env == "true" || *env == "false") {
    const bool forced = *env == "true";
    if (forced != configured)
      logs.emplace_back(LogSeverity::warning,
                        "Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH environment "
                        "variable is set. Original config value was " +
                            original + ".");
    return forced;
  }
  logs.emplace_back(LogSeverity::error,
                    "The TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: \"" + *env +
                        "\". Valid values are \"true\" or \"false\". Using original config value of " + original + ".");
  return configured;
}

DEVTENSOR_DEFINITION bool gpu_garbage_collection(const std::optional<std::string>& env, DeferredLogs& logs) {
  if (!env || *env == "true") return true;
  if (*env == "false") return false;
  logs.emplace_back(LogSeverity::error,
                    "The TF_ENABLE_GPU_GARBAGE_COLLECTION environment variable is set but could not be parsed: "
                    "\"" +
                        *env + "\". Valid values are \"true\" or \"false\". Using the default value \"true\".");
  return true;
}
#endif

}  // namespace detail
}  // namespace devtensor
