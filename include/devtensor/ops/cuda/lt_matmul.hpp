#pragma once
/// @file lt_matmul.hpp
/// @brief cuBLASLt plans (compiled in src/devtensor_cuda.cu): a problem's descriptors and the
/// algorithm cuBLASLt's heuristic picks for it, made at its first call and kept, and the float16 /
/// bfloat16 MatMul as one cublasLtMatmul (float32 accumulation and scaling). The GEMM epilogues
/// (ops/cuda/gemm_epilogue.hpp) use the same plans.
///
/// Row-major operands by the transpose trick of ops/cuda/matmul.hpp: cuBLASLt computes
/// outᵀ[n, m] = op(b)ᵀ · op(a)ᵀ in column-major order. A plan is kept per problem, stream and
/// pointer alignment, so a call after the first is the cublasLtMatmul alone (the heuristic costs
/// tens of microseconds).

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "devtensor/backend/cuda/cublas.hpp"
#include "devtensor/core/half.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::ops::cuda {

namespace lt_matmul_detail {

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
  std::int64_t batches = 1;  // > 1: strided batches of [m, k]·[k, n], one after another
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
  const bool dual = key.dtype == DType::DT_DOUBLE;
  const cudaDataType_t type = key.dtype == DType::DT_HALF       ? CUDA_R_16F
                              : key.dtype == DType::DT_BFLOAT16 ? CUDA_R_16BF
                              : dual                            ? CUDA_R_64F
                                                                : CUDA_R_32F;
  // float32 sums and scalars for float and the 16-bit types (TensorFlow's GPU MatMul asks the same
  // of cuBLAS for half and bfloat16); TF32 products only for float, when enabled.
  const cublasComputeType_t compute = dual                                       ? CUBLAS_COMPUTE_64F
                                      : key.dtype == DType::DT_FLOAT && key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                 : CUBLAS_COMPUTE_32F;
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan.desc, compute, dual ? CUDA_R_64F : CUDA_R_32F));
  const auto m = static_cast<std::uint64_t>(key.m);
  const auto n = static_cast<std::uint64_t>(key.n);
  const auto k = static_cast<std::uint64_t>(key.k);
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(key.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N));
  set(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(key.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N));
  const cublasLtEpilogue_t epilogue = key.bias && key.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                      : key.bias           ? CUBLASLT_EPILOGUE_BIAS
                                      : key.relu           ? CUBLASLT_EPILOGUE_RELU
                                                           : CUBLASLT_EPILOGUE_DEFAULT;
  set(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  // As stored: b is [k, n] row-major (column-major [n, k]), or [n, k] when transposed; a likewise.
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.b, type, key.transpose_b ? k : n, key.transpose_b ? n : k,
                                                    static_cast<std::int64_t>(key.transpose_b ? k : n)));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.a, type, key.transpose_a ? m : k, key.transpose_a ? k : m,
                                                    static_cast<std::int64_t>(key.transpose_a ? m : k)));
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan.out, type, n, m, static_cast<std::int64_t>(n)));
  if (key.batches > 1) {
    const auto batch_count = static_cast<std::int32_t>(key.batches);
    for (const auto& [layout, stride] :
         {std::pair{plan.b, key.k * key.n}, std::pair{plan.a, key.m * key.k}, std::pair{plan.out, key.m * key.n}}) {
      DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch_count,
                                                              sizeof batch_count));
      DEVTENSOR_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                              &stride, sizeof stride));
    }
  }

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

/// The key every caller starts from: one row-major problem on `stream` of GPU `ordinal`, its
/// operands' alignments; no epilogue, one matrix (callers add theirs).
inline PlanKey key_of(int ordinal, cudaStream_t stream, DType dtype, bool transpose_a, bool transpose_b, std::int64_t m,
                      std::int64_t n, std::int64_t k, const void* a, const void* b, const void* out) noexcept {
  PlanKey key;
  key.ordinal = ordinal;
  key.stream = reinterpret_cast<std::uintptr_t>(stream);
  key.dtype = dtype;
  key.transpose_a = transpose_a;
  key.transpose_b = transpose_b;
  key.m = m;
  key.n = n;
  key.k = k;
  key.align_a = alignment_of(a);
  key.align_b = alignment_of(b);
  key.align_out = alignment_of(out);
  return key;
}

/// Queues out = alpha · op(a) · op(b) + beta · out by `plan` (alpha and beta of its scale type),
/// with b and a swapped: the transpose trick above.
inline void launch(const Plan& plan, const backend::cuda::BlasLease& lease, cudaStream_t stream, const void* alpha,
                   const void* a, const void* b, const void* beta, void* out) {
  DEVTENSOR_CUBLAS_CHECK(cublasLtMatmul(lease.lt(), plan.desc, alpha, b, plan.b, a, plan.a, beta, out, plan.out, out,
                                        plan.out, &plan.algo, lease.workspace(), lease.workspace_bytes(), stream));
}

}  // namespace lt_matmul_detail

/// Queues c[batch] = op(a[batch]) · op(b[batch]) (c += with `accumulate`) for float16 or bfloat16
/// operands (row-major, contiguous) as one cublasLtMatmul on `lease`'s stream of GPU `ordinal`,
/// the caller's device current: float32 accumulation and scaling, the algorithm cuBLASLt's
/// heuristic picks for the problem, kept as a plan. false, nothing queued, when it has none.
template <class T>
requires is_sixteen_bit_float_v<T>
bool run_sixteen_bit_gemm(int ordinal, cudaStream_t stream, const backend::cuda::BlasLease& lease, bool transpose_a,
                          bool transpose_b, std::int64_t batches, std::int64_t m, std::int64_t n, std::int64_t k,
                          const T* a, const T* b, T* c, bool accumulate) {
  namespace detail = lt_matmul_detail;
  auto key = detail::key_of(ordinal, stream, std::is_same_v<T, float16> ? DType::DT_HALF : DType::DT_BFLOAT16,
                            transpose_a, transpose_b, m, n, k, a, b, c);
  key.batches = batches;
  const detail::Plan& plan = detail::plan_for(key, lease);
  if (!plan.usable) return false;
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  detail::launch(plan, lease, stream, &alpha, a, b, &beta, c);
  return true;
}

}  // namespace devtensor::ops::cuda
