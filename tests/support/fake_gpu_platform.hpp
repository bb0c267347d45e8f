#pragma once
// A GPU platform made of host memory that records what the Context asks of it: stream creation
// and destruction, and every copy with its ordinals and streams. Tests of the CUDA backend's host
// side (streams, copies, the NCCL engine's plumbing) run on it without a GPU; the CUDA
// implementation of the same interface runs in tests/gpu on a real one.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace devtensor::test {

struct FakeGpuCopy {
  int dst_ordinal;
  void* dst_stream;
  int src_ordinal;
  void* src_stream;
  std::size_t bytes;
};

/// What the platform was asked. Replicas call it from several threads, as they would a real
/// platform, so the calls record under a mutex; tests read the fields once the threads are done.
struct FakeGpuRecorder {
  int gpu_count = 1;
  std::string pci_bus = "0000:00:00";  // GPU i's PCI bus id is "<pci_bus>.<i>": processes share it unless told
  std::vector<std::pair<void*, int>> created;  // stream token, priority
  std::vector<void*> destroyed;
  std::vector<FakeGpuCopy> copies;
  int next_token = 1;
  std::mutex mutex;

  void reset(int gpus) {
    std::lock_guard lock(mutex);
    gpu_count = gpus;
    created.clear();
    destroyed.clear();
    copies.clear();
    next_token = 1;
  }
};
inline FakeGpuRecorder& fake_gpu_recorder() {
  static FakeGpuRecorder recorder;
  return recorder;
}

inline const GpuPlatform fake_gpu_platform{
    "fake",
    [](std::string*) {
      std::lock_guard lock(fake_gpu_recorder().mutex);
      return fake_gpu_recorder().gpu_count;
    },
    [](int ordinal, GpuPlatformDevice* out, std::string*) {
      out->name = "Fake GPU";
      {
        std::lock_guard lock(fake_gpu_recorder().mutex);
        out->pci_bus_id = fake_gpu_recorder().pci_bus + "." + std::to_string(ordinal);
      }
      out->compute_capability_major = 9;
      out->total_memory = std::uint64_t{4} << 30;
      out->free_memory = std::uint64_t{4} << 30;
      out->least_stream_priority = 0;
      out->greatest_stream_priority = -5;
      return true;
    },
    [](int, std::size_t bytes) noexcept { return std::malloc(bytes); },
    [](int, void* p) noexcept { std::free(p); },
    [](int) noexcept { return std::uint64_t{4} << 30; },
    [](int, int priority, std::string*) noexcept {
      auto& r = fake_gpu_recorder();
      std::lock_guard lock(r.mutex);
      void* token = reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.next_token++) << 4);
      r.created.emplace_back(token, priority);
      return token;
    },
    [](int, void* stream) noexcept {
      std::lock_guard lock(fake_gpu_recorder().mutex);
      fake_gpu_recorder().destroyed.push_back(stream);
    },
    [](int, void*, std::string*) noexcept { return true; },
    [](void* dst, int dst_ordinal, void* dst_stream, const void* src, int src_ordinal, void* src_stream,
       std::size_t bytes, std::string*) noexcept {
      {
        std::lock_guard lock(fake_gpu_recorder().mutex);
        fake_gpu_recorder().copies.push_back({dst_ordinal, dst_stream, src_ordinal, src_stream, bytes});
      }
      std::memcpy(dst, src, bytes);
      return true;
    }};

/// Fixture: the fake platform with `gpus` GPUs for one test, taken away again afterwards.
struct FakeGpuPlatform : FreshContext {
  const GpuPlatform* previous = Context::global().gpu_platform();
  explicit FakeGpuPlatform(int gpus = 1) {
    fake_gpu_recorder().reset(gpus);
    Context::global().register_gpu_platform(&fake_gpu_platform);
    testing::reset_context();
  }
  FakeGpuPlatform(const FakeGpuPlatform&) = delete;
  FakeGpuPlatform& operator=(const FakeGpuPlatform&) = delete;
  ~FakeGpuPlatform() {
    testing::reset_context();
    Context::global().register_gpu_platform(previous);
  }
};

}  // namespace devtensor::test
