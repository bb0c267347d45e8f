#pragma once
/// @file checked.hpp
/// @brief Checked arithmetic for sizes, offsets and element counts.
///
/// Every dimension, offset, element count and byte count devtensor derives from user input goes
/// through these helpers, so an overflow becomes an InvalidArgumentError that names the op and the
/// values before anything is allocated or copied (a wrapped size would allocate too little and
/// let a kernel read or write out of bounds). They cost one overflow-flag branch and never build a
/// string unless they throw, so they are used per op, never per element.

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"

namespace devtensor {

/// A number as error messages print it: the shortest form that reads back to the same value
/// ("0.1", "1e+300", "nan", "-inf"), where std::to_string would print 300 digits or "0.000000".
template <class T>
std::string number_string(T value) {
  char buffer[64];
  if constexpr (std::is_class_v<T>) {  // float16, bfloat16: exact as float
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value));
    return std::string(buffer, result.ptr);
  } else {
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
  }
}

/// " [Op:Name]", or nothing when the op is unknown.
std::string op_suffix(std::string_view op);

[[noreturn]] void throw_size_overflow(std::string_view verb, std::int64_t a, std::int64_t b, std::string_view what,
                                      std::string_view op);

/// a + b, or InvalidArgumentError naming `what` ("the padded size of dimension", ...) and `op`.
[[nodiscard]] inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what,
                                              std::string_view op = {}) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    throw_size_overflow("adding", a, b, what, op);
  return r;
}

/// a * b, or InvalidArgumentError naming `what` and `op`.
[[nodiscard]] inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what,
                                              std::string_view op = {}) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
    throw_size_overflow("multiplying", a, b, what, op);
  return r;
}

[[noreturn]] void throw_byte_count_overflow(std::int64_t elements, std::size_t element_size, std::string_view op);

/// The bytes of `elements` elements of `element_size` bytes, as handed to an allocator. Every
/// tensor allocation passes here: the message is built out of line so this stays inlined.
[[nodiscard]] inline std::size_t checked_byte_count(std::int64_t elements, std::size_t element_size,
                                                    std::string_view op = {}) {
  std::size_t bytes = 0;
  if (elements < 0 || __builtin_mul_overflow(static_cast<std::size_t>(elements), element_size, &bytes) ||
      bytes > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())) [[unlikely]]
    throw_byte_count_overflow(elements, element_size, op);
  return bytes;
}

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::string op_suffix(std::string_view op) {
  return op.empty() ? std::string() : " [Op:" + std::string(op) + "]";
}

DEVTENSOR_DEFINITION void throw_size_overflow(std::string_view verb, std::int64_t a, std::int64_t b,
                                              std::string_view what, std::string_view op) {
  throw InvalidArgumentError("Encountered overflow when " + std::string(verb) + " " + std::to_string(a) + " and " +
                             std::to_string(b) + " computing " + std::string(what) +
                             ": the result does not fit in int64 (max " +
                             std::to_string(std::numeric_limits<std::int64_t>::max()) + ")" + op_suffix(op));
}

DEVTENSOR_DEFINITION void throw_byte_count_overflow(std::int64_t elements, std::size_t element_size,
                                                    std::string_view op) {
  throw InvalidArgumentError("A tensor of " + std::to_string(elements) + " elements of " +
                             std::to_string(element_size) + " bytes has a byte size that does not fit in int64" +
                             op_suffix(op));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
