#pragma once
/// @file discovery.hpp
/// @brief Physical device discovery: the host CPU, the real GPUs the registered GPU platform
/// reports, then the simulated GPUs; without a platform, a warning when the driver reports GPUs.

#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/driver_probe.hpp"
#include "devtensor/device/environment.hpp"
#include "devtensor/device/physical.hpp"
#include "devtensor/device/tags.hpp"

namespace devtensor::detail {

/// The physical devices, in TensorFlow's order: /physical_device:CPU:0, then GPUs numbered
/// consecutively, real ones (platform order, skipping any the platform cannot describe, with an
/// error line) before simulated ones. `platform_status` receives why the platform found none.
std::vector<PhysicalDeviceInfo> discover_physical_devices(const GpuPlatform* platform, GpuDriverProbe driver_probe,
                                                          const SimulatedGpus& simulated, std::string& platform_status,
                                                          DeferredLogs& logs);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::vector<PhysicalDeviceInfo> discover_physical_devices(const GpuPlatform* platform,
                                                                               GpuDriverProbe driver_probe,
                                                                               const SimulatedGpus& simulated,
                                                                               std::string& platform_status,
                                                                               DeferredLogs& logs) {
  std::vector<PhysicalDeviceInfo> found;
  PhysicalDeviceInfo cpu_info;
  cpu_info.device = {"/physical_device:CPU:0", std::string(cpu_device_type)};
  found.push_back(cpu_info);

  int gpu_index = 0;
  if (platform) {
    std::string why_none;
    const int count = platform->device_count(&why_none);
    platform_status = why_none;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      PhysicalDeviceInfo info;
      std::string error;
      if (!platform->describe(ordinal, &info.properties, &error)) {
        logs.emplace_back(LogSeverity::error,
                          "Could not query GPU " + std::to_string(ordinal) + ": " + error + ". The device is skipped.");
        continue;
      }
      info.device = {"/physical_device:GPU:" + std::to_string(gpu_index), std::string(gpu_device_type)};
      info.index = gpu_index++;
      info.platform_ordinal = ordinal;
      found.push_back(std::move(info));
    }
  } else if (const int unused = driver_probe ? driver_probe() : 0) {
    // TensorFlow says loudly when it cannot use the machine's GPUs; so does devtensor.
    logs.emplace_back(LogSeverity::warning,
                      "The NVIDIA driver reports " + std::to_string(unused) + " GPU" + (unused == 1 ? "" : "s") +
                          ", but this program was built without devtensor's CUDA component, so it cannot use "
                          "them. Link devtensor::cuda in CMake (target_link_libraries(<your target> PRIVATE "
                          "devtensor::cuda)), or compile devtensor's src/devtensor_cuda.cu into the program. "
                          "Skipping registering GPU devices...");
  }
  for (int k = 0; k < simulated.count; ++k) {
    PhysicalDeviceInfo info;
    info.device = {"/physical_device:GPU:" + std::to_string(gpu_index), std::string(gpu_device_type)};
    info.index = gpu_index;
    info.simulated = true;
    info.platform_ordinal = gpu_index;
    info.properties.name = "devtensor simulated GPU";
    info.properties.pci_bus_id = "simulated:" + std::to_string(gpu_index);
    info.properties.compute_capability_major = 9;
    info.properties.compute_capability_minor = 0;
    info.properties.total_memory = simulated.memory_bytes;
    info.properties.free_memory = simulated.memory_bytes;
    info.properties.least_stream_priority = 0;
    info.properties.greatest_stream_priority = -5;  // what CUDA reports on Hopper
    ++gpu_index;
    found.push_back(std::move(info));
  }
  return found;
}
#endif

}  // namespace devtensor::detail
