#pragma once
/// @file context.hpp
/// @brief The Context: the process's one run-once initialisation, and the devices, allocators and
/// streams it freezes.
///
/// One Context per process (config.hpp explains the export). It holds the configuration
/// (configuration_store.hpp checks each setting) and applies the freeze rule: a setter accepts the
/// current value silently and fails with FailedPreconditionError once the Context is initialised,
/// the message saying what initialised it. Initialisation runs discovery (discovery.hpp), builds
/// the logical devices (logical_devices.hpp), their allocators (device_allocators.hpp) and
/// streams; they never change afterwards, so readers need no lock once initialised() is true.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/core/source_location.hpp"
#include "devtensor/device/configuration_store.hpp"
#include "devtensor/device/device_allocators.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/device_set.hpp"
#include "devtensor/device/discovery.hpp"
#include "devtensor/device/driver_probe.hpp"
#include "devtensor/device/environment.hpp"
#include "devtensor/device/logical_devices.hpp"
#include "devtensor/device/memory_limits.hpp"
#include "devtensor/device/physical.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/bfc.hpp"
#include "devtensor/memory/sub_allocators.hpp"

namespace devtensor {

/// The process-wide device context. Use the free functions of devtensor::config for
/// configuration; ops and the placer read the logical devices from here.
class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The one Context of this process.
  DEVTENSOR_EXPORT static Context& global();

  // --- physical devices ---------------------------------------------------------------------

  /// Discovers physical devices once (never initialises). Fixes the simulated-GPU setting.
  const std::vector<PhysicalDeviceInfo>& physical_devices(std::string_view trigger = "list_physical_devices()",
                                                          SourceLocation where = SourceLocation::current()) {
    if (!discovered_.load(std::memory_order_acquire)) [[unlikely]]
      discover(trigger, CallSite::of(where));
    return physical_;
  }

  /// Registers the source of real GPUs (the CUDA backend does this from a static initialiser).
  void register_gpu_platform(const GpuPlatform* platform) noexcept {
    gpu_platform_.store(platform, std::memory_order_release);
  }
  [[nodiscard]] const GpuPlatform* gpu_platform() const noexcept {
    return gpu_platform_.load(std::memory_order_acquire);
  }

  /// Test support: replaces the driver probe that discovery asks, when this program has no GPU
  /// platform, how many GPUs it is leaving unused (reset_for_testing restores the real one).
  void set_gpu_driver_probe_for_testing(detail::GpuDriverProbe probe) noexcept {
    gpu_driver_probe_.store(probe, std::memory_order_release);
  }
  /// Why the platform reported no GPUs (e.g. "CUDA driver version is insufficient ..."), or "".
  [[nodiscard]] std::string gpu_platform_status();

  // --- configuration ---------------------------------------------------------

  void set_simulated_gpus(SimulatedGpus value);

  void set_visible_devices(const std::vector<config::PhysicalDevice>& devices, std::string_view device_type);

  std::vector<config::PhysicalDevice> visible_devices(std::string_view device_type);

  void set_logical_device_configuration(const config::PhysicalDevice& device,
                                        const std::vector<config::LogicalDeviceConfiguration>& configs);

  std::optional<std::vector<config::LogicalDeviceConfiguration>> logical_device_configuration(
      const config::PhysicalDevice& device);

  void set_memory_growth(const config::PhysicalDevice& device, bool enable);

  std::optional<bool> memory_growth(const config::PhysicalDevice& device);

  void set_memory_fraction(double fraction);
  double memory_fraction();

  void set_use_unified_memory(bool enable);

  void set_gpu_system_memory_size_in_mb(std::int64_t mb);

  /// How long an allocation that may wait (a tensor's) waits for other threads to free memory
  /// before it reports OOM (TensorFlow: 10 s). Beyond TensorFlow: configurable.
  void set_allocation_retry_timeout(std::chrono::milliseconds timeout);

