#pragma once
/// @file device_allocators.hpp
/// @brief One allocator per logical device, built at initialisation: a BFC allocator over the GPU
/// platform's memory (or a simulated GPU's) for each GPU, one shared growth-mode BFC over host
/// memory for the CPUs, so large tensors do not page-fault on every op.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/configuration_store.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/environment.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/bfc.hpp"
#include "devtensor/memory/sub_allocators.hpp"

namespace devtensor::detail {

struct DeviceAllocators {
  std::vector<std::shared_ptr<memory::Allocator>> by_logical;                    // parallel to the logical devices
  std::vector<std::shared_ptr<memory::SimulatedDeviceMemory>> simulated_memory;  // by physical index
};

/// The allocators of `logical`; a real GPU's allocate through `gpu_memory`, which must outlive
/// them. Reads TF_ENABLE_GPU_GARBAGE_COLLECTION. @throws UnimplementedError for unified memory on
/// a real GPU.
DeviceAllocators build_allocators(const std::vector<Device>& logical, const std::vector<PhysicalDeviceInfo>& physical,
                                  const Configuration& configuration, const memory::DeviceMemoryFunctions* gpu_memory,
                                  DeferredLogs& logs);

/// The host's physical memory (64 GiB when the system does not say).
std::uint64_t host_memory_limit() noexcept;

/// The region policy is a template parameter; the configuration picks it at run time.
template <memory::SubAllocator Sub>
std::shared_ptr<memory::Allocator> make_bfc(bool growth, Sub sub, memory::BFCOptions options);

template <memory::SubAllocator Sub>
std::shared_ptr<memory::Allocator> make_bfc(bool growth, Sub sub, memory::BFCOptions options) {
  if (growth) return std::make_shared<memory::BFCAllocator<memory::Growth, Sub>>(std::move(sub), std::move(options));
  return std::make_shared<memory::BFCAllocator<memory::Preallocate, Sub>>(std::move(sub), std::move(options));
}

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION DeviceAllocators build_allocators(const std::vector<Device>& logical,
                                                       const std::vector<PhysicalDeviceInfo>& physical,
                                                       const Configuration& configuration,
                                                       const memory::DeviceMemoryFunctions* gpu_memory,
                                                       DeferredLogs& logs) {
  std::vector<std::shared_ptr<memory::Allocator>> out;
  std::shared_ptr<memory::Allocator> host;
  std::vector<std::shared_ptr<memory::SimulatedDeviceMemory>> simulated(physical.size());
  const bool collect =
      std::any_of(logical.begin(), logical.end(), [](const auto& d) { return d.device_type == gpu_device_type; }) &&
      gpu_garbage_collection(getenv_value("TF_ENABLE_GPU_GARBAGE_COLLECTION"), logs);
  for (const auto& d : logical) {
    if (d.device_type == cpu_device_type) {
      if (!host) {
        memory::BFCOptions options;
        options.name = d.allocator_name;
        options.limit = configuration.host_memory_limit ? configuration.host_memory_limit : host_memory_limit();
        options.garbage_collection = true;
        options.limit_source = configuration.host_memory_limit ? "config::experimental::set_host_memory_limit"
                                                               : "the host's physical memory";
        options.retry_timeout = configuration.retry_timeout;
        host = make_bfc(/*growth=*/true, memory::HostSubAllocator{}, std::move(options));
      }
      out.push_back(host);
      continue;
    }
    const auto& phys = physical[static_cast<std::size_t>(d.physical_index)];
    memory::BFCOptions options;
    options.name = d.allocator_name;
    options.limit = d.memory_limit;
    options.garbage_collection = collect;
    options.limit_source = d.limit_source;
    options.retry_timeout = configuration.retry_timeout;
    if (phys.simulated) {
      auto& device_memory = simulated[static_cast<std::size_t>(d.physical_index)];
      if (!device_memory)  // unified memory may oversubscribe into host RAM
        device_memory = std::make_shared<memory::SimulatedDeviceMemory>(
            d.unified_memory ? UINT64_MAX / 2 : phys.properties.total_memory);
      out.push_back(make_bfc(d.allow_growth, memory::SimulatedSubAllocator(device_memory), std::move(options)));
    } else {
      if (d.unified_memory)
        throw UnimplementedError(
            "Unified (managed) memory for real GPUs is not implemented yet; use a memory "
            "fraction <= 1 and set_use_unified_memory(false)");
      out.push_back(make_bfc(d.allow_growth, memory::PlatformSubAllocator(gpu_memory, phys.platform_ordinal),
                             std::move(options)));
    }
  }
  return {std::move(out), std::move(simulated)};
}

DEVTENSOR_DEFINITION std::uint64_t host_memory_limit() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::uint64_t{64} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}
#endif

}  // namespace devtensor::detail
