#pragma once
/// @file device_name_parser.hpp
/// @brief The lexer under DeviceSpec's parser: TensorFlow's name tokens (job names, device types)
/// and a cursor that consumes a device name one component at a time and says why it stopped.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace devtensor {

namespace detail {

constexpr bool is_ascii_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool is_ascii_digit(char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_name_char(char c) noexcept { return is_ascii_alpha(c) || is_ascii_digit(c) || c == '_'; }

/// A job name or a device type: an ASCII letter, then letters, digits or '_'.
constexpr bool is_name_token(std::string_view s) noexcept {
  if (s.empty() || !is_ascii_alpha(s.front())) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return true;
}

/// Consumes input one component at a time and remembers why it stopped, for the error message.
class DeviceNameParser {
 public:
  explicit DeviceNameParser(std::string_view input) : rest_(input), size_(input.size()) {}

  [[nodiscard]] bool empty() const noexcept { return rest_.empty(); }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

  bool consume(std::string_view prefix) noexcept {
    if (rest_.substr(0, prefix.size()) != prefix) return false;
    rest_.remove_prefix(prefix.size());
    return true;
  }

  /// Digits only, no sign, at most INT32_MAX (TensorFlow's fields are int32).
  bool number(int& out, std::string_view what) {
    std::size_t n = 0;
    std::int64_t value = 0;
    while (n < rest_.size() && is_ascii_digit(rest_[n])) {
      value = value * 10 + (rest_[n] - '0');
      if (value > INT32_MAX) return fail(std::string(what) + " is larger than 2147483647");
      ++n;
    }
    if (n == 0) return fail("expected digits or '*' for the " + std::string(what));
    out = static_cast<int>(value);
    rest_.remove_prefix(n);
    return true;
  }

  /// A job name or a type token; stops at the first character that cannot be part of it.
  bool name(std::string& out, std::string_view what) {
    if (rest_.empty() || !is_ascii_alpha(rest_.front()))
      return fail("a " + std::string(what) + " must start with an ASCII letter");
    std::size_t n = 1;
    while (n < rest_.size() && is_name_char(rest_[n])) ++n;
    out.assign(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
  }

  /// One field of a full name: '*' (unset) or a value (a number or a name token).
  bool field(std::optional<int>& out, std::string_view what) {
    if (consume("*")) {
      out.reset();
      return true;
    }
    int value = 0;
    if (!number(value, what)) return false;
    out = value;
    return true;
  }
  bool field(std::optional<std::string>& out, std::string_view what) {
    if (consume("*")) {
      out.reset();
      return true;
    }
    std::string value;
    if (!name(value, what)) return false;
    out = std::move(value);
    return true;
  }

  bool fail(std::string reason) {
    if (reason_.empty()) reason_ = std::move(reason) + " at offset " + std::to_string(size_ - rest_.size());
    return false;
  }

 private:
  std::string_view rest_;
  std::size_t size_;
  std::string reason_;
};

}  // namespace detail

}  // namespace devtensor
