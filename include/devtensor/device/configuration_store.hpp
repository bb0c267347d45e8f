#pragma once
/// @file configuration_store.hpp
/// @brief What a user configures before initialisation (detail::Configuration) and the rules each
/// setting is checked against, with TensorFlow's messages. The Context stores it under its lock
/// and applies the freeze rule (a different value after initialisation is refused).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/physical.hpp"
#include "devtensor/device/tags.hpp"

namespace devtensor {
/// Which of config::threading's thread counts: within one op, or across a graph's ops.
enum class Parallelism { intra_op, inter_op };
/// The most threads either may use (a larger setting is taken as this).
inline constexpr int kMaxParallelismThreads = 1024;
}  // namespace devtensor

namespace devtensor::detail {

/// The configuration a user assembles before initialisation.
struct Configuration {
  std::optional<SimulatedGpus> simulated_gpus;                         // set by the API; wins over the environment
  std::optional<std::vector<config::PhysicalDevice>> visible_devices;  // unset: all visible
  std::map<std::string, std::vector<config::LogicalDeviceConfiguration>> virtual_devices;
  std::map<std::string, bool> memory_growth;
  double memory_fraction = 0.0;
  bool use_unified_memory = false;
  std::int64_t gpu_system_memory_size_in_mb = 0;
  std::chrono::milliseconds retry_timeout{10000};
  std::uint64_t host_memory_limit = 0;  // 0: the host's physical memory
  int intra_op_threads = 0;             // config::threading's settings (0: the system picks)
  int inter_op_threads = 0;
};

// Each check throws InvalidArgumentError naming what was wrong and what is accepted.
void check_simulated_gpus(const SimulatedGpus& value);
void check_virtual_devices(const config::PhysicalDevice& device,
                           const std::vector<config::LogicalDeviceConfiguration>& configs);
void check_memory_fraction(double fraction);
void check_gpu_system_memory_size_in_mb(std::int64_t mb);
void check_retry_timeout(std::chrono::milliseconds timeout);

/// The visible devices after set_visible_devices(devices, device_type): `current` with the
/// devices of that type (all, when it is empty) replaced. @throws InvalidArgumentError for a
/// device not in `physical` or not of that type, a duplicate, or a list that hides the CPU.
std::vector<config::PhysicalDevice> visible_devices_after(const std::vector<PhysicalDeviceInfo>& physical,
                                                          const std::vector<config::PhysicalDevice>& current,
                                                          const std::vector<config::PhysicalDevice>& devices,
                                                          std::string_view device_type);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION void check_simulated_gpus(const SimulatedGpus& value) {
  if (value.count < 0)
    throw InvalidArgumentError("set_simulated_gpus: the count must be >= 0, got " + std::to_string(value.count));
  if (value.count > 0 && value.memory_bytes == 0)
    throw InvalidArgumentError("set_simulated_gpus: each simulated GPU needs memory > 0 bytes");
}

DEVTENSOR_DEFINITION void check_virtual_devices(const config::PhysicalDevice& device,
                                                const std::vector<config::LogicalDeviceConfiguration>& configs) {
  if (device.device_type == cpu_device_type) {
    for (const auto& c : configs) {
      if (c.memory_limit_mb)
        throw InvalidArgumentError("Setting memory limit on CPU virtual devices is currently not supported");
      if (c.experimental_priority)
        throw InvalidArgumentError("Setting experimental_priority on CPU virtual  devices is currently not supported");
      if (c.experimental_device_ordinal)
        throw InvalidArgumentError(
            "Setting experimental_device_ordinal on CPU virtual  devices is currently not supported");
    }
  } else if (device.device_type == gpu_device_type) {
    for (const auto& c : configs) {
      if (!c.memory_limit_mb) throw InvalidArgumentError("Setting memory limit is required for GPU virtual devices");
      if (!(*c.memory_limit_mb >= 0.0) || *c.memory_limit_mb > 1e12)
        throw InvalidArgumentError("memory_limit_mb must be a finite number of MiB >= 0, got " +
                                   std::to_string(*c.memory_limit_mb));
    }
  } else {
    throw InvalidArgumentError("Virtual devices are not supported for " + device.device_type);
  }
}

DEVTENSOR_DEFINITION void check_memory_fraction(double fraction) {
  if (!(fraction >= 0.0) || fraction > 1e6)
    throw InvalidArgumentError(
        "per_process_gpu_memory_fraction must be a finite number >= 0 (0 means: available memory minus the "
        "reserve), got " +
        std::to_string(fraction));
}

DEVTENSOR_DEFINITION void check_gpu_system_memory_size_in_mb(std::int64_t mb) {
  if (mb < 0) throw InvalidArgumentError("gpu_system_memory_size_in_mb must be >= 0, got " + std::to_string(mb));
}

DEVTENSOR_DEFINITION void check_retry_timeout(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0)
    throw InvalidArgumentError("the allocation retry timeout must be >= 0 ms, got " + std::to_string(timeout.count()));
}

DEVTENSOR_DEFINITION std::vector<config::PhysicalDevice> visible_devices_after(
    const std::vector<PhysicalDeviceInfo>& physical, const std::vector<config::PhysicalDevice>& current,
    const std::vector<config::PhysicalDevice>& devices, std::string_view device_type) {
  for (const auto& d : devices) {
    const bool known = std::any_of(physical.begin(), physical.end(), [&](const auto& p) { return p.device == d; });
    if (!known || (!device_type.empty() && d.device_type != device_type))
      throw InvalidArgumentError("Unrecognized device: " + d.repr());
  }
  for (std::size_t i = 0; i < devices.size(); ++i)
    for (std::size_t j = i + 1; j < devices.size(); ++j)
      if (devices[i] == devices[j])
        throw InvalidArgumentError("visible_device_list contained a duplicate entry: " + devices[i].repr());
  std::vector<config::PhysicalDevice> next;
  for (const auto& d : current)
    if (!device_type.empty() && d.device_type != device_type) next.push_back(d);
  next.insert(next.end(), devices.begin(), devices.end());
  if (std::none_of(next.begin(), next.end(), [](const auto& d) { return d.device_type == cpu_device_type; }))
    throw InvalidArgumentError(
        "Cannot hide the CPU: devtensor needs /physical_device:CPU:0 visible to run host code and input "
        "pipelines. Pass a device_type (e.g. \"GPU\") to change only that type.");
  return next;
}
#endif

}  // namespace devtensor::detail
