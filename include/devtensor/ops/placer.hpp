#pragma once
/// @file placer.hpp
/// @brief The runtime placer: which logical device runs an op, input copies under
/// the device policy, and the placement log.
///
/// The request is the innermost DeviceScope's merged spec (already parsed: no string work per op).
/// Candidates are the logical devices matching it whose type has a kernel for the op and element
/// type, in TensorFlow's order (GPU before CPU, then by name). With soft placement (the default)
/// an unsatisfiable request drops its type and id and tries again.
///
/// Note [Placement cache]
/// A decision depends on the op's kernel table (a static object per op and element type), the
/// kernel registry, the thread's scope stack, the Context's devices and the soft-placement switch.
/// Each thread keeps a small cache keyed by the kernel table's address and dropped whenever the
/// scope stack's generation, the registry's generation, the Context's epoch or the switch
/// changes, so a repeated op costs a few loads.

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/ops/registry.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

/// What happens to an op input that lives on another device (TensorFlow's device policy).
enum class DevicePolicy {
  EXPLICIT,          // InvalidArgumentError "Tensors on conflicting devices"
  WARN,              // copy and log a warning
  SILENT,            // copy (default)
  SILENT_FOR_INT32,  // copy int32 silently, fail for other types
};

namespace detail {
inline std::atomic<DevicePolicy>& device_policy_state() {
  static std::atomic<DevicePolicy> policy{DevicePolicy::SILENT};
  return policy;
}
}  // namespace detail

namespace config::experimental {
inline void set_device_policy(DevicePolicy policy) noexcept { detail::device_policy_state() = policy; }
inline DevicePolicy get_device_policy() noexcept { return detail::device_policy_state(); }
}  // namespace config::experimental

/// One op's kernels for one element type, as the placer sees them: what the op declares (compile
/// time) and, for bodies that come from the registry, whether this program contains them.
struct KernelSupport {
  std::string_view op;
  std::string_view dtype;      // DT_FLOAT, ...
  bool cpu;                    // declares a CPU kernel
  bool gpu;                    // declares a GPU kernel (simulated GPUs run a host body)
  const KernelSlot* cpu_body;  // registered CPU body (users' ops); nullptr: inline, always present
  const KernelSlot* gpu_body;  // registered GPU body; nullptr: none needed (copies and views)
  bool pin_small_int;          // may be pinned to the host for small integer inputs

  [[nodiscard]] bool cpu_present() const noexcept {
    return cpu && (cpu_body == nullptr || cpu_body->body.load(std::memory_order_acquire) != nullptr);
  }
  /// The program contains the GPU body (real GPUs need it).
  [[nodiscard]] bool gpu_present() const noexcept {
    return gpu && (gpu_body == nullptr || gpu_body->body.load(std::memory_order_acquire) != nullptr);
  }
  /// A declared GPU kernel whose body this program lacks.
  [[nodiscard]] bool gpu_body_missing() const noexcept { return gpu && !gpu_present(); }
  /// Simulated GPUs follow the declaration, as a CUDA build's GPUs would: placement is an
  /// observable, so a GPU-only op goes there as it would to a real GPU; running it needs a host
  /// body, and kernel_for says so when there is none.
  [[nodiscard]] bool supports(const Device& d) const noexcept {
    if (!d.is_gpu) return cpu_present();
    return d.simulated ? gpu : gpu_present();
  }
  /// TensorFlow's "has kernels for [...]": GPU when this program can run it on the GPUs it has.
  [[nodiscard]] std::string supported_types(bool real_gpus) const {
    std::string out;
    if (real_gpus ? gpu_present() : gpu) out += "GPU";
    if (cpu_present()) out += out.empty() ? "CPU" : ", CPU";
    return out;
  }
};

