#pragma once
/// @file allocator.hpp
/// @brief The runtime allocator interface every logical device's allocator implements.
///
/// The BFC allocator is a template over its policies (bfc.hpp); the Context keeps one allocator per
/// logical device behind this interface (NVI, as RMM's device_memory_resource did), so tensors on
/// any device allocate the same way.

#include <cstddef>
#include <string>
#include <string_view>

#include "devtensor/memory/stats.hpp"

namespace devtensor::memory {

/// Per-call options (TensorFlow's AllocationAttributes).
struct AllocationAttributes {
  /// Wait for other threads to free memory before giving up (up to the allocator's retry timeout).
  bool retry_on_failure = true;
  /// The op that asked, for the OOM log line ("requested by op MatMul").
  std::string_view op_name = "";
};

class Allocator {
 public:
  Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  virtual ~Allocator() = default;

  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

  /// `bytes` (0 gives nullptr), aligned to `alignment` (a power of two from 1 to 4096; at least
  /// 256 is always given). @throws ResourceExhaustedError when out of memory,
  /// InvalidArgumentError for a bad alignment.
  virtual void* allocate(std::size_t bytes, std::size_t alignment = 256,
                         const AllocationAttributes& attributes = {}) = 0;
  /// One attempt, no waiting; nullptr on failure.
  virtual void* try_allocate(std::size_t bytes, std::size_t alignment = 256) noexcept = 0;
  /// nullptr is a no-op. A pointer this allocator did not hand out aborts (it is memory corruption).
  virtual void deallocate(void* p) noexcept = 0;

  /// The caller's byte count and the chunk size of a live allocation.
  /// @throws InvalidArgumentError for a pointer that is not a live allocation of this allocator.
  [[nodiscard]] virtual std::size_t requested_size(const void* p) const = 0;
  [[nodiscard]] virtual std::size_t allocated_size(const void* p) const = 0;

  [[nodiscard]] virtual AllocatorStats stats() const = 0;
  /// num_allocs = 0, peak = current, largest_alloc_size = 0 (TensorFlow's ClearStats).
  virtual void clear_stats() = 0;
  /// (free − largest free block) / free, free = pool − in use; 0 when nothing is free.
  [[nodiscard]] virtual double fragmentation() const = 0;
  /// Returns every region whose chunks are all free to the sub-allocator; the bytes released.
  virtual std::size_t release_free_regions() = 0;
  [[nodiscard]] virtual std::size_t region_count() const = 0;
  /// TensorFlow's DumpMemoryLog text: bins, chunks per region, in-use summary, stats, occupancy map.
  [[nodiscard]] virtual std::string memory_dump(std::size_t request_bytes = 0) const = 0;
  /// One paragraph: limit, in use, pool, largest free block, fragmentation.
  [[nodiscard]] virtual std::string summary() const = 0;
};

}  // namespace devtensor::memory
