#pragma once
/// @file print.hpp
/// @brief Printing tensors as TensorFlow does: `tf.Tensor(<values>, shape=(2, 2), dtype=float32)`,
/// where <values> is NumPy's str() of the array (numpy/core/arrayprint.py, default options).
///
/// Note [NumPy's printing rules]
/// - Floats: each value is the shortest text that reads back to the same value (std::to_chars),
///   with at most `precision` (8) fraction digits. Scientific notation when the largest finite
///   nonzero magnitude is >= 1e8, the smallest is < 1e-4, or their ratio exceeds 1000; then every
///   mantissa gets the same number of fraction digits and the exponents the same width
///   (`[1.e-05 1.e+00]`). Otherwise positional: integer parts right-aligned, fractions
///   left-aligned and padded with spaces (`[[ 1.5 -2. ] [ 3.  40. ]]`). nan and inf take the same
///   width. Integers are right-aligned; booleans print as ` True`/`False`.
/// - A scalar prints as NumPy prints a scalar: the shortest round-trip text, positional with one
///   zero after the point for 1e-4 <= |x| < 1e16 (`3.0`, `0.1`), else scientific (`1e-05`).
/// - More than `threshold` (1000) elements: each axis longer than 2 * `edgeitems` (3) shows its
///   first and last three entries around `...`, and the widths come from the shown values only.
/// - float16 is a float as above whose shortest text is the shortest that reads back to the same
///   float16 (`0.1`, `6.55e+04`). bfloat16 is not NumPy's: ml_dtypes prints each element with C's
///   %g and NumPy pads nothing (`[0.100098 1.5 -3]`).
/// - Lines wrap before 75 columns; rows are separated by one newline per remaining axis.
/// - An array without elements prints `[]`; TensorFlow puts a newline before multi-line text.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

/// NumPy's print options (numpy.set_printoptions) that devtensor honours, with NumPy's defaults.
struct PrintOptions {
  int precision = 8;              // most fraction digits of a float in an array
  std::int64_t threshold = 1000;  // more elements than this are summarised
  std::int64_t edgeitems = 3;     // entries shown at each end of a summarised axis
  std::size_t linewidth = 75;     // characters per line
};

/// NumPy's str() of the values: "[[22. 28.]\n [49. 64.]]", "3.0", "[ True False]", "[]".
/// (Compiled mode: instantiated for every element type in src/devtensor.cpp.)
template <Element T>
std::string format_values(const Tensor<T>& t, const PrintOptions& options = {});

#if DEVTENSOR_HEADER_DEFINITIONS
namespace detail::numpy_print {

/// A float's text split as Dragon4 (NumPy's printer) produces it: [-]int "." frac ["e" exp].
struct FloatParts {
  std::string int_part;  // with the sign
  std::string frac;      // may be empty
  std::string exp;       // scientific only: sign and digits, e.g. "-05"
};

template <class F>
std::string to_chars_string(F v, std::chars_format format) {
  char buffer[512];  // fixed notation of a double needs at most 310 digits
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v, format);
  return std::string(buffer, result.ptr);
}
template <class F>
std::string to_chars_string(F v, std::chars_format format, int precision) {
  char buffer[512];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, v, format, precision);
  return std::string(buffer, result.ptr);
}

/// The shortest scientific text that reads back to the same 16-bit value (NumPy's unique
/// Dragon4 for float16; std::to_chars knows only float, double and long double).
template <class F>
requires is_sixteen_bit_float_v<F> std::string to_chars_string(F v, std::chars_format format) {
  const auto wide = static_cast<float>(v);
  if (format != std::chars_format::scientific) return to_chars_string(wide, format);
  for (int digits = 0;; ++digits) {
    std::string text = to_chars_string(wide, format, digits);
    float back = 0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    if (F(back).bits() == v.bits() || digits >= 9) return text;
  }
}
template <class F>
requires is_sixteen_bit_float_v<F> std::string to_chars_string(F v, std::chars_format format, int precision) {
  return to_chars_string(static_cast<float>(v), format, precision);
}

// The classification of every floating element type, the 16-bit ones through double (exact).
template <class F>
bool is_nan(F v) {
  return std::isnan(static_cast<double>(v));
}
template <class F>
bool is_inf(F v) {
  return std::isinf(static_cast<double>(v));
}
template <class F>
bool is_finite(F v) {
  return std::isfinite(static_cast<double>(v));
}

inline void trim_trailing_zeros(std::string& digits) {
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
}