namespace kernel_detail {
template <class Op>
concept declares_no_pinning = requires {
  requires Op::never_pin_to_host;
};
template <class Op>
concept inline_cpu_kernel = requires {
  requires Op::inline_cpu_kernel;
};

template <class Op, class T>
constexpr const KernelSlot* gpu_slot_of() noexcept {
  if constexpr (declares_body<Op, T> && has_kernel_v<Op, gpu_t, T>)
    return &kernel_slot<Op, gpu_t, T>;
  else
    return nullptr;
}
template <class Op, class T>
constexpr const KernelSlot* cpu_slot_of() noexcept {
  if constexpr (declares_body<Op, T> && has_kernel_v<Op, cpu_t, T> && !inline_cpu_kernel<Op>)
    return &kernel_slot<Op, cpu_t, T>;
  else
    return nullptr;
}
}  // namespace kernel_detail

/// The placer's view of Op for element type T: one constant object, whose address keys the
/// placement cache.
template <class Op, Element T>
inline constexpr KernelSupport kernel_support{Op::name,
                                              dtype_enum_name<T>(),
                                              has_kernel_v<Op, cpu_t, T>,
                                              has_kernel_v<Op, gpu_t, T>,
                                              kernel_detail::cpu_slot_of<Op, T>(),
                                              kernel_detail::gpu_slot_of<Op, T>(),
                                              !kernel_detail::declares_no_pinning<Op>};

namespace detail {

struct PlacementCache {
  std::uint64_t generation = ~std::uint64_t{0};
  std::uint64_t epoch = 0;
  std::uint64_t kernels = 0;  // the registry's generation
  bool soft = true;
  std::vector<std::pair<const KernelSupport*, const Device*>> entries;

  /// Forgets every entry: the scopes, the devices, the kernels or soft placement changed.
  void reset(std::uint64_t new_generation, std::uint64_t new_epoch, std::uint64_t new_kernels, bool new_soft);
};

// place_op's slow paths, out of line (compiled once in compiled mode): the first op initialises
// the Context, a cache miss selects the device, the placement log writes its line.
void initialize_for_op(const KernelSupport& kernel, const CallSite& where = {});
const Device& place_uncached(PlacementCache& cache, const KernelSupport& kernel, const DeviceSpec& request, bool soft);
void log_placement(std::string_view op, const Device& device);

/// The placement decision itself (uncached); place_op caches it.
const Device& select_device(const KernelSupport& kernel, const DeviceSpec& request, bool soft);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]

/// The hint for a GPU-capable op whose body this program lacks, once per kernel (a warning: the
/// program runs, slower than the user expects).
DEVTENSOR_DEFINITION void report_missing_gpu_body(const KernelSupport& kernel, const Device& chosen) {
  if (!kernel.gpu_body || kernel.gpu_body->missing_reported.exchange(true, std::memory_order_relaxed)) return;
  if (!log_enabled(LogSource::cpp_runtime, LogSeverity::warning)) return;
  log(LogSeverity::warning,
      std::string(kernel.op) + " has a GPU kernel for " + std::string(kernel.dtype) +
          ", but this program does not contain it: running on " + chosen.full_name +
          ". devtensor's GPU kernels come with the devtensor::cuda component (link devtensor::cuda "
          "in CMake, or compile devtensor's src/devtensor_cuda.cu into the program).");
}

/// Why a declared GPU kernel does not count on this program's real GPUs.
inline constexpr const char* missing_gpu_body_hint =
    " Its GPU kernel is declared but this program does not contain the body: devtensor's own ops get "
    "theirs from the devtensor::cuda component; register your op's with "
    "DEVTENSOR_REGISTER_KERNEL(Op, devtensor::gpu_t, T, body).";

DEVTENSOR_DEFINITION const Device* first_match(const DeviceSet& devices, const DeviceSpec& request,
                                               const KernelSupport& kernel) {
  for (const Device* d : devices.by_priority())
    if (request.matches(d->spec) && kernel.supports(*d)) return d;
  return nullptr;
}

