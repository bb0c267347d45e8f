#pragma once
/// @file error.hpp
/// @brief Checked CUDA runtime calls: a failure becomes a devtensor error naming the CUDA error.
///
/// Needs the devtensor::cuda component (cudart headers). Runtime API only: devtensor never links
/// the driver library (the CUDA toolkit's libcuda stub has a SONAME that does not exist on machines without a GPU).

#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

#include "devtensor/core/error.hpp"

namespace devtensor::backend::cuda {

/// "cudaErrorMemoryAllocation (out of memory)".
inline std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

/// Throws the devtensor error matching `status` when it is not cudaSuccess. The sticky last error
/// is cleared first, so the next check does not report this failure again.
inline void check(cudaError_t status, std::string_view what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  const std::string message = "CUDA call " + std::string(what) + " failed: " + describe(status);
  switch (status) {
    case cudaErrorMemoryAllocation: throw ResourceExhaustedError(message);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice: throw InvalidArgumentError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: throw FailedPreconditionError(message);
    default: throw InternalError(message);
  }
}

}  // namespace devtensor::backend::cuda

/// DEVTENSOR_CUDA_CHECK(cudaMalloc(&p, n)): the call's text goes into the message.
#define DEVTENSOR_CUDA_CHECK(call) ::devtensor::backend::cuda::check((call), #call)
