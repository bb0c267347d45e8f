#pragma once
/// @file physical.hpp
/// @brief Value types of the configuration API: physical and logical devices and the
/// logical-device configuration (TensorFlow's tf.config.PhysicalDevice, LogicalDevice and
/// LogicalDeviceConfiguration), plus the GPU platform interface the Context discovers GPUs through.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace devtensor {

namespace config {

/// A device the machine has ("/physical_device:GPU:0", "GPU"). Configuration names these.
struct PhysicalDevice {
  std::string name;
  std::string device_type;

  friend bool operator==(const PhysicalDevice&, const PhysicalDevice&) = default;

  /// Python's repr, as TensorFlow's messages print it:
  /// PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU').
  [[nodiscard]] std::string repr() const {
    return "PhysicalDevice(name='" + name + "', device_type='" + device_type + "')";
  }
};

/// A device ops run on ("/device:GPU:0", "GPU"): a physical device, or a slice of one.
struct LogicalDevice {
  std::string name;
  std::string device_type;

  friend bool operator==(const LogicalDevice&, const LogicalDevice&) = default;
};

/// One logical device to create on a physical device (TensorFlow's LogicalDeviceConfiguration).
/// GPUs need memory_limit_mb (MiB, truncated to whole MiB); CPUs take none of the fields.
struct LogicalDeviceConfiguration {
  std::optional<double> memory_limit_mb = std::nullopt;
  std::optional<int> experimental_priority = std::nullopt;
  std::optional<int> experimental_device_ordinal = std::nullopt;

  friend bool operator==(const LogicalDeviceConfiguration&, const LogicalDeviceConfiguration&) = default;
};

}  // namespace config

// --- the GPU platform: what a backend plugs in (src/devtensor_cuda.cu, src/devtensor_nccl.cpp) ----

/// What the Context needs to know about one GPU of a platform.
struct GpuPlatformDevice {
  std::string name;
  std::string pci_bus_id;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  std::uint64_t total_memory = 0;
  std::uint64_t free_memory = 0;
  int least_stream_priority = 0;     // CUDA: 0
  int greatest_stream_priority = 0;  // CUDA: typically -5
};

/// A source of real GPUs. The kernel TU (src/devtensor_cuda.cu, linked by devtensor::cuda)
/// registers the CUDA one; without one the machine has no real GPUs. Plain function pointers, so
/// tests can register a fake platform (tests/support/fake_gpu_platform.hpp).
struct GpuPlatform {
  const char* name;
  /// Number of GPUs; 0 with a reason in `why_none` when there is no driver or no device.
  int (*device_count)(std::string* why_none);
  /// Fills `out` for one ordinal; false with a reason on failure.
  bool (*describe)(int ordinal, GpuPlatformDevice* out, std::string* error);
  /// Device memory for the allocators' regions (cudaMalloc / cudaFree); nullptr on failure.
  void* (*allocate)(int ordinal, std::size_t bytes) noexcept;
  void (*deallocate)(int ordinal, void* p) noexcept;
  /// Free device memory right now (cudaMemGetInfo), for get_memory_overhead.
  std::uint64_t (*free_memory)(int ordinal) noexcept;
  /// One stream per logical GPU (cudaStream_t as void*), created at initialisation with the
  /// virtual device's priority; nullptr with a reason in `error` on failure.
  void* (*create_stream)(int ordinal, int priority, std::string* error) noexcept;
  void (*destroy_stream)(int ordinal, void* stream) noexcept;
  /// Waits for everything queued on `stream`; false with the error text on failure.
  bool (*synchronize)(int ordinal, void* stream, std::string* error) noexcept;
  /// Copies bytes between host (ordinal -1, stream nullptr) and device buffers, ordered after the
  /// work already queued on the devices' streams (tensors are read on the host only after
  /// their device's stream has finished with them):
  ///   device -> host    queued on the source stream, which is then synchronised;
  ///   host -> device    queued on the destination stream (pageable source: staged on return);
  ///   device -> device  the destination stream waits for the source stream, copies (peer or
  ///                     staged by the runtime), and the source stream waits for the copy, so the
  ///                     source buffer is not reused before it has been read.
  /// False with the error text on failure.
  bool (*copy)(void* dst, int dst_ordinal, void* dst_stream, const void* src, int src_ordinal, void* src_stream,
               std::size_t bytes, std::string* error) noexcept;

  // Graph capture (graph/cuda_graph.hpp); nullptr: the platform cannot capture.
  /// Starts recording the work queued on `stream` instead of running it (cudaStreamBeginCapture);
  /// false with the error text when it cannot.
  bool (*begin_capture)(int ordinal, void* stream, std::string* error) noexcept = nullptr;
  /// Ends the recording and instantiates it (cudaStreamEndCapture, cudaGraphInstantiate): the
  /// graph, or nullptr with the error text when something invalidated the capture (a host read).
  /// With `previous` (an earlier graph of the same work, at other addresses), updates it in place
  /// when the recording has its shape (cudaGraphExecUpdate: no new instantiation) and returns it;
  /// otherwise the caller still owns `previous`. `*ran` says whether the recorded work also ran
  /// (CUDA: no; a platform without real graphs: yes), and such a platform replays by calling
  /// `host_work(context)` again.
  void* (*end_capture)(int ordinal, void* stream, void* previous, void (*host_work)(void*), void* context, bool* ran,
                       std::string* error) noexcept = nullptr;
  /// Queues one replay of `graph` on `stream` (cudaGraphLaunch); false with the error text.
  bool (*launch_graph)(int ordinal, void* graph, void* stream, std::string* error) noexcept = nullptr;
  void (*destroy_graph)(int ordinal, void* graph) noexcept = nullptr;
  /// Makes `stream` wait for the work queued so far on `other` (cudaEventRecord on `other`,
  /// cudaStreamWaitEvent on `stream`; any two GPUs), without blocking the host. While `other` is
  /// being captured this brings `stream` into the capture (a fork), and waiting the other way brings
  /// its work back (a join): how one graph spans several GPUs. False with the error text; nullptr:
  /// the platform captures graphs of one GPU only.
  bool (*wait_for)(int ordinal, void* stream, int other_ordinal, void* other, std::string* error) noexcept = nullptr;