/// The placement decision itself (uncached).
DEVTENSOR_DEFINITION const Device& select_device(const KernelSupport& kernel, const DeviceSpec& request, bool soft) {
  const DeviceSet& devices = Context::global().devices();
  // A real GPU the request allows but whose body the program lacks: say once where the body is.
  const auto placed = [&](const Device* chosen) -> const Device& {
    if (kernel.gpu_body_missing() && chosen->host_memory())
      for (const auto& d : devices)
        if (d.real_gpu() && request.with_id(std::nullopt).matches(d.spec)) {
          report_missing_gpu_body(kernel, *chosen);
          break;
        }
    return *chosen;
  };
  if (const Device* d = first_match(devices, request, kernel)) return placed(d);
  // Soft placement keeps job, replica and task: a request naming an address this process does
  // not have fails whatever the setting, with TensorFlow 2.21's words.
  const DeviceSpec relaxed = request.with_type(std::nullopt).with_id(std::nullopt);
  if (std::none_of(devices.begin(), devices.end(), [&](const Device& d) { return relaxed.matches(d.spec); }))
    throw InvalidArgumentError(request.to_string() + " unknown device. This process has the devices [" +
                               devices.names() +
                               "]: name one of its job/replica/task addresses. [Op:" + std::string(kernel.op) + "]");
  if (soft)
    if (const Device* d = first_match(devices, relaxed, kernel)) return placed(d);
  if (request.is_empty() || soft)
    throw InvalidArgumentError("No supported device found in available devices [" + devices.names() +
                               "]. enable_soft_placement=" + (soft ? "1" : "0") + ". (Op " + std::string(kernel.op) +
                               " with T=" + std::string(kernel.dtype) + " has kernels for [" +
                               kernel.supported_types(devices.has_real_gpus()) + "].)" +
                               (kernel.gpu_body_missing() && devices.has_real_gpus() ? missing_gpu_body_hint : ""));
  std::string why;
  for (const auto& d : devices)
    if (request.matches(d.spec) && !kernel.supports(d)) {
      why = " Could not satisfy explicit device specification '" + request.to_string() +
            "' because no supported kernel for " + d.device_type + " devices is available.";
      if (d.is_gpu && kernel.gpu_body_missing())
        why += " This program does not contain devtensor's GPU kernels: link the devtensor::cuda component.";
      break;
    }
  if (why.empty()) why = " The requested device does not exist.";
  throw InvalidArgumentError("Could not satisfy device specification '" + request.to_string() +
                             "'. enable_soft_placement=0. Supported device types [" +
                             kernel.supported_types(devices.has_real_gpus()) + "]. All available devices [" +
                             devices.names() + "]." + why + " [Op:" + std::string(kernel.op) +
                             "] Turn soft placement on (config::set_soft_device_placement(true)) "
                             "to fall back to a supported device.");
}

#endif

}  // namespace detail

/// Chooses the device for one execution of an op and writes the placement log line when logging
/// is on. `small_host_int_inputs`: every input is an int32/int64 tensor of at most 64 elements on
/// the host CPU (TensorFlow pins such shape arithmetic to the CPU).
inline const Device& place_op(const KernelSupport& kernel, bool small_host_int_inputs = false) {
  auto& context = Context::global();
  if (!context.initialized()) [[unlikely]]
    detail::initialize_for_op(kernel);
  const DeviceSpec& request = current_device_spec();
  const Device* device = nullptr;
  if (small_host_int_inputs && kernel.pin_small_int && kernel.cpu && !request.type()) {
    device = &context.initialized_devices().host_cpu();
  } else {
    thread_local detail::PlacementCache cache;
    const bool soft = context.soft_device_placement();
    const auto generation = device_scope_generation();
    const auto epoch = context.epoch();
    const auto kernels = detail::kernel_registry_generation.load(std::memory_order_acquire);
    if (cache.generation != generation || cache.epoch != epoch || cache.soft != soft || cache.kernels != kernels)
        [[unlikely]]
      cache.reset(generation, epoch, kernels, soft);
    for (const auto& [k, d] : cache.entries)
      if (k == &kernel) {
        device = d;
        break;
      }
    if (!device) [[unlikely]]
      device = &detail::place_uncached(cache, kernel, request, soft);
  }
  if (context.log_device_placement() && log_enabled(LogSource::cpp_runtime, LogSeverity::info)) [[unlikely]]
    detail::log_placement(kernel.op, *device);
  return *device;
}

