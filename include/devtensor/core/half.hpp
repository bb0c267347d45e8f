#pragma once
/// @file half.hpp
/// @brief The 16-bit floating element types: float16 (IEEE binary16, TensorFlow's DT_HALF) and
/// bfloat16 (the top half of a float32, DT_BFLOAT16).
///
/// Note [Sixteen-bit floats]
/// Both are storage types: arithmetic converts to float32, computes there and rounds the result
/// back to nearest, ties to even. For +, -, *, / and sqrt that is the correctly rounded 16-bit
/// result (float32's 24 bits hold more than twice the 11 and 8 of the narrow types, so rounding
/// twice cannot differ from rounding once); it is what TensorFlow's Eigen::half and bfloat16 do on
/// CPUs, and what CUDA's __half arithmetic gives. The conversions reproduce TensorFlow 2.21's bits
/// (tests/reference/half_precision.py made the table the tests read):
/// - float -> float16: nearest even; beyond 65519.99... is infinity; results below 2^-14 are
///   subnormal (gradual underflow, no flush to zero); a NaN keeps its sign and the top ten bits
///   of its payload and becomes quiet (x86's vcvtps2ph, which TensorFlow's CPU kernels use);
/// - float16 -> float: exact; a signalling NaN becomes quiet (vcvtph2ps);
/// - float -> bfloat16: nearest even on the bits, subnormals kept; a NaN becomes a quiet NaN of
///   its sign (Eigen's float_to_bfloat16_rtne; TensorFlow's Cast float32 -> bfloat16 differs:
///   it returns +NaN for every NaN, and arith::convert does that for Cast);
/// - bfloat16 -> float: the bits shifted up, exact, NaNs untouched;
/// - double and integers convert to float first (TensorFlow's Cast rounds twice there too).
/// The classes are trivially copyable, 2 bytes, constexpr and usable in CUDA kernels
/// (DEVTENSOR_HOST_DEVICE); they hold no conversion to anything implicitly, so a 16-bit value
/// never widens or narrows in an expression without the code saying so.

#include <bit>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "devtensor/config.hpp"

