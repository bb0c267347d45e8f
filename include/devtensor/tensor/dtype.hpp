#pragma once
/// @file dtype.hpp
/// @brief Element types: float, double, int32_t, int64_t, bool, float16, bfloat16, with
/// TensorFlow's names.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "devtensor/core/half.hpp"

namespace devtensor {

/// The element types a Tensor may hold.
template <class T>
concept Element = std::same_as<T, float> || std::same_as<T, double> || std::same_as<T, std::int32_t> ||
    std::same_as<T, std::int64_t> || std::same_as<T, bool> || is_sixteen_bit_float_v<T>;

template <class T>
concept Numeric = Element<T> && !std::same_as<T, bool>;

/// The types devtensor differentiates and trains in: float and double. (float16 and bfloat16
/// compute, Note [Sixteen-bit floats]; gradients through them are not recorded yet.)
template <class T>
concept Floating = std::same_as<T, float> || std::same_as<T, double>;

/// Any floating element type: float, double, float16, bfloat16.
template <class T>
concept FloatingElement = Element<T> && is_floating_element_v<T>;

/// Python's dtype name: float32, float64, int32, int64, bool.
template <Element T>
constexpr std::string_view dtype_name() noexcept {
  if constexpr (std::same_as<T, float>)
    return "float32";
  else if constexpr (std::same_as<T, double>)
    return "float64";
  else if constexpr (std::same_as<T, std::int32_t>)
    return "int32";
  else if constexpr (std::same_as<T, std::int64_t>)
    return "int64";
  else if constexpr (std::same_as<T, float16>)
    return "float16";
  else if constexpr (std::same_as<T, bfloat16>)
    return "bfloat16";
  else
    return "bool";
}

/// TensorFlow's C++ DataTypeString, as OOM messages print it: float, double, int32, int64, bool,
/// half, bfloat16.
template <Element T>
constexpr std::string_view dtype_string() noexcept {
  if constexpr (std::same_as<T, float>)
    return "float";
  else if constexpr (std::same_as<T, double>)
    return "double";
  else if constexpr (std::same_as<T, float16>)
    return "half";
  else
    return dtype_name<T>();
}

/// "T in [DT_FLOAT]" style names for kernel listings.
template <Element T>
constexpr std::string_view dtype_enum_name() noexcept {
  if constexpr (std::same_as<T, float>)
    return "DT_FLOAT";
  else if constexpr (std::same_as<T, double>)
    return "DT_DOUBLE";
  else if constexpr (std::same_as<T, std::int32_t>)
    return "DT_INT32";
  else if constexpr (std::same_as<T, std::int64_t>)
    return "DT_INT64";
  else if constexpr (std::same_as<T, float16>)
    return "DT_HALF";
  else if constexpr (std::same_as<T, bfloat16>)
    return "DT_BFLOAT16";
  else
    return "DT_BOOL";
}

/// The element type as C++ spells it, for messages that show code: float, std::int32_t, ...
template <Element T>
constexpr std::string_view cpp_type_name() noexcept {
  if constexpr (std::same_as<T, std::int32_t>)
    return "std::int32_t";
  else if constexpr (std::same_as<T, std::int64_t>)
    return "std::int64_t";
  else if constexpr (std::same_as<T, float16>)
    return "devtensor::float16";
  else if constexpr (std::same_as<T, bfloat16>)
    return "devtensor::bfloat16";
  else
    return dtype_string<T>();
}

/// The element type as a value, for type-erased kernels (TensorFlow's DataType enum).
enum class DType : unsigned char { DT_FLOAT, DT_DOUBLE, DT_INT32, DT_INT64, DT_BOOL, DT_HALF, DT_BFLOAT16 };

template <Element T>
constexpr DType dtype_enum() noexcept {
  if constexpr (std::same_as<T, float>)
    return DType::DT_FLOAT;
  else if constexpr (std::same_as<T, double>)
    return DType::DT_DOUBLE;
  else if constexpr (std::same_as<T, std::int32_t>)
    return DType::DT_INT32;
  else if constexpr (std::same_as<T, std::int64_t>)
    return DType::DT_INT64;
  else if constexpr (std::same_as<T, float16>)
    return DType::DT_HALF;
  else if constexpr (std::same_as<T, bfloat16>)
    return DType::DT_BFLOAT16;
  else
    return DType::DT_BOOL;
}

/// Calls `f.template operator()<T>()` with the floating element type `t` names (float for a
/// non-floating `t`: callers hold floating tensors), for type-erased code that computes with them.
template <class F>
decltype(auto) with_floating_type(DType t, F&& f) {
  switch (t) {
    case DType::DT_DOUBLE: return f.template operator()<double>();
    case DType::DT_HALF: return f.template operator()<float16>();
    case DType::DT_BFLOAT16: return f.template operator()<bfloat16>();
    default: return f.template operator()<float>();
  }
}

/// The same facts for a DType known only at run time (type-erased graphs and feeds).
constexpr std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::DT_DOUBLE:
    case DType::DT_INT64: return 8;
    case DType::DT_BOOL: return 1;
    case DType::DT_HALF:
    case DType::DT_BFLOAT16: return 2;
    default: return 4;
  }
}
constexpr std::string_view dtype_string(DType t) noexcept {
  switch (t) {
    case DType::DT_FLOAT: return "float";
    case DType::DT_DOUBLE: return "double";
    case DType::DT_INT32: return "int32";
    case DType::DT_INT64: return "int64";
    case DType::DT_HALF: return "half";
    case DType::DT_BFLOAT16: return "bfloat16";
    default: return "bool";
  }
}
constexpr std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::DT_FLOAT: return "float32";
    case DType::DT_DOUBLE: return "float64";
    case DType::DT_HALF: return "float16";
    default: return dtype_string(t);
  }
}

template <class T, class... Ts>
inline constexpr bool is_one_of_v = (std::same_as<T, Ts> || ...);

}  // namespace devtensor