inline FloatParts split_float_text(const std::string& text) {
  FloatParts parts;
  const auto e = text.find('e');
  const std::string mantissa = text.substr(0, e);
  if (e != std::string::npos) parts.exp = text.substr(e + 1);
  const auto dot = mantissa.find('.');
  parts.int_part = mantissa.substr(0, dot);
  if (dot != std::string::npos) parts.frac = mantissa.substr(dot + 1);
  return parts;
}

/// The shortest round-trip digits of `v` (finite) in positional or scientific form, rounded to
/// at most `max_frac` fraction digits when the shortest form has more (Dragon4 in "unique" mode
/// with a cutoff). A negative `max_frac` means no cutoff.
template <class F>
FloatParts float_parts(F v, bool scientific, int max_frac) {
  FloatParts parts = split_float_text(to_chars_string(v, std::chars_format::scientific));
  if (!scientific) {
    // Lay the shortest digits out positionally, as Dragon4 does: 123456789.f is "123456790",
    // where to_chars' fixed form would give the exact "123456792".
    const std::string digits = parts.int_part.substr(parts.int_part[0] == '-' ? 1 : 0) + parts.frac;
    const int exponent = std::stoi(parts.exp);
    const std::string sign = parts.int_part[0] == '-' ? "-" : "";
    const auto int_digits = static_cast<std::size_t>(std::max(exponent + 1, 0));
    if (exponent >= 0) {
      std::string padded = digits;
      if (padded.size() < int_digits) padded.append(int_digits - padded.size(), '0');
      parts.int_part = sign + padded.substr(0, int_digits);
      parts.frac = padded.substr(int_digits);
    } else {
      parts.int_part = sign + "0";
      parts.frac = std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    }
    parts.exp.clear();
  }
  if (max_frac >= 0 && parts.frac.size() > static_cast<std::size_t>(max_frac)) {
    const auto format = scientific ? std::chars_format::scientific : std::chars_format::fixed;
    parts = split_float_text(to_chars_string(v, format, max_frac));  // correctly rounded at the cutoff
    trim_trailing_zeros(parts.frac);
  }
  return parts;
}

/// ml_dtypes' str() of a bfloat16, which NumPy prints each element of an array with, unpadded:
/// C's %g (six significant digits): "0.100098", "-3", "1.00136e-05", "nan", "-inf".
inline std::string bfloat16_text(bfloat16 v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", static_cast<double>(v));
  return buffer;
}

/// NumPy's str() of a float scalar: "3.0", "0.1", "-0.0", "1e-05", "1.5e+16", "nan", "-inf".
template <class F>
std::string float_scalar(F v) {
  if (is_nan(v)) return "nan";
  if (is_inf(v)) return v > F(0) ? "inf" : "-inf";
  const auto magnitude = std::fabs(static_cast<double>(v));
  if (magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
    const auto parts = float_parts(v, false, -1);
    return parts.int_part + "." + (parts.frac.empty() ? "0" : parts.frac);
  }
  const auto parts = float_parts(v, true, -1);
  return parts.int_part + (parts.frac.empty() ? "" : "." + parts.frac) + "e" + parts.exp;
}

