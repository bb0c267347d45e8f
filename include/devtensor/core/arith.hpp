#pragma once
/// @file arith.hpp
/// @brief Defined results at the edges of element arithmetic, the same in CPU and GPU kernels.
///
/// C++ leaves signed overflow, INT_MIN / -1 and out-of-range float -> integer conversions
/// undefined (x86 even traps on the division). devtensor defines them, following TensorFlow where
/// TensorFlow's result is defined and the hardware's where it is not:
/// - signed integer add, sub, mul, neg, abs and sums wrap modulo 2^N (two's complement), which is
///   what TensorFlow's Eigen kernels and XLA produce;
/// - integer floor division by -1 is negation, so INT_MIN // -1 wraps to INT_MIN (the only
///   quotient that overflows) instead of killing the process with SIGFPE, and INT_MIN mod -1 is 0;
///   NumPy gives the same INT_MIN;
/// - float -> integer conversion truncates toward zero and saturates: NaN -> 0, values beyond the
///   range -> the type's min or max. That is what CUDA's cvt.rzi.sat (TensorFlow's GPU Cast) and
///   XLA give; TensorFlow's CPU Cast returns x86's "integer indefinite" INT_MIN instead, which is
///   an accident of cvttss2si, so devtensor's CPU and GPU agree on the GPU's answer.

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/core/half.hpp"

namespace devtensor::arith {

template <class T>
inline constexpr bool signed_integer_v = std::is_integral_v<T>&& std::is_signed_v<T> && !std::is_same_v<T, bool>;

namespace detail {
/// The unsigned type signed arithmetic wraps in (at least unsigned int, so that no operand is
/// promoted back to a signed int).
template <class T>
using wrap_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
}  // namespace detail

template <class T>
DEVTENSOR_HOST_DEVICE constexpr T add(T x, T y) {
  if constexpr (signed_integer_v<T>) {
    using W = detail::wrap_t<T>;
    return static_cast<T>(static_cast<W>(static_cast<W>(x) + static_cast<W>(y)));
  } else {
    return static_cast<T>(x + y);
  }
}

template <class T>
DEVTENSOR_HOST_DEVICE constexpr T sub(T x, T y) {
  if constexpr (signed_integer_v<T>) {
    using W = detail::wrap_t<T>;
    return static_cast<T>(static_cast<W>(static_cast<W>(x) - static_cast<W>(y)));
  } else {
    return static_cast<T>(x - y);
  }
}

template <class T>
DEVTENSOR_HOST_DEVICE constexpr T mul(T x, T y) {
  if constexpr (signed_integer_v<T>) {
    using W = detail::wrap_t<T>;
    return static_cast<T>(static_cast<W>(static_cast<W>(x) * static_cast<W>(y)));
  } else {
    return static_cast<T>(x * y);
  }
}

/// −x. Floats flip the sign bit, zeros included (−(+0) is −0, as TensorFlow's Neg; 0 − x would
/// give +0 for both).
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T neg(T x) {
  if constexpr (is_floating_element_v<T>)
    return -x;
  else
    return sub(T{0}, x);
}

/// |x|; |INT_MIN| wraps to INT_MIN, as TensorFlow's Abs returns; |−0| is +0.
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T abs(T x) {
  if constexpr (is_floating_element_v<T>)
    return x < T{0} ? -x : (x == T{0} ? T{0} : x);
  else
    return x < T{0} ? neg(x) : x;
}

/// e^x and log(1 + x) of any floating element type; the 16-bit floats compute in float and round
/// once (an op whose steps round in 16 bits, as TensorFlow's Sigmoid and Softplus, calls these).
template <class T>
DEVTENSOR_HOST_DEVICE T exp(T x) {
  if constexpr (is_sixteen_bit_float_v<T>)
    return T(std::exp(static_cast<float>(x)));
  else
    return std::exp(x);
}
template <class T>
DEVTENSOR_HOST_DEVICE T log1p(T x) {
  if constexpr (is_sixteen_bit_float_v<T>)
    return T(std::log1p(static_cast<float>(x)));
  else
    return std::log1p(x);
}

/// Python's x // y for integers with y != 0 (the caller reports division by zero).
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T floor_div(T x, T y) {
  if constexpr (signed_integer_v<T>) {
    if (y == T{-1}) return neg(x);  // INT_MIN / -1 overflows (x86 raises SIGFPE)
  }
  T q = x / y;
  if ((x % y != 0) && ((x < T{0}) != (y < T{0}))) --q;
  return q;
}

/// Python's x % y for integers with y != 0: the sign of the divisor.
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T floor_mod(T x, T y) {
  if constexpr (signed_integer_v<T>) {
    if (y == T{-1}) return T{0};  // INT_MIN % -1 traps like the division
  }
  T r = x % y;
  if (r != T{0} && ((r < T{0}) != (y < T{0}))) r = static_cast<T>(r + y);
  return r;
}

/// U(v) with the edges defined: float -> integer truncates toward zero and saturates (NaN -> 0),
/// anything -> bool is v != 0, integer -> narrower integer wraps (C++20), the rest is C++'s. The
/// 16-bit floats convert through float (Note [Sixteen-bit floats]); float and double NaNs become
/// bfloat16's +NaN, as TensorFlow's Cast gives.
template <class U, class T>
DEVTENSOR_HOST_DEVICE constexpr U convert(T v) {
  if constexpr (std::is_same_v<U, bool>) {
    return v != T{0};
  } else if constexpr (is_sixteen_bit_float_v<T> && is_sixteen_bit_float_v<U>) {
    return U(static_cast<float>(v));  // a NaN keeps its sign here
  } else if constexpr (is_sixteen_bit_float_v<T>) {
    return convert<U>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<U, bfloat16> && std::is_floating_point_v<T>) {
    return v != v ? std::numeric_limits<bfloat16>::quiet_NaN() : U(v);
  } else if constexpr (std::is_floating_point_v<T> && std::is_integral_v<U>) {
    if (v != v) return U{0};  // NaN
    // -min is 2^(N-1) for signed U: a power of two, exact in float and double.
    constexpr T lowest = static_cast<T>(std::numeric_limits<U>::lowest());
    constexpr T beyond_max =
        std::is_signed_v<U> ? -lowest : T{2} * (static_cast<T>(std::numeric_limits<U>::max() / 2) + T{1});
    if (v < lowest) return std::numeric_limits<U>::lowest();
    if (!(v < beyond_max)) return std::numeric_limits<U>::max();
    return static_cast<U>(v);
  } else {
    return static_cast<U>(v);
  }
}

/// The mean's finish: `sum` divided by a count of elements. Integers divide with truncation
/// (TensorFlow's integer Mean) in int64, so a count beyond the type's range is still exact. The
/// mean of nothing is TensorFlow's (and NumPy's): NaN (0 / 0) for floating types, 0 for integers.
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T divide_by_count(T sum, std::int64_t count) {
  if constexpr (std::is_integral_v<T>)
    return count == 0 ? T{0} : static_cast<T>(static_cast<std::int64_t>(sum) / count);
  else
    return count == 0 ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(sum / static_cast<T>(count));
}

}  // namespace devtensor::arith
