#pragma once
/// @file cublas.hpp
/// @brief Checked cuBLAS calls and one cuBLAS handle per (GPU, stream), with a cuBLASLt handle and
/// the workspace they share.
///
/// A handle is bound to one logical device's stream and used under its own mutex (cuBLAS handles
/// must not be used by two threads at once); replicas on different logical devices never share
/// one. Handles live for the process: destroying them from static destructors would race the CUDA
/// runtime's own teardown (PyTorch and TensorFlow leak theirs for the same reason).
///
/// TF32: fp32 GEMMs use TF32 tensor cores (faster, inputs rounded to 10 mantissa bits) while
/// config::experimental::tensor_float_32_execution_enabled() — on by default, as TensorFlow's —
/// and full fp32 (CUBLAS_DEFAULT_MATH) once a program turns it off.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/matmul_options.hpp"

namespace devtensor::backend::cuda {

/// Throws when a cuBLAS call failed: "cuBLAS call <what> failed: CUBLAS_STATUS_... (<text>)".
inline void check_cublas(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string message = "cuBLAS call " + std::string(what) + " failed: " + cublasGetStatusName(status) + " (" +
                              cublasGetStatusString(status) + ")";
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED: throw ResourceExhaustedError(message);
    case CUBLAS_STATUS_INVALID_VALUE: throw InvalidArgumentError(message);
    case CUBLAS_STATUS_NOT_INITIALIZED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
    case CUBLAS_STATUS_NOT_SUPPORTED: throw FailedPreconditionError(message);
    default: throw InternalError(message);
  }
}

}  // namespace devtensor::backend::cuda

#define DEVTENSOR_CUBLAS_CHECK(call) ::devtensor::backend::cuda::check_cublas((call), #call)

namespace devtensor::backend::cuda {

/// What one (GPU, stream) pair calls cuBLAS with.
struct BlasContext {
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt = nullptr;  // cuBLASLt, for GEMMs with epilogues (ops/cuda/gemm_epilogue.hpp)
  void* workspace = nullptr;      // both handles' workspace: their calls are ordered by the stream
  std::size_t workspace_bytes = 0;
};

/// A cuBLAS handle bound to a stream, locked for the duration of one call sequence.
class BlasLease {
 public:
  BlasLease(const BlasContext& context, std::unique_lock<std::mutex> lock)
      : context_(&context), lock_(std::move(lock)) {}
  [[nodiscard]] cublasHandle_t get() const noexcept { return context_->handle; }
  [[nodiscard]] cublasLtHandle_t lt() const noexcept { return context_->lt; }
  [[nodiscard]] void* workspace() const noexcept { return context_->workspace; }
  [[nodiscard]] std::size_t workspace_bytes() const noexcept { return context_->workspace_bytes; }

 private:
  const BlasContext* context_;
  std::unique_lock<std::mutex> lock_;
};

/// The process's cuBLAS handles, one per (device ordinal, stream).
class BlasHandles {
 public:
  DEVTENSOR_EXPORT static BlasHandles& global() {
    static auto* handles = new BlasHandles();  // never destroyed: see the file comment
    return *handles;
  }

  /// The handle for `stream` on GPU `ordinal`, created on first use, with the math mode that
  /// the TF32 setting asks for now. Hold the lease while queuing calls with it.
  BlasLease acquire(int ordinal, cudaStream_t stream) {
    Entry* entry = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto& slot = entries_[{ordinal, stream}];
      if (!slot) {
        auto created = std::make_unique<Entry>();
        DeviceGuard guard(ordinal);
        BlasContext& context = created->context;
        DEVTENSOR_CUBLAS_CHECK(cublasCreate(&context.handle));
        DEVTENSOR_CUBLAS_CHECK(cublasSetStream(context.handle, stream));
        DEVTENSOR_CUBLAS_CHECK(cublasLtCreate(&context.lt));
        set_workspace(ordinal, context);
        slot = std::move(created);
      }
      entry = slot.get();
    }
    std::unique_lock lock(entry->mutex);
    const bool tf32 = config::experimental::tensor_float_32_execution_enabled();
    if (entry->tf32 != tf32) {
      DEVTENSOR_CUBLAS_CHECK(
          cublasSetMathMode(entry->context.handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
      entry->tf32 = tf32;
    }
    return {entry->context, std::move(lock)};
  }

 private:
  struct Entry {
    BlasContext context;
    std::mutex mutex;
    bool tf32 = false;
  };
  std::mutex mutex_;
  std::map<std::pair<int, cudaStream_t>, std::unique_ptr<Entry>> entries_;

  /// A workspace of the handle's own (cuBLAS's recommended size: 32 MiB from Hopper on, 4 MiB
  /// before), so that a call captured into a CUDA graph uses it instead of allocating one per
  /// capture; cuBLASLt calls get it as an argument. After cublasSetStream, which resets it. Never
  /// freed, as the handle.
  static void set_workspace(int ordinal, BlasContext& context) {
    int major = 0;
    DEVTENSOR_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
    const std::size_t bytes = (major >= 9 ? std::size_t{32} : std::size_t{4}) << 20;
    void* workspace = nullptr;
    DEVTENSOR_CUDA_CHECK(cudaMalloc(&workspace, bytes));
    DEVTENSOR_CUBLAS_CHECK(cublasSetWorkspace(context.handle, workspace, bytes));
    context.workspace = workspace;
    context.workspace_bytes = bytes;
  }
};

}  // namespace devtensor::backend::cuda
