#pragma once
/// @file bfc.hpp
/// @brief The best-fit-with-coalescing allocator (TensorFlow's BFCAllocator), as one class
/// template over a region policy and a sub-allocator: the BFC algorithm (bfc_arena.hpp) over
/// regions the sub-allocator gives, sized by the region policy, with locking, garbage collection,
/// waiting for frees (allocator_retry.hpp) and TensorFlow's reports (bfc_report.hpp).
///
/// Note [Locking]
/// One mutex guards the arena (chunks, bins and stats). It is never held across a sub-allocator
/// call (cudaMalloc and cudaFree can block for milliseconds): growing the pool takes a second
/// mutex that serialises extenders only, calls the sub-allocator unlocked, then relocks to insert
/// the region. Regions released by garbage collection or release_free_regions() are unlinked under
/// the lock and handed back after it is dropped.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/allocator_retry.hpp"
#include "devtensor/memory/bfc_arena.hpp"
#include "devtensor/memory/bfc_report.hpp"
#include "devtensor/memory/policies.hpp"
#include "devtensor/memory/stats.hpp"
#include "devtensor/memory/sub_allocators.hpp"

namespace devtensor::memory {

inline constexpr std::size_t kMaxAlignment = kRegionAlignment;

struct BFCOptions {
  std::string name = "bfc";
  std::size_t limit = 0;
  /// Return fully free regions to the sub-allocator when an allocation would otherwise fail
  /// (TensorFlow's GPU default: on; TF_ENABLE_GPU_GARBAGE_COLLECTION).
  bool garbage_collection = false;
  /// > 0: split whenever the slack is at least this fraction of the limit (else 128 MiB).
  double fragmentation_fraction = 0.0;
  /// allocate() with retry_on_failure waits this long for frees before giving up (TF: 10 s).
  bool allow_retry_on_failure = true;
  std::chrono::milliseconds retry_timeout{10000};
  /// What set the limit, for OOM advice ("memory_limit_mb = 1024 of the virtual device").
  std::string limit_source = "the allocator's configured limit";
};

template <RegionPolicy Policy, SubAllocator Sub>
class BFCAllocator final : public Allocator {
 public:
  /// Allocates nothing yet: the first region is obtained by the first allocation.
  BFCAllocator(Sub sub, BFCOptions options)
      : sub_(std::move(sub)),
        options_(std::move(options)),
        arena_(options_.limit,
               options_.fragmentation_fraction > 0
                   ? static_cast<std::size_t>(options_.fragmentation_fraction * static_cast<double>(options_.limit))
                   : kDefaultMaxInternalFragmentation) {
    curr_region_bytes_ = Policy::initial_region_bytes(options_.limit);
    if (curr_region_bytes_ == 0) curr_region_bytes_ = kMinAllocationSize;
  }

  /// Returns every region. Chunks still in use at this point are leaked by their owners; the
  /// memory goes back all the same (TensorFlow does the same).
  ~BFCAllocator() override {
    for (auto [ptr, size] : arena_.regions()) sub_.deallocate(ptr, size);
  }

  [[nodiscard]] std::string_view name() const noexcept override { return options_.name; }
  [[nodiscard]] const BFCOptions& options() const noexcept { return options_; }
  [[nodiscard]] Sub& sub_allocator() noexcept { return sub_; }

  void* allocate(std::size_t bytes, std::size_t alignment = 256, const AllocationAttributes& attributes = {}) override {
    check_alignment(alignment);
    if (bytes == 0) return nullptr;
    const std::size_t rounded = rounded_bytes(bytes);
    // Beyond TensorFlow: a request larger than the whole limit can never fit, however much is
    // freed, so it fails at once instead of waiting out the retry timeout.
    const bool can_ever_fit = rounded != 0 && rounded <= options_.limit;
    if (can_ever_fit) {
      if (void* p = allocate_once(bytes, alignment, rounded)) return p;
      if (attributes.retry_on_failure && options_.allow_retry_on_failure && options_.retry_timeout.count() > 0)
        if (void* p = retry_.retry(options_.retry_timeout, [&] { return allocate_once(bytes, alignment, rounded); }))
          return p;
    }
    const std::string message = bfc_report::failure_message(options_.name, bytes, rounded, attributes.op_name);
    bfc_report::log_failure(message);
    if (log_enabled(LogSource::cpp_runtime, LogSeverity::info)) log(LogSeverity::info, memory_dump(bytes));
    maybe_write_memory_dump();
    std::string summary_text, advice_text;
    {
      std::lock_guard lock(mutex_);
      summary_text = bfc_report::summary(options_.name, arena_);
      advice_text = bfc_report::advice(rounded == 0 ? SIZE_MAX : rounded, options_.limit,
                                       static_cast<std::size_t>(arena_.stats().bytes_in_use), options_.limit_source);
    }
    throw ResourceExhaustedError(message + ". " + summary_text + " " + advice_text);
  }

