#pragma once
/// @file sub_allocators.hpp
/// @brief Where an allocator's regions come from: host memory, simulated device memory, or a GPU
/// platform (CUDA's cudaMalloc, registered by the cuda component).
///
/// A sub-allocator hands out large regions and takes them back whole. It must be thread-safe
/// (an allocator calls it without holding its own lock) and must never throw: failure is nullptr.

#include <sys/mman.h>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

namespace devtensor::memory {

/// Every region is at least this aligned, so requests up to this alignment can be met inside it.
inline constexpr std::size_t kRegionAlignment = 4096;

template <class S>
concept SubAllocator = requires(S& s, void* p, std::size_t n) {
  { s.allocate(n) }
  noexcept->std::same_as<void*>;
  { s.deallocate(p, n) }
  noexcept;
  { s.name() } -> std::convertible_to<std::string_view>;
  { S::supports_coalescing } -> std::convertible_to<bool>;
};

/// Host memory from the C++ allocator, 4 KiB aligned (CPU devices and tests).
class HostSubAllocator {
 public:
  static constexpr bool supports_coalescing = false;
  [[nodiscard]] std::string_view name() const noexcept { return "host"; }
  void* allocate(std::size_t bytes) noexcept {
    if (bytes == 0) return nullptr;
    const std::size_t size = (bytes + kRegionAlignment - 1) / kRegionAlignment * kRegionAlignment;
    return std::aligned_alloc(kRegionAlignment, size);
  }
  void deallocate(void* p, std::size_t) noexcept { std::free(p); }
};

/// The memory of one simulated GPU: a capacity shared by every allocator on that
/// device. Regions are anonymous mappings, so untouched memory costs nothing.
class SimulatedDeviceMemory {
 public:
  explicit SimulatedDeviceMemory(std::uint64_t capacity) : capacity_(capacity) {}
  [[nodiscard]] std::uint64_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] std::uint64_t used() const noexcept { return used_.load(); }
  [[nodiscard]] std::uint64_t available() const noexcept { return capacity_ - used_.load(); }

  /// Fails like cudaMalloc when the request exceeds what is left.
  void* allocate(std::size_t bytes) noexcept {
    std::uint64_t used = used_.load();
    do {
      if (bytes > capacity_ - used) return nullptr;
    } while (!used_.compare_exchange_weak(used, used + bytes));
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      used_ -= bytes;
      return nullptr;
    }
    return p;
  }
  void deallocate(void* p, std::size_t bytes) noexcept {
    if (!p) return;
    ::munmap(p, bytes);
    used_ -= bytes;
  }

 private:
  std::uint64_t capacity_;
  std::atomic<std::uint64_t> used_{0};
};

/// A sub-allocator over one simulated GPU's memory.
class SimulatedSubAllocator {
 public:
  static constexpr bool supports_coalescing = false;
  explicit SimulatedSubAllocator(std::shared_ptr<SimulatedDeviceMemory> device) : device_(std::move(device)) {}
  [[nodiscard]] std::string_view name() const noexcept { return "simulated"; }
  void* allocate(std::size_t bytes) noexcept { return device_->allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) noexcept { device_->deallocate(p, bytes); }
  [[nodiscard]] const std::shared_ptr<SimulatedDeviceMemory>& device() const noexcept { return device_; }

 private:
  std::shared_ptr<SimulatedDeviceMemory> device_;
};

/// Device memory through plain function pointers, so that allocators built in a host-compiled TU
/// can use cudaMalloc from the cuda component (which registers the functions).
struct DeviceMemoryFunctions {
  void* (*allocate)(int ordinal, std::size_t bytes) noexcept;
  void (*deallocate)(int ordinal, void* p) noexcept;
};

class PlatformSubAllocator {
 public:
  static constexpr bool supports_coalescing = false;
  PlatformSubAllocator(const DeviceMemoryFunctions* functions, int ordinal)
      : functions_(functions), ordinal_(ordinal) {}
  [[nodiscard]] std::string_view name() const noexcept { return "device"; }
  void* allocate(std::size_t bytes) noexcept { return functions_->allocate(ordinal_, bytes); }
  void deallocate(void* p, std::size_t) noexcept { functions_->deallocate(ordinal_, p); }

 private:
  const DeviceMemoryFunctions* functions_;
  int ordinal_;
};

static_assert(SubAllocator<HostSubAllocator>);
static_assert(SubAllocator<SimulatedSubAllocator>);
static_assert(SubAllocator<PlatformSubAllocator>);

}  // namespace devtensor::memory