namespace devtensor {

namespace half_detail {

DEVTENSOR_HOST_DEVICE constexpr std::uint16_t float_to_float16_bits(float value) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u)  // NaN: quiet, top payload bits kept
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  if (magnitude >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal float16, round(|value| / 2^-24) (the shift's lost bits decide).
    if (magnitude < 0x33000000u) return sign;  // below half of 2^-24: rounds to zero
    const std::uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const unsigned shift = 126u - (magnitude >> 23);  // 14..24
    const std::uint32_t kept = mantissa >> shift;
    const std::uint32_t lost = mantissa & ((1u << shift) - 1u);
    const std::uint32_t half_way = 1u << (shift - 1u);
    const std::uint32_t rounded = kept + ((lost > half_way || (lost == half_way && (kept & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even (a carry into
  // the exponent is the right answer, up to 0x7c00).
  const std::uint32_t rebiased = magnitude - 0x38000000u;
  const std::uint32_t rounded = rebiased + 0xfffu + ((rebiased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

DEVTENSOR_HOST_DEVICE constexpr float float16_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu)  // infinity, or a NaN made quiet
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x400000u : 0u));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

DEVTENSOR_HOST_DEVICE constexpr std::uint16_t float_to_bfloat16_bits(float value) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

DEVTENSOR_HOST_DEVICE constexpr float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

/// What the two types share; Self says how its bits convert.
template <class Self>
class SixteenBits {
 public:
  [[nodiscard]] DEVTENSOR_HOST_DEVICE constexpr std::uint16_t bits() const noexcept { return bits_; }
  DEVTENSOR_HOST_DEVICE static constexpr Self from_bits(std::uint16_t bits) noexcept {
    Self s{};
    s.bits_ = bits;
    return s;
  }
  /// To any arithmetic type through float (as TensorFlow's Eigen types convert).
  template <class U>
  requires std::is_arithmetic_v<U> DEVTENSOR_HOST_DEVICE constexpr explicit operator U() const noexcept {
    return static_cast<U>(Self::to_float(bits_));
  }

 protected:
  std::uint16_t bits_;  // no initialiser: trivial, like the other element types (T{} is zero)
};

}  // namespace half_detail

/// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits; 65504 at most, 2^-24 the least.
class float16 : public half_detail::SixteenBits<float16> {
 public:
  float16() = default;
  /// Rounds to nearest even (doubles and integers through float, as TensorFlow).
  template <class U>
  requires std::is_arithmetic_v<U> DEVTENSOR_HOST_DEVICE constexpr explicit float16(U value) noexcept {
    bits_ = half_detail::float_to_float16_bits(static_cast<float>(value));
  }
  DEVTENSOR_HOST_DEVICE static constexpr float to_float(std::uint16_t bits) noexcept {
    return half_detail::float16_bits_to_float(bits);
  }
};

/// Brain floating point: float32's sign and 8 exponent bits, 7 mantissa bits.
class bfloat16 : public half_detail::SixteenBits<bfloat16> {
 public:
  bfloat16() = default;
  /// Rounds to nearest even (doubles and integers through float, as TensorFlow).
  template <class U>
  requires std::is_arithmetic_v<U> DEVTENSOR_HOST_DEVICE constexpr explicit bfloat16(U value) noexcept {
    bits_ = half_detail::float_to_bfloat16_bits(static_cast<float>(value));
  }
  DEVTENSOR_HOST_DEVICE static constexpr float to_float(std::uint16_t bits) noexcept {
    return half_detail::bfloat16_bits_to_float(bits);
  }
};

/// float16 or bfloat16.
template <class T>
inline constexpr bool is_sixteen_bit_float_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

/// A floating element type of any width: float, double, float16, bfloat16.
template <class T>
inline constexpr bool is_floating_element_v = std::is_floating_point_v<T> || is_sixteen_bit_float_v<T>;

// Arithmetic in float, rounded once (Note [Sixteen-bit floats]); comparisons as float's (NaN is
// unordered, -0 == +0). Templates over the two types, found by argument-dependent lookup.
template <class T>
concept SixteenBitFloat = is_sixteen_bit_float_v<T>;

template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T operator+(T a, T b) noexcept {
  return T(static_cast<float>(a) + static_cast<float>(b));
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T operator-(T a, T b) noexcept {
  return T(static_cast<float>(a) - static_cast<float>(b));
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T operator*(T a, T b) noexcept {
  return T(static_cast<float>(a) * static_cast<float>(b));
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T operator/(T a, T b) noexcept {
  return T(static_cast<float>(a) / static_cast<float>(b));
}
/// Flips the sign bit (NaNs and zeros included), as TensorFlow's Neg.
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T operator-(T a) noexcept {
  return T::from_bits(static_cast<std::uint16_t>(a.bits() ^ 0x8000u));
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T& operator+=(T& a, T b) noexcept {
  return a = a + b;
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T& operator-=(T& a, T b) noexcept {
  return a = a - b;
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T& operator*=(T& a, T b) noexcept {
  return a = a * b;
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr T& operator/=(T& a, T b) noexcept {
  return a = a / b;
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr bool operator==(T a, T b) noexcept {
  return static_cast<float>(a) == static_cast<float>(b);
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr bool operator<(T a, T b) noexcept {
  return static_cast<float>(a) < static_cast<float>(b);
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr bool operator>(T a, T b) noexcept {
  return static_cast<float>(a) > static_cast<float>(b);
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr bool operator<=(T a, T b) noexcept {
  return static_cast<float>(a) <= static_cast<float>(b);
}
template <SixteenBitFloat T>
DEVTENSOR_HOST_DEVICE constexpr bool operator>=(T a, T b) noexcept {
  return static_cast<float>(a) >= static_cast<float>(b);
}

DEVTENSOR_HOST_DEVICE constexpr bool isnan(float16 x) noexcept { return (x.bits() & 0x7fffu) > 0x7c00u; }
DEVTENSOR_HOST_DEVICE constexpr bool isnan(bfloat16 x) noexcept { return (x.bits() & 0x7fffu) > 0x7f80u; }
DEVTENSOR_HOST_DEVICE constexpr bool isfinite(float16 x) noexcept { return (x.bits() & 0x7c00u) != 0x7c00u; }
DEVTENSOR_HOST_DEVICE constexpr bool isfinite(bfloat16 x) noexcept { return (x.bits() & 0x7f80u) != 0x7f80u; }

}  // namespace devtensor

namespace std {

/// The limits of the 16-bit floats, as NumPy's finfo(float16) and ml_dtypes' bfloat16 give them.
template <class T>
requires devtensor::is_sixteen_bit_float_v<T>
class numeric_limits<T> {
  static constexpr bool half = std::is_same_v<T, devtensor::float16>;

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = half;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = half ? 11 : 8;
  static constexpr int digits10 = half ? 3 : 2;
  static constexpr int max_digits10 = half ? 5 : 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = half ? -13 : -125;
  static constexpr int max_exponent = half ? 16 : 128;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr T min() noexcept { return T::from_bits(half ? 0x0400 : 0x0080); }
  static constexpr T lowest() noexcept { return T::from_bits(half ? 0xfbff : 0xff7f); }
  static constexpr T max() noexcept { return T::from_bits(half ? 0x7bff : 0x7f7f); }
  static constexpr T epsilon() noexcept { return T::from_bits(half ? 0x1400 : 0x3c00); }
  static constexpr T round_error() noexcept { return T::from_bits(half ? 0x3800 : 0x3f00); }
  static constexpr T infinity() noexcept { return T::from_bits(half ? 0x7c00 : 0x7f80); }
  static constexpr T quiet_NaN() noexcept { return T::from_bits(half ? 0x7e00 : 0x7fc0); }
  static constexpr T signaling_NaN() noexcept { return T::from_bits(half ? 0x7d00 : 0x7fa0); }
  static constexpr T denorm_min() noexcept { return T::from_bits(0x0001); }
};

}  // namespace std
