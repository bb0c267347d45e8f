#pragma once
/// @file policies.hpp
/// @brief Region policies of the BFC allocator: how large the first region
/// is. Later regions follow the same Extend rule in both (double, capped by the limit).

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace devtensor::memory {

inline constexpr std::size_t kMinAllocationSize = 256;
inline constexpr std::size_t kGrowthInitialRegion = std::size_t{2} << 20;  // 2 MiB

/// n rounded up to a multiple of 256 (256 for n <= 256); 0 when that would overflow.
constexpr std::size_t rounded_bytes(std::size_t n) noexcept {
  if (n > SIZE_MAX - (kMinAllocationSize - 1)) return 0;
  return std::max(kMinAllocationSize, (n + kMinAllocationSize - 1) / kMinAllocationSize * kMinAllocationSize);
}

/// TensorFlow's default: the first region is the whole limit (in effect, preallocation).
struct Preallocate {
  static constexpr std::string_view name = "preallocate";
  static constexpr std::size_t initial_region_bytes(std::size_t limit) noexcept { return rounded_bytes(limit); }
};

/// allow_growth: start at min(limit, 2 MiB) and double.
struct Growth {
  static constexpr std::string_view name = "growth";
  static constexpr std::size_t initial_region_bytes(std::size_t limit) noexcept {
    return rounded_bytes(std::min(limit, kGrowthInitialRegion));
  }
};

template <class P>
concept RegionPolicy = requires(std::size_t n) {
  { P::name } -> std::convertible_to<std::string_view>;
  { P::initial_region_bytes(n) } -> std::same_as<std::size_t>;
};

}  // namespace devtensor::memory
