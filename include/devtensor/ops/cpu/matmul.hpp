#pragma once
/// @file matmul.hpp
/// @brief CPU matrix multiplication: CBLAS (OpenBLAS) for float and double when the build found
/// one (DEVTENSOR_WITH_CBLAS), a cache-blocked portable kernel otherwise and for integers.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"

#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
#include <cblas.h>
#endif

namespace devtensor::ops::cpu {

/// C[m,n] = A[m,k] · B[k,n] with row-major, contiguous, non-transposed operands: i-k-j loops in
/// 64 x 256 blocks, so a row of B and a row of C stay in cache while the inner loop vectorises.
template <class T>
void gemm_portable_nn(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b, T* c) {
  constexpr std::int64_t kBlockK = 64;
  constexpr std::int64_t kBlockN = 256;
  std::fill(c, c + m * n, T{0});
  backend::cpu::parallel_for(m,
                             std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(1, n * k / 64)),
                             [&](std::int64_t row_begin, std::int64_t row_end) {
                               for (std::int64_t j0 = 0; j0 < n; j0 += kBlockN) {
                                 const std::int64_t j1 = std::min(n, j0 + kBlockN);
                                 for (std::int64_t p0 = 0; p0 < k; p0 += kBlockK) {
                                   const std::int64_t p1 = std::min(k, p0 + kBlockK);
                                   for (std::int64_t i = row_begin; i < row_end; ++i) {
                                     T* __restrict ci = c + i * n;
                                     for (std::int64_t p = p0; p < p1; ++p) {
                                       const T aip = a[i * k + p];
                                       const T* __restrict bp = b + p * n;
                                       if constexpr (arith::signed_integer_v<T>)  // integer products and sums wrap
                                         for (std::int64_t j = j0; j < j1; ++j)
                                           ci[j] = arith::add(ci[j], arith::mul(aip, bp[j]));
                                       else
                                         for (std::int64_t j = j0; j < j1; ++j) ci[j] += aip * bp[j];
                                     }
                                   }
                                 }
                               }
                             });
}

/// C[m,n] = op(A) · op(B); op transposes when asked. A is [m,k] ([k,m] when transposed), B is
/// [k,n] ([n,k] when transposed), all row-major.
template <class T>
void gemm(bool transpose_a, bool transpose_b, std::int64_t m, std::int64_t n, std::int64_t k, const T* a, const T* b,
          T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill(c, c + m * n, T{0});
    return;
  }
  if constexpr (is_sixteen_bit_float_v<T>) {
    // Products summed in float and rounded once (TensorFlow's CPU MatMul and cuBLAS's
    // CUBLAS_COMPUTE_32F do the same): widened copies through the float GEMM.
    const std::vector<float> wide_a(a, a + m * k), wide_b(b, b + k * n);
    std::vector<float> wide_c(static_cast<std::size_t>(m * n));
    gemm(transpose_a, transpose_b, m, n, k, wide_a.data(), wide_b.data(), wide_c.data());
    std::transform(wide_c.begin(), wide_c.end(), c, [](float v) { return T(v); });
    return;
  }
#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (m <= INT_MAX && n <= INT_MAX && k <= INT_MAX) {
      const auto ta = transpose_a ? CblasTrans : CblasNoTrans;
      const auto tb = transpose_b ? CblasTrans : CblasNoTrans;
      const int lda = static_cast<int>(transpose_a ? m : k);
      const int ldb = static_cast<int>(transpose_b ? k : n);
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a, lda,
                    b, ldb, 0.0f, c, static_cast<int>(n));
      else
        cblas_dgemm(CblasRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0, a, lda,
                    b, ldb, 0.0, c, static_cast<int>(n));
      return;
    }
  }
#endif
  // Portable path: materialise transposed operands, then the blocked NN kernel.
  std::vector<T> at;
  std::vector<T> bt;
  if (transpose_a) {
    at.resize(static_cast<std::size_t>(m * k));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t p = 0; p < k; ++p) at[static_cast<std::size_t>(i * k + p)] = a[p * m + i];
    a = at.data();
  }
  if (transpose_b) {
    bt.resize(static_cast<std::size_t>(k * n));
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t j = 0; j < n; ++j) bt[static_cast<std::size_t>(p * n + j)] = b[j * k + p];
    b = bt.data();
  }
  gemm_portable_nn(m, n, k, a, b, c);
}

/// Which matmul path float/double take in this build: "cblas" or "portable".
constexpr const char* gemm_backend() noexcept {
#if defined(DEVTENSOR_WITH_CBLAS) && DEVTENSOR_WITH_CBLAS
  return "cblas";
#else
  return "portable";
#endif
}

}  // namespace devtensor::ops::cpu