/// NumPy's FloatingFormat over the shown values: the notation and the widths come from all of
/// them, then each becomes one cell. NumPy prints twice (a first pass for the widths, a second with
/// the widest fraction as cutoff); the second pass never changes a value's digits, so the digits of
/// the first are kept.
template <class F>
std::vector<std::string> float_cells(const std::vector<F>& values, int precision) {
  bool any_nonzero = false, negative_inf = false, any_nonfinite = false;
  F max_abs{}, min_abs{};
  for (F v : values) {
    if (!is_finite(v)) {
      any_nonfinite = true;
      negative_inf = negative_inf || (is_inf(v) && v < F(0));
    } else if (v != F(0)) {
      const F a = v < F(0) ? -v : v;
      max_abs = any_nonzero ? std::max(max_abs, a) : a;
      min_abs = any_nonzero ? std::min(min_abs, a) : a;
      any_nonzero = true;
    }
  }
  // The ratio in F, as NumPy divides: inf when it overflows.
  const bool scientific = any_nonzero && (max_abs >= F(1e8) || min_abs < F(1e-4) || max_abs / min_abs > F(1000));

  std::vector<FloatParts> parts(values.size());
  std::size_t pad_left = 0, frac_width = 0, exp_digits = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!is_finite(values[i])) continue;
    parts[i] = float_parts(values[i], scientific, precision);
    pad_left = std::max(pad_left, parts[i].int_part.size());
    frac_width = std::max(frac_width, parts[i].frac.size());
    if (scientific) exp_digits = std::max(exp_digits, parts[i].exp.size() - 1);
  }
  // Without finite values everything is 0 and the width is that of "nan" / "inf" / "-inf".
  const std::size_t pad_right = scientific ? exp_digits + 2 + frac_width : frac_width;
  if (any_nonfinite) {
    const std::size_t offset = pad_right + 1;
    const std::size_t word_width = negative_inf ? 4 : 3;
    if (word_width > offset) pad_left = std::max(pad_left, word_width - offset);
  }

  std::vector<std::string> cells;
  cells.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const F v = values[i];
    if (!is_finite(v)) {
      const std::string word = is_nan(v) ? "nan" : (v < F(0) ? "-inf" : "inf");
      const std::size_t width = pad_left + pad_right + 1;
      cells.push_back(std::string(width > word.size() ? width - word.size() : 0, ' ') + word);
      continue;
    }
    const FloatParts& p = parts[i];
    std::string out(pad_left - p.int_part.size(), ' ');
    out += p.int_part;
    out += '.';
    out += p.frac;
    if (scientific) {  // every mantissa gets the widest fraction, every exponent the same digits
      out.append(frac_width - p.frac.size(), '0');
      out += 'e';
      out += p.exp.front();
      out.append(exp_digits - (p.exp.size() - 1), '0');
      out.append(p.exp, 1);
    } else {
      out.append(pad_right - p.frac.size(), ' ');
    }
    cells.push_back(std::move(out));
  }
  return cells;
}

/// The text of every shown value, in row-major order of the shown sub-array.
template <class T>
std::vector<std::string> format_cells(const std::vector<T>& shown, const PrintOptions& options) {
  std::vector<std::string> cells;
  cells.reserve(shown.size());
  if constexpr (std::is_same_v<T, bool>) {
    for (bool v : shown) cells.emplace_back(v ? " True" : "False");
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    for (bfloat16 v : shown) cells.push_back(bfloat16_text(v));
  } else if constexpr (is_floating_element_v<T>) {
    cells = float_cells(shown, options.precision);
  } else {
    std::size_t width = 0;
    for (T v : shown) {
      cells.push_back(std::to_string(v));
      width = std::max(width, cells.back().size());
    }
    for (auto& c : cells) c.insert(0, width - c.size(), ' ');
  }
  return cells;
}

/// NumPy's _formatArray over the shown sub-array: `shown_shape` is the sub-array's shape,
/// `shape` the full one (an axis longer than 2 * edgeitems is summarised when `summarise`).
class ArrayWriter {
 public:
  ArrayWriter(const std::vector<std::string>& cells, const std::vector<std::int64_t>& shape,
              const std::vector<std::int64_t>& shown_shape, bool summarise, const PrintOptions& options)
      : cells_(cells), shape_(shape), shown_shape_(shown_shape), summarise_(summarise), options_(options) {}

  [[nodiscard]] std::string write() const { return recurse(0, 0, " ", options_.linewidth); }

 private:
  // Appends `word` to `line`, first moving `line` into `text` when the word would pass `width`
  // (unless the line holds only the indent: wrapping would not help).
  static void extend_line(std::string& text, std::string& line, std::string_view word, std::size_t width,
                          const std::string& indent) {
    if (line.size() + word.size() > width && line.size() > indent.size()) {
      const auto end = line.find_last_not_of(' ');
      text.append(line, 0, end == std::string::npos ? 0 : end + 1);
      text += '\n';
      line = indent;
    }
    line += word;
  }

  [[nodiscard]] std::string recurse(std::size_t axis, std::size_t offset, const std::string& indent,
                                    std::size_t width) const {
    const std::size_t rank = shape_.size();
    if (axis == rank) return cells_[offset];
    const std::string next_indent = indent + " ";
    const std::size_t next_width = width - 1;  // room for the closing ']'
    const bool summary = summarise_ && 2 * options_.edgeitems < shape_[axis];
    const auto count = static_cast<std::size_t>(shown_shape_[axis]);
    const std::size_t leading = summary ? static_cast<std::size_t>(options_.edgeitems) : 0;
    std::size_t stride = 1;
    for (std::size_t a = axis + 1; a < rank; ++a) stride *= static_cast<std::size_t>(shown_shape_[a]);
    auto child = [&](std::size_t i) { return recurse(axis + 1, offset + i * stride, next_indent, next_width); };

    std::string text;
    if (axis + 1 == rank) {
      const std::size_t element_width = width - 1;
      std::string line = indent;
      for (std::size_t i = 0; i < count; ++i) {
        if (summary && i == leading) {
          extend_line(text, line, "...", element_width, indent);
          line += ' ';
        }
        extend_line(text, line, child(i), element_width, indent);
        if (i + 1 < count) line += ' ';
      }
      text += line;
    } else {
      const std::string separator(rank - axis - 1, '\n');
      for (std::size_t i = 0; i < count; ++i) {
        if (summary && i == leading) text += indent + "..." + separator;
        text += indent + child(i);
        if (i + 1 < count) text += separator;
      }
    }
    return "[" + text.substr(indent.size()) + "]";
  }

