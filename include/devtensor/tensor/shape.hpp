#pragma once
/// @file shape.hpp
/// @brief Shape: dimensions, element counts, NumPy broadcasting, printing.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "devtensor/core/error.hpp"

namespace devtensor {

class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) { validate(); }
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) { validate(); }

  [[nodiscard]] std::size_t rank() const noexcept { return dims_.size(); }
  [[nodiscard]] std::int64_t operator[](std::size_t i) const { return dims_.at(i); }
  [[nodiscard]] const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  [[nodiscard]] std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
  }
  friend bool operator==(const Shape&, const Shape&) = default;
  /// Streams "[2,3]" (any ostream; no <ostream> needed here).
  template <class Stream>
  friend auto operator<<(Stream& os, const Shape& s) -> decltype(os << std::string()) {
    return os << s.to_string();
  }

  /// "[2,3]", as TensorFlow's OOM messages print shapes.
  [[nodiscard]] std::string to_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < dims_.size(); ++i) s += (i ? "," : "") + std::to_string(dims_[i]);
    return s + "]";
  }
  /// "(2, 3)", as Python prints them ("()" for a scalar, "(3,)" for a vector).
  [[nodiscard]] std::string to_python() const {
    std::string s = "(";
    for (std::size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
    return s + (dims_.size() == 1 ? ",)" : ")");
  }

  /// Row-major strides in elements.
  [[nodiscard]] std::vector<std::int64_t> strides() const {
    std::vector<std::int64_t> s(dims_.size(), 1);
    for (std::size_t i = dims_.size(); i-- > 1;) s[i - 1] = s[i] * dims_[i];
    return s;
  }

  /// Resolves a possibly negative axis. @throws InvalidArgumentError when out of range.
  [[nodiscard]] std::size_t axis(std::int64_t a, std::string_view what = "axis") const {
    const auto r = static_cast<std::int64_t>(rank());
    if (a < -r || a >= r)
      throw InvalidArgumentError(std::string(what) + " " + std::to_string(a) +
                                 " is out of range for a tensor of shape " + to_string() +
                                 " (rank " + std::to_string(r) + "): expected [" +
                                 std::to_string(-r) + ", " + std::to_string(r) + ")");
    return static_cast<std::size_t>(a < 0 ? a + r : a);
  }

 private:
  std::vector<std::int64_t> dims_;
  void validate() const {
    for (auto d : dims_)
      if (d < 0)
        throw InvalidArgumentError("Dimension " + std::to_string(d) +
                                   " must be >= 0 in shape " + to_string());
  }
};

/// NumPy broadcasting of two shapes. @throws InvalidArgumentError with both shapes.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const std::int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    if (da != db && da != 1 && db != 1)
      throw InvalidArgumentError("Incompatible shapes: " + a.to_string() + " vs. " + b.to_string() +
                                 " [Op:" + std::string(op) + "]");
    out[i] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace devtensor
