#pragma once
/// @file bfc.hpp
/// @brief The best-fit-with-coalescing allocator (TensorFlow's BFCAllocator), as one
/// class template over a region policy and a sub-allocator.
///
/// Memory comes from the sub-allocator in regions; each region is cut into chunks that are
/// physically adjacent and linked both ways. Free chunks sit in 21 bins of power-of-two sizes
/// (256 B .. 256 MiB and above), each ordered by (size, address), so the first adequate chunk from
/// the request's bin upward is the best fit. Allocation splits a chunk when the rest is worth
/// keeping; freeing coalesces with both neighbours, so no two adjacent chunks are ever free.
///
/// Note [Locking]
/// One mutex guards the chunks, bins and stats. It is never held across a sub-allocator call
/// (cudaMalloc and cudaFree can block for milliseconds): growing the pool takes a second mutex that
/// serialises extenders only, calls the sub-allocator unlocked, then relocks to insert the region.
/// Regions released by garbage collection or release_free_regions() are unlinked under the lock
/// and handed back after it is dropped.

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory_resource>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/policies.hpp"
#include "devtensor/memory/stats.hpp"
#include "devtensor/memory/sub_allocators.hpp"

namespace devtensor::memory {

inline constexpr int kNumBins = 21;
inline constexpr std::size_t kMaxAlignment = kRegionAlignment;
inline constexpr std::size_t kDefaultMaxInternalFragmentation = std::size_t{128} << 20;

/// The bin of a chunk size: min(20, floor(log2(max(size, 256) / 256))).
constexpr int bin_for_size(std::size_t size) noexcept {
  const std::size_t units = std::max(size, kMinAllocationSize) >> 8;
  return std::min(kNumBins - 1, static_cast<int>(std::bit_width(units)) - 1);
}
/// The smallest chunk size bin `b` holds: 256 << b.
constexpr std::size_t bin_size(int b) noexcept { return kMinAllocationSize << b; }

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
      : sub_(std::move(sub)), options_(std::move(options)), bins_(make_bins()) {
    curr_region_bytes_ = Policy::initial_region_bytes(options_.limit);
    if (curr_region_bytes_ == 0) curr_region_bytes_ = kMinAllocationSize;
    max_internal_fragmentation_ =
        options_.fragmentation_fraction > 0
            ? static_cast<std::size_t>(options_.fragmentation_fraction *
                                       static_cast<double>(options_.limit))
            : kDefaultMaxInternalFragmentation;
    stats_.bytes_limit = static_cast<std::int64_t>(options_.limit);
  }

  /// Returns every region. Chunks still in use at this point are leaked by their owners; the
  /// memory goes back all the same (TensorFlow does the same).
  ~BFCAllocator() override {
    for (auto& region : regions_) sub_.deallocate(region.ptr, region.size);
  }

  [[nodiscard]] std::string_view name() const noexcept override { return options_.name; }
  [[nodiscard]] const BFCOptions& options() const noexcept { return options_; }
  [[nodiscard]] Sub& sub_allocator() noexcept { return sub_; }

  void* allocate(std::size_t bytes, std::size_t alignment = 256,
                 const AllocationAttributes& attributes = {}) override {
    check_alignment(alignment);
    if (bytes == 0) return nullptr;
    const std::size_t rounded = rounded_bytes(bytes);
    // Beyond TensorFlow: a request larger than the whole limit can never fit, however much is
    // freed, so it fails at once instead of waiting out the retry timeout.
    const bool can_ever_fit = rounded != 0 && rounded <= options_.limit;
    if (can_ever_fit) {
      if (void* p = allocate_once(bytes, alignment, rounded)) return p;
      if (attributes.retry_on_failure && options_.allow_retry_on_failure &&
          options_.retry_timeout.count() > 0) {
        if (void* p = retry_until_freed(bytes, alignment)) return p;
      }
    }
    const std::string message = "Allocator (" + options_.name + ") ran out of memory trying to allocate " +
                                human_readable_size(bytes) + " (rounded to " +
                                std::to_string(rounded) + ")requested by op " +
                                std::string(attributes.op_name.empty() ? "<unknown>" : attributes.op_name);
    log(LogSeverity::warning, message);
    log(LogSeverity::warning,
        "If the cause is memory fragmentation maybe the environment variable "
        "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. ");
    log(LogSeverity::info, "Current allocation summary follows.");
    log(LogSeverity::info, "Current allocation summary follows.");
    if (log_enabled(LogSource::cpp_runtime, LogSeverity::info)) log(LogSeverity::info, memory_dump(bytes));
    maybe_write_memory_dump();
    throw ResourceExhaustedError(message + ". " + summary() + " " + advice(rounded == 0 ? SIZE_MAX : rounded));
  }