  void* try_allocate(std::size_t bytes, std::size_t alignment = 256) noexcept override {
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment) return nullptr;
    if (bytes == 0) return nullptr;
    if (void* p = allocate_once(bytes, alignment, rounded_bytes(bytes))) return p;
    static std::atomic<int> failure_logs{0};
    if (failure_logs.fetch_add(1) < 10)  // TensorFlow's kMaxFailureLogs
      log(LogSeverity::warning, "Allocator (" + options_.name + ") ran out of memory trying to allocate " +
                                    human_readable_size(bytes) +
                                    " with freed_by_count=0. The caller indicates that this is not a failure, but this "
                                    "may mean that there could be performance gains if more memory were available.");
    maybe_write_memory_dump();
    return nullptr;
  }

  void deallocate(void* p) noexcept override {
    if (p == nullptr) return;
    {
      std::lock_guard lock(mutex_);
      if (!arena_.deallocate(p)) {
        log(LogSeverity::error, "BFCAllocator " + options_.name + ": deallocate of pointer " + pointer_string(p) +
                                    " that this allocator did not hand out or already freed");
        std::abort();
      }
    }
    retry_.notify_freed();
  }

  [[nodiscard]] std::size_t requested_size(const void* p) const override { return live_sizes(p).first; }
  [[nodiscard]] std::size_t allocated_size(const void* p) const override { return live_sizes(p).second; }

