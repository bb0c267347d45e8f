#pragma once
/// @file bfc_report.hpp
/// @brief What a BFC allocator says when memory runs out: the one-line summary, which knob to
/// turn, TensorFlow's log lines, and the TF_BFC_MEMORY_DUMP file. Not templates: compiled once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/memory/bfc_arena.hpp"
#include "devtensor/memory/stats.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#endif

namespace devtensor::memory::bfc_report {

/// "Allocator <name>: limit ..., in use ..., pool ... in N region(s), largest free block ...,
/// fragmentation 0.00."
std::string summary(std::string_view name, const BfcArena& arena);

/// Which knob to turn for a request of `rounded` bytes that did not fit under `limit` (set by
/// `limit_source`) while `in_use` bytes were taken.
std::string advice(std::size_t rounded, std::size_t limit, std::size_t in_use, std::string_view limit_source);

/// TensorFlow's RenderOccupancy: 100 characters over all regions end to end ('*' requested bytes of
/// in-use chunks, 'x' their slack, '_' free).
std::string occupancy(const BfcArena& arena);

/// TensorFlow's DumpMemoryLog: the arena's bins and chunks, the allocator's region state, the
/// stats and the occupancy map.
std::string dump(std::string_view name, const BfcArena& arena, std::size_t request_bytes, std::size_t limit,
                 std::size_t next_region_bytes);

/// "Allocator (<name>) ran out of memory trying to allocate <size> (rounded to <n>)requested by op
/// <op>" (TensorFlow's words, its missing space included).
std::string failure_message(std::string_view name, std::size_t bytes, std::size_t rounded, std::string_view op_name);
/// Logs TensorFlow's warnings for a failed allocation (`message` from failure_message) and the
/// lines that announce the summary.
void log_failure(const std::string& message);

/// TF_BFC_MEMORY_DUMP=<prefix>: whether a dump file is wanted, and writing it to
/// <prefix>_<allocator name>.<microseconds> (the dump plus the fragmentation metric). Never throws.
bool dump_file_wanted() noexcept;
void write_dump_file(std::string_view name, const std::string& dump, double fragmentation) noexcept;

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::string summary(std::string_view name, const BfcArena& arena) {
  const AllocatorStats stats = arena.stats();
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "fragmentation %.2f", arena.fragmentation());
  return "Allocator " + std::string(name) + ": limit " + human_readable_bytes(stats.bytes_limit) + ", in use " +
         human_readable_bytes(stats.bytes_in_use) + ", pool " + human_readable_bytes(stats.pool_bytes) + " in " +
         std::to_string(arena.region_count()) + " region(s), largest free block " +
         human_readable_bytes(stats.largest_free_block_bytes) + ", " + buffer + ".";
}

DEVTENSOR_DEFINITION std::string advice(std::size_t rounded, std::size_t limit, std::size_t in_use,
                                        std::string_view limit_source) {
  const auto human = [](std::size_t n) { return human_readable_bytes(static_cast<std::int64_t>(n)); };
  if (rounded > limit)
    return "The request alone exceeds the limit of " + human(limit) + " (set by " + std::string(limit_source) +
           "): raise the memory fraction or the virtual device's memory_limit_mb, or reduce the batch size.";
  if (limit - in_use >= rounded)
    return "Enough memory is free (" + human(limit - in_use) +
           ") but not in one piece: this is fragmentation. Enable garbage collection "
           "(TF_ENABLE_GPU_GARBAGE_COLLECTION=true), call "
           "config::experimental::release_free_memory(device), or change the growth mode.";
  return "Tensors in use hold " + human(in_use) + " of the " + human(limit) + " limit (set by " +
         std::string(limit_source) +
         "): free tensors that are no longer needed, reduce the batch size, or raise the limit.";
}

DEVTENSOR_DEFINITION std::string occupancy(const BfcArena& arena) {
  if (arena.region_count() == 0) return "<allocator contains no memory>";
  constexpr std::size_t kResolution = 100;
  std::string rendered(kResolution, '_');
  const double total = static_cast<double>(arena.total_region_bytes());
  const auto render = [&](std::size_t offset, std::size_t size, char mark) {
    if (size == 0) return;
    auto first = static_cast<std::size_t>(static_cast<double>(offset) * kResolution / total);
    auto last = static_cast<std::size_t>(static_cast<double>(offset + size - 1) * kResolution / total);
    for (std::size_t i = first; i <= last && i < kResolution; ++i) rendered[i] = mark;
  };
  std::size_t region_offset = 0, region_size = 0;  // the region being visited, end to end
  const char* region_ptr = nullptr;
  arena.visit(
      [&](const char* ptr, std::size_t size) {
        region_offset += region_size;
        region_ptr = ptr;
        region_size = size;
      },
      [&](const BfcArena::ChunkView& c) {
        if (!c.in_use) return;
        const auto offset = region_offset + static_cast<std::size_t>(c.ptr - region_ptr);
        render(offset + c.requested_size, c.size - c.requested_size, 'x');
        render(offset, c.requested_size, '*');
      });
  return rendered;
}

