#pragma once
/// @file platform.hpp
/// @brief Real GPU discovery through the CUDA runtime API, registered with the Context.
///
/// Including this header (devtensor.hpp does when the TU links devtensor::cuda) registers the CUDA
/// platform during static initialisation, before main. Without a driver, cudaGetDeviceCount fails
/// (cudaErrorInsufficientDriver, leaving its output unwritten): that means zero GPUs, never an
/// error, and the reason is kept for Context::gpu_platform_status().

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/backend/cuda/stream.hpp"
#include "devtensor/config.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/physical.hpp"

namespace devtensor::backend::cuda {

inline int platform_device_count(std::string* why_none) {
  int count = 0;
  if (cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    (void)cudaGetLastError();
    if (why_none) *why_none = describe(status);
    return 0;
  }
  if (count == 0 && why_none) *why_none = "the CUDA runtime reports no devices";
  return count;
}

inline bool platform_describe(int ordinal, ::devtensor::GpuPlatformDevice* out, std::string* error) {
  try {
    cudaDeviceProp prop{};
    DEVTENSOR_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    out->name = prop.name;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", static_cast<unsigned>(prop.pciDomainID),
                  static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
    out->pci_bus_id = bus;
    out->compute_capability_major = prop.major;
    out->compute_capability_minor = prop.minor;
    out->total_memory = prop.totalGlobalMem;
    DeviceGuard guard(ordinal);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    DEVTENSOR_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    out->free_memory = free_bytes;
    DEVTENSOR_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&out->least_stream_priority, &out->greatest_stream_priority));
    return true;
  } catch (const Error& e) {
    if (error) *error = e.what();
    return false;
  }
}

inline void* platform_allocate(int ordinal, std::size_t bytes) noexcept {
  try {
    DeviceGuard guard(ordinal);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      (void)cudaGetLastError();  // an out-of-memory failure must not stick to the next call
      return nullptr;
    }
    return p;
  } catch (...) {
    return nullptr;
  }
}

/// Never logs at process exit: the Context (a function-local static made before the CUDA runtime
/// starts) is destroyed after the runtime's own teardown, when cudaFree answers
/// cudaErrorCudartUnloading.
inline void platform_deallocate(int ordinal, void* p) noexcept {
  try {
    DeviceGuard guard(ordinal);
    if (cudaError_t status = cudaFree(p); status != cudaSuccess) {
      (void)cudaGetLastError();
      if (status == cudaErrorCudartUnloading) return;  // process exit: the driver frees it all
      log(LogSeverity::error, "cudaFree failed on GPU " + std::to_string(ordinal) + ": " + describe(status));
    }
  } catch (...) {
  }
}

inline std::uint64_t platform_free_memory(int ordinal) noexcept {
  try {
    DeviceGuard guard(ordinal);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return free_bytes;
  } catch (...) {
    return 0;
  }
}

inline void* platform_create_stream(int ordinal, int priority, std::string* error) noexcept {
  try {
    DeviceGuard guard(ordinal);
    cudaStream_t stream = nullptr;
    DEVTENSOR_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
    return stream;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return nullptr;
  }
}

inline void platform_destroy_stream(int ordinal, void* stream) noexcept {
  try {
    DeviceGuard guard(ordinal);
    if (cudaError_t status = cudaStreamDestroy(static_cast<cudaStream_t>(stream)); status != cudaSuccess) {
      (void)cudaGetLastError();
      if (status == cudaErrorCudartUnloading) return;
      log(LogSeverity::error, "cudaStreamDestroy failed on GPU " + std::to_string(ordinal) + ": " + describe(status));
    }
  } catch (...) {
  }
}

inline bool platform_synchronize(int ordinal, void* stream, std::string* error) noexcept {
  try {
    DeviceGuard guard(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

/// Stream-ordered copies between host (ordinal -1) and device buffers; see GpuPlatform::copy.
inline bool platform_copy(void* dst, int dst_ordinal, void* dst_stream_ptr, const void* src, int src_ordinal,
                          void* src_stream_ptr, std::size_t bytes, std::string* error) noexcept {
  const auto dst_stream = static_cast<cudaStream_t>(dst_stream_ptr);
  const auto src_stream = static_cast<cudaStream_t>(src_stream_ptr);
  try {
    if (dst_ordinal < 0 && src_ordinal < 0) {
      std::memcpy(dst, src, bytes);
    } else if (dst_ordinal < 0) {  // device -> host: the host reads it next, so wait
      DeviceGuard guard(src_ordinal);
      DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, src_stream));
      DEVTENSOR_CUDA_CHECK(cudaStreamSynchronize(src_stream));
    } else if (src_ordinal < 0) {  // host -> device: a pageable source is staged before return
      DeviceGuard guard(dst_ordinal);
      DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, dst_stream));
    } else if (dst_stream == src_stream) {  // within one logical device
      DeviceGuard guard(dst_ordinal);
      DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dst_stream));
    } else {
      // The destination stream waits for the source's pending writes; the source stream then
      // waits for the copy, so the source buffer cannot be reused while it is still being read.
      const Event source_ready(src_ordinal);
      {
        DeviceGuard guard(src_ordinal);
        source_ready.record(src_stream);
      }
      const Event copied(dst_ordinal);
      DeviceGuard guard(dst_ordinal);
      source_ready.wait_in(dst_stream);
      if (dst_ordinal == src_ordinal)
        DEVTENSOR_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dst_stream));
      else
        DEVTENSOR_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_ordinal, src, src_ordinal, bytes, dst_stream));
      copied.record(dst_stream);
      copied.wait_in(src_stream);
    }
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

