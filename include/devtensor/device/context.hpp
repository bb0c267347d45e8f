#pragma once
/// @file context.hpp
/// @brief The Context: physical device discovery, configuration, and the logical devices it
/// freezes at initialisation.
///
/// One Context per process (config.hpp explains the export). Configuration setters validate, accept
/// the current value silently, and fail with FailedPreconditionError once the Context is
/// initialised; the message says what initialised it. Initialisation creates the logical devices,
/// which never change afterwards, so readers need no lock once initialised() is true.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
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
#include "devtensor/device/driver_probe.hpp"
#include "devtensor/device/physical.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/memory/allocator.hpp"
#include "devtensor/memory/bfc.hpp"
#include "devtensor/memory/sub_allocators.hpp"

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

/// Parses DEVTENSOR_SIMULATED_GPUS: "N" or "NxSIZE", SIZE a positive integer followed by KiB, MiB
/// or GiB. @throws InvalidArgumentError "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed".
inline SimulatedGpus parse_simulated_gpus(std::string_view value) {
  const auto fail = [&]() -> InvalidArgumentError {
    return InvalidArgumentError(
        "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed: '" + std::string(value) +
        "'. Valid values are N or NxSIZE with N a non-negative integer and SIZE a positive integer "
        "followed by KiB, MiB or GiB, e.g. 2 or 2x16GiB.");
  };
  const auto digits = [&](std::string_view s, std::uint64_t limit) -> std::uint64_t {
    if (s.empty() || s.size() > 12) throw fail();
    std::uint64_t n = 0;
    for (char c : s) {
      if (!detail::is_ascii_digit(c)) throw fail();
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (n > limit) throw fail();
    return n;
  };
  SimulatedGpus result;
  const auto x = value.find('x');
  result.count = static_cast<int>(digits(value.substr(0, x), 4096));
  if (x == std::string_view::npos) return result;
  std::string_view size = value.substr(x + 1);
  std::uint64_t unit = 0;
  for (auto [suffix, bytes] : {std::pair{std::string_view("KiB"), kKiB}, {"MiB", kMiB}, {"GiB", kGiB}}) {
    if (size.size() > suffix.size() && size.substr(size.size() - suffix.size()) == suffix) {
      unit = bytes;
      size.remove_suffix(suffix.size());
    }
  }
  if (unit == 0) throw fail();
  const std::uint64_t amount = digits(size, (std::uint64_t{1} << 50) / unit);
  if (amount == 0) throw fail();
  result.memory_bytes = amount * unit;
  return result;
}

/// TensorFlow's MinSystemMemory: the device memory left to the system when no fraction is set.
constexpr std::uint64_t min_system_memory(std::uint64_t available, int compute_capability_major) {
  if (available < 2 * kGiB) return 225 * kMiB;
  if (compute_capability_major <= 6) return 500 * kMiB;
  if (compute_capability_major <= 7) return 1050 * kMiB;
  if (compute_capability_major <= 8) return 1536 * kMiB;
  return 1800 * kMiB;
}

/// A physical device as discovered.
struct PhysicalDeviceInfo {
  config::PhysicalDevice device;
  int index = 0;            // within its type
  bool simulated = false;   // a simulated GPU
  int platform_ordinal = 0; // the CUDA ordinal for real GPUs, the index for simulated ones
  detail::GpuPlatformDevice properties;  // GPUs only
};

/// A logical device, fixed at initialisation.
struct LogicalDeviceInfo {
  DeviceSpec spec;                 // /job:localhost/replica:0/task:0/device:TYPE:N
  std::string full_name;           // spec.to_string(), kept to avoid re-printing
  config::LogicalDevice device;    // /device:TYPE:N, as list_logical_devices shows it
  std::string device_type;
  int index = 0;                   // N
  int logical_index = -1;          // position in Context::logical_devices()
  int physical_index = 0;          // index into Context::physical_devices()
  std::uint64_t memory_limit = 0;  // bytes; GPUs: the allocator's limit, CPUs: 256 MiB (TF's figure)
  bool allow_growth = false;       // GPUs: the effective growth flag
  bool unified_memory = false;     // GPUs: fraction > 1 or set_use_unified_memory
  std::optional<int> priority;     // GPUs: the virtual device's stream priority
  std::string physical_device_desc;
  std::string limit_source;        // what set memory_limit, for OOM advice
  std::string allocator_name;      // GPU_<i>_bfc, cpu_bfc
  bool is_gpu = false;
  bool simulated = false;          // a simulated GPU: host memory, CPU implementations
  int platform_ordinal = -1;       // the CUDA ordinal of a real GPU, -1 otherwise
  void* stream = nullptr;          // real GPUs: the device's stream (cudaStream_t), else nullptr
  /// Buffers live in host memory (CPUs and simulated GPUs): CPU kernels can run on them.
  [[nodiscard]] bool host_memory() const noexcept { return !is_gpu || simulated; }
};

namespace detail {

/// The configuration a user assembles before initialisation.
struct Configuration {
  std::optional<SimulatedGpus> simulated_gpus;  // set by the API; wins over the environment
  std::optional<std::vector<config::PhysicalDevice>> visible_devices;  // unset: all visible
  std::map<std::string, std::vector<config::LogicalDeviceConfiguration>> virtual_devices;
  std::map<std::string, bool> memory_growth;
  double memory_fraction = 0.0;
  bool use_unified_memory = false;
  std::int64_t gpu_system_memory_size_in_mb = 0;
  std::chrono::milliseconds retry_timeout{10000};
  std::uint64_t host_memory_limit = 0;  // 0: the host's physical memory
};

inline std::string getenv_string(const char* name, bool* present = nullptr) {
  const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads use it
  if (present) *present = value != nullptr;
  return value ? std::string(value) : std::string();
}

}  // namespace detail

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
  const std::vector<PhysicalDeviceInfo>& physical_devices(
      std::string_view trigger = "list_physical_devices()",
      SourceLocation where = SourceLocation::current()) {
    if (discovered_.load(std::memory_order_acquire)) return physical_;
    std::vector<std::pair<LogSeverity, std::string>> lines;
    {
      std::lock_guard lock(mutex_);
      discover_locked(trigger, where);
      lines.swap(pending_logs_);
    }
    for (auto& [severity, line] : lines) log(severity, line);
    return physical_;
  }

  /// Registers the source of real GPUs (the CUDA backend does this from a static initialiser).
  void register_gpu_platform(const detail::GpuPlatform* platform) noexcept {
    gpu_platform_.store(platform, std::memory_order_release);
  }
  [[nodiscard]] const detail::GpuPlatform* gpu_platform() const noexcept {
    return gpu_platform_.load(std::memory_order_acquire);
  }

  /// Test support: replaces the driver probe that discovery asks, when this program has no GPU
  /// platform, how many GPUs it is leaving unused (reset_for_testing restores the real one).
  void set_gpu_driver_probe_for_testing(detail::GpuDriverProbe probe) noexcept {
    gpu_driver_probe_.store(probe, std::memory_order_release);
  }
  /// Why the platform reported no GPUs (e.g. "CUDA driver version is insufficient ..."), or "".
  [[nodiscard]] std::string gpu_platform_status() {
    std::lock_guard lock(mutex_);
    return gpu_platform_status_;
  }

  // --- configuration ---------------------------------------------------------

  void set_simulated_gpus(SimulatedGpus value) {
    if (value.count < 0)
      throw InvalidArgumentError("set_simulated_gpus: the count must be >= 0, got " +
                                 std::to_string(value.count));
    if (value.count > 0 && value.memory_bytes == 0)
      throw InvalidArgumentError("set_simulated_gpus: each simulated GPU needs memory > 0 bytes");
    std::lock_guard lock(mutex_);
    if (discovered_.load()) {
      if (discovered_simulated_ == value) return;
      throw FailedPreconditionError(
          "Simulated GPUs cannot be modified after physical devices were discovered. "
          "devtensor discovered them in " + discovery_trigger_ +
          ". Call set_simulated_gpus before list_physical_devices and before any other use.");
    }
    configuration_.simulated_gpus = value;
  }

  void set_visible_devices(const std::vector<config::PhysicalDevice>& devices,
                           std::string_view device_type) {
    const auto& physical = physical_devices();
    for (const auto& d : devices) {
      const bool known = std::any_of(physical.begin(), physical.end(),
                                     [&](const auto& p) { return p.device == d; });
      if (!known || (!device_type.empty() && d.device_type != device_type))
        throw InvalidArgumentError("Unrecognized device: " + d.repr());
    }
    for (std::size_t i = 0; i < devices.size(); ++i)
      for (std::size_t j = i + 1; j < devices.size(); ++j)
        if (devices[i] == devices[j])
          throw InvalidArgumentError("visible_device_list contained a duplicate entry: " +
                                     devices[i].repr());
    std::lock_guard lock(mutex_);
    std::vector<config::PhysicalDevice> next;
    for (const auto& d : visible_locked())
      if (!device_type.empty() && d.device_type != device_type) next.push_back(d);
    next.insert(next.end(), devices.begin(), devices.end());
    if (std::none_of(next.begin(), next.end(),
                     [](const auto& d) { return d.device_type == cpu_device_type; }))
      throw InvalidArgumentError(
          "Cannot hide the CPU: devtensor needs /physical_device:CPU:0 visible to run host code "
          "and input pipelines. Pass a device_type (e.g. \"GPU\") to change only that type.");
    if (next == visible_locked()) return;
    require_uninitialized_locked("Visible devices cannot be modified after being initialized");
    configuration_.visible_devices = std::move(next);
  }

  std::vector<config::PhysicalDevice> visible_devices(std::string_view device_type) {
    physical_devices();
    std::lock_guard lock(mutex_);
    std::vector<config::PhysicalDevice> out;
    for (const auto& d : visible_locked())
      if (device_type.empty() || d.device_type == device_type) out.push_back(d);
    return out;
  }

  void set_logical_device_configuration(
      const config::PhysicalDevice& device,
      const std::vector<config::LogicalDeviceConfiguration>& configs) {
    require_known(device);
    if (device.device_type == cpu_device_type) {
      for (const auto& c : configs) {
        if (c.memory_limit_mb)
          throw InvalidArgumentError(
              "Setting memory limit on CPU virtual devices is currently not supported");
        if (c.experimental_priority)
          throw InvalidArgumentError(
              "Setting experimental_priority on CPU virtual  devices is currently not supported");
        if (c.experimental_device_ordinal)
          throw InvalidArgumentError(
              "Setting experimental_device_ordinal on CPU virtual  devices is currently not "
              "supported");
      }
    } else if (device.device_type == gpu_device_type) {
      for (const auto& c : configs) {
        if (!c.memory_limit_mb)
          throw InvalidArgumentError("Setting memory limit is required for GPU virtual devices");
        if (!(*c.memory_limit_mb >= 0.0) || *c.memory_limit_mb > 1e12)
          throw InvalidArgumentError("memory_limit_mb must be a finite number of MiB >= 0, got " +
                                     std::to_string(*c.memory_limit_mb));
      }
    } else {
      throw InvalidArgumentError("Virtual devices are not supported for " + device.device_type);
    }
    std::lock_guard lock(mutex_);
    auto it = configuration_.virtual_devices.find(device.name);
    if (it != configuration_.virtual_devices.end() && it->second == configs) return;
    require_uninitialized_locked("Virtual devices cannot be modified after being initialized");
    configuration_.virtual_devices[device.name] = configs;
  }

  std::optional<std::vector<config::LogicalDeviceConfiguration>> logical_device_configuration(
      const config::PhysicalDevice& device) {
    require_known(device);
    std::lock_guard lock(mutex_);
    auto it = configuration_.virtual_devices.find(device.name);
    if (it == configuration_.virtual_devices.end()) return std::nullopt;
    return it->second;
  }

  void set_memory_growth(const config::PhysicalDevice& device, bool enable) {
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

  std::optional<bool> memory_growth(const config::PhysicalDevice& device) {
    require_known(device);
    std::lock_guard lock(mutex_);
    auto it = configuration_.memory_growth.find(device.name);
    if (it == configuration_.memory_growth.end()) return std::nullopt;
    return it->second;
  }

  void set_memory_fraction(double fraction) {
    if (!(fraction >= 0.0) || fraction > 1e6)
      throw InvalidArgumentError(
          "per_process_gpu_memory_fraction must be a finite number >= 0 (0 means: available "
          "memory minus the reserve), got " + std::to_string(fraction));
    std::lock_guard lock(mutex_);
    if (configuration_.memory_fraction == fraction) return;
    require_uninitialized_locked("GPU memory fraction cannot be modified after being initialized");
    configuration_.memory_fraction = fraction;
  }
  double memory_fraction() {
    std::lock_guard lock(mutex_);
    return configuration_.memory_fraction;
  }

  void set_use_unified_memory(bool enable) {
    std::lock_guard lock(mutex_);
    if (configuration_.use_unified_memory == enable) return;
    require_uninitialized_locked("Unified memory cannot be modified after being initialized");
    configuration_.use_unified_memory = enable;
  }

  void set_gpu_system_memory_size_in_mb(std::int64_t mb) {
    if (mb < 0)
      throw InvalidArgumentError("gpu_system_memory_size_in_mb must be >= 0, got " +
                                 std::to_string(mb));
    std::lock_guard lock(mutex_);
    if (configuration_.gpu_system_memory_size_in_mb == mb) return;
    require_uninitialized_locked(
        "GPU system memory size cannot be modified after being initialized");
    configuration_.gpu_system_memory_size_in_mb = mb;
  }

  /// How long an allocation that may wait (a tensor's) waits for other threads to free memory
  /// before it reports OOM (TensorFlow: 10 s). Beyond TensorFlow: configurable.
  void set_allocation_retry_timeout(std::chrono::milliseconds timeout) {
    if (timeout.count() < 0)
      throw InvalidArgumentError("the allocation retry timeout must be >= 0 ms, got " +
                                 std::to_string(timeout.count()));
    std::lock_guard lock(mutex_);
    if (configuration_.retry_timeout == timeout) return;
    require_uninitialized_locked("The allocation retry timeout cannot be modified after being initialized");
    configuration_.retry_timeout = timeout;
  }

  /// The limit of the CPUs' shared allocator, cpu_bfc (default 0: the host's physical memory).
  /// Beyond TensorFlow, which has none: a cap for containers whose memory limit is below what
  /// the host reports, and for tests and fuzzers that must fail fast rather than page.
  void set_host_memory_limit(std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    if (configuration_.host_memory_limit == bytes) return;
    require_uninitialized_locked("The host memory limit cannot be modified after being initialized");
    configuration_.host_memory_limit = bytes;
  }

  // Soft placement and placement logging may change at any time, as in TensorFlow.
  void set_soft_device_placement(bool enable) noexcept { soft_placement_.store(enable); }
  [[nodiscard]] bool soft_device_placement() const noexcept { return soft_placement_.load(); }
  void set_log_device_placement(bool enable) noexcept { log_placement_.store(enable); }
  [[nodiscard]] bool log_device_placement() const noexcept { return log_placement_.load(); }

  // --- initialisation -----------------------------------------------------------------------

  [[nodiscard]] bool initialized() const noexcept {
    return initialized_.load(std::memory_order_acquire);
  }

  /// Initialises once: discovers devices, builds the logical devices from the configuration and
  /// freezes it. `trigger` names the call for later error messages.
  /// @throws InvalidArgumentError for an inconsistent configuration (the Context stays
  /// uninitialised, so the configuration can still be fixed).
  void ensure_initialized(std::string_view trigger, SourceLocation where = SourceLocation::current()) {
    if (!initialized()) [[unlikely]]
      initialize(trigger, where);
  }

  /// Every logical device, CPUs first, then GPUs (initialises).
  const std::vector<LogicalDeviceInfo>& logical_devices(
      std::string_view trigger = "list_logical_devices()",
      SourceLocation where = SourceLocation::current()) {
    ensure_initialized(trigger, where);
    return logical_;
  }

  /// Changes whenever the set of logical devices may have changed (initialisation, reset), so
  /// caches keyed on devices know when to forget.
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }

  /// Logical device indices in TensorFlow's preference order: GPUs (priority 210) by name, then
  /// CPUs (70) by name.
  const std::vector<int>& devices_by_priority() {
    ensure_initialized("the first op");
    return by_priority_;
  }

  /// An allocator shared with the tensors that use it, so it outlives them.
  std::shared_ptr<memory::Allocator> allocator_ptr(std::size_t logical_index) {
    ensure_initialized("the first tensor allocation");
    return allocators_.at(logical_index);
  }

  /// What initialised the Context ("" before initialisation).
  std::string initialization_trigger() {
    std::lock_guard lock(mutex_);
    return init_trigger_;
  }

  /// The allocator of a logical device (initialises). CPUs share one host allocator.
  /// @throws InvalidArgumentError for a LogicalDeviceInfo that is not one of logical_devices().
  memory::Allocator& allocator(const LogicalDeviceInfo& device) {
    ensure_initialized("the first tensor allocation");
    for (std::size_t i = 0; i < logical_.size(); ++i)
      if (&logical_[i] == &device) return *allocators_[i];
    throw InvalidArgumentError("allocator(): " + device.full_name +
                               " is not a logical device of this Context (pass an element of "
                               "Context::logical_devices(), not a copy)");
  }
  memory::Allocator& allocator(std::size_t logical_index) {
    ensure_initialized("the first tensor allocation");
    return *allocators_.at(logical_index);
  }

  /// The logical device a memory-stats query names ("GPU:0", "/device:GPU:0", a full name),
  /// following TensorFlow's rules and errors. Initialises.
  const LogicalDeviceInfo& memory_stats_device(std::string_view name, std::string_view api,
                                               SourceLocation where) {
    const auto spec = DeviceSpec::try_parse_full_or_local(name);
    if (!spec || !spec->type() || !spec->id())
      throw InvalidArgumentError("Failed parsing device name: '" + std::string(name) +
                                 "'. Note a valid device string should at least contain a device "
                                 "type and a device index, like \"GPU:0\".");
    const auto& devices = logical_devices(std::string(api) + "(\"" + std::string(name) + "\")", where);
    const LogicalDeviceInfo* found = nullptr;
    std::string matches;
    for (const auto& d : devices) {
      if (!spec->matches(d.spec)) continue;
      matches += (matches.empty() ? "" : ", ") + d.full_name;
      if (found)
        throw InvalidArgumentError("Multiple devices match the provided string '" +
                                   std::string(name) + "': " + matches);
      found = &d;
    }
    if (!found) throw NotFoundError("No matching devices found for '" + std::string(name) + "'");
    if (found->device_type == cpu_device_type)
      throw InvalidArgumentError(
          "CPU does not support getting allocator information: " + std::string(api) +
          " works on GPU devices (CPU devices share one caching host allocator, cpu_bfc).");
    return *found;
  }

  /// Device memory this process uses on a GPU that no devtensor allocator accounts for (the CUDA
  /// context, libraries, other processes), or 0 for a simulated GPU.
  std::uint64_t unaccounted_device_bytes(const LogicalDeviceInfo& device) {
    const auto& phys = physical_.at(static_cast<std::size_t>(device.physical_index));
    if (phys.simulated || !gpu_platform()) return 0;
    const std::uint64_t used = phys.properties.total_memory - gpu_platform()->free_memory(phys.platform_ordinal);
    std::uint64_t pools = 0;
    for (std::size_t i = 0; i < logical_.size(); ++i)
      if (logical_[i].physical_index == device.physical_index)
        pools += static_cast<std::uint64_t>(allocators_[i]->stats().pool_bytes);
    return used > pools ? used - pools : 0;
  }

  /// Test support: forgets configuration, discovery and initialisation, as in a fresh process.
  /// Only for tests that hold no tensors or other objects tied to the devices.
  void reset_for_testing() {
    std::lock_guard lock(mutex_);
    configuration_ = {};
    allocators_.clear();  // returns every region
    destroy_streams_locked();
    simulated_memory_.clear();
    physical_.clear();
    logical_.clear();
    discovered_simulated_ = {};
    discovery_trigger_.clear();
    init_trigger_.clear();
    gpu_platform_status_.clear();
    gpu_driver_probe_.store(&detail::count_nvidia_driver_gpus);
    soft_placement_.store(true);
    log_placement_.store(false);
    by_priority_.clear();
    epoch_.fetch_add(1);
    discovered_.store(false);
    initialized_.store(false);
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> discovered_{false};
  std::atomic<bool> initialized_{false};
  std::atomic<bool> soft_placement_{true};  // TF2 eager default
  std::atomic<bool> log_placement_{false};
  std::atomic<const detail::GpuPlatform*> gpu_platform_{nullptr};
  std::atomic<detail::GpuDriverProbe> gpu_driver_probe_{&detail::count_nvidia_driver_gpus};
  detail::Configuration configuration_;
  std::vector<PhysicalDeviceInfo> physical_;
  std::vector<LogicalDeviceInfo> logical_;
  std::vector<std::shared_ptr<memory::Allocator>> allocators_;  // parallel to logical_
  std::vector<int> by_priority_;
  std::atomic<std::uint64_t> epoch_{1};
  std::vector<std::shared_ptr<memory::SimulatedDeviceMemory>> simulated_memory_;  // by physical index
  SimulatedGpus discovered_simulated_;
  std::string discovery_trigger_;
  std::string init_trigger_;
  std::string gpu_platform_status_;
  memory::DeviceMemoryFunctions gpu_memory_functions_{nullptr, nullptr};
  mutable std::vector<std::pair<LogSeverity, std::string>> pending_logs_;

  /// ensure_initialized's work: once, under mutex_; the lines it logs after releasing it.
  void initialize(std::string_view trigger, const SourceLocation& where);
  void initialize_locked(std::string_view trigger, const SourceLocation& where);

  /// Lines produced while mutex_ is held; ensure_initialized logs them once it is released.
  void defer_log(LogSeverity severity, std::string line) const {
    pending_logs_.emplace_back(severity, std::move(line));
  }

  static std::string describe_trigger(std::string_view trigger, const SourceLocation& where);

  void require_known(const config::PhysicalDevice& device) {
    const auto& physical = physical_devices();
    if (std::none_of(physical.begin(), physical.end(),
                     [&](const auto& p) { return p.device == device; }))
      throw InvalidArgumentError("Unrecognized device: " + device.repr());
  }

  void require_uninitialized_locked(std::string_view key_phrase) const {
    if (initialized_.load())
      throw FailedPreconditionError(std::string(key_phrase) + ". devtensor was initialized by " +
                                    init_trigger_ +
                                    ". Configure devices before the first op, tensor, "
                                    "list_logical_devices() or strategy.");
  }

  std::vector<config::PhysicalDevice> visible_locked() const;

  void discover_locked(std::string_view trigger, const SourceLocation& where);

  /// TensorFlow's TF_FORCE_GPU_ALLOW_GROWTH: exactly "true" or "false" overrides.
  bool effective_allow_growth(bool configured) const;

  /// TensorFlow's SingleVirtualDeviceMemoryLimit.
  std::uint64_t default_memory_limit_locked(const PhysicalDeviceInfo& device,
                                            std::string* source = nullptr) const;

  /// Builds the logical devices: CPUs (split by their configuration), then the
  /// visible GPUs in physical order, each expanded by its virtual devices, then ordinals applied.
  std::vector<LogicalDeviceInfo> build_logical_devices_locked() const;

  /// One stream per logical real GPU, at the virtual device's priority (CUDA's default, 0, when
  /// none was configured). Streams are never destroyed at exit: the CUDA runtime may already be
  /// gone when static destructors run (reset_for_testing destroys them).
  void create_streams_locked(std::vector<LogicalDeviceInfo>& logical);
  void destroy_streams_locked() noexcept {
    const auto* platform = gpu_platform();
    for (auto& d : logical_)
      if (d.stream && platform) platform->destroy_stream(d.platform_ordinal, std::exchange(d.stream, nullptr));
  }

  /// TF_ENABLE_GPU_GARBAGE_COLLECTION: exactly "true" or "false", default true.
  bool gpu_garbage_collection() const;

  /// The region policy is a template parameter; the configuration picks it at run time.
  template <memory::SubAllocator Sub>
  static std::shared_ptr<memory::Allocator> make_bfc(bool growth, Sub sub, memory::BFCOptions options);

  /// One allocator per logical device: BFC over simulated device memory or the
  /// GPU platform's cudaMalloc for GPUs; one shared growth-mode BFC over host memory for the CPUs,
  /// so large tensors do not page-fault on every op.
  std::vector<std::shared_ptr<memory::Allocator>> build_allocators_locked(
      const std::vector<LogicalDeviceInfo>& logical);

  static std::uint64_t host_memory_limit();
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Context& Context::global() {
  static Context context;
  return context;
}

DEVTENSOR_DEFINITION void Context::initialize(std::string_view trigger, const SourceLocation& where) {
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

DEVTENSOR_DEFINITION void Context::initialize_locked(std::string_view trigger, const SourceLocation& where) {
  discover_locked(trigger, where);
  auto logical = build_logical_devices_locked();
  allocators_ = build_allocators_locked(logical);
  create_streams_locked(logical);
  for (std::size_t i = 0; i < logical.size(); ++i) logical[i].logical_index = static_cast<int>(i);
  logical_ = std::move(logical);
  by_priority_.clear();
  for (int gpu_first = 1; gpu_first >= 0; --gpu_first)
    for (std::size_t i = 0; i < logical_.size(); ++i)
      if (logical_[i].is_gpu == static_cast<bool>(gpu_first)) by_priority_.push_back(static_cast<int>(i));
  init_trigger_ = describe_trigger(trigger, where);
  epoch_.fetch_add(1);
  initialized_.store(true, std::memory_order_release);
  for (const auto& d : logical_)
    if (d.device_type == gpu_device_type)
      defer_log(LogSeverity::info, "Created device " + d.full_name + " with " +
                                       std::to_string(d.memory_limit >> 20) + " MB memory:  -> " +
                                       d.physical_device_desc);
}

DEVTENSOR_DEFINITION std::string Context::describe_trigger(
    std::string_view trigger, const SourceLocation& where) {
  // devtensor's own headers are not where the user should look: a location inside them (a
  // default argument taken in the library) is left out rather than printed.
  constexpr std::string_view this_file = __FILE__;
  static_assert(this_file.ends_with("device/context.hpp"));
  constexpr std::string_view library_root = this_file.substr(0, this_file.size() - std::string_view("device/context.hpp").size());
  std::string out(trigger);
  const std::string_view file = where.file_name() ? where.file_name() : "";
  if (!file.empty() && !file.starts_with(library_root))
    out += std::string(" at ") + std::string(file) + ":" + std::to_string(where.line());
  return out;
}

DEVTENSOR_DEFINITION std::vector<config::PhysicalDevice> Context::visible_locked() const {
  if (configuration_.visible_devices) return *configuration_.visible_devices;
  std::vector<config::PhysicalDevice> all;
  for (const auto& p : physical_) all.push_back(p.device);
  return all;
}

DEVTENSOR_DEFINITION void Context::discover_locked(std::string_view trigger, const SourceLocation& where) {
  if (discovered_.load()) return;
  SimulatedGpus simulated;
  if (configuration_.simulated_gpus) {
    simulated = *configuration_.simulated_gpus;
  } else {
    bool present = false;
    std::string env = detail::getenv_string("DEVTENSOR_SIMULATED_GPUS", &present);
    if (present) simulated = parse_simulated_gpus(env);
  }

  std::vector<PhysicalDeviceInfo> found;
  PhysicalDeviceInfo cpu_info;
  cpu_info.device = {"/physical_device:CPU:0", std::string(cpu_device_type)};
  found.push_back(cpu_info);

  int gpu_index = 0;
  if (const auto* platform = gpu_platform()) {
    std::string why_none;
    const int count = platform->device_count(&why_none);
    gpu_platform_status_ = why_none;
    for (int ordinal = 0; ordinal < count; ++ordinal) {
      PhysicalDeviceInfo info;
      std::string error;
      if (!platform->describe(ordinal, &info.properties, &error)) {
        defer_log(LogSeverity::error, "Could not query GPU " + std::to_string(ordinal) + ": " + error +
                                    ". The device is skipped.");
        continue;
      }
      info.device = {"/physical_device:GPU:" + std::to_string(gpu_index),
                     std::string(gpu_device_type)};
      info.index = gpu_index++;
      info.platform_ordinal = ordinal;
      found.push_back(std::move(info));
    }
  } else if (const int unused = gpu_driver_probe_.load(std::memory_order_acquire)()) {
    // TensorFlow says loudly when it cannot use the machine's GPUs; so does devtensor.
    defer_log(LogSeverity::warning,
              "The NVIDIA driver reports " + std::to_string(unused) + " GPU" + (unused == 1 ? "" : "s") +
                  ", but this program was built without devtensor's CUDA component, so it cannot use "
                  "them. Link devtensor::cuda in CMake (target_link_libraries(<your target> PRIVATE "
                  "devtensor::cuda)), or compile devtensor's src/devtensor_cuda.cu into the program. "
                  "Skipping registering GPU devices...");
  }
  for (int k = 0; k < simulated.count; ++k) {
    PhysicalDeviceInfo info;
    info.device = {"/physical_device:GPU:" + std::to_string(gpu_index),
                   std::string(gpu_device_type)};
    info.index = gpu_index;
    info.simulated = true;
    info.platform_ordinal = gpu_index;
    info.properties.name = "devtensor simulated GPU";
    info.properties.pci_bus_id = "simulated:" + std::to_string(gpu_index);
    info.properties.compute_capability_major = 9;
    info.properties.compute_capability_minor = 0;
    info.properties.total_memory = simulated.memory_bytes;
    info.properties.free_memory = simulated.memory_bytes;
    info.properties.least_stream_priority = 0;
    info.properties.greatest_stream_priority = -5;  // what CUDA reports on Hopper
    ++gpu_index;
    found.push_back(std::move(info));
  }
  physical_ = std::move(found);
  discovered_simulated_ = simulated;
  discovery_trigger_ = describe_trigger(trigger, where);
  discovered_.store(true, std::memory_order_release);
}

DEVTENSOR_DEFINITION bool Context::effective_allow_growth(bool configured) const {
  bool present = false;
  const std::string value = detail::getenv_string("TF_FORCE_GPU_ALLOW_GROWTH", &present);
  if (!present) return configured;
  const std::string original = configured ? "1" : "0";
  if (value == "true" || value == "false") {
    const bool forced = value == "true";
    if (forced != configured)
      defer_log(LogSeverity::warning,
          "Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH environment "
          "variable is set. Original config value was " + original + ".");
    return forced;
  }
  defer_log(LogSeverity::error,
      "The TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: \"" +
          value + "\". Valid values are \"true\" or \"false\". Using original config value of " +
          original + ".");
  return configured;
}

DEVTENSOR_DEFINITION std::uint64_t Context::default_memory_limit_locked(const PhysicalDeviceInfo& device,
                                          std::string* source) const {
  const auto& p = device.properties;
  const std::uint64_t available = p.free_memory;
  const auto human = [](std::uint64_t n) {
    return memory::human_readable_bytes(static_cast<std::int64_t>(n));
  };
  std::uint64_t limit = 0;
  std::string why;
  if (configuration_.memory_fraction == 0.0) {
    const std::uint64_t reserve = min_system_memory(available, p.compute_capability_major);
    limit = reserve < available ? available - reserve : available;
    why = "the device's free memory " + human(available) + " minus a " +
          human(reserve < available ? reserve : 0) +
          " reserve (set_gpu_system_memory_size_in_mb or TF_DEVICE_MIN_SYS_MEMORY_IN_MB change "
          "it)";
  } else {
    limit = static_cast<std::uint64_t>(static_cast<double>(p.total_memory) *
                                       configuration_.memory_fraction);
    why = "per_process_gpu_memory_fraction = " + std::to_string(configuration_.memory_fraction) +
          " of " + human(p.total_memory);
  }
  const auto apply_reserve = [&](std::uint64_t reserved, const std::string& as_given) {
    if (reserved <= available) {
      limit = available - reserved;
      why = "the device's free memory " + human(available) + " minus the requested " +
            human(reserved) + " reserve";
    } else {
      defer_log(LogSeverity::warning, "The requested reserved device memory " + as_given +
                                    " is larger than the available memory of " +
                                    std::to_string(available) + ". The request is ignored.");
    }
  };
  if (configuration_.gpu_system_memory_size_in_mb > 0) {
    const auto reserved =
        static_cast<std::uint64_t>(configuration_.gpu_system_memory_size_in_mb) * kMiB;
    apply_reserve(reserved, std::to_string(reserved));
  }
  const std::string env = detail::getenv_string("TF_DEVICE_MIN_SYS_MEMORY_IN_MB");
  if (!env.empty()) {
    const bool numeric = env.size() <= 12 && std::all_of(env.begin(), env.end(), [](char c) {
                           return detail::is_ascii_digit(c);
                         });
    if (!numeric) {
      defer_log(LogSeverity::warning, "The requested reserved device memory " + env +
                                    " is invalid. The request will be ignored.");
    } else {
      const auto reserved = static_cast<std::uint64_t>(std::stoll(env)) * kMiB;
      apply_reserve(reserved, std::to_string(reserved));
    }
  }
  if (source) *source = why;
  return limit;
}

DEVTENSOR_DEFINITION std::vector<LogicalDeviceInfo> Context::build_logical_devices_locked() const {
  const auto visible = visible_locked();
  const auto is_visible = [&](const PhysicalDeviceInfo& p) {
    return std::find(visible.begin(), visible.end(), p.device) != visible.end();
  };
  std::vector<LogicalDeviceInfo> out;

  // CPUs: one, or one per empty configuration of the physical CPU.
  for (std::size_t i = 0; i < physical_.size(); ++i) {
    const auto& p = physical_[i];
    if (p.device.device_type != cpu_device_type || !is_visible(p)) continue;
    std::size_t n = 1;
    if (auto it = configuration_.virtual_devices.find(p.device.name);
        it != configuration_.virtual_devices.end() && !it->second.empty())
      n = it->second.size();
    for (std::size_t k = 0; k < n; ++k) {
      LogicalDeviceInfo d;
      d.device_type = std::string(cpu_device_type);
      d.physical_index = static_cast<int>(i);
      d.memory_limit = 256 * kMiB;
      out.push_back(std::move(d));
    }
  }

  // GPUs: validate the configuration as TensorFlow's _compute_gpu_options and
  // VerifyVirtualDeviceSettings do, then create them.
  std::vector<const PhysicalDeviceInfo*> gpus;
  std::vector<int> gpu_physical_index;
  for (std::size_t i = 0; i < physical_.size(); ++i)
    if (physical_[i].device.device_type == gpu_device_type && is_visible(physical_[i])) {
      gpus.push_back(&physical_[i]);
      gpu_physical_index.push_back(static_cast<int>(i));
    }
  const bool any_virtual = std::any_of(gpus.begin(), gpus.end(), [&](const auto* g) {
    return configuration_.virtual_devices.count(g->device.name) != 0;
  });
  std::optional<bool> growth;
  for (const auto* g : gpus) {
    auto it = configuration_.memory_growth.find(g->device.name);
    const bool mine = it != configuration_.memory_growth.end() && it->second;
    if (growth && *growth != mine)
      throw InvalidArgumentError("Memory growth cannot differ between GPU devices");
    growth = mine;
  }
  if (any_virtual && configuration_.memory_fraction > 0.0)
    throw InvalidArgumentError(
        "It's invalid to set per_process_gpu_memory_fraction when virtual_devices is set.");
  // Growth is ignored whenever virtual devices are configured (unless the environment forces it).
  const bool configured_growth = any_virtual ? false : growth.value_or(false);
  const bool allow_growth = gpus.empty() ? configured_growth : effective_allow_growth(configured_growth);
  const bool unified = configuration_.use_unified_memory || configuration_.memory_fraction > 1.0;

  struct Pending {
    LogicalDeviceInfo info;
    std::optional<int> ordinal;
    std::size_t position;
  };
  std::vector<Pending> pending;
  std::optional<bool> first_has_ordinal;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto& phys = *gpus[g];
    if (unified && phys.properties.compute_capability_major < 6)
      throw UnimplementedError(
          "Unified memory on GPUs with compute capability lower than 6.0 (pre-Pascal class GPUs) "
          "does not support oversubscription.");
    std::vector<config::LogicalDeviceConfiguration> configs;
    if (auto it = configuration_.virtual_devices.find(phys.device.name);
        it != configuration_.virtual_devices.end())
      configs = it->second;
    const bool with_priority = std::any_of(configs.begin(), configs.end(),
                                           [](const auto& c) { return c.experimental_priority.has_value(); });
    const bool with_ordinal = std::any_of(configs.begin(), configs.end(),
                                          [](const auto& c) { return c.experimental_device_ordinal.has_value(); });
    if (with_priority && !std::all_of(configs.begin(), configs.end(),
                                      [](const auto& c) { return c.experimental_priority.has_value(); }))
      throw InvalidArgumentError("priority must be specified for all virtual devices");
    if (with_ordinal && !std::all_of(configs.begin(), configs.end(),
                                     [](const auto& c) { return c.experimental_device_ordinal.has_value(); }))
      throw InvalidArgumentError("device_ordinal must be specified for all virtual devices");
    if (any_virtual && !first_has_ordinal) first_has_ordinal = with_ordinal;
    if (any_virtual && *first_has_ordinal != with_ordinal)
      throw InvalidArgumentError(
          "Device ordinals must be set for all virtual devices or none. But the device_ordinal "
          "is specified for " + std::to_string(g) + " while previous devices didn't have any set.");

    const auto make = [&](std::uint64_t limit, std::optional<int> priority) {
      LogicalDeviceInfo d;
      d.device_type = std::string(gpu_device_type);
      d.physical_index = gpu_physical_index[g];
      d.memory_limit = limit;
      d.allow_growth = allow_growth;
      d.unified_memory = unified;
      d.priority = priority;
      const auto& p = phys.properties;
      d.physical_device_desc = "device: " + std::to_string(phys.platform_ordinal) +
                               ", name: " + p.name + ", pci bus id: " + p.pci_bus_id +
                               ", compute capability: " +
                               std::to_string(p.compute_capability_major) + "." +
                               std::to_string(p.compute_capability_minor);
      return d;
    };
    if (configs.empty()) {
      std::string source;
      const auto limit = default_memory_limit_locked(phys, &source);
      pending.push_back({make(limit, std::nullopt), std::nullopt, pending.size()});
      pending.back().info.limit_source = std::move(source);
      continue;
    }
    for (std::size_t v = 0; v < configs.size(); ++v) {
      const auto& c = configs[v];
      if (c.experimental_priority) {
        const int p = *c.experimental_priority;
        const int hi = phys.properties.greatest_stream_priority;
        const int lo = phys.properties.least_stream_priority;
        if (p < hi || p > lo)
          throw InvalidArgumentError("Priority " + std::to_string(p) +
                                     " is outside the range of supported priorities [" +
                                     std::to_string(hi) + "," + std::to_string(lo) +
                                     "] for virtual device " + std::to_string(v) + " on GPU# " +
                                     std::to_string(phys.index));
      }
      const auto limit =
          static_cast<std::uint64_t>(static_cast<std::int64_t>(*c.memory_limit_mb)) * kMiB;
      pending.push_back({make(limit, c.experimental_priority), c.experimental_device_ordinal,
                         pending.size()});
      pending.back().info.limit_source =
          "memory_limit_mb = " + std::to_string(static_cast<std::int64_t>(*c.memory_limit_mb)) +
          " of the virtual device";
    }
  }
  // Lower ordinal first; ties (and devices without ordinals) keep their list position.
  std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
    return a.ordinal.value_or(0) < b.ordinal.value_or(0);
  });
  for (auto& p : pending) out.push_back(std::move(p.info));

  // Number each type consecutively and name the devices.
  int cpus = 0;
  int gpu_count = 0;
  for (auto& d : out) {
    d.index = d.device_type == cpu_device_type ? cpus++ : gpu_count++;
    d.spec = DeviceSpec::parse(
        DeviceSpec::full_name("localhost", 0, 0, d.device_type, d.index));
    d.full_name = d.spec.to_string();
    d.device = {DeviceSpec::local_name(d.device_type, d.index), d.device_type};
    d.allocator_name =
        d.device_type == cpu_device_type ? "cpu_bfc" : "GPU_" + std::to_string(d.index) + "_bfc";
    d.is_gpu = d.device_type == gpu_device_type;
    if (d.is_gpu) {
      const auto& phys = physical_[static_cast<std::size_t>(d.physical_index)];
      d.simulated = phys.simulated;
      d.platform_ordinal = phys.simulated ? -1 : phys.platform_ordinal;
    }
  }
  return out;
}

