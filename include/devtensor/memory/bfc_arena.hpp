#pragma once
/// @file bfc_arena.hpp
/// @brief BfcArena: the best-fit-with-coalescing algorithm itself (TensorFlow's BFCAllocator's
/// chunks and bins) over regions handed to it, without locking and without a device.
///
/// Each region is cut into chunks that are physically adjacent and linked both ways. Free chunks
/// sit in 21 bins of power-of-two sizes (256 B .. 256 MiB and above), each ordered by
/// (size, address), so the first adequate chunk from the request's bin upward is the best fit.
/// Allocation splits a chunk when the rest is worth keeping; freeing coalesces with both
/// neighbours, so no two adjacent chunks are ever free. BFCAllocator (bfc.hpp) adds the regions,
/// the locking and the policies; not a template, so compiled mode compiles it once.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory_resource>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/policies.hpp"
#include "devtensor/memory/stats.hpp"

namespace devtensor::memory {

inline constexpr int kNumBins = 21;
inline constexpr std::size_t kDefaultMaxInternalFragmentation = std::size_t{128} << 20;

/// The bin of a chunk size: min(20, floor(log2(max(size, 256) / 256))).
constexpr int bin_for_size(std::size_t size) noexcept {
  const std::size_t units = std::max(size, kMinAllocationSize) >> 8;
  return std::min(kNumBins - 1, static_cast<int>(std::bit_width(units)) - 1);
}
/// The smallest chunk size bin `b` holds: 256 << b.
constexpr std::size_t bin_size(int b) noexcept { return kMinAllocationSize << b; }

/// A pointer as "%p" prints it, for messages.
std::string pointer_string(const void* p);

class BfcArena {
 public:
  /// A chunk's index in the arena's table. Public only because nvcc's front end (header-only
  /// mode) may print any std::size_t in a template instantiation as this alias, which g++ then
  /// checks for access.
  using ChunkHandle = std::size_t;

  /// `limit` is reported in the stats; a chunk is split when the rest is at least half of it or
  /// at least `max_internal_fragmentation`.
  BfcArena(std::size_t limit, std::size_t max_internal_fragmentation);
  BfcArena(const BfcArena&) = delete;
  BfcArena& operator=(const BfcArena&) = delete;

  /// The best free chunk for `rounded` bytes (aligned to `alignment`), marked in use for a
  /// request of `requested` bytes, or nullptr when none fits (TensorFlow's FindChunkPtr).
  void* allocate(std::size_t rounded, std::size_t alignment, std::size_t requested);
  /// Frees a live allocation and coalesces it. False when `p` is not one.
  bool deallocate(const void* p);
  /// The sizes of a live allocation: {requested, chunk}; {0, 0} when `p` is not one.
  [[nodiscard]] std::pair<std::size_t, std::size_t> sizes_of(const void* p) const;

  /// Takes a region as one free chunk.
  void add_region(char* ptr, std::size_t size);
  /// Unlinks every region whose chunks are all free and returns them, for the owner to give back.
  std::vector<std::pair<void*, std::size_t>> detach_free_regions();
  /// The bytes of regions whose chunks are all free.
  [[nodiscard]] std::size_t free_region_bytes() const;
  [[nodiscard]] std::size_t total_region_bytes() const noexcept { return total_region_bytes_; }
  [[nodiscard]] std::size_t region_count() const noexcept { return regions_.size(); }
  /// Every region as (pointer, size), in address order.
  [[nodiscard]] std::vector<std::pair<void*, std::size_t>> regions() const;

  /// TensorFlow's AllocatorStats, largest_free_block_bytes included.
  [[nodiscard]] AllocatorStats stats() const;
  /// Forgets the allocation count, peak and largest allocation (not what is in use).
  void clear_stats() noexcept;
  [[nodiscard]] std::size_t largest_free_chunk() const;
  /// 1 - largest free chunk / free bytes (0 when nothing is free).
  [[nodiscard]] double fragmentation() const;