/// Writes the placement log line of work that runs where its data already is (a variable's
/// update, an optimizer's fused kernel) when logging is on.
inline void log_placement_of(std::string_view op, const Device& device) {
  if (Context::global().log_device_placement() && log_enabled(LogSource::cpp_runtime, LogSeverity::info)) [[unlikely]]
    detail::log_placement(op, device);
}

/// Initialises the Context naming the caller's line when an op without tensor inputs (a constant,
/// fill, range, a random op) is the program's first: configuration calls that come too late then
/// point at the user's code, not into devtensor. A flag test once initialised.
inline void initialize_at(const KernelSupport& kernel, const CallSite& where) {
  if (!Context::global().initialized()) [[unlikely]]
    detail::initialize_for_op(kernel, where);
}

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void detail::initialize_for_op(const KernelSupport& kernel, const CallSite& where) {
  Context::global().ensure_initialized("the first op (" + std::string(kernel.op) + ")", where);
}

DEVTENSOR_DEFINITION void detail::PlacementCache::reset(std::uint64_t new_generation, std::uint64_t new_epoch,
                                                        std::uint64_t new_kernels, bool new_soft) {
  entries.clear();
  generation = new_generation;
  epoch = new_epoch;
  kernels = new_kernels;
  soft = new_soft;
}

DEVTENSOR_DEFINITION const Device& detail::place_uncached(PlacementCache& cache, const KernelSupport& kernel,
                                                          const DeviceSpec& request, bool soft) {
  const Device& device = select_device(kernel, request, soft);
  cache.entries.emplace_back(&kernel, &device);
  return device;
}

DEVTENSOR_DEFINITION void detail::log_placement(std::string_view op, const Device& device) {
  log(LogSeverity::info, "Executing op " + std::string(op) + " in device " + device.full_name);
}
#endif

/// Where a tensor created from host values goes (TensorFlow's _EagerConst): placed
/// like an op that has a kernel on every device, so soft placement applies. Under `/gpu:0` on a
/// machine without that GPU the tensor lands on GPU:0 or CPU:0 when soft placement is on; with it
/// off the error is `Could not satisfy device specification ...`. Only an unknown
/// job/replica/task fails either way (`<name> unknown device.`).
/// @throws InvalidArgumentError as above.
inline const Device& place_constant(const CallSite& where = {}) {
  static constexpr KernelSupport every_device{"_EagerConst", "", true, true, nullptr, nullptr, false};
  initialize_at(every_device, where);
  return place_op(every_device);
}

/// The device the innermost DeviceScope names exactly (type and id), else the host CPU: where a
/// cross-replica result goes (TensorFlow's "current device").
inline const Device& scope_device_or_host(std::string_view trigger) {
  const DeviceSet& devices = device_set(trigger);
  const Device* named = devices.find(current_device_spec());
  return named ? *named : devices.host_cpu();
}

[[noreturn]] void throw_undefined_input(std::string_view op, std::size_t input);

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void throw_undefined_input(std::string_view op, std::size_t input) {
  throw InvalidArgumentError("Input " + std::to_string(input) + " of " + std::string(op) +
                             " is an undefined tensor (default-constructed or moved from): pass a "
                             "tensor that holds values [Op:" +
                             std::string(op) + "]");
}
#endif

