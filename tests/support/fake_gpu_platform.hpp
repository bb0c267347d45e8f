#pragma once
// A GPU platform made of host memory that records what the Context asks of it: stream creation
// and destruction, and every copy with its ordinals and streams. Tests of the CUDA backend's host
// side (streams, copies, the NCCL engine's plumbing) run on it without a GPU; the CUDA
// implementation of the same interface runs in tests/gpu on a real one.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
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
  std::string pci_bus = "0000:00:00";          // GPU i's PCI bus id is "<pci_bus>.<i>": processes share it unless told
  std::vector<std::pair<void*, int>> created;  // stream token, priority
  std::vector<void*> destroyed;
  std::vector<FakeGpuCopy> copies;
  std::vector<std::pair<void*, void*>> waits;  // wait_for: (stream, the stream it waited for)
  std::vector<std::string> ranges;             // range_push's names, and ")" for each range_pop
  int next_token = 1;
  // Graph capture: the streams being captured (the first began it, the others joined it by waiting
  // for a captured one) refuse synchronisations and host reads, as CUDA's do
  // (cudaErrorStreamCaptureUnsupported), which invalidates the capture; a joined stream whose last
  // work no captured stream waited for makes the capture end in error (cudaErrorStreamCaptureUnjoined).
  std::vector<void*> capturing;
  std::vector<void*> unjoined;
  bool capture_invalidated = false;
  bool refuse_capture = false;  // begin_capture fails (a platform that cannot capture now)
  // false: a launch runs what a real graph would of the fake's work: the fused updates recorded
  // while capturing (fake_gpu_kernels.hpp), with the arguments they had then, and no host code;
  // other ops' results stay the capture's. For tests of what a replay must repeat by itself
  // (ops/capture.hpp).
  bool replays_run_host_work = true;
  std::vector<std::function<void()>> recorded;  // the capture's device work, so far
  int captures = 0;                             // graphs made
  int updates = 0;                              // of those, updates of the previous graph
  int launches = 0;
  int graphs_destroyed = 0;
  std::mutex mutex;

  // Under `mutex`:
  [[nodiscard]] bool in_capture(void* stream) const {
    return std::find(capturing.begin(), capturing.end(), stream) != capturing.end();
  }
  /// `stream` waited for `other`'s work (an event, a peer copy's ordering).
  void wait(void* stream, void* other) {
    if (!in_capture(other)) return;
    if (!in_capture(stream)) {  // a fork: it joins the capture, and must be joined back
      capturing.push_back(stream);
      unjoined.push_back(stream);
    }
    std::erase(unjoined, other);  // joined (or the waiting stream, unjoined in turn, carries it)
  }
  /// Work queued on `stream` (a copy): a forked stream must be joined back after it.
  void work_on(void* stream) {
    if (in_capture(stream) && stream != capturing.front() &&
        std::find(unjoined.begin(), unjoined.end(), stream) == unjoined.end())
      unjoined.push_back(stream);
  }

  void reset(int gpus) {
    std::lock_guard lock(mutex);
    capturing.clear();
    unjoined.clear();
    capture_invalidated = false;
    refuse_capture = false;
    replays_run_host_work = true;
    captures = updates = launches = graphs_destroyed = 0;
    gpu_count = gpus;
    created.clear();
    destroyed.clear();
    copies.clear();
    waits.clear();
    ranges.clear();
    recorded.clear();
    next_token = 1;
  }
};
inline FakeGpuRecorder& fake_gpu_recorder() {
  static FakeGpuRecorder recorder;
  return recorder;
}

inline constexpr const char* kFakeCaptureUnsupported = "operation not permitted when stream is capturing";
struct FakeGpuGraph {
  void (*host_work)(void*);
  void* context;
  std::vector<std::function<void()>> device_work;
};

