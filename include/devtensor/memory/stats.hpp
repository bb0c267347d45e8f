#pragma once
/// @file stats.hpp
/// @brief TensorFlow's AllocatorStats and HumanReadableNumBytes.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace devtensor::memory {

/// What an allocator reports. Byte counts are chunk sizes (256-byte rounding and split slack
/// included), as TensorFlow counts them.
struct AllocatorStats {
  std::int64_t num_allocs = 0;
  std::int64_t bytes_in_use = 0;
  std::int64_t peak_bytes_in_use = 0;
  std::int64_t largest_alloc_size = 0;
  std::int64_t bytes_limit = 0;
  std::int64_t bytes_reserved = 0;  // used by other backends; always 0 here
  std::int64_t peak_bytes_reserved = 0;
  std::int64_t bytes_reservable_limit = 0;
  std::int64_t largest_free_block_bytes = 0;
  std::int64_t pool_bytes = 0;  // bytes obtained from the sub-allocator
  std::int64_t peak_pool_bytes = 0;

  /// TensorFlow's AllocatorStats::DebugString layout.
  [[nodiscard]] std::string to_string() const {
    char buffer[512];
    std::snprintf(buffer, sizeof buffer,
                  "Limit:            %20lld\nInUse:            %20lld\nMaxInUse:         %20lld\n"
                  "NumAllocs:        %20lld\nMaxAllocSize:     %20lld\nReserved:         %20lld\n"
                  "PeakReserved:     %20lld\nLargestFreeBlock: %20lld\n",
                  static_cast<long long>(bytes_limit), static_cast<long long>(bytes_in_use),
                  static_cast<long long>(peak_bytes_in_use), static_cast<long long>(num_allocs),
                  static_cast<long long>(largest_alloc_size), static_cast<long long>(bytes_reserved),
                  static_cast<long long>(peak_bytes_reserved), static_cast<long long>(largest_free_block_bytes));
    return buffer;
  }
};

/// TensorFlow's HumanReadableNumBytes: "512B", "1.5KiB", "2.00MiB", "-3.00GiB".
inline std::string human_readable_bytes(std::int64_t n) {
  if (n == INT64_MIN) return "-8E";
  const char* sign = n < 0 ? "-" : "";
  if (n < 0) n = -n;
  char buffer[32];
  if (n < 1024) {
    std::snprintf(buffer, sizeof buffer, "%s%lldB", sign, static_cast<long long>(n));
    return buffer;
  }
  static constexpr char units[] = "KMGTPE";
  const char* unit = units;
  while (n >= std::int64_t{1024} * 1024) {
    n /= 1024;
    ++unit;
  }
  std::snprintf(buffer, sizeof buffer, *unit == 'K' ? "%s%.1f%ciB" : "%s%.2f%ciB", sign,
                static_cast<double>(n) / 1024.0, *unit);
  return buffer;
}

/// The same for an unsigned byte count (sizes beyond INT64_MAX print as plain bytes).
inline std::string human_readable_size(std::size_t n) {
  if (n > static_cast<std::size_t>(INT64_MAX)) return std::to_string(n) + "B";
  return human_readable_bytes(static_cast<std::int64_t>(n));
}

}  // namespace devtensor::memory
