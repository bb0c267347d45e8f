#pragma once
/// @file stream.hpp
/// @brief Owning CUDA streams and events (RAII, move-only), and the stream of a logical device.
///
/// Every logical real GPU has one stream, created by the Context at initialisation (logical GPUs
/// on one physical GPU each get their own). Ops queue their kernels, cuBLAS calls and copies on it,
/// so work on one logical device runs in the order it was issued, and the BFC allocator may reuse
/// a freed buffer at once: anything that still reads it is earlier on the same stream. Copies
/// between devices order the two streams with events (platform.hpp).

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::backend::cuda {

/// The stream of a logical device: its own for a real GPU; nullptr (never used) otherwise.
inline cudaStream_t stream_of(const Device& device) noexcept { return static_cast<cudaStream_t>(device.stream); }

/// A stream of its own on one device (benchmarks, tests, NCCL). Non-blocking: it does not
/// synchronise with the legacy default stream.
class Stream {
 public:
  /// @param priority CUDA's convention: lower numbers are higher priorities; 0 is the default.
  explicit Stream(int ordinal, int priority = 0) : ordinal_(ordinal) {
    DeviceGuard guard(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : ordinal_(other.ordinal_), stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      reset();
      ordinal_ = other.ordinal_;
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  ~Stream() { reset(); }

  [[nodiscard]] cudaStream_t get() const noexcept { return stream_; }
  [[nodiscard]] int device() const noexcept { return ordinal_; }
  void synchronize() const { DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  int ordinal_ = 0;
  cudaStream_t stream_ = nullptr;

  void reset() noexcept {
    if (!stream_) return;
    if (cudaError_t status = cudaStreamDestroy(std::exchange(stream_, nullptr)); status != cudaSuccess) {
      (void)cudaGetLastError();
      log(LogSeverity::error, "cudaStreamDestroy failed on GPU " + std::to_string(ordinal_) + ": " + describe(status));
    }
  }
};

/// An event on one device. Without timing (the default) it is cheaper to record and wait for.
class Event {
 public:
  explicit Event(int ordinal, bool timing = false) : ordinal_(ordinal) {
    DeviceGuard guard(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : ordinal_(other.ordinal_), event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  ~Event() {
    if (!event_) return;
    if (cudaError_t status = cudaEventDestroy(event_); status != cudaSuccess) {
      (void)cudaGetLastError();
      log(LogSeverity::error, "cudaEventDestroy failed on GPU " + std::to_string(ordinal_) + ": " + describe(status));
    }
  }

  /// Marks the point in `stream` (a stream of this event's device) that waiters wait for.
  void record(cudaStream_t stream) const { DEVTENSOR_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  /// Makes `stream` (any device) wait for the recorded point, without blocking the host.
  void wait_in(cudaStream_t stream) const { DEVTENSOR_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0)); }
  void synchronize() const { DEVTENSOR_CUDA_CHECK(cudaEventSynchronize(event_)); }
  /// Milliseconds from `start` to this event (both timing events, both complete).
  [[nodiscard]] float elapsed_ms_since(const Event& start) const {
    float ms = 0.0F;
    DEVTENSOR_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

 private:
  int ordinal_ = 0;
  cudaEvent_t event_ = nullptr;
};

}  // namespace devtensor::backend::cuda