DEVTENSOR_DEFINITION std::string dump(std::string_view name, const BfcArena& arena, std::size_t request_bytes,
                                      std::size_t limit, std::size_t next_region_bytes) {
  const auto human = [](std::size_t n) { return human_readable_bytes(static_cast<std::int64_t>(n)); };
  std::string out = "BFCAllocator dump for " + std::string(name) + "\n";
  struct BinInfo {
    std::size_t chunks = 0, in_use = 0, bytes = 0, bytes_in_use = 0, requested = 0;
  };
  std::vector<BinInfo> info(kNumBins);
  arena.visit([](const char*, std::size_t) {},
              [&](const BfcArena::ChunkView& c) {
                auto& b = info[static_cast<std::size_t>(bin_for_size(c.size))];
                ++b.chunks;
                b.bytes += c.size;
                if (!c.in_use) return;
                ++b.in_use;
                b.bytes_in_use += c.size;
                b.requested += c.requested_size;
              });
  for (int b = 0; b < kNumBins; ++b) {
    const auto& i = info[static_cast<std::size_t>(b)];
    out += "Bin (" + std::to_string(bin_size(b)) + "): \tTotal Chunks: " + std::to_string(i.chunks) +
           ", Chunks in use: " + std::to_string(i.in_use) + ". " + human(i.bytes) + " allocated for chunks. " +
           human(i.bytes_in_use) + " in use in bin. " + human(i.requested) + " client-requested in use in bin.\n";
  }
  if (request_bytes > 0) {
    const std::size_t rounded = rounded_bytes(request_bytes);
    const int b = bin_for_size(rounded);
    out += "Bin for " + human(rounded) + " was " + human(bin_size(b)) + ", Chunk State: \n";
    arena.visit_bin(b, [&](const BfcArena::ChunkView& c) {
      out += "  Size: " + human(c.size) + " | Requested Size: " + human(c.requested_size) +
             " | in_use: 0 | bin_num: " + std::to_string(c.bin) + "\n";
    });
  }
  std::vector<std::pair<std::size_t, std::size_t>> in_use_by_size;  // (size, count), by size
  std::size_t total_in_use = 0;
  arena.visit(
      [&](const char*, std::size_t size) { out += "Next region of size " + std::to_string(size) + "\n"; },
      [&](const BfcArena::ChunkView& c) {
        out += std::string(c.in_use ? "InUse" : "Free ") + " at " + pointer_string(c.ptr) + " of size " +
               std::to_string(c.size) + " next " + (c.next == SIZE_MAX ? std::string("-1") : std::to_string(c.next)) +
               "\n";
        if (!c.in_use) return;
        total_in_use += c.size;
        auto at = std::lower_bound(in_use_by_size.begin(), in_use_by_size.end(), std::pair{c.size, std::size_t{0}});
        if (at == in_use_by_size.end() || at->first != c.size) at = in_use_by_size.insert(at, {c.size, 0});
        ++at->second;
      });
  out += "     Summary of in-use Chunks by size: \n";
  for (auto [size, count] : in_use_by_size)
    out +=
        std::to_string(count) + " Chunks of size " + std::to_string(size) + " totalling " + human(size * count) + "\n";
  out += "Sum Total of in-use chunks: " + human(total_in_use) + "\n";
  const std::size_t total = arena.total_region_bytes();
  out += "total_region_allocated_bytes_: " + std::to_string(total) + " memory_limit_: " + std::to_string(limit) +
         " available bytes: " + std::to_string(limit - std::min(limit, total)) +
         " curr_region_allocation_bytes_: " + std::to_string(next_region_bytes) + "\n";
  out += "Stats: \n" + arena.stats().to_string();
  out += occupancy(arena) + "\n";
  return out;
}

DEVTENSOR_DEFINITION std::string failure_message(std::string_view name, std::size_t bytes, std::size_t rounded,
                                                 std::string_view op_name) {
  return "Allocator (" + std::string(name) + ") ran out of memory trying to allocate " + human_readable_size(bytes) +
         " (rounded to " + std::to_string(rounded) + ")requested by op " +
         std::string(op_name.empty() ? "<unknown>" : op_name);
}

DEVTENSOR_DEFINITION void log_failure(const std::string& message) {
  log(LogSeverity::warning, message);
  log(LogSeverity::warning,
      "If the cause is memory fragmentation maybe the environment variable "
      "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. ");
  log(LogSeverity::info, "Current allocation summary follows.");
  log(LogSeverity::info, "Current allocation summary follows.");
}

DEVTENSOR_DEFINITION bool dump_file_wanted() noexcept {
  const char* prefix = std::getenv("TF_BFC_MEMORY_DUMP");  // NOLINT(concurrency-mt-unsafe)
  return prefix != nullptr && *prefix != '\0';
}

DEVTENSOR_DEFINITION void write_dump_file(std::string_view name, const std::string& dump,
                                          double fragmentation) noexcept {
  const char* prefix = std::getenv("TF_BFC_MEMORY_DUMP");  // NOLINT(concurrency-mt-unsafe)
  if (prefix == nullptr || *prefix == '\0') return;
  try {
    const auto now =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    std::ofstream file(std::string(prefix) + "_" + std::string(name) + "." + std::to_string(now));
    file << dump << "Fragmentation: " << fragmentation << "\n";
  } catch (...) {
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::memory::bfc_report
