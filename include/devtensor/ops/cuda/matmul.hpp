#pragma once
/// @file matmul.hpp
/// @brief GPU matmul through cuBLAS (compiled in src/devtensor_cuda.cu): row-major operands by the
/// transpose trick, fp32 and fp64, float16 and bfloat16 (one cublasLtMatmul, ops/cuda/lt_matmul.hpp:
/// tensor cores, float32 accumulation and scaling; cublasGemmEx with CUBLAS_COMPUTE_32F where
/// cuBLASLt has no algorithm), batches with one strided-batched call.
///
/// cuBLAS is column-major. A row-major [r, c] matrix is the column-major [c, r] matrix of its
/// transpose, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ·op(A)ᵀ: B goes first, the dimensions
/// swap (n, m, k), and each operand keeps its own transpose flag with its row length as leading
/// dimension. No copy, no explicit transpose.

#include <cublas_v2.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "devtensor/backend/cuda/cublas.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/half.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/ops/cuda/lt_matmul.hpp"

namespace devtensor::ops::cuda {

/// C[batch][m, n] = op(A[batch]) · op(B[batch]) on real GPU `device` (row-major, contiguous);
/// with `accumulate`, C += op(A) · op(B) (the convolutions' filter gradient over slices of images).
template <class T>
requires std::is_same_v<T, float> || std::is_same_v<T, double> || is_sixteen_bit_float_v<T>
void gemm(const Device& info, bool transpose_a, bool transpose_b, std::int64_t batches, std::int64_t m, std::int64_t n,
          std::int64_t k, const T* a, const T* b, T* c, bool accumulate = false) {
  if (batches == 0 || m == 0 || n == 0) return;
  backend::cuda::DeviceGuard guard(info.platform_ordinal);
  const cudaStream_t stream = backend::cuda::stream_of(info);
  if (k == 0) {  // an empty sum: zeros (cuBLAS would only scale C by beta)
    if (accumulate) return;
    DEVTENSOR_CUDA_CHECK(cudaMemsetAsync(c, 0, static_cast<std::size_t>(batches * m * n) * sizeof(T), stream));
    return;
  }
  for (std::int64_t v : {m, n, k, batches})
    if (v > INT_MAX)
      throw UnimplementedError("matmul on a GPU takes dimensions up to " + std::to_string(INT_MAX) + ", got " +
                               std::to_string(v) + " [Op:MatMul]");
  const int im = static_cast<int>(m);
  const int in = static_cast<int>(n);
  const int ik = static_cast<int>(k);
  const int lda = transpose_a ? im : ik;  // row length of A as stored
  const int ldb = transpose_b ? ik : in;
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const long long stride_a = m * k;
  const long long stride_b = k * n;
  const long long stride_c = m * n;
  if constexpr (is_sixteen_bit_float_v<T>) {
    // Products summed in float32 on tensor cores, rounded once into C (TensorFlow's GPU MatMul
    // for half and bfloat16 asks the same of cuBLAS).
    constexpr cudaDataType_t type = std::is_same_v<T, float16> ? CUDA_R_16F : CUDA_R_16BF;
    const float alpha = 1.0f;
    const float beta = accumulate ? 1.0f : 0.0f;
    auto lease = backend::cuda::BlasHandles::global().acquire(info.platform_ordinal, stream);
    if (run_sixteen_bit_gemm(info.platform_ordinal, stream, lease, transpose_a, transpose_b, batches, m, n, k, a, b, c,
                             accumulate))
      return;
    if (batches == 1)
      DEVTENSOR_CUBLAS_CHECK(cublasGemmEx(lease.get(), op_b, op_a, in, im, ik, &alpha, b, type, ldb, a, type, lda,
                                          &beta, c, type, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
      DEVTENSOR_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          lease.get(), op_b, op_a, in, im, ik, &alpha, b, type, ldb, stride_b, a, type, lda, stride_a, &beta, c, type,
          in, stride_c, static_cast<int>(batches), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    const T one = 1;
    const T beta = accumulate ? 1 : 0;
    auto lease = backend::cuda::BlasHandles::global().acquire(info.platform_ordinal, stream);
    if (batches == 1) {
      if constexpr (std::is_same_v<T, float>)
        DEVTENSOR_CUBLAS_CHECK(cublasSgemm(lease.get(), op_b, op_a, in, im, ik, &one, b, ldb, a, lda, &beta, c, in));
      else
        DEVTENSOR_CUBLAS_CHECK(cublasDgemm(lease.get(), op_b, op_a, in, im, ik, &one, b, ldb, a, lda, &beta, c, in));
      return;
    }
    if constexpr (std::is_same_v<T, float>)
      DEVTENSOR_CUBLAS_CHECK(cublasSgemmStridedBatched(lease.get(), op_b, op_a, in, im, ik, &one, b, ldb, stride_b, a,
                                                       lda, stride_a, &beta, c, in, stride_c,
                                                       static_cast<int>(batches)));
    else
      DEVTENSOR_CUBLAS_CHECK(cublasDgemmStridedBatched(lease.get(), op_b, op_a, in, im, ik, &one, b, ldb, stride_b, a,
                                                       lda, stride_a, &beta, c, in, stride_c,
                                                       static_cast<int>(batches)));
  }
}

}  // namespace devtensor::ops::cuda