  /// A chunk as reports see it (bfc_report.hpp).
  struct ChunkView {
    const char* ptr;
    std::size_t size;
    std::size_t requested_size;
    bool in_use;
    int bin;           // -1 when in use
    std::size_t next;  // the next chunk's handle, SIZE_MAX for the last of its region
  };
  /// Calls on_region(ptr, size) for each region in address order, then on_chunk(ChunkView) for
  /// each of its chunks in address order.
  template <class OnRegion, class OnChunk>
  void visit(OnRegion on_region, OnChunk on_chunk) const {
    for (const auto& region : regions_) {
      on_region(static_cast<const char*>(region.ptr), region.size);
      for (ChunkHandle h = region.handles[0]; h != kInvalidHandle; h = chunks_[h].next) {
        const Chunk& c = chunks_[h];
        on_chunk(ChunkView{c.ptr, c.size, c.requested_size, c.in_use(), c.bin, c.next});
      }
    }
  }
  /// Calls f(ChunkView) for the free chunks of bin `b`, in (size, address) order.
  template <class F>
  void visit_bin(int b, F f) const {
    for (const BinEntry& entry : bins_[static_cast<std::size_t>(b)]) {
      const Chunk& c = chunks_[entry.handle];
      f(ChunkView{c.ptr, c.size, c.requested_size, c.in_use(), c.bin, c.next});
    }
  }
  /// Checks every invariant (tests): chunks tile each region, no adjacent free chunks, bins hold
  /// exactly the free chunks, stats match the chunks, the pool within `limit`. "" or what is broken.
  [[nodiscard]] std::string check_invariants(std::size_t limit) const;

 private:
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

  std::vector<Chunk> chunks_;
  std::vector<ChunkHandle> free_handles_;
  std::pmr::unsynchronized_pool_resource bin_nodes_;
  std::vector<Bin> bins_;
  std::vector<Region> regions_;  // sorted by address
  std::size_t total_region_bytes_ = 0;
  std::size_t max_internal_fragmentation_ = 0;
  std::int64_t next_allocation_id_ = 1;
  AllocatorStats stats_;

  ChunkHandle new_chunk();
  void delete_chunk(ChunkHandle h);
  static std::size_t slot(const Region& r, const char* p) { return static_cast<std::size_t>(p - r.ptr) >> 8; }
  const Region* region_for(const void* p) const;
  void set_handle(const char* p, ChunkHandle h);
  ChunkHandle handle_for(const void* p) const;
  ChunkHandle live_handle(const void* p) const;
  void insert_free(ChunkHandle h);
  void remove_free(ChunkHandle h);
  /// Cuts `h` after `bytes`; the tail becomes a new free chunk in its bin.
  void split(ChunkHandle h, std::size_t bytes);
  /// Merges `next` (physically after `h`) into `h`; neither may be in a bin.
  void merge(ChunkHandle h, ChunkHandle next);
  void free_and_coalesce(ChunkHandle h);
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::string pointer_string(const void* p) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%p", p);
  return buffer;
}

DEVTENSOR_DEFINITION BfcArena::BfcArena(std::size_t limit, std::size_t max_internal_fragmentation)
    : max_internal_fragmentation_(max_internal_fragmentation) {
  bins_.reserve(kNumBins);
  for (int b = 0; b < kNumBins; ++b) bins_.emplace_back(&bin_nodes_);
  stats_.bytes_limit = static_cast<std::int64_t>(limit);
}

DEVTENSOR_DEFINITION void* BfcArena::allocate(std::size_t rounded, std::size_t alignment, std::size_t requested) {
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
    stats_.largest_alloc_size = std::max(stats_.largest_alloc_size, static_cast<std::int64_t>(chosen.size));
    return chosen.ptr;
  }
  return nullptr;
}

DEVTENSOR_DEFINITION bool BfcArena::deallocate(const void* p) {
  const ChunkHandle h = live_handle(p);
  if (h == kInvalidHandle) return false;
  free_and_coalesce(h);
  return true;
}

DEVTENSOR_DEFINITION std::pair<std::size_t, std::size_t> BfcArena::sizes_of(const void* p) const {
  const ChunkHandle h = live_handle(p);
  if (h == kInvalidHandle) return {0, 0};
  return {chunks_[h].requested_size, chunks_[h].size};
}

