#pragma once
/// @file device_guard.hpp
/// @brief Switches the current CUDA device for a scope, only when needed (RMM's
/// cuda_set_device_raii, c10's DeviceGuard).
///
/// Note [Restoring without creating a context]
/// The destructor restores the previous device only if the constructor changed it, so a guard for
/// the device that is already current costs two cudaGetDevice calls and creates nothing. The
/// destructor never throws: a failure to restore is logged.

#include <cuda_runtime_api.h>

#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/core/log.hpp"

namespace devtensor::backend::cuda {

class [[nodiscard]] DeviceGuard {
 public:
  /// @throws InvalidArgumentError for an ordinal the runtime does not know.
  explicit DeviceGuard(int ordinal) {
    DEVTENSOR_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != ordinal) {
      DEVTENSOR_CUDA_CHECK(cudaSetDevice(ordinal));
      switched_ = true;
    }
  }
  DeviceGuard() = delete;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard(DeviceGuard&&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  DeviceGuard& operator=(DeviceGuard&&) = delete;

  ~DeviceGuard() {
    if (!switched_) return;
    if (cudaError_t status = cudaSetDevice(previous_); status != cudaSuccess) {
      (void)cudaGetLastError();
      log(LogSeverity::error,
          "DeviceGuard could not restore CUDA device " + std::to_string(previous_) + ": " + describe(status));
    }
  }

  [[nodiscard]] bool switched() const noexcept { return switched_; }

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace devtensor::backend::cuda