  /// The limit of the CPUs' shared allocator, cpu_bfc (default 0: the host's physical memory).
  /// Beyond TensorFlow, which has none: a cap for containers whose memory limit is below what
  /// the host reports, and for tests and fuzzers that must fail fast rather than page.
  void set_host_memory_limit(std::uint64_t bytes);

  /// config::threading's settings (TensorFlow's intra_op/inter_op_parallelism_threads), frozen at
  /// initialisation like the devices' (0: the system picks).
  void set_parallelism_threads(Parallelism which, int threads);
  [[nodiscard]] int parallelism_threads(Parallelism which);

  // Soft placement and placement logging may change at any time, as in TensorFlow.
  void set_soft_device_placement(bool enable) noexcept { soft_placement_.store(enable); }
  [[nodiscard]] bool soft_device_placement() const noexcept { return soft_placement_.load(); }
  void set_log_device_placement(bool enable) noexcept { log_placement_.store(enable); }
  [[nodiscard]] bool log_device_placement() const noexcept { return log_placement_.load(); }

  // --- initialisation -----------------------------------------------------------------------

  [[nodiscard]] bool initialized() const noexcept { return initialized_.load(std::memory_order_acquire); }

  /// Initialises once: discovers devices, builds the logical devices from the configuration and
  /// freezes it. `trigger` names the call for later error messages.
  /// @throws InvalidArgumentError for an inconsistent configuration (the Context stays
  /// uninitialised, so the configuration can still be fixed).
  void ensure_initialized(std::string_view trigger, SourceLocation where = SourceLocation::current()) {
    if (!initialized()) [[unlikely]]
      initialize(trigger, CallSite::of(where));
  }
  /// The same for a call site an op's options captured.
  void ensure_initialized(std::string_view trigger, const CallSite& where) {
    if (!initialized()) [[unlikely]]
      initialize(trigger, where);
  }

  /// Every logical device, CPUs first, then GPUs, as the immutable DeviceSet (initialises).
  const DeviceSet& devices(std::string_view trigger = "list_logical_devices()",
                           SourceLocation where = SourceLocation::current()) {
    ensure_initialized(trigger, where);
    return devices_;
  }

  /// The DeviceSet without the initialisation check: for the placer's hot path, which has made it.
  [[nodiscard]] const DeviceSet& initialized_devices() const noexcept { return devices_; }

  /// Changes whenever the set of logical devices may have changed (initialisation, reset), so
  /// caches keyed on devices know when to forget.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

  /// What initialised the Context ("" before initialisation).
  std::string initialization_trigger();

  /// The allocator of a logical device (initialises). CPUs share one host allocator.
  /// @throws InvalidArgumentError for a Device that is not one of devices().
  memory::Allocator& allocator(const Device& device);
  memory::Allocator& allocator(std::size_t logical_index);

  /// Test support: forgets configuration, discovery and initialisation, as in a fresh process.
  /// Only for tests that hold no tensors or other objects tied to the devices.
  void reset_for_testing();

 private:
  std::mutex mutex_;
  std::atomic<bool> discovered_{false};
  std::atomic<bool> initialized_{false};
  std::atomic<bool> soft_placement_{true};  // TF2 eager default
  std::atomic<bool> log_placement_{false};
  std::atomic<const GpuPlatform*> gpu_platform_{nullptr};
  std::atomic<detail::GpuDriverProbe> gpu_driver_probe_{&detail::count_nvidia_driver_gpus};
  detail::Configuration configuration_;
  std::vector<PhysicalDeviceInfo> physical_;
  DeviceSet devices_;
  std::atomic<std::uint64_t> epoch_{1};
  std::vector<std::shared_ptr<memory::SimulatedDeviceMemory>> simulated_memory_;  // by physical index
  SimulatedGpus discovered_simulated_;
  std::string discovery_trigger_;
  std::string init_trigger_;
  std::string gpu_platform_status_;
  memory::DeviceMemoryFunctions gpu_memory_functions_{nullptr, nullptr};
  mutable std::vector<std::pair<LogSeverity, std::string>> pending_logs_;