/// Ops whose shape checks could meet an undefined tensor call this first, so that no message
/// describes it as a scalar "[]"; elementwise ops leave it to to_device (shape [] broadcasts with
/// anything, so no shape error comes first). One pointer test per input.
template <class... Ts>
void require_defined_inputs(std::string_view op, const Ts&... inputs) {
  std::size_t i = 0;
  ((inputs.defined() ? void(++i) : throw_undefined_input(op, i)), ...);
}
template <Element T>
void require_defined_inputs(std::string_view op, const std::vector<Tensor<T>>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) throw_undefined_input(op, i);
}

namespace detail {
/// to_device's copy, not a template: the device policy's check (`int32`: the tensor's elements
/// are int32, which SILENT_FOR_INT32 copies), its warning, and the copy of `bytes` bytes into a
/// new buffer on `device`. @throws InvalidArgumentError when the policy forbids the copy.
std::shared_ptr<TensorStorage> copy_to_device(const TensorStorage& from, const Shape& shape, std::size_t bytes,
                                              std::string_view dtype, bool int32, const Device& device,
                                              std::string_view op, int input);
}  // namespace detail

/// `t` on `device`: the same tensor when it is already there, otherwise a copy, as the device
/// policy allows. `input` is the input's position, for the error message.
template <Element T>
Tensor<T> to_device(const Tensor<T>& t, const Device& device, std::string_view op, int input = 0) {
  if (!t.defined()) [[unlikely]]
    throw_undefined_input(op, static_cast<std::size_t>(input));
  if (t.storage()->device == &device) return t;  // defined: no second check
  const std::size_t bytes = static_cast<std::size_t>(t.num_elements()) * sizeof(T);
  return Tensor<T>(detail::copy_to_device(*t.storage(), t.shape(), bytes, dtype_string<T>(),
                                          std::is_same_v<T, std::int32_t>, device, op, input),
                   t.shape());
}

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::shared_ptr<TensorStorage> detail::copy_to_device(const TensorStorage& from,
                                                                           const Shape& shape, std::size_t bytes,
                                                                           std::string_view dtype, bool int32,
                                                                           const Device& target, std::string_view op,
                                                                           int input) {
  if (from.symbolic) [[unlikely]]  // a graph's tensor met outside its graph
    throw_symbolic_values(*from.symbolic,
                          "op " + std::string(op) + " (running eagerly: no graph is being built on this thread)");
  const auto policy = config::experimental::get_device_policy();
  const bool allowed = policy == DevicePolicy::SILENT || policy == DevicePolicy::WARN ||
                       (policy == DevicePolicy::SILENT_FOR_INT32 && int32);
  if (!allowed)
    throw InvalidArgumentError(
        "Tensors on conflicting devices: cannot compute " + std::string(op) + " as input #" + std::to_string(input) +
        " was expected to be on " + target.full_name + " but is actually on " + from.device->full_name +
        " (operation running on " + target.full_name +
        "). Tensors can be copied explicitly using identity() under a DeviceScope, or the device "
        "policy can be changed with config::experimental::set_device_policy(DevicePolicy::SILENT).");
  if (policy == DevicePolicy::WARN)
    log(LogSeverity::warning, "Copying input #" + std::to_string(input) + " of " + std::string(op) + " from " +
                                  from.device->full_name + " to " + target.full_name);
  auto copy = allocate_storage(target, bytes, shape, dtype, op);
  copy_bytes(copy->data, target, from.data, *from.device, bytes);
  return copy;
}
#endif

/// True when every tensor is a small (<= 64 elements) int32/int64 tensor on the host CPU. An
/// undefined tensor is not: the op's to_device names it.
template <class... Ts>
bool small_host_int_inputs(const Ts&... inputs) {
  return sizeof...(Ts) > 0 && ((is_one_of_v<typename Ts::value_type, std::int32_t, std::int64_t> &&
                                inputs.num_elements() <= 64 && inputs.defined() && !inputs.storage()->device->is_gpu) &&
                               ...);
}

}  // namespace devtensor