  [[nodiscard]] AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return arena_.stats();
  }
  void clear_stats() override {
    std::lock_guard lock(mutex_);
    arena_.clear_stats();
  }
  [[nodiscard]] double fragmentation() const override {
    std::lock_guard lock(mutex_);
    return arena_.fragmentation();
  }

  std::size_t release_free_regions() override {
    std::vector<std::pair<void*, std::size_t>> released;
    {
      std::lock_guard lock(mutex_);
      released = arena_.detach_free_regions();
    }
    std::size_t bytes = 0;
    for (auto [ptr, size] : released) {
      sub_.deallocate(ptr, size);
      bytes += size;
    }
    return bytes;
  }

  [[nodiscard]] std::size_t region_count() const override {
    std::lock_guard lock(mutex_);
    return arena_.region_count();
  }
  /// The size the next region would get (for tests of the growth sequence).
  [[nodiscard]] std::size_t current_region_allocation_bytes() const {
    std::lock_guard lock(mutex_);
    return curr_region_bytes_;
  }
  /// Region sizes in address order.
  [[nodiscard]] std::vector<std::size_t> region_sizes() const {
    std::lock_guard lock(mutex_);
    std::vector<std::size_t> out;
    for (auto [ptr, size] : arena_.regions()) out.push_back(size);
    return out;
  }

  [[nodiscard]] std::string memory_dump(std::size_t request_bytes = 0) const override {
    std::lock_guard lock(mutex_);
    return bfc_report::dump(options_.name, arena_, request_bytes, options_.limit, curr_region_bytes_);
  }
  [[nodiscard]] std::string summary() const override {
    std::lock_guard lock(mutex_);
    return bfc_report::summary(options_.name, arena_);
  }
  /// TensorFlow's RenderOccupancy (bfc_report::occupancy).
  [[nodiscard]] std::string occupancy_map() const {
    std::lock_guard lock(mutex_);
    return bfc_report::occupancy(arena_);
  }
  /// Checks every invariant (tests). Returns "" or what is broken.
  [[nodiscard]] std::string check_invariants() const {
    std::lock_guard lock(mutex_);
    return arena_.check_invariants(options_.limit);
  }

 private:
  Sub sub_;
  BFCOptions options_;
  mutable std::mutex mutex_;  // guards arena_ and curr_region_bytes_ (Note [Locking])
  std::mutex extend_mutex_;   // serialises pool growth
  BfcArena arena_;
  AllocatorRetry retry_;
  std::size_t curr_region_bytes_ = 0;
  bool started_backpedal_ = false;

  static void check_alignment(std::size_t alignment) {
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment)
      throw InvalidArgumentError("alignment must be a power of two no larger than 4096, got " +
                                 std::to_string(alignment));
  }

  std::pair<std::size_t, std::size_t> live_sizes(const void* p) const {
    std::lock_guard lock(mutex_);
    const auto sizes = arena_.sizes_of(p);
    if (sizes.second == 0)
      throw InvalidArgumentError("pointer " + pointer_string(p) + " is not a live allocation of " + options_.name);
    return sizes;
  }

  /// One full attempt: existing chunks, then growing the pool, then garbage collection.
  void* allocate_once(std::size_t bytes, std::size_t alignment, std::size_t rounded) noexcept {
    if (rounded == 0 || rounded > SIZE_MAX / 2) return nullptr;  // overflow: no chunk can fit
    const std::size_t needed = rounded + (alignment > kMinAllocationSize ? alignment - kMinAllocationSize : 0);
    try {
      {
        std::lock_guard lock(mutex_);
        if (void* p = arena_.allocate(rounded, alignment, bytes)) return p;
      }
      std::lock_guard extending(extend_mutex_);
      {
        std::lock_guard lock(mutex_);  // another thread may have grown the pool or freed meanwhile
        if (void* p = arena_.allocate(rounded, alignment, bytes)) return p;
      }
      if (extend(needed)) {
        std::lock_guard lock(mutex_);
        if (void* p = arena_.allocate(rounded, alignment, bytes)) return p;
      }
      if (options_.garbage_collection && garbage_collect(needed) && extend(needed)) {
        std::lock_guard lock(mutex_);
        if (void* p = arena_.allocate(rounded, alignment, bytes)) return p;
      }
    } catch (...) {  // std::bad_alloc from the bookkeeping: report as out of memory
    }
    return nullptr;
  }

  /// TensorFlow's Extend: a new region of the region policy's next size (backing off to 90 % once
  /// when the device refuses it). Called with extend_mutex_ held and mutex_ not held.
  bool extend(std::size_t needed) {
    std::size_t region_bytes = 0;
    bool increased = false;
    {
      std::lock_guard lock(mutex_);
      const std::size_t total = arena_.total_region_bytes();
      const std::size_t available =
          (options_.limit - std::min(options_.limit, total)) / kMinAllocationSize * kMinAllocationSize;
      if (needed > available) return false;
      while (needed > curr_region_bytes_) {
        curr_region_bytes_ *= 2;
        increased = true;
      }
      region_bytes = std::min(curr_region_bytes_, available);
    }
    void* mem = sub_.allocate(region_bytes);
    if (mem == nullptr) {
      if (started_backpedal_) return false;  // "Only backpedal once"
      started_backpedal_ = true;
      while (mem == nullptr) {
        region_bytes =
            static_cast<std::size_t>(static_cast<double>(region_bytes) * 0.9) / kMinAllocationSize * kMinAllocationSize;
        if (region_bytes < needed) return false;
        mem = sub_.allocate(region_bytes);
      }
    }
    std::lock_guard lock(mutex_);
    if (!increased) curr_region_bytes_ *= 2;
    try {
      arena_.add_region(static_cast<char*>(mem), region_bytes);
    } catch (...) {
      sub_.deallocate(mem, region_bytes);
      throw;
    }
    return true;
  }

  /// TensorFlow's DeallocateFreeRegions: returns wholly free regions to the device. Called with
  /// extend_mutex_ held. The warning is logged after mutex_ is released: a log sink may call
  /// back into devtensor.
  bool garbage_collect(std::size_t needed) {
    std::vector<std::pair<void*, std::size_t>> released;
    {
      std::lock_guard lock(mutex_);
      const std::size_t free_region_bytes = arena_.free_region_bytes();
      if (free_region_bytes == 0) return false;
      if (needed > options_.limit - arena_.total_region_bytes() + free_region_bytes) return false;
      released = arena_.detach_free_regions();
    }
    log(LogSeverity::warning,
        "Garbage collection: deallocate free memory regions (i.e., allocations) so that we can "
        "re-allocate a larger region to avoid OOM due to memory fragmentation. If you see this "
        "message frequently, you are running near the threshold of the available device memory "
        "and re-allocation may incur great performance overhead. You may try smaller batch sizes "
        "to observe the performance impact. Set TF_ENABLE_GPU_GARBAGE_COLLECTION=false if you'd "
        "like to disable this feature.");
    for (auto [ptr, size] : released) sub_.deallocate(ptr, size);
    return true;
  }

  /// TF_BFC_MEMORY_DUMP=<prefix>: on every final failure, the dump in a file of its own.
  void maybe_write_memory_dump() const noexcept {
    if (!bfc_report::dump_file_wanted()) return;
    try {
      std::string text;
      double fragmentation = 0;
      {
        std::lock_guard lock(mutex_);
        text = bfc_report::dump(options_.name, arena_, 0, options_.limit, curr_region_bytes_);
        fragmentation = arena_.fragmentation();
      }
      bfc_report::write_dump_file(options_.name, text, fragmentation);
    } catch (...) {
    }
  }
};

}  // namespace devtensor::memory