  /// ensure_initialized's work: once, under mutex_; the lines it logs after releasing it.
  void initialize(std::string_view trigger, const CallSite& where);
  void initialize_locked(std::string_view trigger, const CallSite& where);

  /// Lines produced while mutex_ is held; ensure_initialized logs them once it is released.
  void defer_log(LogSeverity severity, std::string line) const {
    pending_logs_.emplace_back(severity, std::move(line));
  }

  static std::string describe_trigger(std::string_view trigger, const CallSite& where);

  void require_known(const config::PhysicalDevice& device);

  void require_uninitialized_locked(std::string_view key_phrase) const;

  std::vector<config::PhysicalDevice> visible_locked() const;

  /// physical_devices' first call: discovers under mutex_, logs once it is released.
  void discover(std::string_view trigger, const CallSite& where);
  void discover_locked(std::string_view trigger, const CallSite& where);

  /// One stream per logical real GPU, at the virtual device's priority (CUDA's default, 0, when
  /// none was configured). Streams are never destroyed at exit: the CUDA runtime may already be
  /// gone when static destructors run (reset_for_testing destroys them).
  void create_streams_locked(std::vector<Device>& logical);
  void destroy_streams_locked() noexcept {
    for (const auto& d : devices_)
      if (d.stream && d.platform) d.platform->destroy_stream(d.platform_ordinal, d.stream);
  }
};

/// The process's devices, initialising on first use (`trigger` and `where` name the call for later
/// configuration errors). The entry for code that turns the user's device names into Devices
/// once — the placer, strategies, cluster resolvers, input pipelines; everything below them
/// receives Devices as values and never looks the Context up.
inline const DeviceSet& device_set(std::string_view trigger, SourceLocation where = SourceLocation::current()) {
  return Context::global().devices(trigger, where);
}

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::string Context::gpu_platform_status() {
  std::lock_guard lock(mutex_);
  return gpu_platform_status_;
}

DEVTENSOR_DEFINITION void Context::set_simulated_gpus(SimulatedGpus value) {
  detail::check_simulated_gpus(value);
  std::lock_guard lock(mutex_);
  if (discovered_.load()) {
    if (discovered_simulated_ == value) return;
    throw FailedPreconditionError(
        "Simulated GPUs cannot be modified after physical devices were discovered. "
        "devtensor discovered them in " +
        discovery_trigger_ + ". Call set_simulated_gpus before list_physical_devices and before any other use.");
  }
  configuration_.simulated_gpus = value;
}

DEVTENSOR_DEFINITION void Context::set_visible_devices(const std::vector<config::PhysicalDevice>& devices,
                                                       std::string_view device_type) {
  const auto& physical = physical_devices();
  std::lock_guard lock(mutex_);
  auto next = detail::visible_devices_after(physical, visible_locked(), devices, device_type);
  if (next == visible_locked()) return;
  require_uninitialized_locked("Visible devices cannot be modified after being initialized");
  configuration_.visible_devices = std::move(next);
}

DEVTENSOR_DEFINITION std::vector<config::PhysicalDevice> Context::visible_devices(std::string_view device_type) {
  physical_devices();
  std::lock_guard lock(mutex_);
  std::vector<config::PhysicalDevice> out;
  for (const auto& d : visible_locked())
    if (device_type.empty() || d.device_type == device_type) out.push_back(d);
  return out;
}

DEVTENSOR_DEFINITION void Context::set_logical_device_configuration(
    const config::PhysicalDevice& device, const std::vector<config::LogicalDeviceConfiguration>& configs) {
  require_known(device);
  detail::check_virtual_devices(device, configs);
  std::lock_guard lock(mutex_);
  auto it = configuration_.virtual_devices.find(device.name);
  if (it != configuration_.virtual_devices.end() && it->second == configs) return;
  require_uninitialized_locked("Virtual devices cannot be modified after being initialized");
  configuration_.virtual_devices[device.name] = configs;
}

