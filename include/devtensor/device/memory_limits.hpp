#pragma once
/// @file memory_limits.hpp
/// @brief TensorFlow's memory limit of a GPU without virtual devices (SingleVirtualDeviceMemoryLimit),
/// as a function of the device's figures, the configuration and TF_DEVICE_MIN_SYS_MEMORY_IN_MB.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/device_name_parser.hpp"
#include "devtensor/device/environment.hpp"
#include "devtensor/memory/stats.hpp"

namespace devtensor {

/// TensorFlow's MinSystemMemory: the device memory left to the system when no fraction is set.
constexpr std::uint64_t min_system_memory(std::uint64_t available, int compute_capability_major) {
  if (available < 2 * kGiB) return 225 * kMiB;
  if (compute_capability_major <= 6) return 500 * kMiB;
  if (compute_capability_major <= 7) return 1050 * kMiB;
  if (compute_capability_major <= 8) return 1536 * kMiB;
  return 1800 * kMiB;
}

namespace detail {

/// What the limit depends on.
struct MemoryLimitInputs {
  std::uint64_t free_memory = 0;  // the device's free memory at discovery
  std::uint64_t total_memory = 0;
  int compute_capability_major = 0;
  double memory_fraction = 0.0;                   // per_process_gpu_memory_fraction; 0: free memory minus a reserve
  std::int64_t gpu_system_memory_size_in_mb = 0;  // a reserve set by the API; 0: none
  std::optional<std::string> min_sys_memory_env;  // TF_DEVICE_MIN_SYS_MEMORY_IN_MB's text
};

/// The limit in bytes and, for OOM advice, what set it.
struct MemoryLimit {
  std::uint64_t bytes = 0;
  std::string source;
};

/// The fraction of the total memory when one is set, else the free memory minus
/// min_system_memory; then a reserve from the API, then one from the environment, replaces the
/// reserve when it fits in the free memory (a warning line when it does not, or when the
/// environment's value is not a number).
MemoryLimit default_gpu_memory_limit(const MemoryLimitInputs& in, DeferredLogs& logs);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION MemoryLimit default_gpu_memory_limit(const MemoryLimitInputs& in, DeferredLogs& logs) {
  const std::uint64_t available = in.free_memory;
  const auto human = [](std::uint64_t n) { return memory::human_readable_bytes(static_cast<std::int64_t>(n)); };
  MemoryLimit out;
  if (in.memory_fraction == 0.0) {
    const std::uint64_t reserve = min_system_memory(available, in.compute_capability_major);
    out.bytes = reserve < available ? available - reserve : available;
    out.source = "the device's free memory " + human(available) + " minus a " +
                 human(reserve < available ? reserve : 0) +
                 " reserve (set_gpu_system_memory_size_in_mb or TF_DEVICE_MIN_SYS_MEMORY_IN_MB change it)";
  } else {
    out.bytes = static_cast<std::uint64_t>(static_cast<double>(in.total_memory) * in.memory_fraction);
    out.source =
        "per_process_gpu_memory_fraction = " + std::to_string(in.memory_fraction) + " of " + human(in.total_memory);
  }
  const auto apply_reserve = [&](std::uint64_t reserved) {
    if (reserved <= available) {
      out.bytes = available - reserved;
      out.source =
          "the device's free memory " + human(available) + " minus the requested " + human(reserved) + " reserve";
    } else {
      logs.emplace_back(LogSeverity::warning, "The requested reserved device memory " + std::to_string(reserved) +
                                                  " is larger than the available memory of " +
                                                  std::to_string(available) + ". The request is ignored.");
    }
  };
  if (in.gpu_system_memory_size_in_mb > 0)
    apply_reserve(static_cast<std::uint64_t>(in.gpu_system_memory_size_in_mb) * kMiB);
  if (in.min_sys_memory_env && !in.min_sys_memory_env->empty()) {
    const std::string& env = *in.min_sys_memory_env;
    const bool numeric =
        env.size() <= 12 && std::all_of(env.begin(), env.end(), [](char c) { return is_ascii_digit(c); });
    if (numeric)
      apply_reserve(static_cast<std::uint64_t>(std::stoll(env)) * kMiB);
    else
      logs.emplace_back(LogSeverity::warning,
                        "The requested reserved device memory " + env + " is invalid. The request will be ignored.");
  }
  return out;
}
#endif

}  // namespace detail
}  // namespace devtensor