  const std::vector<std::string>& cells_;
  const std::vector<std::int64_t>& shape_;
  const std::vector<std::int64_t>& shown_shape_;
  bool summarise_;
  const PrintOptions& options_;
};

/// The values NumPy looks at: all of them, or with `summarise` the first and last `edgeitems`
/// entries of each long axis (its _leading_trailing).
template <class T>
std::vector<T> shown_values(const std::vector<T>& values, const std::vector<std::int64_t>& shape, bool summarise,
                            std::int64_t edgeitems, std::vector<std::int64_t>& shown_shape) {
  const std::size_t rank = shape.size();
  std::vector<std::vector<std::int64_t>> kept(rank);
  for (std::size_t a = 0; a < rank; ++a) {
    const auto n = shape[a];
    if (summarise && n > 2 * edgeitems) {
      for (std::int64_t i = 0; i < edgeitems; ++i) kept[a].push_back(i);
      for (std::int64_t i = n - edgeitems; i < n; ++i) kept[a].push_back(i);
    } else {
      for (std::int64_t i = 0; i < n; ++i) kept[a].push_back(i);
    }
    shown_shape.push_back(static_cast<std::int64_t>(kept[a].size()));
  }
  std::vector<std::int64_t> strides(rank, 1);
  for (std::size_t a = rank; a-- > 1;) strides[a - 1] = strides[a] * shape[a];
  std::vector<T> shown;
  std::vector<std::size_t> position(rank, 0);
  while (true) {  // odometer over the kept indices
    std::int64_t flat = 0;
    for (std::size_t a = 0; a < rank; ++a) flat += kept[a][position[a]] * strides[a];
    shown.push_back(values[static_cast<std::size_t>(flat)]);
    std::size_t a = rank;
    while (a > 0 && ++position[a - 1] == kept[a - 1].size()) position[--a] = 0;
    if (a == 0) break;
  }
  return shown;
}

}  // namespace detail::numpy_print

template <Element T>
std::string format_values(const Tensor<T>& t, const PrintOptions& options) {
  namespace np = detail::numpy_print;
  const auto values = t.to_vector();
  if (t.rank() == 0) {
    const T v = values.at(0);
    if constexpr (std::is_same_v<T, bool>)
      return v ? "True" : "False";
    else if constexpr (std::is_same_v<T, bfloat16>)
      return np::bfloat16_text(v);
    else if constexpr (is_floating_element_v<T>)
      return np::float_scalar(v);
    else
      return std::to_string(v);
  }
  if (values.empty()) return "[]";
  const auto& dims = t.shape().dims();
  const std::vector<std::int64_t> shape(dims.begin(), dims.end());
  const bool summarise = t.num_elements() > options.threshold;
  std::vector<std::int64_t> shown_shape;
  const auto shown = np::shown_values(values, shape, summarise, options.edgeitems, shown_shape);
  const auto cells = np::format_cells(shown, options);
  return np::ArrayWriter(cells, shape, shown_shape, summarise, options).write();
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// tf.Tensor(<values>, shape=(...), dtype=...), with a newline before multi-line values; a
/// symbolic tensor as TensorFlow prints a graph's: Tensor("MatMul:0", shape=(2, 2), dtype=float32).
template <Element T>
std::ostream& operator<<(std::ostream& os, const Tensor<T>& t) {
  if (!t.defined()) return os << "tf.Tensor(<undefined>)";
  if (const auto* ref = t.symbolic_ref())
    return os << "Tensor(\"" << ref->name << "\", shape=" << t.shape().to_python() << ", dtype=" << t.dtype() << ")";
  const std::string values = format_values(t);
  return os << "tf.Tensor(" << (values.find('\n') != std::string::npos ? "\n" : "") << values
            << ", shape=" << t.shape().to_python() << ", dtype=" << t.dtype() << ")";
}

}  // namespace devtensor