DEVTENSOR_DEFINITION std::optional<std::vector<config::LogicalDeviceConfiguration>>
Context::logical_device_configuration(const config::PhysicalDevice& device) {
  require_known(device);
  std::lock_guard lock(mutex_);
  auto it = configuration_.virtual_devices.find(device.name);
  if (it == configuration_.virtual_devices.end()) return std::nullopt;
  return it->second;
}

DEVTENSOR_DEFINITION void Context::set_memory_growth(const config::PhysicalDevice& device, bool enable) {
  require_known(device);
  std::lock_guard lock(mutex_);
  if (configuration_.virtual_devices.count(device.name))
    throw InvalidArgumentError("Cannot set memory growth on device when virtual devices configured");
  if (device.device_type != gpu_device_type)
    throw InvalidArgumentError("Cannot set memory growth on non-GPU and non-Pluggable devices");
  auto it = configuration_.memory_growth.find(device.name);
  if (it != configuration_.memory_growth.end() && it->second == enable) return;
  require_uninitialized_locked("Physical devices cannot be modified after being initialized");
  configuration_.memory_growth[device.name] = enable;
}

DEVTENSOR_DEFINITION std::optional<bool> Context::memory_growth(const config::PhysicalDevice& device) {
  require_known(device);
  std::lock_guard lock(mutex_);
  auto it = configuration_.memory_growth.find(device.name);
  if (it == configuration_.memory_growth.end()) return std::nullopt;
  return it->second;
}

DEVTENSOR_DEFINITION void Context::set_memory_fraction(double fraction) {
  detail::check_memory_fraction(fraction);
  std::lock_guard lock(mutex_);
  if (configuration_.memory_fraction == fraction) return;
  require_uninitialized_locked("GPU memory fraction cannot be modified after being initialized");
  configuration_.memory_fraction = fraction;
}

DEVTENSOR_DEFINITION double Context::memory_fraction() {
  std::lock_guard lock(mutex_);
  return configuration_.memory_fraction;
}

DEVTENSOR_DEFINITION void Context::set_use_unified_memory(bool enable) {
  std::lock_guard lock(mutex_);
  if (configuration_.use_unified_memory == enable) return;
  require_uninitialized_locked("Unified memory cannot be modified after being initialized");
  configuration_.use_unified_memory = enable;
}

DEVTENSOR_DEFINITION void Context::set_gpu_system_memory_size_in_mb(std::int64_t mb) {
  detail::check_gpu_system_memory_size_in_mb(mb);
  std::lock_guard lock(mutex_);
  if (configuration_.gpu_system_memory_size_in_mb == mb) return;
  require_uninitialized_locked("GPU system memory size cannot be modified after being initialized");
  configuration_.gpu_system_memory_size_in_mb = mb;
}

DEVTENSOR_DEFINITION void Context::set_allocation_retry_timeout(std::chrono::milliseconds timeout) {
  detail::check_retry_timeout(timeout);
  std::lock_guard lock(mutex_);
  if (configuration_.retry_timeout == timeout) return;
  require_uninitialized_locked("The allocation retry timeout cannot be modified after being initialized");
  configuration_.retry_timeout = timeout;
}

DEVTENSOR_DEFINITION void Context::set_host_memory_limit(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (configuration_.host_memory_limit == bytes) return;
  require_uninitialized_locked("The host memory limit cannot be modified after being initialized");
  configuration_.host_memory_limit = bytes;
}

DEVTENSOR_DEFINITION void Context::set_parallelism_threads(Parallelism which, int threads) {
  std::lock_guard lock(mutex_);
  int& current = which == Parallelism::intra_op ? configuration_.intra_op_threads : configuration_.inter_op_threads;
  if (current == threads) return;
  require_uninitialized_locked(which == Parallelism::intra_op
                                   ? "Intra op parallelism cannot be modified after initialization"
                                   : "Inter op parallelism cannot be modified after initialization");
  current = threads;
}

