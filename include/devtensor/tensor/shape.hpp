#pragma once
/// @file shape.hpp
/// @brief Shape: dimensions, element counts, NumPy broadcasting, printing; unknown dimensions in
/// graphs.

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"

namespace devtensor {

/// A dimension not known while a graph is built (TensorFlow's None): only symbolic tensors have
/// one (Shape::partial); every tensor with values has a fully defined shape.
inline constexpr std::int64_t kUnknownDim = -1;

/// Dimensions of a tensor. Every Shape is valid: no negative dimension, and the product of its
/// nonzero dimensions fits in int64, so its element count and every row-major stride do too.
/// (Stricter than TensorFlow, which checks the running product in order and so accepts
/// [0, 2^40, 2^40] but not [2^40, 2^40, 0]; here neither order is accepted.) The one exception is
/// a partial shape (Shape::partial), the static shape of a symbolic tensor, whose unknown
/// dimensions are kUnknownDim.
class Shape {
 public:
  Shape() = default;  // a scalar
  // Copies touch the vector only for the rare shape beyond kInlineRank: an op's dispatch copies
  // shapes, and a call to vector's copy constructor, even of an empty one, is not inlined.
  Shape(const Shape& other) : rank_(other.rank_), inline_(other.inline_) {
    if (other.rank_ > kInlineRank) heap_ = other.heap_;
  }
  Shape& operator=(const Shape& other) {
    rank_ = other.rank_;
    inline_ = other.inline_;
    if (other.rank_ > kInlineRank)
      heap_ = other.heap_;
    else
      heap_.clear();
    return *this;
  }
  Shape(Shape&&) noexcept = default;
  Shape& operator=(Shape&&) noexcept = default;
  ~Shape() = default;
  /// @throws InvalidArgumentError for a negative dimension or too many elements.
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size(), {}); }
  explicit Shape(const std::vector<std::int64_t>& dims) { assign(dims.data(), dims.size(), {}); }
  explicit Shape(std::span<const std::int64_t> dims) { assign(dims.data(), dims.size(), {}); }
  /// An op's output shape: errors end with " [Op:<op>]".
  Shape(std::span<const std::int64_t> dims, std::string_view op) { assign(dims.data(), dims.size(), op); }

  /// A shape whose dimensions may be kUnknownDim (a graph's static shape, TensorFlow's
  /// TensorShape([None, 3])). @throws InvalidArgumentError for another negative dimension.
  [[nodiscard]] static Shape partial(std::span<const std::int64_t> dims, std::string_view op = {}) {
    Shape s;
    s.assign(dims.data(), dims.size(), op, /*unknown_allowed=*/true);
    return s;
  }
  [[nodiscard]] static Shape partial(std::initializer_list<std::int64_t> dims) {
    return partial(std::span<const std::int64_t>(dims.begin(), dims.size()));
  }
  /// No unknown dimension.
  [[nodiscard]] bool is_fully_defined() const noexcept {
    for (auto d : dims())
      if (d < 0) return false;
    return true;
  }
  /// TensorFlow's is_compatible_with: the same rank, and every pair of dimensions equal or one of
  /// them unknown.
  [[nodiscard]] bool is_compatible_with(const Shape& other) const noexcept {
    if (rank_ != other.rank_) return false;
    for (std::size_t i = 0; i < rank_; ++i) {
      const auto a = data()[i], b = other.data()[i];
      if (a != b && a >= 0 && b >= 0) return false;
    }
    return true;
  }

  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::int64_t operator[](std::size_t i) const {
    if (i >= rank_) [[unlikely]]
      throw_bad_index(i);
    return data()[i];
  }
  /// The dimensions (valid while the Shape lives).
  [[nodiscard]] std::span<const std::int64_t> dims() const noexcept { return {data(), rank_}; }
  [[nodiscard]] std::vector<std::int64_t> dims_vector() const { return {data(), data() + rank_}; }
  /// The element count; -1 for a partial shape.
  [[nodiscard]] std::int64_t num_elements() const noexcept {
    std::int64_t n = 1;
    for (auto d : dims()) {
      if (d < 0) [[unlikely]]
        return -1;
      n *= d;
    }
    return n;
  }
  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    if (a.rank_ != b.rank_) return false;
    for (std::size_t i = 0; i < a.rank_; ++i)
      if (a.data()[i] != b.data()[i]) return false;
    return true;
  }
  /// Streams "[2,3]" (any ostream; no <ostream> needed here).
  template <class Stream>
  friend auto operator<<(Stream& os, const Shape& s) -> decltype(os << std::string()) {
    return os << s.to_string();
  }

  /// "[2,3]", as TensorFlow's OOM messages print shapes ("[?,3]" with an unknown dimension).
  [[nodiscard]] std::string to_string() const;
  /// "(2, 3)", as Python prints them ("()" for a scalar, "(3,)" for a vector, "(None, 3)").
  [[nodiscard]] std::string to_python() const;

  /// Row-major strides in elements.
  [[nodiscard]] std::vector<std::int64_t> strides() const {
    std::vector<std::int64_t> st(rank_, 1);
    for (std::size_t i = rank_; i-- > 1;) st[i - 1] = st[i] * data()[i];
    return st;
  }

  /// Resolves a possibly negative axis. @throws InvalidArgumentError when out of range.
  [[nodiscard]] std::size_t axis(std::int64_t a, std::string_view what = "axis") const {
    const auto r = static_cast<std::int64_t>(rank());
    if (a < -r || a >= r) [[unlikely]]
      throw_bad_axis(a, what);
    return static_cast<std::size_t>(a < 0 ? a + r : a);
  }

 private:
  // Shapes are copied on every op: up to kInlineRank dimensions live inside the object, so
  // copying one never allocates.
  static constexpr std::size_t kInlineRank = 6;
  std::size_t rank_ = 0;
  std::array<std::int64_t, kInlineRank> inline_{};
  std::vector<std::int64_t> heap_;  // only for rank > kInlineRank

  [[nodiscard]] const std::int64_t* data() const noexcept {
    return rank_ <= kInlineRank ? inline_.data() : heap_.data();
  }

  void assign(const std::int64_t* dims, std::size_t rank, std::string_view op, bool unknown_allowed = false) {
    rank_ = rank;
    if (rank <= kInlineRank)
      std::copy(dims, dims + rank, inline_.begin());
    else
      heap_.assign(dims, dims + rank);
    std::int64_t product = 1;  // of the nonzero dimensions
    bool overflow = false;
    for (std::size_t i = 0; i < rank; ++i) {
      if (dims[i] < 0) [[unlikely]] {
        if (unknown_allowed && dims[i] == kUnknownDim) continue;
        throw_invalid(dims[i], op);
      }
      if (dims[i] != 0) overflow = overflow || __builtin_mul_overflow(product, dims[i], &product);
    }
    if (overflow) [[unlikely]]
      throw_invalid(0, op);
  }

  // The error paths, out of line (compiled once in compiled mode): the inline paths stay small.
  [[noreturn]] void throw_bad_index(std::size_t i) const;
  [[noreturn]] void throw_bad_axis(std::int64_t a, std::string_view what) const;
  /// A negative dimension (`dim` < 0), else too many elements.
  [[noreturn]] void throw_invalid(std::int64_t dim, std::string_view op) const;
};

