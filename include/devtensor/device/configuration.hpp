#pragma once
/// @file configuration.hpp
/// @brief The configuration API: devtensor::config, config::experimental and debugging
/// (TensorFlow's tf.config and tf.debugging).
///
/// Setters validate their arguments (InvalidArgumentError), return silently when the value does
/// not change, and otherwise throw FailedPreconditionError once the Context is initialised. What
/// initialises it: list_logical_devices(), device_lib::list_local_devices(), the first tensor or op,
/// memory-stats queries and distribution strategies. list_physical_devices() does not.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/onednn_options.hpp"  // config::experimental::enable_onednn_opts
#include "devtensor/core/source_location.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/physical.hpp"

namespace devtensor {
namespace config {

/// The physical devices of `device_type` ("CPU", "GPU"; "" for all): CPU first, then GPUs.
/// Does not initialise; fixes the simulated-GPU setting.
std::vector<PhysicalDevice> list_physical_devices(std::string_view device_type = "",
                                                  SourceLocation where = SourceLocation::current());

/// The logical devices of `device_type` ("" for all); initialises the Context.
std::vector<LogicalDevice> list_logical_devices(std::string_view device_type = "",
                                                SourceLocation where = SourceLocation::current());

/// Makes only `devices` visible among those of `device_type` ("" replaces the whole list).
/// Hidden devices get no logical devices. The CPU cannot be hidden.
inline void set_visible_devices(const std::vector<PhysicalDevice>& devices, std::string_view device_type = "") {
  Context::global().set_visible_devices(devices, device_type);
}
inline void set_visible_devices(const PhysicalDevice& device, std::string_view device_type = "") {
  Context::global().set_visible_devices({device}, device_type);
}
inline std::vector<PhysicalDevice> get_visible_devices(std::string_view device_type = "") {
  return Context::global().visible_devices(device_type);
}

/// Splits a physical device into logical devices: several CPUs (empty configurations), or several
/// GPUs with a memory_limit_mb each (MiB; the limit counts only the allocator's own reservations).
inline void set_logical_device_configuration(const PhysicalDevice& device,
                                             const std::vector<LogicalDeviceConfiguration>& configs) {
  Context::global().set_logical_device_configuration(device, configs);
}
inline std::optional<std::vector<LogicalDeviceConfiguration>> get_logical_device_configuration(
    const PhysicalDevice& device) {
  return Context::global().logical_device_configuration(device);
}

/// Soft placement (default true, as in TF2 eager): an op whose requested device does not exist or
/// has no kernel for it runs on the best device that does. May change at any time.
inline void set_soft_device_placement(bool enabled) noexcept { Context::global().set_soft_device_placement(enabled); }
inline bool get_soft_device_placement() noexcept { return Context::global().soft_device_placement(); }

/// Simulated GPUs: `count` GPUs of `memory_bytes` each, in host memory. Takes
/// precedence over DEVTENSOR_SIMULATED_GPUS; fixed when physical devices are first discovered.
inline void set_simulated_gpus(int count, std::uint64_t memory_bytes = 16 * kGiB) {
  Context::global().set_simulated_gpus({count, memory_bytes});
}

/// TensorFlow's tf.config.threading: thread counts, settable before initialisation (afterwards a
/// different value is a FailedPreconditionError); 0, the default, lets devtensor pick. Negative
/// values are kept, as TensorFlow keeps them.
namespace threading {

/// Threads within one op: the CPU kernels' pool has this many (the caller's and the pool's), read
/// when a kernel first splits its work. 0 or less: DEVTENSOR_CPU_THREADS when set, else one per
/// hardware thread.
inline void set_intra_op_parallelism_threads(int num_threads) {
  Context::global().set_parallelism_threads(Parallelism::intra_op, num_threads);
}
inline int get_intra_op_parallelism_threads() { return Context::global().parallelism_threads(Parallelism::intra_op); }

/// Threads across ops: how many of a graph's independent parts (one per device, Note
/// [Independent parts run at once] in graph/inter_op.hpp) run at once. 1 or a negative value: one
/// after another on the caller's thread; 0: one per hardware thread.
inline void set_inter_op_parallelism_threads(int num_threads) {
  Context::global().set_parallelism_threads(Parallelism::inter_op, num_threads);
}
inline int get_inter_op_parallelism_threads() { return Context::global().parallelism_threads(Parallelism::inter_op); }

}  // namespace threading

namespace experimental {

/// Growth mode for a physical GPU: the allocator starts small and grows instead of reserving its
/// whole limit. All visible GPUs must agree; ignored when virtual devices are configured.
inline void set_memory_growth(const PhysicalDevice& device, bool enable) {
  Context::global().set_memory_growth(device, enable);
}
inline std::optional<bool> get_memory_growth(const PhysicalDevice& device) {
  return Context::global().memory_growth(device);
}

/// TensorFlow's per_process_gpu_memory_fraction: each GPU's limit is total memory x fraction
/// (0: free memory minus a reserve; > 1: unified memory that may oversubscribe into host RAM).
inline void set_memory_fraction(double fraction) { Context::global().set_memory_fraction(fraction); }

/// TensorFlow's experimental.use_unified_memory.
inline void set_use_unified_memory(bool enable) { Context::global().set_use_unified_memory(enable); }

/// TensorFlow's experimental.gpu_system_memory_size_in_mb: memory left to the system on each GPU;
/// the limit becomes free memory minus this (it replaces a fraction).
inline void set_gpu_system_memory_size_in_mb(std::int64_t mb) {
  Context::global().set_gpu_system_memory_size_in_mb(mb);
}

/// Beyond TensorFlow: how long a tensor allocation waits for other threads to free memory before
/// it fails with OOM (default 10 s, as TensorFlow's AllocatorRetry). 0 fails at once.
inline void set_allocation_retry_timeout(std::chrono::milliseconds timeout) {
  Context::global().set_allocation_retry_timeout(timeout);
}

/// Beyond TensorFlow: caps the CPUs' shared allocator (cpu_bfc) at `bytes` (0: the host's
/// physical memory, the default), before initialisation. Larger requests fail at once with
/// ResourceExhaustedError.
inline void set_host_memory_limit(std::uint64_t bytes) { Context::global().set_host_memory_limit(bytes); }

}  // namespace experimental
}  // namespace config

namespace debugging {

/// Logs "Executing op <Op> in device <full name>" for every op (through devtensor's log sink).
inline void set_log_device_placement(bool enabled) noexcept { Context::global().set_log_device_placement(enabled); }
inline bool get_log_device_placement() noexcept { return Context::global().log_device_placement(); }

}  // namespace debugging

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::vector<config::PhysicalDevice> config::list_physical_devices(std::string_view device_type,
                                                                                       SourceLocation where) {
  std::vector<PhysicalDevice> out;
  for (const auto& p : Context::global().physical_devices("list_physical_devices()", where))
    if (device_type.empty() || p.device.device_type == device_type) out.push_back(p.device);
  return out;
}

DEVTENSOR_DEFINITION std::vector<config::LogicalDevice> config::list_logical_devices(std::string_view device_type,
                                                                                     SourceLocation where) {
  std::vector<LogicalDevice> out;
  for (const auto& d : Context::global().devices("list_logical_devices()", where))
    if (device_type.empty() || d.device_type == device_type) out.push_back(d.device);
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS
}  // namespace devtensor