DEVTENSOR_DEFINITION int Context::parallelism_threads(Parallelism which) {
  std::lock_guard lock(mutex_);
  return which == Parallelism::intra_op ? configuration_.intra_op_threads : configuration_.inter_op_threads;
}

DEVTENSOR_DEFINITION std::string Context::initialization_trigger() {
  std::lock_guard lock(mutex_);
  return init_trigger_;
}

DEVTENSOR_DEFINITION memory::Allocator& Context::allocator(const Device& device) {
  ensure_initialized("the first tensor allocation");
  for (const auto& d : devices_)
    if (&d == &device) return *d.allocator;
  throw InvalidArgumentError("allocator(): " + device.full_name +
                             " is not a logical device of this Context (pass an element of "
                             "Context::devices(), not a copy)");
}

DEVTENSOR_DEFINITION memory::Allocator& Context::allocator(std::size_t logical_index) {
  ensure_initialized("the first tensor allocation");
  if (logical_index >= devices_.size())
    throw InvalidArgumentError("allocator(): there is no logical device " + std::to_string(logical_index) +
                               " (this Context has " + std::to_string(devices_.size()) + ")");
  return *devices_[logical_index].allocator;
}

DEVTENSOR_DEFINITION void Context::reset_for_testing() {
  std::lock_guard lock(mutex_);
  configuration_ = {};
  destroy_streams_locked();
  devices_ = {};  // the allocators go with their devices: every region is returned
  simulated_memory_.clear();
  physical_.clear();
  discovered_simulated_ = {};
  discovery_trigger_.clear();
  init_trigger_.clear();
  gpu_platform_status_.clear();
  gpu_driver_probe_.store(&detail::count_nvidia_driver_gpus);
  soft_placement_.store(true);
  log_placement_.store(false);
  epoch_.fetch_add(1);
  discovered_.store(false);
  initialized_.store(false);
}

DEVTENSOR_DEFINITION void Context::require_known(const config::PhysicalDevice& device) {
  const auto& physical = physical_devices();
  if (std::none_of(physical.begin(), physical.end(), [&](const auto& p) { return p.device == device; }))
    throw InvalidArgumentError("Unrecognized device: " + device.repr());
}

DEVTENSOR_DEFINITION void Context::require_uninitialized_locked(std::string_view key_phrase) const {
  if (initialized_.load())
    throw FailedPreconditionError(std::string(key_phrase) + ". devtensor was initialized by " + init_trigger_ +
                                  ". Configure devices before the first op, tensor, "
                                  "list_logical_devices() or strategy.");
}

DEVTENSOR_DEFINITION void Context::discover(std::string_view trigger, const CallSite& where) {
  std::vector<std::pair<LogSeverity, std::string>> lines;
  {
    std::lock_guard lock(mutex_);
    discover_locked(trigger, where);
    lines.swap(pending_logs_);
  }
  for (auto& [severity, line] : lines) log(severity, line);
}

DEVTENSOR_DEFINITION Context& Context::global() {
  static Context context;
  return context;
}

DEVTENSOR_DEFINITION void Context::initialize(std::string_view trigger, const CallSite& where) {
  std::vector<std::pair<LogSeverity, std::string>> lines;
  {
    std::lock_guard lock(mutex_);
    if (initialized_.load()) return;
    try {
      initialize_locked(trigger, where);
    } catch (...) {
      lines.swap(pending_logs_);
      for (auto& [severity, line] : lines) log(severity, line);
      throw;
    }
    lines.swap(pending_logs_);
  }
  // Logged without the lock held: a log sink may call back into devtensor.
  for (auto& [severity, line] : lines) log(severity, line);
}