DEVTENSOR_DEFINITION void BfcArena::add_region(char* ptr, std::size_t size) {
  Region region{ptr, size, std::vector<ChunkHandle>(size / kMinAllocationSize, kInvalidHandle)};
  auto it =
      std::upper_bound(regions_.begin(), regions_.end(), ptr, [](const char* p, const Region& r) { return p < r.ptr; });
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

DEVTENSOR_DEFINITION std::vector<std::pair<void*, std::size_t>> BfcArena::detach_free_regions() {
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

DEVTENSOR_DEFINITION std::size_t BfcArena::free_region_bytes() const {
  std::size_t bytes = 0;
  for (const auto& r : regions_) {
    const Chunk& c = chunks_[r.handles[0]];
    if (!c.in_use() && c.size == r.size) bytes += r.size;
  }
  return bytes;
}

DEVTENSOR_DEFINITION std::vector<std::pair<void*, std::size_t>> BfcArena::regions() const {
  std::vector<std::pair<void*, std::size_t>> out;
  for (const auto& r : regions_) out.emplace_back(r.ptr, r.size);
  return out;
}

DEVTENSOR_DEFINITION AllocatorStats BfcArena::stats() const {
  AllocatorStats s = stats_;
  s.largest_free_block_bytes = static_cast<std::int64_t>(largest_free_chunk());
  return s;
}

DEVTENSOR_DEFINITION void BfcArena::clear_stats() noexcept {
  stats_.num_allocs = 0;
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
  stats_.largest_alloc_size = 0;
}

DEVTENSOR_DEFINITION std::size_t BfcArena::largest_free_chunk() const {
  for (int b = kNumBins - 1; b >= 0; --b) {
    const Bin& bin = bins_[static_cast<std::size_t>(b)];
    if (!bin.empty()) return bin.rbegin()->size;
  }
  return 0;
}

DEVTENSOR_DEFINITION double BfcArena::fragmentation() const {
  const auto free_bytes = total_region_bytes_ - static_cast<std::size_t>(stats_.bytes_in_use);
  if (free_bytes == 0) return 0.0;
  return static_cast<double>(free_bytes - largest_free_chunk()) / static_cast<double>(free_bytes);
}

DEVTENSOR_DEFINITION std::string BfcArena::check_invariants(std::size_t limit) const {
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
  if (pool > limit) return "pool exceeds the limit";
  return "";
}

DEVTENSOR_DEFINITION BfcArena::ChunkHandle BfcArena::new_chunk() {
  if (!free_handles_.empty()) {
    const ChunkHandle h = free_handles_.back();
    free_handles_.pop_back();
    chunks_[h] = Chunk{};
    return h;
  }
  chunks_.emplace_back();
  return chunks_.size() - 1;
}

DEVTENSOR_DEFINITION void BfcArena::delete_chunk(ChunkHandle h) {
  chunks_[h] = Chunk{};
  free_handles_.push_back(h);
}

DEVTENSOR_DEFINITION const BfcArena::Region* BfcArena::region_for(const void* p) const {
  const char* c = static_cast<const char*>(p);
  auto it = std::upper_bound(regions_.begin(), regions_.end(), c,
                             [](const char* q, const Region& r) { return q < r.ptr + r.size; });
  if (it == regions_.end() || c < it->ptr) return nullptr;
  return &*it;
}

DEVTENSOR_DEFINITION void BfcArena::set_handle(const char* p, ChunkHandle h) {
  auto* r = const_cast<Region*>(region_for(p));  // this arena's own region: writable
  r->handles[slot(*r, p)] = h;
}

DEVTENSOR_DEFINITION BfcArena::ChunkHandle BfcArena::handle_for(const void* p) const {
  const Region* r = region_for(p);
  if (!r) return kInvalidHandle;
  const auto offset = static_cast<std::size_t>(static_cast<const char*>(p) - r->ptr);
  if (offset % kMinAllocationSize != 0) return kInvalidHandle;
  return r->handles[offset >> 8];
}

DEVTENSOR_DEFINITION BfcArena::ChunkHandle BfcArena::live_handle(const void* p) const {
  const ChunkHandle h = handle_for(p);
  return h != kInvalidHandle && chunks_[h].in_use() ? h : kInvalidHandle;
}

DEVTENSOR_DEFINITION void BfcArena::insert_free(ChunkHandle h) {
  Chunk& c = chunks_[h];
  c.bin = bin_for_size(c.size);
  bins_[static_cast<std::size_t>(c.bin)].insert(BinEntry{c.size, c.ptr, h});
}

DEVTENSOR_DEFINITION void BfcArena::remove_free(ChunkHandle h) {
  Chunk& c = chunks_[h];
  bins_[static_cast<std::size_t>(c.bin)].erase(BinEntry{c.size, c.ptr, h});
  c.bin = -1;
}

DEVTENSOR_DEFINITION void BfcArena::split(ChunkHandle h, std::size_t bytes) {
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

DEVTENSOR_DEFINITION void BfcArena::merge(ChunkHandle h, ChunkHandle next) {
  Chunk& c = chunks_[h];
  const Chunk& n = chunks_[next];
  c.size += n.size;
  c.next = n.next;
  if (c.next != kInvalidHandle) chunks_[c.next].prev = h;
  set_handle(n.ptr, kInvalidHandle);
  delete_chunk(next);
}

DEVTENSOR_DEFINITION void BfcArena::free_and_coalesce(ChunkHandle h) {
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
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::memory
