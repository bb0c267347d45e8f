#pragma once
/// @file tags.hpp
/// @brief Compile-time device tags: devtensor::cpu_t / gpu_t and the DeviceTag concept.
///
/// Tags are empty types with Kokkos-style nested markers. They pick kernels at compile time
/// (ops/traits.hpp); the runtime side of the same idea is the DeviceSpec's type field, and
/// device_type_name<Tag> maps one to the other.

#include <concepts>
#include <string_view>
#include <type_traits>

namespace devtensor {

/// Device type names as TensorFlow spells them.
inline constexpr std::string_view cpu_device_type = "CPU";
inline constexpr std::string_view gpu_device_type = "GPU";

/// The host CPU.
struct cpu_t {
  using device_tag = cpu_t;
  static constexpr std::string_view device_type = cpu_device_type;
  static constexpr bool is_host = true;
};

/// A CUDA GPU (real or simulated).
struct gpu_t {
  using device_tag = gpu_t;
  static constexpr std::string_view device_type = gpu_device_type;
  static constexpr bool is_host = false;
};

inline constexpr cpu_t cpu{};
inline constexpr gpu_t gpu{};

/// A compile-time device tag: a type that names itself as one through a nested `device_tag` and
/// says which runtime device type it stands for.
template <class T>
concept DeviceTag = requires {
  typename std::remove_cvref_t<T>::device_tag;
  { std::remove_cvref_t<T>::device_type } -> std::convertible_to<std::string_view>;
  { std::remove_cvref_t<T>::is_host } -> std::convertible_to<bool>;
}
&&std::same_as<typename std::remove_cvref_t<T>::device_tag, std::remove_cvref_t<T>>;

/// "CPU" or "GPU" for a tag.
template <DeviceTag Tag>
inline constexpr std::string_view device_type_name = std::remove_cvref_t<Tag>::device_type;

}  // namespace devtensor