/// Device work queued on `stream`: recorded into the graph while the stream is captured.
inline void record_device_work(void* stream, std::function<void()> work) {
  auto& r = fake_gpu_recorder();
  std::lock_guard lock(r.mutex);
  if (r.in_capture(stream)) r.recorded.push_back(std::move(work));
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
    [](int, std::size_t bytes) noexcept { return std::malloc(bytes); }, [](int, void* p) noexcept { std::free(p); },
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
    [](int, void* stream, std::string* error) noexcept {
      auto& r = fake_gpu_recorder();
      std::lock_guard lock(r.mutex);
      if (!r.in_capture(stream)) return true;
      r.capture_invalidated = true;
      *error = kFakeCaptureUnsupported;
      return false;
    },
    [](void* dst, int dst_ordinal, void* dst_stream, const void* src, int src_ordinal, void* src_stream,
       std::size_t bytes, std::string* error) noexcept {
      {
        auto& r = fake_gpu_recorder();
        std::lock_guard lock(r.mutex);
        if (dst_ordinal < 0 && r.in_capture(src_stream)) {  // a host read waits for the stream
          r.capture_invalidated = true;
          *error = kFakeCaptureUnsupported;
          return false;
        }
        r.copies.push_back({dst_ordinal, dst_stream, src_ordinal, src_stream, bytes});
        if (dst_ordinal >= 0 && src_ordinal >= 0 && dst_stream != src_stream) {  // GpuPlatform::copy's ordering
          r.wait(dst_stream, src_stream);
          r.work_on(dst_stream);
          r.wait(src_stream, dst_stream);
        }
      }
      std::memcpy(dst, src, bytes);
      return true;
    },
    [](int, void* stream, std::string* error) noexcept {
      auto& r = fake_gpu_recorder();
      std::lock_guard lock(r.mutex);
      if (r.refuse_capture || !r.capturing.empty()) {
        *error = "operation not permitted when stream is capturing";
        return false;
      }
      r.capturing = {stream};
      r.unjoined.clear();
      r.recorded.clear();
      r.capture_invalidated = false;
      return true;
    },
    // No real graphs: the work ran while "capturing", and a replay calls it again.
    // Given the previous graph, updates it, as cudaGraphExecUpdate does when the recording has its shape.
    [](int, void*, void* previous, void (*host_work)(void*), void* context, bool* ran,
       std::string* error) noexcept -> void* {
      auto& r = fake_gpu_recorder();
      std::lock_guard lock(r.mutex);
      r.capturing.clear();
      *ran = true;
      if (r.capture_invalidated) {
        *error = "the capture was invalidated: operation failed due to a previous error during capture";
        return nullptr;
      }
      if (!r.unjoined.empty()) {
        *error = "the capture was invalidated: capture was not joined";
        return nullptr;
      }
      ++r.captures;
      if (previous) {
        ++r.updates;
        *static_cast<FakeGpuGraph*>(previous) = {host_work, context, std::move(r.recorded)};
        return previous;
      }
      return new FakeGpuGraph{host_work, context, std::move(r.recorded)};
    },
    [](int, void* graph, void*, std::string*) noexcept {
      const auto* g = static_cast<FakeGpuGraph*>(graph);
      bool host_work = true;
      {
        std::lock_guard lock(fake_gpu_recorder().mutex);
        ++fake_gpu_recorder().launches;
        host_work = fake_gpu_recorder().replays_run_host_work;
      }
      if (host_work) {
        g->host_work(g->context);
      } else {
        for (const auto& work : g->device_work) work();
      }
      return true;
    },
    [](int, void* graph) noexcept {
      {
        std::lock_guard lock(fake_gpu_recorder().mutex);
        ++fake_gpu_recorder().graphs_destroyed;
      }
      delete static_cast<FakeGpuGraph*>(graph);
    },
    [](int, void* stream, int, void* other, std::string*) noexcept {
      auto& r = fake_gpu_recorder();
      std::lock_guard lock(r.mutex);
      r.waits.emplace_back(stream, other);
      r.wait(stream, other);
      return true;
    },
    [](std::string_view name) noexcept {
      std::lock_guard lock(fake_gpu_recorder().mutex);
      fake_gpu_recorder().ranges.emplace_back(name);
    },
    []() noexcept {
      std::lock_guard lock(fake_gpu_recorder().mutex);
      fake_gpu_recorder().ranges.emplace_back(")");
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