DEVTENSOR_DEFINITION void Context::create_streams_locked(std::vector<LogicalDeviceInfo>& logical) {
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

DEVTENSOR_DEFINITION bool Context::gpu_garbage_collection() const {
  bool present = false;
  const std::string value = detail::getenv_string("TF_ENABLE_GPU_GARBAGE_COLLECTION", &present);
  if (!present || value == "true") return true;
  if (value == "false") return false;
  defer_log(LogSeverity::error,
      "The TF_ENABLE_GPU_GARBAGE_COLLECTION environment variable is set but could not be parsed: "
      "\"" + value + "\". Valid values are \"true\" or \"false\". Using the default value \"true\".");
  return true;
}

template <memory::SubAllocator Sub>
std::shared_ptr<memory::Allocator> Context::make_bfc(bool growth, Sub sub, memory::BFCOptions options) {
  if (growth)
    return std::make_shared<memory::BFCAllocator<memory::Growth, Sub>>(std::move(sub), std::move(options));
  return std::make_shared<memory::BFCAllocator<memory::Preallocate, Sub>>(std::move(sub), std::move(options));
}

DEVTENSOR_DEFINITION std::vector<std::shared_ptr<memory::Allocator>> Context::build_allocators_locked(
    const std::vector<LogicalDeviceInfo>& logical) {
  std::vector<std::shared_ptr<memory::Allocator>> out;
  std::shared_ptr<memory::Allocator> host;
  std::vector<std::shared_ptr<memory::SimulatedDeviceMemory>> simulated(physical_.size());
  const bool collect = std::any_of(logical.begin(), logical.end(), [](const auto& d) {
    return d.device_type == gpu_device_type;
  }) && gpu_garbage_collection();
  for (const auto& d : logical) {
    if (d.device_type == cpu_device_type) {
      if (!host) {
        memory::BFCOptions options;
        options.name = d.allocator_name;
        options.limit = configuration_.host_memory_limit ? configuration_.host_memory_limit : host_memory_limit();
        options.garbage_collection = true;
        options.limit_source = configuration_.host_memory_limit
                                   ? "config::experimental::set_host_memory_limit"
                                   : "the host's physical memory";
        options.retry_timeout = configuration_.retry_timeout;
        host = make_bfc(/*growth=*/true, memory::HostSubAllocator{}, std::move(options));
      }
      out.push_back(host);
      continue;
    }
    const auto& phys = physical_[static_cast<std::size_t>(d.physical_index)];
    memory::BFCOptions options;
    options.name = d.allocator_name;
    options.limit = d.memory_limit;
    options.garbage_collection = collect;
    options.limit_source = d.limit_source;
    options.retry_timeout = configuration_.retry_timeout;
    if (phys.simulated) {
      auto& device_memory = simulated[static_cast<std::size_t>(d.physical_index)];
      if (!device_memory)  // unified memory may oversubscribe into host RAM
        device_memory = std::make_shared<memory::SimulatedDeviceMemory>(
            d.unified_memory ? UINT64_MAX / 2 : phys.properties.total_memory);
      out.push_back(make_bfc(d.allow_growth, memory::SimulatedSubAllocator(device_memory), std::move(options)));
    } else {
      const auto* platform = gpu_platform();
      if (d.unified_memory)
        throw UnimplementedError(
            "Unified (managed) memory for real GPUs is not implemented yet; use a memory "
            "fraction <= 1 and set_use_unified_memory(false)");
      gpu_memory_functions_ = {platform->allocate, platform->deallocate};
      out.push_back(make_bfc(d.allow_growth,
                             memory::PlatformSubAllocator(&gpu_memory_functions_, phys.platform_ordinal),
                             std::move(options)));
    }
  }
  simulated_memory_ = std::move(simulated);
  return out;
}

DEVTENSOR_DEFINITION std::uint64_t Context::host_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::uint64_t{64} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
