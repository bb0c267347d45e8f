#pragma once
/// @file gemm_epilogue.hpp
/// @brief A GEMM and its epilogue (a bias, a Relu, both) as one cublasLtMatmul (Note [GEMM
/// epilogues] in ops/fused_chain.hpp) on the cuBLASLt plans of ops/cuda/lt_matmul.hpp, compiled
/// in src/devtensor_cuda.cu.
///
/// Row-major operands by the transpose trick of ops/cuda/matmul.hpp: cuBLASLt computes
/// outᵀ[n, m] = op(b)ᵀ · op(a)ᵀ in column-major order, so the bias, one value per column of the
/// row-major product, is one value per row of cuBLASLt's D, which is what its bias epilogues add.
/// A call after a problem's first is one attribute write (the bias pointer) and the cublasLtMatmul.

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "devtensor/backend/cuda/cublas.hpp"
#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/core/matmul_options.hpp"
#include "devtensor/ops/cuda/lt_matmul.hpp"
#include "devtensor/ops/fused_chain.hpp"

namespace devtensor::ops::cuda {

/// Queues `gemm` on `stream` of GPU `ordinal` as one cublasLtMatmul with its epilogue; false (and
/// nothing queued) when cuBLASLt has no algorithm for it or the bias is not 16-byte aligned.
inline bool run_gemm_epilogue(const FusedGemm& gemm, int ordinal, void* stream) {
  namespace detail = lt_matmul_detail;
  if ((gemm.dtype != DType::DT_FLOAT && gemm.dtype != DType::DT_DOUBLE) || (!gemm.bias && !gemm.relu) || gemm.m <= 0 ||
      gemm.n <= 0 || gemm.k <= 0)
    return false;
  if (gemm.bias && detail::alignment_of(gemm.bias) < 16) return false;
  const backend::cuda::DeviceGuard guard(ordinal);
  const auto on = static_cast<cudaStream_t>(stream);
  const auto lease = backend::cuda::BlasHandles::global().acquire(ordinal, on);
  auto key = detail::key_of(ordinal, on, gemm.dtype, gemm.transpose_a, gemm.transpose_b, gemm.m, gemm.n, gemm.k, gemm.a,
                            gemm.b, gemm.out);
  key.bias = gemm.bias != nullptr;
  key.relu = gemm.relu;
  key.tf32 = gemm.dtype == DType::DT_FLOAT && config::experimental::tensor_float_32_execution_enabled();
  const detail::Plan& plan = detail::plan_for(key, lease);
  if (!plan.usable) return false;
  if (gemm.bias) detail::set(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, gemm.bias);
  const double one_double = 1;
  const double zero_double = 0;
  const float one_float = 1;
  const float zero_float = 0;
  const bool single = gemm.dtype == DType::DT_FLOAT;
  const void* alpha = single ? static_cast<const void*>(&one_float) : &one_double;
  const void* beta = single ? static_cast<const void*>(&zero_float) : &zero_double;
  detail::launch(plan, lease, on, alpha, gemm.a, gemm.b, beta, gemm.out);
  return true;
}

}  // namespace devtensor::ops::cuda