/// NumPy broadcasting's failure. @throws InvalidArgumentError with both shapes.
[[noreturn]] void throw_incompatible_shapes(const Shape& a, const Shape& b, std::string_view op);

/// NumPy broadcasting of two shapes. @throws InvalidArgumentError with both shapes.
Shape broadcast_different_shapes(const Shape& a, const Shape& b, std::string_view op);
inline Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  if (a == b) return a;  // the common case, inline; the rest is compiled once in compiled mode
  return broadcast_different_shapes(a, b, op);
}

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::string Shape::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < rank_; ++i) s += (i ? "," : "") + (data()[i] < 0 ? "?" : std::to_string(data()[i]));
  return s + "]";
}

DEVTENSOR_DEFINITION std::string Shape::to_python() const {
  std::string s = "(";
  for (std::size_t i = 0; i < rank_; ++i) s += (i ? ", " : "") + (data()[i] < 0 ? "None" : std::to_string(data()[i]));
  return s + (rank_ == 1 ? ",)" : ")");
}

DEVTENSOR_DEFINITION void Shape::throw_bad_index(std::size_t i) const {
  throw InvalidArgumentError("dimension " + std::to_string(i) + " of a rank-" + std::to_string(rank_) + " shape");
}

DEVTENSOR_DEFINITION void Shape::throw_bad_axis(std::int64_t a, std::string_view what) const {
  const auto r = static_cast<std::int64_t>(rank());
  throw InvalidArgumentError(std::string(what) + " " + std::to_string(a) + " is out of range for a tensor of shape " +
                             to_string() + " (rank " + std::to_string(r) + "): expected [" + std::to_string(-r) + ", " +
                             std::to_string(r) + ")");
}

DEVTENSOR_DEFINITION void Shape::throw_invalid(std::int64_t dim, std::string_view op) const {
  if (dim < 0)
    throw InvalidArgumentError("Dimension " + std::to_string(dim) + " must be >= 0 in shape " + to_string() +
                               op_suffix(op));
  throw InvalidArgumentError("Shape " + to_string() + " would have more than 2**63 - 1 elements" + op_suffix(op));
}

DEVTENSOR_DEFINITION Shape broadcast_different_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::array<std::int64_t, 16> small{};
  std::vector<std::int64_t> large(rank > small.size() ? rank : 0);
  std::int64_t* out = rank > small.size() ? large.data() : small.data();
  bool partial = false;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const std::int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    if (da < 0 || db < 0) {  // unknown (a graph's static shape): TensorFlow's inference rules
      const std::int64_t known = da < 0 ? db : da;
      out[i] = known > 1 ? known : kUnknownDim;  // unknown with 1 or unknown stays unknown
      partial = partial || out[i] < 0;
      continue;
    }
    if (da != db && da != 1 && db != 1) [[unlikely]]
      throw_incompatible_shapes(a, b, op);
    out[i] = da == 1 ? db : da;
  }
  const std::span<const std::int64_t> dims(out, rank);
  return partial ? Shape::partial(dims, op) : Shape(dims, op);
}

DEVTENSOR_DEFINITION void throw_incompatible_shapes(const Shape& a, const Shape& b, std::string_view op) {
  throw InvalidArgumentError("Incompatible shapes: " + a.to_string() + " vs. " + b.to_string() +
                             " [Op:" + std::string(op) + "]");
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