DEVTENSOR_DEFINITION void Context::initialize_locked(std::string_view trigger, const CallSite& where) {
  discover_locked(trigger, where);
  auto logical = detail::build_logical_devices(configuration_, physical_, visible_locked(), pending_logs_);
  if (const auto* platform = gpu_platform()) gpu_memory_functions_ = {platform->allocate, platform->deallocate};
  auto allocators = detail::build_allocators(logical, physical_, configuration_, &gpu_memory_functions_, pending_logs_);
  simulated_memory_ = std::move(allocators.simulated_memory);
  create_streams_locked(logical);
  std::size_t physical_gpus = 0;
  for (const auto& p : physical_) physical_gpus += p.device.device_type == gpu_device_type ? 1u : 0u;
  for (std::size_t i = 0; i < logical.size(); ++i) {
    auto& d = logical[i];
    d.allocator = std::move(allocators.by_logical[i]);
    if (d.real_gpu()) {
      d.platform = gpu_platform();
      d.pci_bus_id = physical_[static_cast<std::size_t>(d.physical_index)].properties.pci_bus_id;
    }
  }
  devices_ = DeviceSet(std::move(logical), physical_gpus);
  init_trigger_ = describe_trigger(trigger, where);
  epoch_.fetch_add(1);
  initialized_.store(true, std::memory_order_release);
  for (const auto& d : devices_)
    if (d.device_type == gpu_device_type)
      defer_log(LogSeverity::info, "Created device " + d.full_name + " with " + std::to_string(d.memory_limit >> 20) +
                                       " MB memory:  -> " + d.physical_device_desc);
}

DEVTENSOR_DEFINITION std::string Context::describe_trigger(std::string_view trigger, const CallSite& where) {
  // devtensor's own headers are not where the user should look: a location inside them (a
  // default argument taken in the library) is left out rather than printed.
  constexpr std::string_view this_file = __FILE__;
  static_assert(this_file.ends_with("device/context.hpp"));
  constexpr std::string_view library_root =
      this_file.substr(0, this_file.size() - std::string_view("device/context.hpp").size());
  std::string out(trigger);
  const std::string_view file = where.file ? where.file : "";
  if (!file.empty() && !file.starts_with(library_root))
    out += std::string(" at ") + std::string(file) + ":" + std::to_string(where.line);
  return out;
}

DEVTENSOR_DEFINITION std::vector<config::PhysicalDevice> Context::visible_locked() const {
  if (configuration_.visible_devices) return *configuration_.visible_devices;
  std::vector<config::PhysicalDevice> all;
  for (const auto& p : physical_) all.push_back(p.device);
  return all;
}

DEVTENSOR_DEFINITION void Context::discover_locked(std::string_view trigger, const CallSite& where) {
  if (discovered_.load()) return;
  SimulatedGpus simulated;
  if (configuration_.simulated_gpus) {
    simulated = *configuration_.simulated_gpus;
  } else {
    if (const auto env = detail::getenv_value("DEVTENSOR_SIMULATED_GPUS")) simulated = parse_simulated_gpus(*env);
  }

  auto found = detail::discover_physical_devices(gpu_platform(), gpu_driver_probe_.load(std::memory_order_acquire),
                                                 simulated, gpu_platform_status_, pending_logs_);
  physical_ = std::move(found);
  discovered_simulated_ = simulated;
  discovery_trigger_ = describe_trigger(trigger, where);
  discovered_.store(true, std::memory_order_release);
}

DEVTENSOR_DEFINITION void Context::create_streams_locked(std::vector<Device>& logical) {
  const auto* platform = gpu_platform();
  for (auto& d : logical) {
    if (!d.is_gpu || d.simulated || !platform) continue;
    std::string error;
    d.stream = platform->create_stream(d.platform_ordinal, d.priority.value_or(0), &error);
    if (!d.stream) {
      for (auto& done : logical)
        if (done.stream) platform->destroy_stream(done.platform_ordinal, std::exchange(done.stream, nullptr));
      throw InternalError("Could not create a CUDA stream for " + d.full_name + ": " + error);
    }
  }
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