  // Profiler ranges (CUDA: NVTX), so that Nsight Systems names the work; nullptr: none.
  /// Opens a range named `name` on the calling thread (nvtxRangePushA), over the kernels it
  /// launches until range_pop closes the innermost one.
  void (*range_push)(std::string_view name) noexcept = nullptr;
  void (*range_pop)() noexcept = nullptr;
};

/// A platform's profiler range (GpuPlatform::range_push and range_pop) around a scope: what a real
/// GPU's op body runs in, named by its op (as timelines name it). Nothing without one.
class PlatformRange {
 public:
  PlatformRange(const GpuPlatform* platform, std::string_view name) noexcept
      : platform_(platform && platform->range_push && platform->range_pop ? platform : nullptr) {
    if (platform_) platform_->range_push(name);
  }
  ~PlatformRange() {
    if (platform_) platform_->range_pop();
  }
  PlatformRange(const PlatformRange&) = delete;
  PlatformRange& operator=(const PlatformRange&) = delete;

 private:
  const GpuPlatform* platform_;
};

/// A collective all-reduce over real GPUs of this process: NCCL. Registered, like the platform,
/// during static initialisation by src/devtensor_nccl.cpp, which linking the devtensor::nccl
/// component adds to the program, so a program "has the NCCL kernel" exactly when it links NCCL
/// (TensorFlow's "Nccl kernel is not found" is the same runtime question).
/// The GPUs of every worker of a multi-worker job as one NCCL communicator: this process's GPUs
/// are ranks first_rank, first_rank + 1, ... of num_ranks. The chief made `unique_id`
/// (ncclGetUniqueId) and the workers' own channel (MPI) gave it to every worker.
struct GpuCliqueAcrossProcesses {
  static constexpr std::size_t unique_id_bytes = 128;  // NCCL_UNIQUE_ID_BYTES
  std::array<std::byte, unique_id_bytes> unique_id{};
  int num_ranks = 0;
  int first_rank = 0;
  /// Unset: calls are stream-ordered and never waited for. Set: each call is waited for, and one
  /// that does not complete in time aborts the communicators and throws DeadlineExceededError.
  std::optional<double> timeout_seconds;
};

struct GpuAllReduceKernel {
  const char* name;
  /// Sums `count` elements of `dtype` (DT_FLOAT, ...) across the ranks: rank i reads send[i] and
  /// writes recv[i] on CUDA ordinal ordinals[i], ordered on streams[i] (cudaStream_t as void*).
  /// @throws InvalidArgumentError (a GPU named twice, a dtype NCCL lacks), InternalError.
  void (*all_reduce_sum)(std::string_view dtype, std::size_t count, std::span<const void* const> send,
                         std::span<void* const> recv, std::span<const int> ordinals, std::span<void* const> streams);
  /// Across processes (nullptr when the kernel cannot): a new communicator id, made on one worker.
  void (*new_unique_id)(std::span<std::byte, GpuCliqueAcrossProcesses::unique_id_bytes> out) = nullptr;
  /// all_reduce_sum over every worker's GPUs of `clique`; this process's are `ordinals` (ranks
  /// first_rank...). The communicators are created on the first call (a collective of every worker).
  /// `what` names the operation in errors.
  /// @throws DeadlineExceededError (clique.timeout_seconds passed), FailedPreconditionError (an
  ///         earlier call timed out), InvalidArgumentError, InternalError.
  void (*all_reduce_sum_across_processes)(const GpuCliqueAcrossProcesses& clique, std::string_view what,
                                          std::string_view dtype, std::size_t count, std::span<const void* const> send,
                                          std::span<void* const> recv, std::span<const int> ordinals,
                                          std::span<void* const> streams) = nullptr;
};

inline std::atomic<const GpuAllReduceKernel*>& gpu_all_reduce_kernel_slot() noexcept {
  static std::atomic<const GpuAllReduceKernel*> slot{nullptr};
  return slot;
}
/// The registered kernel, or nullptr when no translation unit of the program links NCCL.
[[nodiscard]] inline const GpuAllReduceKernel* gpu_all_reduce_kernel() noexcept {
  return gpu_all_reduce_kernel_slot().load(std::memory_order_acquire);
}
/// Installs `kernel` (nullptr uninstalls; tests use this to stand in for NCCL). Returns the one
/// it replaced.
inline const GpuAllReduceKernel* register_gpu_all_reduce_kernel(const GpuAllReduceKernel* kernel) noexcept {
  return gpu_all_reduce_kernel_slot().exchange(kernel, std::memory_order_acq_rel);
}

}  // namespace devtensor
