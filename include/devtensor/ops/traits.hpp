#pragma once
/// @file traits.hpp
/// @brief Kernel tables by concepts: has_kernel_v<Op, Tag, T> and supported_device_types<Op, T>().
///
/// Each op is a type that declares, per device tag and element type, whether it has a kernel:
///
///     struct MyOp {
///       static constexpr std::string_view name = "MyOp";
///       template <devtensor::DeviceTag Tag, class T>
///       static constexpr bool has_kernel = std::same_as<Tag, devtensor::cpu_t>;
///     };
///
/// The table is the op's declaration, the same in every translation unit. Whether this program
/// contains a GPU body is answered at run time by the kernel registry (ops/registry.hpp); the
/// placer uses both.

#include <array>
#include <concepts>
#include <cstddef>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/device/tags.hpp"

namespace devtensor {

/// An op type: a name and a kernel table.
template <class Op>
concept OpType = requires {
  { Op::name } -> std::convertible_to<std::string_view>;
};

namespace kernel_detail {
template <class Op, class Tag, class T>
concept declares_kernel_table = requires {
  { Op::template has_kernel<Tag, T> } -> std::convertible_to<bool>;
};
}  // namespace kernel_detail

/// True when `Op` declares a kernel for device tag `Tag` and element type `T`. An op without a
/// kernel table has no kernels.
template <class Op, DeviceTag Tag, class T>
inline constexpr bool has_kernel_v = [] {
  if constexpr (kernel_detail::declares_kernel_table<Op, Tag, T>)
    return static_cast<bool>(Op::template has_kernel<Tag, T>);
  else
    return false;
}();

/// The same question as a concept, for constraining kernel entry points.
template <class Op, class Tag, class T>
concept HasKernel = DeviceTag<Tag> && has_kernel_v<Op, Tag, T>;

/// The device types with a kernel for `Op` and `T`, in TensorFlow's preference order (GPU, CPU).
/// The count comes first, so the result is usable in constant expressions.
struct SupportedDeviceTypes {
  std::array<std::string_view, 2> types{};
  std::size_t count = 0;

  [[nodiscard]] constexpr bool contains(std::string_view type) const noexcept {
    for (std::size_t i = 0; i < count; ++i)
      if (types[i] == type) return true;
    return false;
  }
  [[nodiscard]] constexpr const std::string_view* begin() const noexcept { return types.data(); }
  [[nodiscard]] constexpr const std::string_view* end() const noexcept { return types.data() + count; }
  [[nodiscard]] constexpr std::size_t size() const noexcept { return count; }
};

template <class Op, class T>
constexpr SupportedDeviceTypes supported_device_types() noexcept {
  SupportedDeviceTypes result;
  if constexpr (has_kernel_v<Op, gpu_t, T>) result.types[result.count++] = gpu_device_type;
  if constexpr (has_kernel_v<Op, cpu_t, T>) result.types[result.count++] = cpu_device_type;
  return result;
}

/// The tag whose kernel an explicit-tag call `op(tag, ...)` asks for: the requested tag when the op
/// declares a kernel for it, else the CPU (a static fallback). Under DEVTENSOR_STRICT_PLACEMENT the fallback is
/// a compile error instead (see require_kernel).
template <class Op, DeviceTag Tag, class T>
using kernel_tag_t = std::conditional_t<has_kernel_v<Op, Tag, T>, Tag, cpu_t>;

/// Asserts at compile time that an explicit-tag call can run where it was asked to, when strict
/// placement is on. Ops call this from their tagged entry points.
template <class Op, DeviceTag Tag, class T>
constexpr void require_kernel() noexcept {
#if defined(DEVTENSOR_STRICT_PLACEMENT)
  static_assert(has_kernel_v<Op, Tag, T>,
                "devtensor strict placement: this op declares no kernel for the requested device "
                "tag (call the op without a tag so the placer may fall back to the CPU, or run it "
                "under a DeviceScope)");
#endif
  static_assert(has_kernel_v<Op, Tag, T> || has_kernel_v<Op, cpu_t, T>,
                "devtensor: this op has no kernel for this element type on any device");
}

}  // namespace devtensor