/// Relaxed mode: the allocators' cudaMalloc (a BFC region growing) stays legal while capturing;
/// host reads and synchronisations still invalidate the capture, and the caller falls back.
inline bool platform_begin_capture(int ordinal, void* stream, std::string* error) noexcept {
  try {
    DeviceGuard guard(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeRelaxed));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

inline void* platform_end_capture(int ordinal, void* stream, void* previous, void (*)(void*), void*, bool* ran,
                                  std::string* error) noexcept {
  *ran = false;  // the recorded kernels run when the graph is launched
  cudaGraph_t graph = nullptr;
  try {
    DeviceGuard guard(ordinal);
    const cudaError_t ended = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
    if (ended != cudaSuccess) {
      (void)cudaGetLastError();
      if (graph) (void)cudaGraphDestroy(graph);
      if (error) *error = "the capture was invalidated: " + describe(ended);
      return nullptr;
    }
    if (previous) {  // the same kernels at other addresses: new parameters, no new instantiation
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(static_cast<cudaGraphExec_t>(previous), graph, &info) == cudaSuccess) {
        (void)cudaGraphDestroy(graph);
        return previous;
      }
      (void)cudaGetLastError();  // another shape: instantiated anew below
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) {
      (void)cudaGetLastError();
      if (error) *error = "cudaGraphInstantiate failed: " + describe(instantiated);
      return nullptr;
    }
    return exec;
  } catch (const std::exception& e) {
    if (graph) (void)cudaGraphDestroy(graph);
    if (error) *error = e.what();
    return nullptr;
  }
}

inline bool platform_launch_graph(int ordinal, void* graph, void* stream, std::string* error) noexcept {
  try {
    DeviceGuard guard(ordinal);
    DEVTENSOR_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), static_cast<cudaStream_t>(stream)));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

inline void platform_destroy_graph(int ordinal, void* graph) noexcept {
  try {
    DeviceGuard guard(ordinal);
    if (cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)) != cudaSuccess) (void)cudaGetLastError();
  } catch (...) {
  }
}

inline bool platform_wait_for(int ordinal, void* stream, int other_ordinal, void* other, std::string* error) noexcept {
  try {
    const Event queued(other_ordinal);  // destroying a recorded event is legal: the wait keeps its point
    {
      DeviceGuard guard(other_ordinal);
      queued.record(static_cast<cudaStream_t>(other));
    }
    DeviceGuard guard(ordinal);
    queued.wait_in(static_cast<cudaStream_t>(stream));
    return true;
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
}

/// NVTX ranges (header-only NVTX 3: without a profiler attached, a push is a test and a return).
inline void platform_range_push(std::string_view name) noexcept {
  char text[128];  // names are short; NVTX wants a terminated string
  const std::size_t n = std::min(name.size(), sizeof text - 1);
  std::memcpy(text, name.data(), n);
  text[n] = '\0';
  nvtxRangePushA(text);
}
inline void platform_range_pop() noexcept { nvtxRangePop(); }

inline constexpr ::devtensor::GpuPlatform platform{"CUDA",
                                                   &platform_device_count,
                                                   &platform_describe,
                                                   &platform_allocate,
                                                   &platform_deallocate,
                                                   &platform_free_memory,
                                                   &platform_create_stream,
                                                   &platform_destroy_stream,
                                                   &platform_synchronize,
                                                   &platform_copy,
                                                   &platform_begin_capture,
                                                   &platform_end_capture,
                                                   &platform_launch_graph,
                                                   &platform_destroy_graph,
                                                   &platform_wait_for,
                                                   &platform_range_push,
                                                   &platform_range_pop};

/// Registers the CUDA platform once per program, from src/devtensor_cuda.cu (the kernel TU).
inline const bool platform_registered = [] {
  Context::global().register_gpu_platform(&platform);
  return true;
}();

}  // namespace devtensor::backend::cuda
