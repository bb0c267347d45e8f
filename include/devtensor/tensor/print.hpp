#pragma once
/// @file print.hpp
/// @brief Printing tensors as TensorFlow does: tf.Tensor(<numpy-style values>, shape=(2, 2),
/// dtype=float32), with numpy's layout (right-aligned columns, "22." for whole floats).

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace detail {

template <class T>
std::string format_element(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.8g", static_cast<double>(v));
    std::string s = buffer;
    if (s.find_first_of(".en") == std::string::npos) s += ".";  // numpy prints 22. for 22.0
    return s;
  } else {
    return std::to_string(v);
  }
}

template <class T>
void format_nested(std::ostringstream& os, const std::vector<std::string>& cells, const Shape& shape,
                   std::size_t axis, std::size_t& next, std::size_t width) {
  os << '[';
  const auto n = shape[axis];
  for (std::int64_t i = 0; i < n; ++i) {
    if (axis + 1 == shape.rank()) {
      if (i) os << ' ';
      const auto& c = cells[next++];
      os << std::string(width - c.size(), ' ') << c;
    } else {
      if (i) os << std::string(shape.rank() - axis - 1, '\n') << std::string(axis + 1, ' ');
      format_nested<T>(os, cells, shape, axis + 1, next, width);
    }
  }
  os << ']';
}

}  // namespace detail

/// numpy's str() of the values: "[[22. 28.]\n [49. 64.]]", "3.", "[ True False]".
template <Element T>
std::string format_values(const Tensor<T>& t) {
  const auto values = t.to_vector();
  std::vector<std::string> cells;
  std::size_t width = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    cells.push_back(detail::format_element<T>(values[i]));
    width = std::max(width, cells.back().size());
  }
  if (t.rank() == 0) return cells.empty() ? "" : cells[0];
  std::ostringstream os;
  std::size_t next = 0;
  detail::format_nested<T>(os, cells, t.shape(), 0, next, width);
  return os.str();
}

/// tf.Tensor(<values>, shape=(...), dtype=...); a newline follows "tf.Tensor(" for rank >= 2.
template <Element T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  if (!t.defined()) return os << "tf.Tensor(<empty>)";
  return os << "tf.Tensor(" << (t.rank() >= 2 ? "\n" : "") << format_values(t)
            << ", shape=" << t.shape().to_python() << ", dtype=" << t.dtype() << ")";
}

}  // namespace devtensor
