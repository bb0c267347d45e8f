#pragma once
/// @file simd.hpp
/// @brief 16-byte SIMD packs of float or double for CPU loops the compiler leaves scalar.
///
/// GCC at -O2 (what users build with) vectorises almost no loop with a runtime trip count, and a
/// loop that calls std::sqrt keeps errno's scalar path unless -fno-math-errno is given; devtensor
/// cannot choose its users' flags. These packs use the compilers' vector extension (GCC, Clang;
/// nvcc passes it through to the host compiler) and the baseline instruction set of the target:
/// SSE2 on x86-64, NEON on AArch64, one lane at a time elsewhere. Each lane computes exactly
/// what the scalar expression does (IEEE add, mul, div, sqrt), so results do not change.

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace devtensor::backend::cpu::simd {

template <class T>
struct Pack;

template <>
struct Pack<float> {
  typedef float type __attribute__((vector_size(16)));
  static type sqrt(type x) noexcept {
#if defined(__SSE2__)
    return _mm_sqrt_ps(x);
#elif defined(__ARM_NEON) && defined(__aarch64__)
    return vsqrtq_f32(x);
#else
    for (int i = 0; i < 4; ++i) x[i] = std::sqrt(x[i]);
    return x;
#endif
  }
};

template <>
struct Pack<double> {
  typedef double type __attribute__((vector_size(16)));
  static type sqrt(type x) noexcept {
#if defined(__SSE2__)
    return _mm_sqrt_pd(x);
#elif defined(__ARM_NEON) && defined(__aarch64__)
    return vsqrtq_f64(x);
#else
    for (int i = 0; i < 2; ++i) x[i] = std::sqrt(x[i]);
    return x;
#endif
  }
};

/// A pack of T: +, -, *, / element-wise, a scalar operand broadcast.
template <class T>
using Vec = typename Pack<T>::type;
template <class T>
inline constexpr std::int64_t lanes = static_cast<std::int64_t>(16 / sizeof(T));

/// Unaligned load and store (memcpy: no alignment or aliasing assumptions).
template <class T>
[[nodiscard]] inline Vec<T> load(const T* p) noexcept {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void store(T* p, Vec<T> v) noexcept {
  std::memcpy(p, &v, sizeof v);
}
template <class T>
[[nodiscard]] inline Vec<T> sqrt(Vec<T> x) noexcept {
  return Pack<T>::sqrt(x);
}

}  // namespace devtensor::backend::cpu::simd
