#pragma once
/// @file memory_info.hpp
/// @brief Memory statistics of a device: config::experimental::get_memory_info and friends
/// (TensorFlow's tf.config.experimental.get_memory_info, reset_memory_stats), and what the device
/// holds outside the allocator.
///
/// Limits count only what devtensor's allocator reserves from the device (its regions, `pool`);
/// the CUDA context, cuBLAS workspaces and NCCL buffers are outside them. get_memory_overhead()
/// reports those separately, so "the limit was not honoured" can be answered from here.

#include <cstdint>
#include <string_view>

#include "devtensor/core/source_location.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::config::experimental {

struct MemoryInfo {
  std::int64_t current = 0;  // bytes in use (chunk sizes: rounding and split slack included)
  std::int64_t peak = 0;     // peak bytes in use since start or reset_memory_stats
  std::int64_t limit = 0;    // the allocator's limit
  std::int64_t pool = 0;     // bytes the allocator holds from the device
};

/// "GPU:0", "/device:GPU:0" or a full name. Initialises the Context.
/// @throws InvalidArgumentError (unparsable, several matches, a CPU), NotFoundError (no match).
inline MemoryInfo get_memory_info(std::string_view device,
                                  SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  const auto& d = context.memory_stats_device(device, "get_memory_info", where);
  const auto s = context.allocator(d).stats();
  return {s.bytes_in_use, s.peak_bytes_in_use, s.bytes_limit, s.pool_bytes};
}

/// Deprecated in TensorFlow: the current bytes in use.
inline std::int64_t get_memory_usage(std::string_view device,
                                     SourceLocation where = SourceLocation::current()) {
  return get_memory_info(device, where).current;
}

/// peak = current; num_allocs and largest_alloc_size back to 0.
inline void reset_memory_stats(std::string_view device,
                               SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  context.allocator(context.memory_stats_device(device, "reset_memory_stats", where)).clear_stats();
}

/// Beyond TensorFlow: returns every fully free region of the device's allocator to the device
/// (or to the host, for simulated GPUs). Never touches regions with tensors in them; lowers
/// `pool` and leaves `current`, `peak` and the limit alone. Returns the bytes released.
inline std::size_t release_free_memory(std::string_view device,
                                       SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  return context.allocator(context.memory_stats_device(device, "release_free_memory", where))
      .release_free_regions();
}

struct MemoryOverhead {
  std::uint64_t library_bytes = 0;             // cuBLAS workspaces, NCCL buffers devtensor made
  std::uint64_t unaccounted_device_bytes = 0;  // in use on the GPU, outside every devtensor allocator
};

/// What a device's memory holds beyond the allocator's pool.
inline MemoryOverhead get_memory_overhead(std::string_view device,
                                          SourceLocation where = SourceLocation::current()) {
  auto& context = Context::global();
  const auto& d = context.memory_stats_device(device, "get_memory_overhead", where);
  return {0, context.unaccounted_device_bytes(d)};
}

}  // namespace devtensor::config::experimental
