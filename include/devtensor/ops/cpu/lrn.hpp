#pragma once
/// @file lrn.hpp
/// @brief CPU local response normalisation and its gradient over rows of `depth` values (the
/// last axis of an NHWC tensor), computed as TensorFlow's CPU kernels compute them
/// (lrn_op.cc): the window's sum of squares in the element type, the power by the same
/// special cases (beta 1: a reciprocal, 0.5: 1 / sqrt, else exp(−beta · log)), with 0.75 by
/// square roots (last-bit differences from TensorFlow's exp/log, which its tests allow).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"

namespace devtensor::ops::cpu {

/// scale[d] = multiplier[d]^−beta for a row: TensorFlow's special cases (beta 1: a reciprocal,
/// 0.5: a reciprocal square root) and beta 0.75 (the CIFAR-10 tutorial's) by square roots, each a
/// loop the compiler vectorises; any other beta as TensorFlow's exp(−beta · log(m)).
template <class T>
DEVTENSOR_VECTORIZE void lrn_scales(const T* __restrict multiplier, T beta, std::int64_t n, T* __restrict scale) {
  if (beta == T(1)) {
    for (std::int64_t d = 0; d < n; ++d) scale[d] = T(1) / multiplier[d];
  } else if (beta == T(0.5)) {
    for (std::int64_t d = 0; d < n; ++d) scale[d] = T(1) / std::sqrt(multiplier[d]);
  } else if (beta == T(0.75)) {
    for (std::int64_t d = 0; d < n; ++d) {
      const T root = std::sqrt(multiplier[d]);
      scale[d] = T(1) / (root * std::sqrt(root));
    }
  } else {
    for (std::int64_t d = 0; d < n; ++d) scale[d] = std::exp(std::log(multiplier[d]) * -beta);
  }
}

/// Rows per parallel chunk: about 16 K multiply-adds of window sums.
inline std::int64_t lrn_grain(std::int64_t depth, std::int64_t radius) {
  // In double: an empty tensor's depth may be any size, and the radius up to 2^31.
  const double per_row = static_cast<double>(depth) * (2.0 * static_cast<double>(std::min(radius, depth)) + 1.0);
  return per_row >= 16384.0 ? 1 : static_cast<std::int64_t>(16384.0 / std::max(per_row, 1.0));
}

/// out[r, d] = in[r, d] · (bias + alpha · Σ_{|c−d| ≤ radius} in[r, c]²)^−beta for `rows` rows.
/// Each window's sum of squares is added up afresh (a running sum would carry rounding from
/// one channel to the next), then the row's powers are taken in one vectorised pass.
template <class T>
void lrn_rows(const T* in, std::int64_t rows, std::int64_t depth, std::int64_t radius, T bias, T alpha, T beta,
              T* out) {
  backend::cpu::parallel_for(rows, lrn_grain(depth, radius), [=](std::int64_t begin, std::int64_t end) {
    std::vector<T> squares(static_cast<std::size_t>(depth)), multiplier(static_cast<std::size_t>(depth)),
        scale(static_cast<std::size_t>(depth));
    for (std::int64_t r = begin; r < end; ++r) {
      const T* x = in + r * depth;
      T* y = out + r * depth;
      for (std::int64_t d = 0; d < depth; ++d) squares[static_cast<std::size_t>(d)] = x[d] * x[d];
      for (std::int64_t d = 0; d < depth; ++d) {
        const std::int64_t lo = std::max<std::int64_t>(0, d - radius), hi = std::min(depth, d + radius + 1);
        T sum(0);
        for (std::int64_t c = lo; c < hi; ++c) sum += squares[static_cast<std::size_t>(c)];
        multiplier[static_cast<std::size_t>(d)] = bias + alpha * sum;
      }
      lrn_scales(multiplier.data(), beta, depth, scale.data());
      for (std::int64_t d = 0; d < depth; ++d) y[d] = x[d] * scale[static_cast<std::size_t>(d)];
    }
  });
}

/// LRNGrad: out[r, k] = Σ_j dy[r, j] · (δ_jk · norm_j^−beta − 2 · alpha · beta · x[r, k] · y[r, j] / norm_j)
/// over the windows j that hold k, norm_j = bias + alpha · Σ x[r, c]² over j's window (TensorFlow's
/// loop, term for term).
template <class T>
void lrn_grad_rows(const T* dy, const T* x, const T* y, std::int64_t rows, std::int64_t depth, std::int64_t radius,
                   T bias, T alpha, T beta, T* out) {
  backend::cpu::parallel_for(rows, lrn_grain(depth, radius) / 2 + 1, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * depth;
      const T* yr = y + r * depth;
      const T* g = dy + r * depth;
      T* o = out + r * depth;
      std::fill(o, o + depth, T(0));
      for (std::int64_t j = 0; j < depth; ++j) {
        const std::int64_t lo = std::max<std::int64_t>(0, j - radius), hi = std::min(depth, j + radius + 1);
        T norm(0);
        for (std::int64_t k = lo; k < hi; ++k) norm += xr[k] * xr[k];
        norm = alpha * norm + bias;
        const T power = std::pow(norm, -beta);
        for (std::int64_t k = lo; k < hi; ++k) {
          T dyi = T(-2) * alpha * beta * xr[k] * yr[j] / norm;
          if (k == j) dyi += power;
          o[k] += dyi * g[j];
        }
      }
    }
  });
}

}  // namespace devtensor::ops::cpu