  void* try_allocate(std::size_t bytes, std::size_t alignment = 256) noexcept override {
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment) return nullptr;
    if (bytes == 0) return nullptr;
    if (void* p = allocate_once(bytes, alignment)) return p;
    static std::atomic<int> failure_logs{0};
    if (failure_logs.fetch_add(1) < 10)  // TensorFlow's kMaxFailureLogs
      log(LogSeverity::warning,
          "Allocator (" + options_.name + ") ran out of memory trying to allocate " +
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
      const ChunkHandle h = handle_for(p);
      if (h == kInvalidHandle || !chunks_[h].in_use()) {
        log(LogSeverity::error, "BFCAllocator " + options_.name + ": deallocate of pointer " +
                                    pointer_string(p) +
                                    " that this allocator did not hand out or already freed");
        std::abort();
      }
      free_and_coalesce(h);
    }
    if (waiters_.load() > 0) freed_.notify_all();
  }

  [[nodiscard]] std::size_t requested_size(const void* p) const override {
    std::lock_guard lock(mutex_);
    return live_chunk(p).requested_size;
  }
  [[nodiscard]] std::size_t allocated_size(const void* p) const override {
    std::lock_guard lock(mutex_);
    return live_chunk(p).size;
  }

  [[nodiscard]] AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    AllocatorStats s = stats_;
    s.largest_free_block_bytes = static_cast<std::int64_t>(largest_free_chunk_locked());
    return s;
  }

  void clear_stats() override {
    std::lock_guard lock(mutex_);
    stats_.num_allocs = 0;
    stats_.peak_bytes_in_use = stats_.bytes_in_use;
    stats_.largest_alloc_size = 0;
  }

  [[nodiscard]] double fragmentation() const override {
    std::lock_guard lock(mutex_);
    return fragmentation_locked();
  }

  std::size_t release_free_regions() override {
    std::vector<std::pair<void*, std::size_t>> released;
    {
      std::lock_guard lock(mutex_);
      released = detach_free_regions_locked();
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
    return regions_.size();
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
    for (const auto& r : regions_) out.push_back(r.size);
    return out;
  }

  [[nodiscard]] std::string memory_dump(std::size_t request_bytes = 0) const override {
    std::lock_guard lock(mutex_);
    return memory_dump_locked(request_bytes);
  }

  [[nodiscard]] std::string summary() const override {
    std::lock_guard lock(mutex_);
    return summary_locked();
  }

  /// TensorFlow's RenderOccupancy: 100 characters over all regions end to end ('*' requested bytes
  /// of in-use chunks, 'x' their slack, '_' free).
  [[nodiscard]] std::string occupancy_map() const {
    std::lock_guard lock(mutex_);
    return occupancy_locked();
  }

  /// Checks every invariant (tests): chunks tile each region, no adjacent free chunks, bins hold
  /// exactly the free chunks, stats match the chunks. Returns "" or what is broken.
  [[nodiscard]] std::string check_invariants() const {
    std::lock_guard lock(mutex_);
    std::size_t in_use = 0;
    std::size_t free_chunks = 0;
    std::size_t pool = 0;
    for (const auto& region : regions_) {
      pool += region.size;
      ChunkHandle h = region.handles[0];
      char* expected = region.ptr;
      bool previous_free = false;
      ChunkHandle previous = kInvalidHandle;
      while (h != kInvalidHandle) {
        const Chunk& c = chunks_[h];
        if (c.ptr != expected) return "chunks do not tile region " + pointer_string(region.ptr);
        if (c.prev != previous) return "broken prev link";
        if (region.handles[slot(region, c.ptr)] != h) return "region table does not point at chunk";
        if (!c.in_use()) {
          if (previous_free) return "two adjacent free chunks";
          if (c.bin < 0 || !bins_[static_cast<std::size_t>(c.bin)].count(BinEntry{c.size, c.ptr, h}))
            return "free chunk not in its bin";
          ++free_chunks;
        } else {
          in_use += c.size;
        }
        previous_free = !c.in_use();
        expected = c.ptr + c.size;
        previous = h;
        h = c.next;
      }
      if (expected != region.ptr + region.size) return "chunks do not cover region";
    }
    std::size_t binned = 0;
    for (const auto& bin : bins_) binned += bin.size();
    if (binned != free_chunks) return "bins hold chunks that are not free";
    if (in_use != static_cast<std::size_t>(stats_.bytes_in_use)) return "bytes_in_use mismatch";
    if (pool != static_cast<std::size_t>(stats_.pool_bytes)) return "pool_bytes mismatch";
    if (pool > options_.limit) return "pool exceeds the limit";
    return "";
  }

 private:
  using ChunkHandle = std::size_t;
  static constexpr ChunkHandle kInvalidHandle = SIZE_MAX;

  struct Chunk {
    char* ptr = nullptr;
    std::size_t size = 0;
    std::size_t requested_size = 0;
    std::int64_t allocation_id = -1;  // -1: free
    ChunkHandle prev = kInvalidHandle;
    ChunkHandle next = kInvalidHandle;
    int bin = -1;
    [[nodiscard]] bool in_use() const noexcept { return allocation_id != -1; }
  };

  struct Region {
    char* ptr;
    std::size_t size;
    std::vector<ChunkHandle> handles;  // one per 256-byte slot; set where a chunk starts
  };

  /// A free chunk as its bin holds it: the (size, address) key is stored in the entry, so
  /// ordering never reaches into the chunk table (one cache miss less per comparison).
  struct BinEntry {
    std::size_t size;
    const char* ptr;
    ChunkHandle handle;
    bool operator<(const BinEntry& other) const noexcept {
      return size != other.size ? size < other.size : ptr < other.ptr;
    }
  };
  /// Bin nodes come from a pool, not from malloc, on every split and free.
  using Bin = std::pmr::set<BinEntry>;

  Sub sub_;
  BFCOptions options_;
  mutable std::mutex mutex_;
  std::mutex extend_mutex_;  // serialises pool growth (Note [Locking])
  std::condition_variable_any freed_;
  std::atomic<int> waiters_{0};

  std::vector<Chunk> chunks_;
  std::vector<ChunkHandle> free_handles_;
  std::pmr::unsynchronized_pool_resource bin_nodes_;  // guarded by mutex_
  std::vector<Bin> bins_;
  std::vector<Region> regions_;  // sorted by address
  std::size_t total_region_bytes_ = 0;
  std::size_t curr_region_bytes_ = 0;
  std::size_t max_internal_fragmentation_ = 0;
  bool started_backpedal_ = false;
  std::int64_t next_allocation_id_ = 1;
  AllocatorStats stats_;

  std::vector<Bin> make_bins() {
    std::vector<Bin> bins;
    bins.reserve(kNumBins);
    for (int b = 0; b < kNumBins; ++b) bins.emplace_back(&bin_nodes_);
    return bins;
  }

  static void check_alignment(std::size_t alignment) {
    if (alignment == 0 || !std::has_single_bit(alignment) || alignment > kMaxAlignment)
      throw InvalidArgumentError("alignment must be a power of two no larger than 4096, got " +
                                 std::to_string(alignment));
  }

  static std::string pointer_string(const void* p) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%p", p);
    return buffer;
  }

  // --- chunk bookkeeping -----------------------------------------------------------------------

  ChunkHandle new_chunk() {
    if (!free_handles_.empty()) {
      const ChunkHandle h = free_handles_.back();
      free_handles_.pop_back();
      chunks_[h] = Chunk{};
      return h;
    }
    chunks_.emplace_back();
    return chunks_.size() - 1;
  }
  void delete_chunk(ChunkHandle h) {
    chunks_[h] = Chunk{};
    free_handles_.push_back(h);
  }

  static std::size_t slot(const Region& r, const char* p) {
    return static_cast<std::size_t>(p - r.ptr) >> 8;
  }
  Region* region_for(const void* p) {
    const char* c = static_cast<const char*>(p);
    auto it = std::upper_bound(regions_.begin(), regions_.end(), c,
                               [](const char* q, const Region& r) { return q < r.ptr + r.size; });
    if (it == regions_.end() || c < it->ptr) return nullptr;
    return &*it;
  }
  const Region* region_for(const void* p) const {
    return const_cast<BFCAllocator*>(this)->region_for(p);
  }
  void set_handle(const char* p, ChunkHandle h) {
    Region* r = region_for(p);
    r->handles[slot(*r, p)] = h;
  }
  ChunkHandle handle_for(const void* p) const {
    const Region* r = region_for(p);
    if (!r) return kInvalidHandle;
    const auto offset = static_cast<std::size_t>(static_cast<const char*>(p) - r->ptr);
    if (offset % kMinAllocationSize != 0) return kInvalidHandle;
    return r->handles[offset >> 8];
  }
  const Chunk& live_chunk(const void* p) const {
    const ChunkHandle h = handle_for(p);
    if (h == kInvalidHandle || !chunks_[h].in_use())
      throw InvalidArgumentError("pointer " + pointer_string(p) + " is not a live allocation of " +
                                 options_.name);
    return chunks_[h];
  }

  void insert_free(ChunkHandle h) {
    Chunk& c = chunks_[h];
    c.bin = bin_for_size(c.size);
    bins_[static_cast<std::size_t>(c.bin)].insert(BinEntry{c.size, c.ptr, h});
  }
  void remove_free(ChunkHandle h) {
    Chunk& c = chunks_[h];
    bins_[static_cast<std::size_t>(c.bin)].erase(BinEntry{c.size, c.ptr, h});
    c.bin = -1;
  }

  /// Cuts `h` after `bytes`; the tail becomes a new free chunk in its bin.
  void split(ChunkHandle h, std::size_t bytes) {
    const ChunkHandle tail = new_chunk();
    Chunk& c = chunks_[h];
    Chunk& t = chunks_[tail];
    t.ptr = c.ptr + bytes;
    t.size = c.size - bytes;
    c.size = bytes;
    t.prev = h;
    t.next = c.next;
    if (t.next != kInvalidHandle) chunks_[t.next].prev = tail;
    c.next = tail;
    set_handle(t.ptr, tail);
    insert_free(tail);
  }

  /// Merges `next` (physically after `h`) into `h`; neither may be in a bin.
  void merge(ChunkHandle h, ChunkHandle next) {
    Chunk& c = chunks_[h];
    const Chunk& n = chunks_[next];
    c.size += n.size;
    c.next = n.next;
    if (c.next != kInvalidHandle) chunks_[c.next].prev = h;
    set_handle(n.ptr, kInvalidHandle);
    delete_chunk(next);
  }

  void free_and_coalesce(ChunkHandle h) {
    Chunk& c = chunks_[h];
    c.allocation_id = -1;
    c.requested_size = 0;
    stats_.bytes_in_use -= static_cast<std::int64_t>(c.size);
    if (const ChunkHandle n = chunks_[h].next; n != kInvalidHandle && !chunks_[n].in_use()) {
      remove_free(n);
      merge(h, n);
    }
    if (const ChunkHandle p = chunks_[h].prev; p != kInvalidHandle && !chunks_[p].in_use()) {
      remove_free(p);
      merge(p, h);
      h = p;
    }
    insert_free(h);
  }

  // --- allocation ------------------------------------------------------------------------------

  /// Best fit from the request's bin upward (TensorFlow's FindChunkPtr).
  void* find_chunk_locked(std::size_t rounded, std::size_t alignment, std::size_t requested) {
    const std::size_t needed = rounded + (alignment > kMinAllocationSize ? alignment - kMinAllocationSize : 0);
    for (int b = bin_for_size(needed); b < kNumBins; ++b) {
      Bin& bin = bins_[static_cast<std::size_t>(b)];
      auto it = bin.lower_bound(BinEntry{needed, nullptr, kInvalidHandle});
      if (it == bin.end()) continue;
      ChunkHandle h = it->handle;
      remove_free(h);
      // A stricter alignment: cut off the unaligned front as a free chunk of its own.
      if (alignment > kMinAllocationSize) {
        const auto address = reinterpret_cast<std::uintptr_t>(chunks_[h].ptr);
        const std::size_t pad = static_cast<std::size_t>((alignment - address % alignment) % alignment);
        if (pad > 0) {
          split(h, pad);  // [h: pad, free][tail: aligned rest, free, binned]
          const ChunkHandle aligned = chunks_[h].next;
          remove_free(aligned);
          insert_free(h);
          h = aligned;
        }
      }
      Chunk& c = chunks_[h];
      if (c.size >= 2 * rounded || c.size - rounded >= max_internal_fragmentation_) split(h, rounded);
      Chunk& chosen = chunks_[h];
      chosen.requested_size = requested;
      chosen.allocation_id = next_allocation_id_++;
      stats_.num_allocs += 1;
      stats_.bytes_in_use += static_cast<std::int64_t>(chosen.size);
      stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
      stats_.largest_alloc_size =
          std::max(stats_.largest_alloc_size, static_cast<std::int64_t>(chosen.size));
      return chosen.ptr;
    }
    return nullptr;
  }

  /// One full attempt: existing chunks, then growing the pool, then garbage collection.
  void* allocate_once(std::size_t bytes, std::size_t alignment) noexcept {
    return allocate_once(bytes, alignment, rounded_bytes(bytes));
  }
  void* allocate_once(std::size_t bytes, std::size_t alignment, std::size_t rounded) noexcept {
    if (rounded == 0 || rounded > SIZE_MAX / 2) return nullptr;  // overflow: no chunk can fit
    const std::size_t needed = rounded + (alignment > kMinAllocationSize ? alignment - kMinAllocationSize : 0);
    try {
      {
        std::lock_guard lock(mutex_);
        if (void* p = find_chunk_locked(rounded, alignment, bytes)) return p;
      }
      std::lock_guard extending(extend_mutex_);
      {
        std::lock_guard lock(mutex_);  // another thread may have grown the pool or freed meanwhile
        if (void* p = find_chunk_locked(rounded, alignment, bytes)) return p;
      }
      if (extend(needed)) {
        std::lock_guard lock(mutex_);
        if (void* p = find_chunk_locked(rounded, alignment, bytes)) return p;
      }
      if (options_.garbage_collection && garbage_collect(needed) && extend(needed)) {
        std::lock_guard lock(mutex_);
        if (void* p = find_chunk_locked(rounded, alignment, bytes)) return p;
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
      const std::size_t available =
          (options_.limit - std::min(options_.limit, total_region_bytes_)) / kMinAllocationSize * kMinAllocationSize;
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
        region_bytes = static_cast<std::size_t>(static_cast<double>(region_bytes) * 0.9) /
                       kMinAllocationSize * kMinAllocationSize;
        if (region_bytes < needed) return false;
        mem = sub_.allocate(region_bytes);
      }
    }
    std::lock_guard lock(mutex_);
    if (!increased) curr_region_bytes_ *= 2;
    try {
      add_region_locked(static_cast<char*>(mem), region_bytes);
    } catch (...) {
      sub_.deallocate(mem, region_bytes);
      throw;
    }
    return true;
  }

  void add_region_locked(char* ptr, std::size_t size) {
    Region region{ptr, size, std::vector<ChunkHandle>(size / kMinAllocationSize, kInvalidHandle)};
    auto it = std::upper_bound(regions_.begin(), regions_.end(), ptr,
                               [](const char* p, const Region& r) { return p < r.ptr; });
    regions_.insert(it, std::move(region));
    const ChunkHandle h = new_chunk();
    chunks_[h].ptr = ptr;
    chunks_[h].size = size;
    set_handle(ptr, h);
    insert_free(h);
    total_region_bytes_ += size;
    stats_.pool_bytes = static_cast<std::int64_t>(total_region_bytes_);
    stats_.peak_pool_bytes = std::max(stats_.peak_pool_bytes, stats_.pool_bytes);
  }

  /// Unlinks every region whose chunks are all free; the caller hands them back unlocked.
  std::vector<std::pair<void*, std::size_t>> detach_free_regions_locked() {
    std::vector<std::pair<void*, std::size_t>> released;
    for (auto it = regions_.begin(); it != regions_.end();) {
      const ChunkHandle h = it->handles[0];
      const Chunk& c = chunks_[h];
      if (!c.in_use() && c.size == it->size) {
        remove_free(h);
        delete_chunk(h);
        released.emplace_back(it->ptr, it->size);
        total_region_bytes_ -= it->size;
        it = regions_.erase(it);
      } else {
        ++it;
      }
    }
    stats_.pool_bytes = static_cast<std::int64_t>(total_region_bytes_);
    return released;
  }

  /// TensorFlow's DeallocateFreeRegions: returns wholly free regions to the device. Called with
  /// extend_mutex_ held. The warning is logged
  /// after mutex_ is released: a log sink may call back into devtensor.
  bool garbage_collect(std::size_t needed) {
    std::vector<std::pair<void*, std::size_t>> released;
    {
      std::lock_guard lock(mutex_);
      std::size_t free_region_bytes = 0;
      for (const auto& r : regions_) {
        const Chunk& c = chunks_[r.handles[0]];
        if (!c.in_use() && c.size == r.size) free_region_bytes += r.size;
      }
      if (free_region_bytes == 0) return false;
      if (needed > options_.limit - total_region_bytes_ + free_region_bytes) return false;
      released = detach_free_regions_locked();
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

  /// TensorFlow's AllocatorRetry: wait for frees, retrying after each, up to the timeout.
  void* retry_until_freed(std::size_t bytes, std::size_t alignment) {
    const auto deadline = std::chrono::steady_clock::now() + options_.retry_timeout;
    std::mutex wait_mutex;
    std::unique_lock wait_lock(wait_mutex);
    ++waiters_;
    void* p = nullptr;
    while (p == nullptr && std::chrono::steady_clock::now() < deadline) {
      freed_.wait_until(wait_lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                          std::chrono::milliseconds(50)));
      p = allocate_once(bytes, alignment);
    }
    --waiters_;
    return p;
  }

  // --- reporting -------------------------------------------------------------------------------

  std::size_t largest_free_chunk_locked() const {
    for (int b = kNumBins - 1; b >= 0; --b) {
      const Bin& bin = bins_[static_cast<std::size_t>(b)];
      if (!bin.empty()) return bin.rbegin()->size;
    }
    return 0;
  }

  double fragmentation_locked() const {
    const auto free_bytes = total_region_bytes_ - static_cast<std::size_t>(stats_.bytes_in_use);
    if (free_bytes == 0) return 0.0;
    return static_cast<double>(free_bytes - largest_free_chunk_locked()) /
           static_cast<double>(free_bytes);
  }

  std::string summary_locked() const {
    char buffer[256];
    std::snprintf(buffer, sizeof buffer, "fragmentation %.2f", fragmentation_locked());
    return "Allocator " + options_.name + ": limit " + human_readable_bytes(stats_.bytes_limit) +
           ", in use " + human_readable_bytes(stats_.bytes_in_use) + ", pool " +
           human_readable_bytes(stats_.pool_bytes) + " in " + std::to_string(regions_.size()) +
           " region(s), largest free block " +
           human_readable_bytes(static_cast<std::int64_t>(largest_free_chunk_locked())) + ", " + buffer + ".";
  }

  /// Which knob to turn.
  std::string advice(std::size_t rounded) const {
    std::lock_guard lock(mutex_);
    const std::size_t in_use = static_cast<std::size_t>(stats_.bytes_in_use);
    if (rounded > options_.limit)
      return "The request alone exceeds the limit of " +
             human_readable_bytes(static_cast<std::int64_t>(options_.limit)) + " (set by " +
             options_.limit_source +
             "): raise the memory fraction or the virtual device's memory_limit_mb, or reduce the "
             "batch size.";
    if (options_.limit - in_use >= rounded)
      return "Enough memory is free (" +
             human_readable_bytes(static_cast<std::int64_t>(options_.limit - in_use)) +
             ") but not in one piece: this is fragmentation. Enable garbage collection "
             "(TF_ENABLE_GPU_GARBAGE_COLLECTION=true), call "
             "config::experimental::release_free_memory(device), or change the growth mode.";
    return "Tensors in use hold " + human_readable_bytes(static_cast<std::int64_t>(in_use)) +
           " of the " + human_readable_bytes(static_cast<std::int64_t>(options_.limit)) +
           " limit (set by " + options_.limit_source +
           "): free tensors that are no longer needed, reduce the batch size, or raise the limit.";
  }

  std::string occupancy_locked() const {
    if (regions_.empty()) return "<allocator contains no memory>";
    constexpr std::size_t kResolution = 100;
    std::string rendered(kResolution, '_');
    const double total = static_cast<double>(total_region_bytes_);
    const auto render = [&](std::size_t offset, std::size_t size, char mark) {
      if (size == 0) return;
      auto first = static_cast<std::size_t>(static_cast<double>(offset) * kResolution / total);
      auto last = static_cast<std::size_t>(static_cast<double>(offset + size - 1) * kResolution / total);
      for (std::size_t i = first; i <= last && i < kResolution; ++i) rendered[i] = mark;
    };
    std::size_t region_offset = 0;
    for (const auto& region : regions_) {
      for (ChunkHandle h = region.handles[0]; h != kInvalidHandle; h = chunks_[h].next) {
        const Chunk& c = chunks_[h];
        if (!c.in_use()) continue;
        const auto offset = region_offset + static_cast<std::size_t>(c.ptr - region.ptr);
        render(offset + c.requested_size, c.size - c.requested_size, 'x');
        render(offset, c.requested_size, '*');
      }
      region_offset += region.size;
    }
    return rendered;
  }

  std::string memory_dump_locked(std::size_t request_bytes) const {
    std::string out = "BFCAllocator dump for " + options_.name + "\n";
    struct BinInfo {
      std::size_t chunks = 0, in_use = 0, bytes = 0, bytes_in_use = 0, requested = 0;
    };
    std::vector<BinInfo> info(kNumBins);
    for (const auto& region : regions_)
      for (ChunkHandle h = region.handles[0]; h != kInvalidHandle; h = chunks_[h].next) {
        const Chunk& c = chunks_[h];
        auto& b = info[static_cast<std::size_t>(bin_for_size(c.size))];
        ++b.chunks;
        b.bytes += c.size;
        if (c.in_use()) {
          ++b.in_use;
          b.bytes_in_use += c.size;
          b.requested += c.requested_size;
        }
      }
    const auto human = [](std::size_t n) { return human_readable_bytes(static_cast<std::int64_t>(n)); };
    for (int b = 0; b < kNumBins; ++b) {
      const auto& i = info[static_cast<std::size_t>(b)];
      out += "Bin (" + std::to_string(bin_size(b)) + "): \tTotal Chunks: " + std::to_string(i.chunks) +
             ", Chunks in use: " + std::to_string(i.in_use) + ". " + human(i.bytes) +
             " allocated for chunks. " + human(i.bytes_in_use) + " in use in bin. " +
             human(i.requested) + " client-requested in use in bin.\n";
    }
    if (request_bytes > 0) {
      const std::size_t rounded = rounded_bytes(request_bytes);
      const int b = bin_for_size(rounded);
      out += "Bin for " + human(rounded) + " was " + human(bin_size(b)) + ", Chunk State: \n";
      for (const BinEntry& entry : bins_[static_cast<std::size_t>(b)]) {
        const Chunk& c = chunks_[entry.handle];
        out += "  Size: " + human(c.size) + " | Requested Size: " + human(c.requested_size) +
               " | in_use: 0 | bin_num: " + std::to_string(c.bin) + "\n";
      }
    }
    std::map<std::size_t, std::size_t> in_use_by_size;
    std::size_t total_in_use = 0;
    for (const auto& region : regions_) {
      out += "Next region of size " + std::to_string(region.size) + "\n";
      for (ChunkHandle h = region.handles[0]; h != kInvalidHandle; h = chunks_[h].next) {
        const Chunk& c = chunks_[h];
        out += std::string(c.in_use() ? "InUse" : "Free ") + " at " + pointer_string(c.ptr) +
               " of size " + std::to_string(c.size) + " next " +
               (c.next == kInvalidHandle ? std::string("-1") : std::to_string(c.next)) + "\n";
        if (c.in_use()) {
          ++in_use_by_size[c.size];
          total_in_use += c.size;
        }
      }
    }
    out += "     Summary of in-use Chunks by size: \n";
    for (auto [size, count] : in_use_by_size)
      out += std::to_string(count) + " Chunks of size " + std::to_string(size) + " totalling " +
             human(size * count) + "\n";
    out += "Sum Total of in-use chunks: " + human(total_in_use) + "\n";
    out += "total_region_allocated_bytes_: " + std::to_string(total_region_bytes_) +
           " memory_limit_: " + std::to_string(options_.limit) + " available bytes: " +
           std::to_string(options_.limit - std::min(options_.limit, total_region_bytes_)) +
           " curr_region_allocation_bytes_: " + std::to_string(curr_region_bytes_) + "\n";
    AllocatorStats s = stats_;
    s.largest_free_block_bytes = static_cast<std::int64_t>(largest_free_chunk_locked());
    out += "Stats: \n" + s.to_string();
    out += occupancy_locked() + "\n";
    return out;
  }

  /// TF_BFC_MEMORY_DUMP=<prefix>: on every final failure, write the dump to
  /// <prefix>_<allocator name>.<microseconds> (devtensor's text format: the dump above plus the
  /// fragmentation metric).
  void maybe_write_memory_dump() const noexcept {
    const char* prefix = std::getenv("TF_BFC_MEMORY_DUMP");  // NOLINT(concurrency-mt-unsafe)
    if (prefix == nullptr || *prefix == '\0') return;
    try {
      const auto now = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      std::ofstream file(std::string(prefix) + "_" + options_.name + "." + std::to_string(now));
      std::lock_guard lock(mutex_);
      file << memory_dump_locked(0) << "Fragmentation: " << fragmentation_locked() << "\n";
    } catch (...) {
    }
  }
};

}  // namespace devtensor::memory
