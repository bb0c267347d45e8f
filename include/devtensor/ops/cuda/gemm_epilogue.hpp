#pragma once
/// @file gemm_epilogue.hpp
/// @brief A GEMM and its epilogue (a bias, a Relu, both) as one cublasLtMatmul (Note [GEMM
/// epilogues] in ops/fused_chain.hpp), compiled in src/devtensor_cuda.cu.
///
/// Row-major operands by the transpose trick of ops/cuda/matmul.hpp: cuBLASLt computes
/// outᵀ[n, m] = op(b)ᵀ · op(a)ᵀ in column-major order, so the bias, one value per column of the
/// row-major product, is one value per row of cuBLASLt's D, which is what its bias epilogues add.
/// A problem's descriptors and the algorithm that cuBLASLt's heuristic picks are made at its first
/// call and kept (a plan per problem, stream and pointer alignment), so a call after that is one
/// attribute write and the cublasLtMatmul; the heuristic costs tens of microseconds.

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "devtensor/backend/cuda/cublas.hpp"
#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/core/matmul_options.hpp"
#include "devtensor/ops/fused_chain.hpp"

namespace devtensor::ops::cuda {

namespace gemm_epilogue_detail {

/// What a plan depends on: the problem, the stream whose handle runs it, the TF32 setting and the
/// operands' alignment (cuBLASLt's kernels assume the alignment they were chosen for).
struct PlanKey {
  int ordinal = 0;
  std::uintptr_t stream = 0;
  DType dtype = DType::DT_FLOAT;
  bool transpose_a = false;
  bool transpose_b = false;
  bool bias = false;
  bool relu = false;
  bool tf32 = false;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::uint32_t align_a = 0;
  std::uint32_t align_b = 0;
  std::uint32_t align_out = 0;
  auto operator<=>(const PlanKey&) const = default;
};

/// cuBLASLt's descriptors of one problem and the algorithm its heuristic chose. Used under the
/// stream's BlasLease only (the bias pointer is written into `desc` at each call). Never freed:
/// the process keeps its plans, as its cuBLAS handles.
struct Plan {
  bool usable = false;  // false: cuBLASLt has no algorithm for it
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t b = nullptr;  // cuBLASLt's A: b as stored, column-major
  cublasLtMatrixLayout_t a = nullptr;  // cuBLASLt's B
  cublasLtMatrixLayout_t out = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

/// The largest power of two, up to 256, that divides `p`'s address.
inline std::uint32_t alignment_of(const void* p) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

template <class Value>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const Value& value) {
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value));
}

/// Fills `plan` for `key`: the descriptors, then the heuristic's first algorithm within the lease's
/// workspace, if it has one.
inline void make_plan(Plan& plan, const PlanKey& key, const backend::cuda::BlasLease& lease) {
  const bool single = key.dtype == DType::DT_FLOAT;
  const cudaDataType_t type = single ? CUDA_R_32F : CUDA_R_64F;
  const cublasComputeType_t compute =
      single ? (key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_64F;
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, type));
  const auto m = static_cast<std::uint64_t>(key.m);
  const auto n = static_cast<std::uint64_t>(key.n);
  const auto k = static_cast<std::uint64_t>(key.k);
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(key.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(key.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  const cublasLtEpilogue_t epilogue = key.bias && key.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                      : key.bias           ? CUBLASLT_EPILOGUE_BIAS
                                                           : CUBLASLT_EPILOGUE_RELU;
  set(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  // As stored: b is [k, n] row-major (column-major [n, k]), or [n, k] when transposed; a likewise.
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, type, key.transpose_b ? k : n, key.transpose_b ? n : k,
                                                    static_cast<std::int64_t>(key.transpose_b ? k : n)));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, type, key.transpose_a ? m : k, key.transpose_a ? k : m,
                                                    static_cast<std::int64_t>(key.transpose_a ? m : k)));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.out, type, n, m, static_cast<std::int64_t>(n)));

  cublasLtMatmulPreference_t preference = nullptr;
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const auto set_preference = [&](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof value));
  };
  set_preference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<std::uint64_t>(lease.workspace_bytes()));
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_out);
  set_preference(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_out);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(lease.lt(), plan.desc, plan.b, plan.a, plan.out,
                                                               plan.out, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm is not an error: the fused node runs the GEMM and the chain instead.
  plan.usable = status == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (plan.usable) plan.algo = result.algo;
}

/// The process's plans. A plan, once inserted, stays at its address.
inline Plan& plan_for(const PlanKey& key, const backend::cuda::BlasLease& lease) {
  static std::mutex mutex;
  static auto* plans = new std::map<PlanKey, std::unique_ptr<Plan>>();  // never destroyed: see Plan
  Plan* plan = nullptr;
  {
    std::lock_guard lock(mutex);
    auto& slot = (*plans)[key];
    if (slot) return *slot;
    slot = std::make_unique<Plan>();
    plan = slot.get();
  }
  // Only this stream's lease holder reaches a plan of its stream: made outside the map's lock.
  make_plan(*plan, key, lease);
  return *plan;
}

}  // namespace gemm_epilogue_detail

/// Queues `gemm` on `stream` of GPU `ordinal` as one cublasLtMatmul with its epilogue; false (and
/// nothing queued) when cuBLASLt has no algorithm for it or the bias is not 16-byte aligned.
inline bool run_gemm_epilogue(const FusedGemm& gemm, int ordinal, void* stream) {
  namespace detail = gemm_epilogue_detail;
  if ((gemm.dtype != DType::DT_FLOAT && gemm.dtype != DType::DT_DOUBLE) || (!gemm.bias && !gemm.relu) || gemm.m <= 0 ||
      gemm.n <= 0 || gemm.k <= 0)
    return false;
  if (gemm.bias && detail::alignment_of(gemm.bias) < 16) return false;
  const backend::cuda::DeviceGuard guard(ordinal);
  const auto on = static_cast<cudaStream_t>(stream);
  const auto lease = backend::cuda::BlasHandles::global().acquire(ordinal, on);
  detail::PlanKey key;
  key.ordinal = ordinal;
  key.stream = reinterpret_cast<std::uintptr_t>(on);
  key.dtype = gemm.dtype;
  key.transpose_a = gemm.transpose_a;
  key.transpose_b = gemm.transpose_b;
  key.bias = gemm.bias != nullptr;
  key.relu = gemm.relu;
  key.tf32 = gemm.dtype == DType::DT_FLOAT && config::experimental::tensor_float_32_execution_enabled();
  key.m = gemm.m;
  key.n = gemm.n;
  key.k = gemm.k;
  key.align_a = detail::alignment_of(gemm.a);
  key.align_b = detail::alignment_of(gemm.b);
  key.align_out = detail::alignment_of(gemm.out);
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
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmul(lease.lt(), plan.desc, alpha, gemm.b, plan.b, gemm.a, plan.a, beta, gemm.out,
                                        plan.out, gemm.out, plan.out, &plan.algo, lease.workspace(),
                                        lease.workspace_bytes(), on));
  return true;
}

}  // namespace devtensor::ops::cuda
