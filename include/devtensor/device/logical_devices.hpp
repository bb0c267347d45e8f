#pragma once
/// @file logical_devices.hpp
/// @brief Builds the logical devices from the physical ones and the configuration, as TensorFlow
/// does at initialisation: the visible CPUs (one per virtual CPU), then the visible GPUs in
/// physical order, each expanded by its virtual devices and sorted by their ordinals, with the
/// memory limit, growth, unified memory and stream priority each one gets, and TensorFlow's errors
/// for configurations it refuses (_compute_gpu_options, VerifyVirtualDeviceSettings).

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/configuration_store.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/environment.hpp"
#include "devtensor/device/memory_limits.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/device/tags.hpp"

namespace devtensor::detail {

/// The logical devices, CPUs first, numbered per type and named; logical_index, allocators and
/// streams are the Context's to add. Reads TF_FORCE_GPU_ALLOW_GROWTH and
/// TF_DEVICE_MIN_SYS_MEMORY_IN_MB. @throws InvalidArgumentError / UnimplementedError for an
/// inconsistent configuration.
std::vector<Device> build_logical_devices(const Configuration& configuration,
                                          const std::vector<PhysicalDeviceInfo>& physical,
                                          const std::vector<config::PhysicalDevice>& visible, DeferredLogs& logs);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::vector<Device> build_logical_devices(const Configuration& configuration,
                                                               const std::vector<PhysicalDeviceInfo>& physical,
                                                               const std::vector<config::PhysicalDevice>& visible,
                                                               DeferredLogs& logs) {
  const auto is_visible = [&](const PhysicalDeviceInfo& p) {
    return std::find(visible.begin(), visible.end(), p.device) != visible.end();
  };
  std::vector<Device> out;

  // CPUs: one, or one per empty configuration of the physical CPU.
  for (std::size_t i = 0; i < physical.size(); ++i) {
    const auto& p = physical[i];
    if (p.device.device_type != cpu_device_type || !is_visible(p)) continue;
    std::size_t n = 1;
    if (auto it = configuration.virtual_devices.find(p.device.name);
        it != configuration.virtual_devices.end() && !it->second.empty())
      n = it->second.size();
    for (std::size_t k = 0; k < n; ++k) {
      Device d;
      d.device_type = std::string(cpu_device_type);
      d.physical_index = static_cast<int>(i);
      d.memory_limit = 256 * kMiB;
      out.push_back(std::move(d));
    }
  }

  // GPUs: validate the configuration as TensorFlow's _compute_gpu_options and
  // VerifyVirtualDeviceSettings do, then create them.
  std::vector<const PhysicalDeviceInfo*> gpus;
  std::vector<int> gpu_physical_index;
  for (std::size_t i = 0; i < physical.size(); ++i)
    if (physical[i].device.device_type == gpu_device_type && is_visible(physical[i])) {
      gpus.push_back(&physical[i]);
      gpu_physical_index.push_back(static_cast<int>(i));
    }
  const bool any_virtual = std::any_of(gpus.begin(), gpus.end(), [&](const auto* g) {
    return configuration.virtual_devices.count(g->device.name) != 0;
  });
  std::optional<bool> growth;
  for (const auto* g : gpus) {
    auto it = configuration.memory_growth.find(g->device.name);
    const bool mine = it != configuration.memory_growth.end() && it->second;
    if (growth && *growth != mine) throw InvalidArgumentError("Memory growth cannot differ between GPU devices");
    growth = mine;
  }
  if (any_virtual && configuration.memory_fraction > 0.0)
    throw InvalidArgumentError("It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set.");
  // Growth is ignored whenever virtual devices are configured (unless the environment forces it).
  const bool configured_growth = any_virtual ? false : growth.value_or(false);
  const bool allow_growth =
      gpus.empty() ? configured_growth
                   : allow_growth_with_override(configured_growth, getenv_value("TF_FORCE_GPU_ALLOW_GROWTH"), logs);
  const bool unified = configuration.use_unified_memory || configuration.memory_fraction > 1.0;

  struct Pending {
    Device info;
    std::optional<int> ordinal;
    std::size_t position;
  };
  std::vector<Pending> pending;
  std::optional<bool> first_has_ordinal;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto& phys = *gpus[g];
    if (unified && phys.properties.compute_capability_major < 6)
      throw UnimplementedError(
          "Unified memory on GPUs with compute capability lower than 6.0 (pre-Pascal class GPUs) "
          "does not support oversubscription.");
    std::vector<config::LogicalDeviceConfiguration> configs;
    if (auto it = configuration.virtual_devices.find(phys.device.name); it != configuration.virtual_devices.end())
      configs = it->second;
    const bool with_priority =
        std::any_of(configs.begin(), configs.end(), [](const auto& c) { return c.experimental_priority.has_value(); });
    const bool with_ordinal = std::any_of(configs.begin(), configs.end(),
                                          [](const auto& c) { return c.experimental_device_ordinal.has_value(); });
    if (with_priority &&
        !std::all_of(configs.begin(), configs.end(), [](const auto& c) { return c.experimental_priority.has_value(); }))
      throw InvalidArgumentError("priority must be specified for all virtual devices");
    if (with_ordinal && !std::all_of(configs.begin(), configs.end(),
                                     [](const auto& c) { return c.experimental_device_ordinal.has_value(); }))
      throw InvalidArgumentError("device_ordinal must be specified for all virtual devices");
    if (any_virtual && !first_has_ordinal) first_has_ordinal = with_ordinal;
    if (any_virtual && *first_has_ordinal != with_ordinal)
      throw InvalidArgumentError(
          "Device ordinals must be set for all virtual devices or none. But the device_ordinal "
          "is specified for " +
          std::to_string(g) + " while previous devices didn't have any set.");

    const auto make = [&](std::uint64_t limit, std::optional<int> priority) {
      Device d;
      d.device_type = std::string(gpu_device_type);
      d.physical_index = gpu_physical_index[g];
      d.memory_limit = limit;
      d.allow_growth = allow_growth;
      d.unified_memory = unified;
      d.priority = priority;
      const auto& p = phys.properties;
      d.physical_device_desc = "device: " + std::to_string(phys.platform_ordinal) + ", name: " + p.name +
                               ", pci bus id: " + p.pci_bus_id +
                               ", compute capability: " + std::to_string(p.compute_capability_major) + "." +
                               std::to_string(p.compute_capability_minor);
      return d;
    };
    if (configs.empty()) {
      const auto limit =
          default_gpu_memory_limit({.free_memory = phys.properties.free_memory,
                                    .total_memory = phys.properties.total_memory,
                                    .compute_capability_major = phys.properties.compute_capability_major,
                                    .memory_fraction = configuration.memory_fraction,
                                    .gpu_system_memory_size_in_mb = configuration.gpu_system_memory_size_in_mb,
                                    .min_sys_memory_env = getenv_value("TF_DEVICE_MIN_SYS_MEMORY_IN_MB")},
                                   logs);
      pending.push_back({make(limit.bytes, std::nullopt), std::nullopt, pending.size()});
      pending.back().info.limit_source = limit.source;
      continue;
    }
    for (std::size_t v = 0; v < configs.size(); ++v) {
      const auto& c = configs[v];
      if (c.experimental_priority) {
        const int p = *c.experimental_priority;
        const int hi = phys.properties.greatest_stream_priority;
        const int lo = phys.properties.least_stream_priority;
        if (p < hi || p > lo)
          throw InvalidArgumentError("Priority " + std::to_string(p) +
                                     " is outside the range of supported priorities [" + std::to_string(hi) + "," +
                                     std::to_string(lo) + "] for virtual device " + std::to_string(v) + " on GPU# " +
                                     std::to_string(phys.index));
      }
      const auto limit = static_cast<std::uint64_t>(static_cast<std::int64_t>(*c.memory_limit_mb)) * kMiB;
      pending.push_back({make(limit, c.experimental_priority), c.experimental_device_ordinal, pending.size()});
      pending.back().info.limit_source =
          "memory_limit_mb = " + std::to_string(static_cast<std::int64_t>(*c.memory_limit_mb)) +
          " of the virtual device";
    }
  }
  // Lower ordinal first; ties (and devices without ordinals) keep their list position.
  std::stable_sort(pending.begin(), pending.end(),
                   [](const Pending& a, const Pending& b) { return a.ordinal.value_or(0) < b.ordinal.value_or(0); });
  for (auto& p : pending) out.push_back(std::move(p.info));

  // Number each type consecutively and name the devices.
  int cpus = 0;
  int gpu_count = 0;
  for (auto& d : out) {
    d.index = d.device_type == cpu_device_type ? cpus++ : gpu_count++;
    d.spec = DeviceSpec::parse(DeviceSpec::full_name("localhost", 0, 0, d.device_type, d.index));
    d.full_name = d.spec.to_string();
    d.device = {DeviceSpec::local_name(d.device_type, d.index), d.device_type};
    d.allocator_name = d.device_type == cpu_device_type ? "cpu_bfc" : "GPU_" + std::to_string(d.index) + "_bfc";
    d.is_gpu = d.device_type == gpu_device_type;
    if (d.is_gpu) {
      const auto& phys = physical[static_cast<std::size_t>(d.physical_index)];
      d.simulated = phys.simulated;
      d.platform_ordinal = phys.simulated ? -1 : phys.platform_ordinal;
    }
  }
  return out;
}
#endif

}  // namespace devtensor::detail
