#pragma once
/// @file memory_info.hpp
/// @brief Memory statistics of a device: config::experimental::get_memory_info and friends
/// (TensorFlow's tf.config.experimental.get_memory_info, reset_memory_stats), and what the device
/// holds outside the allocator.
///
/// Limits count only what devtensor's allocator reserves from the device (its regions, `pool`);
/// the CUDA context, cuBLAS workspaces and NCCL buffers are outside them. get_memory_overhead()
/// reports those separately, so "the limit was not honoured" can be answered from here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/source_location.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::detail {

/// The logical device a memory-stats query names ("GPU:0", "/device:GPU:0", a full name),
/// following TensorFlow's rules and errors. Initialises the Context, naming `api` as the trigger.
const Device& memory_stats_device(Context& context, std::string_view name, std::string_view api,
                                  const SourceLocation& where);

/// Device memory this process uses on a GPU that no devtensor allocator accounts for (the CUDA
/// context, libraries, other processes), or 0 for a simulated GPU.
std::uint64_t unaccounted_device_bytes(Context& context, const Device& device);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION const Device& memory_stats_device(Context& context, std::string_view name, std::string_view api,
                                                       const SourceLocation& where) {
  const auto spec = DeviceSpec::try_parse_full_or_local(name);
  if (!spec || !spec->type() || !spec->id())
    throw InvalidArgumentError("Failed parsing device name: '" + std::string(name) +
                               "'. Note a valid device string should at least contain a device "
                               "type and a device index, like \"GPU:0\".");
  const auto& devices = context.devices(std::string(api) + "(\"" + std::string(name) + "\")", where);
  const Device* found = nullptr;
  std::string matches;
  for (const auto& d : devices) {
    if (!spec->matches(d.spec)) continue;
    matches += (matches.empty() ? "" : ", ") + d.full_name;
    if (found)
      throw InvalidArgumentError("Multiple devices match the provided string '" + std::string(name) + "': " + matches);
    found = &d;
  }
  if (!found) throw NotFoundError("No matching devices found for '" + std::string(name) + "'");
  if (found->device_type == cpu_device_type)
    throw InvalidArgumentError("CPU does not support getting allocator information: " + std::string(api) +
                               " works on GPU devices (CPU devices share one caching host allocator, cpu_bfc).");
  return *found;
}

DEVTENSOR_DEFINITION std::uint64_t unaccounted_device_bytes(Context& context, const Device& device) {
  const auto& phys = context.physical_devices().at(static_cast<std::size_t>(device.physical_index));
  const auto* platform = context.gpu_platform();
  if (phys.simulated || !platform) return 0;
  const std::uint64_t used = phys.properties.total_memory - platform->free_memory(phys.platform_ordinal);
  std::uint64_t pools = 0;
  const auto& logical = context.devices();
  for (std::size_t i = 0; i < logical.size(); ++i)
    if (logical[i].physical_index == device.physical_index)
      pools += static_cast<std::uint64_t>(logical[i].allocator->stats().pool_bytes);
  return used > pools ? used - pools : 0;
}
#endif

}  // namespace devtensor::detail

namespace devtensor::config::experimental {

struct MemoryInfo {
  std::int64_t current = 0;  // bytes in use (chunk sizes: rounding and split slack included)
  std::int64_t peak = 0;     // peak bytes in use since start or reset_memory_stats
  std::int64_t limit = 0;    // the allocator's limit
  std::int64_t pool = 0;     // bytes the allocator holds from the device
};

/// "GPU:0", "/device:GPU:0" or a full name. Initialises the Context.
/// @throws InvalidArgumentError (unparsable, several matches, a CPU), NotFoundError (no match).
inline MemoryInfo get_memory_info(std::string_view device, SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  const auto& d = ::devtensor::detail::memory_stats_device(context, device, "get_memory_info", where);
  const auto s = context.allocator(d).stats();
  return {s.bytes_in_use, s.peak_bytes_in_use, s.bytes_limit, s.pool_bytes};
}

/// Deprecated in TensorFlow: the current bytes in use.
inline std::int64_t get_memory_usage(std::string_view device, SourceLocation where = SourceLocation::current()) {
  return get_memory_info(device, where).current;
}

/// peak = current; num_allocs and largest_alloc_size back to 0.
inline void reset_memory_stats(std::string_view device, SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  context.allocator(::devtensor::detail::memory_stats_device(context, device, "reset_memory_stats", where))
      .clear_stats();
}

/// Beyond TensorFlow: returns every fully free region of the device's allocator to the device
/// (or to the host, for simulated GPUs). Never touches regions with tensors in them; lowers
/// `pool` and leaves `current`, `peak` and the limit alone. Returns the bytes released.
inline std::size_t release_free_memory(std::string_view device, SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  return context.allocator(::devtensor::detail::memory_stats_device(context, device, "release_free_memory", where))
      .release_free_regions();
}

struct MemoryOverhead {
  std::uint64_t library_bytes = 0;             // cuBLAS workspaces, NCCL buffers devtensor made
  std::uint64_t unaccounted_device_bytes = 0;  // in use on the GPU, outside every devtensor allocator
};

/// What a device's memory holds beyond the allocator's pool.
inline MemoryOverhead get_memory_overhead(std::string_view device, SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  const auto& d = ::devtensor::detail::memory_stats_device(context, device, "get_memory_overhead", where);
  return {0, ::devtensor::detail::unaccounted_device_bytes(context, d)};
}

}  // namespace devtensor::config::experimental
