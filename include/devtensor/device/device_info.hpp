#pragma once
/// @file device_info.hpp
/// @brief What a device is once discovered and configured: the physical device records, the
/// Device value every layer holds (a logical device with its allocator, stream and platform), the
/// simulated-GPU setting, and the byte units they are written in.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "devtensor/device/physical.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/memory/allocator.hpp"

namespace devtensor {

inline constexpr std::uint64_t kKiB = std::uint64_t{1} << 10;
inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

/// The canonical name of the context's first device, where the outermost DeviceScope merges into.
inline constexpr std::string_view kHostCpuDeviceName = "/job:localhost/replica:0/task:0/device:CPU:0";

/// Simulated GPUs: `count` devices of `memory_bytes` each.
struct SimulatedGpus {
  int count = 0;
  std::uint64_t memory_bytes = 16 * kGiB;
  friend bool operator==(const SimulatedGpus&, const SimulatedGpus&) = default;
};

/// A physical device as discovered.
struct PhysicalDeviceInfo {
  config::PhysicalDevice device;
  int index = 0;                 // within its type
  bool simulated = false;        // a simulated GPU
  int platform_ordinal = 0;      // the CUDA ordinal for real GPUs, the index for simulated ones
  GpuPlatformDevice properties;  // GPUs only
};

/// A logical device as a value: what the placer chooses and what tensors' storage, kernels,
/// variables and strategies hold (by reference or pointer), with everything needed to run on it —
/// its allocator, its stream and the GPU platform's operations — so nothing below the placer
/// looks a device up again. Built once at initialisation into the Context's DeviceSet and never
/// changed (TensorFlow's Device* from its DeviceMgr, PyTorch's c10::Device with its guard).
struct Device {
  DeviceSpec spec;               // /job:localhost/replica:0/task:0/device:TYPE:N
  std::string full_name;         // spec.to_string(), kept to avoid re-printing
  config::LogicalDevice device;  // /device:TYPE:N, as list_logical_devices shows it
  std::string device_type;
  int index = 0;                   // N
  int logical_index = -1;          // position in the DeviceSet (CPU:0 is 0)
  int physical_index = 0;          // index into Context::physical_devices()
  std::uint64_t memory_limit = 0;  // bytes; GPUs: the allocator's limit, CPUs: 256 MiB (TF's figure)
  bool allow_growth = false;       // GPUs: the effective growth flag
  bool unified_memory = false;     // GPUs: fraction > 1 or set_use_unified_memory
  std::optional<int> priority;     // GPUs: the virtual device's stream priority
  std::string physical_device_desc;
  std::string pci_bus_id;      // real GPUs: the physical GPU's bus id ("" otherwise)
  std::string limit_source;    // what set memory_limit, for OOM advice
  std::string allocator_name;  // GPU_<i>_bfc, cpu_bfc
  bool is_gpu = false;
  bool simulated = false;     // a simulated GPU: host memory, CPU implementations
  int platform_ordinal = -1;  // the CUDA ordinal of a real GPU, -1 otherwise
  void* stream = nullptr;     // real GPUs: the device's stream (cudaStream_t), else nullptr
  /// The device's allocator (the CPUs share one); tensors' buffers keep it alive.
  std::shared_ptr<memory::Allocator> allocator;
  /// Real GPUs: the platform whose operations copy to and from the device (nullptr otherwise).
  const GpuPlatform* platform = nullptr;

  /// Buffers live in host memory (CPUs and simulated GPUs): CPU kernels can run on them.
  [[nodiscard]] bool host_memory() const noexcept { return !is_gpu || simulated; }
  /// A real GPU: device memory, CUDA bodies.
  [[nodiscard]] bool real_gpu() const noexcept { return is_gpu && !simulated; }
};

}  // namespace devtensor
