#pragma once
/// @file cross_device_ops.hpp
/// @brief Cross-device reductions: ReductionToOneDevice, HierarchicalCopyAllReduce,
/// NcclAllReduce, and the automatic choice between them.
///
/// Each is usable alone: `reduce(op, per_replica, destinations)`, `batch_reduce(op, values,
/// destinations)`, `broadcast(tensor, destinations)`. Destinations are logical device names (any
/// spelling; canonicalised) or indices into Context::logical_devices(). Copies between devices are
/// plain transfers, whatever the device policy (TensorFlow's collectives ignore it too).

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/distribute/communication.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {

inline const LogicalDeviceInfo& info(int device) {
  return Context::global().logical_devices().at(static_cast<std::size_t>(device));
}

/// `t` on `device`: itself when already there, a tensor sharing its buffer between logical CPUs
/// (one address space, as TensorFlow's same-process rendezvous shares host tensors), else a
/// transfer (no device-policy check).
template <Element T>
Tensor<T> copy_to(const Tensor<T>& t, int device) {
  if (t.device_index() == device) return t;
  if (!t.device_info().is_gpu && !info(device).is_gpu)
    return Tensor<T>(detail::alias_storage(t.storage(), device), t.shape());
  auto out = Tensor<T>::empty(t.shape(), device, "_Send");
  detail::copy_bytes(out.mutable_data(), out.device_info(), t.data(), t.device_info(),
                     static_cast<std::size_t>(t.num_elements()) * sizeof(T));
  return out;
}

/// The sum of `parts` computed on `device`. Host-memory devices (CPUs, simulated GPUs) read each
/// other's buffers directly, so the sum is one pass over the inputs, without staging copies;
/// otherwise the parts are copied to `device` and added there with add_n.
template <Numeric T>
Tensor<T> sum_on(const std::vector<Tensor<T>>& parts, int device) {
  bool host = info(device).host_memory();
  for (const auto& p : parts) host = host && p.host_memory();
  if (host && parts.size() > 1) {
    auto out = Tensor<T>::empty(parts[0].shape(), device, "AddN");
    std::vector<const T*> inputs;
    for (const auto& p : parts) inputs.push_back(p.data());
    T* o = out.mutable_data();
    backend::cpu::parallel_for(out.num_elements(), ops::cpu::kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) o[i] = static_cast<T>(inputs[0][i] + inputs[1][i]);
      for (std::size_t k = 2; k < inputs.size(); ++k)
        for (std::int64_t i = begin; i < end; ++i) o[i] = static_cast<T>(o[i] + inputs[k][i]);
    });
    return out;
  }
  std::vector<Tensor<T>> local;
  for (const auto& p : parts) local.push_back(copy_to(p, device));
  if (local.size() == 1) return local[0];
  DeviceScope scope(info(device).spec);
  return add_n(local);
}

template <Numeric T>
Tensor<T> divide(const Tensor<T>& t, std::int64_t n) {
  DeviceScope scope(t.device_info().spec);
  return div(t, scalar<T>(static_cast<T>(n)));
}

/// Logical device indices for device names (any spelling TensorFlow accepts).
/// @throws InvalidArgumentError for names that are not logical devices.
inline std::vector<int> resolve(const std::vector<std::string>& names) {
  auto& context = Context::global();
  if (!context.initialized()) context.ensure_initialized("a cross-device op");
  const auto& devices = context.logical_devices();
  std::vector<int> out;
  for (const auto& name : names) {
    const std::string full = device_util::canonicalize(name);
    int found = -1;
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (devices[i].full_name == full) found = static_cast<int>(i);
    if (found < 0) {
      std::string available;
      for (const auto& d : devices) available += (available.empty() ? "" : ", ") + d.full_name;
      // The canonical name only when it says more than the user's spelling.
      throw InvalidArgumentError("'" + name + "'" + (full == name ? std::string() : " (" + full + ")") +
                                 " is not a logical device. Available: " + available +
                                 ". Name one of these, or configure the device before creating the strategy.");
    }
    out.push_back(found);
  }
  return out;
}

/// "('/job:...', '/job:...')" or "('/job:...',)": Python's repr of a tuple of device names, as
/// TensorFlow's logs print a strategy's or a destination's devices.
inline std::string python_tuple(const std::vector<std::string>& names) {
  std::string s = "(";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + (names.size() == 1 ? ",)" : ")");
}
inline std::string python_tuple(const std::vector<int>& devices) {
  std::vector<std::string> names;
  for (int d : devices) names.push_back(info(d).full_name);
  return python_tuple(names);
}

/// TensorFlow's `logging.log_first_n(logging.INFO, line, 10)`: a Python-logger INFO line, written
/// on the first 10 calls of its site; `make_line` runs only when the line is shown.
template <class MakeLine>
void log_first_10(logging::FirstN& site, MakeLine make_line) {
  if (site.next() && log_enabled(LogSource::python_logger, LogSeverity::info))
    log(LogSource::python_logger, LogSeverity::info, make_line());
}
inline logging::FirstN& reduce_to_one_logs() {
  static logging::FirstN site(10);
  return site;
}
inline logging::FirstN& all_reduce_logs() {
  static logging::FirstN site(10);
  return site;
}

template <class V>
std::vector<int> devices_of(const PerReplica<Tensor<V>>& value) {
  std::vector<int> out;
  for (const auto& t : value.values) out.push_back(t.device_index());
  return out;
}

inline void require_destinations(const std::vector<int>& destinations) {
  if (destinations.empty()) throw InvalidArgumentError("destinations can not be empty");
}
template <class V>
void require_components(const PerReplica<Tensor<V>>& value) {
  if (value.values.empty()) throw InvalidArgumentError("A PerReplica value needs at least one component");
  for (const auto& t : value.values)
    if (!t.defined()) throw InvalidArgumentError("A PerReplica value has an undefined tensor component (default-constructed or moved from)");
  for (const auto& t : value.values)
    if (t.shape() != value.values[0].shape())
      throw InvalidArgumentError("PerReplica components must have equal shapes to be reduced: " +
                                 value.values[0].shape().to_string() + " vs. " + t.shape().to_string());
}

}  // namespace cdo_detail

/// Copies every component to one device, adds them there (add_n), divides for MEAN, and copies
/// the result to every destination.
struct ReductionToOneDevice {
  /// Where to reduce; default: the first destination.
  std::optional<std::string> reduce_to_device = std::nullopt;
  static constexpr std::string_view name = "ReductionToOneDevice";

  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<int>& destinations) const {
    cdo_detail::require_destinations(destinations);
    cdo_detail::require_components(value);
    if (value.size() == 1 && destinations.size() == 1 && value.values[0].device_index() == destinations[0])
      return {{value.values[0]}};
    const int target = reduce_to_device ? cdo_detail::resolve({*reduce_to_device})[0] : destinations[0];
    cdo_detail::log_first_10(cdo_detail::reduce_to_one_logs(), [&] {
      return "Reduce to " + cdo_detail::info(target).full_name + " then broadcast to " +
             cdo_detail::python_tuple(destinations) + ".";
    });
    Tensor<T> total = cdo_detail::sum_on(value.values, target);
    if (op == ReduceOp::MEAN) total = cdo_detail::divide(total, static_cast<std::int64_t>(value.size()));
    return broadcast(total, destinations);
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<std::string>& destinations) const {
    return reduce(op, value, cdo_detail::resolve(destinations));
  }
  /// The values one by one (no packing).
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const std::vector<int>& destinations) const {
    std::vector<Mirrored<Tensor<T>>> out;
    for (const auto& v : values) out.push_back(reduce(op, v, destinations));
    return out;
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<int>& destinations) const {
    cdo_detail::require_destinations(destinations);
    Mirrored<Tensor<T>> out;
    for (int d : destinations) out.values.push_back(cdo_detail::copy_to(value, d));
    return out;
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<std::string>& destinations) const {
    return broadcast(value, cdo_detail::resolve(destinations));
  }
};

namespace cdo_detail {

/// Flattens the tensors of one device, concatenates them in order and splits the result into
/// `num_packs` pieces, the last taking the remainder (TensorFlow's _ConcatAndSplitPacker).
template <Numeric T>
std::vector<Tensor<T>> pack(const std::vector<Tensor<T>>& tensors, std::int64_t num_packs) {
  std::vector<Tensor<T>> flat;
  std::int64_t total = 0;
  for (const auto& t : tensors) {
    flat.push_back(reshape(t, {-1}));
    total += t.num_elements();
  }
  const Tensor<T> all = flat.size() == 1 ? flat[0] : concat(flat, 0);
  if (num_packs == 1) return {all};  // a view when there is one tensor: no kernel needed
  const std::int64_t each = total / num_packs;
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(num_packs), each);
  sizes.back() = total - each * (num_packs - 1);
  return split(all, sizes, 0);
}

/// The inverse of pack: the packs joined and cut back into tensors of the given shapes.
template <Numeric T>
std::vector<Tensor<T>> unpack(const std::vector<Tensor<T>>& packs, const std::vector<Shape>& shapes) {
  const Tensor<T> all = packs.size() == 1 ? packs[0] : concat(packs, 0);
  std::vector<std::int64_t> sizes;
  for (const auto& s : shapes) sizes.push_back(s.num_elements());
  auto pieces = sizes.size() == 1 ? std::vector<Tensor<T>>{all} : split(all, sizes, 0);
  for (std::size_t i = 0; i < pieces.size(); ++i) pieces[i] = reshape(pieces[i], shapes[i].dims_vector());
  return pieces;
}

/// TensorFlow's HierarchicalCopyAllReduce (built for the DGX-1's two groups of four GPUs: sum within a
/// group, exchange between the groups' main devices, broadcast back) generalised to every device
/// count: the sum of `parts[k]` (on device k) on every
/// device, with main devices rotating with `index`.
template <Numeric T>
std::vector<Tensor<T>> hierarchical_copy(const std::vector<Tensor<T>>& parts, std::size_t index) {
  const std::size_t n = parts.size();
  if (n == 1) return parts;
  const std::size_t h = n / 2;
  std::vector<std::size_t> group_a, group_b;
  for (std::size_t k = 0; k < n; ++k) (k < h ? group_a : group_b).push_back(k);
  const std::size_t main0 = index % n;
  const bool in_a = main0 < h;
  const auto& g0 = in_a ? group_a : group_b;
  const auto& g1 = in_a ? group_b : group_a;
  const std::size_t position = in_a ? main0 : main0 - h;
  const std::size_t main1 = g1[position % g1.size()];
  auto device = [&](std::size_t k) { return parts[k].device_index(); };
  auto group_sum = [&](const std::vector<std::size_t>& group, std::size_t main) {
    std::vector<Tensor<T>> members;
    for (auto k : group) members.push_back(parts[k]);
    return sum_on(members, device(main));
  };
  const Tensor<T> total0 = sum_on(std::vector{group_sum(g0, main0), group_sum(g1, main1)}, device(main0));
  const Tensor<T> total1 = copy_to(total0, device(main1));
  std::vector<Tensor<T>> out(n);
  for (auto k : g0) out[k] = copy_to(total0, device(k));
  for (auto k : g1) out[k] = copy_to(total1, device(k));
  return out;
}

/// The all-reduce family's batch_reduce with `all_reduce(parts, pack_index)` as the
/// algorithm; falls back to ReductionToOneDevice when destinations differ from the values' devices.
template <Numeric T, class AllReduce>
std::vector<Mirrored<Tensor<T>>> batch_all_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                  const std::vector<int>& destinations, std::int64_t num_packs,
                                                  std::string_view algorithm, AllReduce all_reduce) {
  require_destinations(destinations);
  if (values.empty()) return {};
  for (const auto& v : values) require_components(v);
  bool matches = true;
  for (const auto& v : values) matches = matches && devices_of(v) == destinations;
  if (!matches) return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
  const std::size_t n = destinations.size();
  std::vector<Shape> shapes;
  for (const auto& v : values) shapes.push_back(v.values[0].shape());
  // Per device: its tensors of every batch item, packed.
  std::vector<std::vector<Tensor<T>>> per_device(n);
  for (std::size_t d = 0; d < n; ++d) {
    std::vector<Tensor<T>> mine;
    for (const auto& v : values) mine.push_back(v.values[d]);
    if (num_packs > 0) {
      DeviceScope scope(info(destinations[d]).spec);
      per_device[d] = pack(mine, num_packs);
    } else {
      per_device[d] = mine;
    }
    // A program without GPU bodies for concat/split packs on the CPU: the engine gets every
    // pack on its own device all the same.
    for (auto& p : per_device[d]) p = copy_to(p, destinations[d]);
  }
  const std::size_t groups = per_device[0].size();
  log_first_10(all_reduce_logs(), [&] {
    return "batch_all_reduce: " + std::to_string(groups) + " all-reduces with algorithm = " + std::string(algorithm) +
           ", num_packs = " + std::to_string(num_packs);
  });
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<Tensor<T>> parts;
    for (std::size_t d = 0; d < n; ++d) parts.push_back(per_device[d][g]);
    auto reduced = all_reduce(parts, g);
    for (std::size_t d = 0; d < n; ++d) per_device[d][g] = std::move(reduced[d]);
  }
  std::vector<Mirrored<Tensor<T>>> out(values.size());
  for (std::size_t d = 0; d < n; ++d) {
    DeviceScope scope(info(destinations[d]).spec);
    auto mine = num_packs > 0 ? unpack(per_device[d], shapes) : per_device[d];
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (op == ReduceOp::MEAN) mine[i] = divide(mine[i], static_cast<std::int64_t>(n));
      out[i].values.push_back(copy_to(mine[i], destinations[d]));  // the result lives on its device
    }
  }
  return out;
}

/// reduce() of the ops whose algorithm is batch_reduce: a batch of one, except that a single value
/// already on its one destination is returned as is.
template <class Ops, Numeric T>
Mirrored<Tensor<T>> reduce_as_batch_of_one(const Ops& ops, ReduceOp op, const PerReplica<Tensor<T>>& value,
                                           const std::vector<int>& destinations) {
  require_components(value);
  if (value.size() == 1 && destinations.size() == 1 && value.values[0].device_index() == destinations[0])
    return {{value.values[0]}};
  return ops.batch_reduce(op, std::vector{value}, destinations).front();
}

}  // namespace cdo_detail

/// The all-reduce family: batch_reduce packs the values, all-reduces each pack with
/// `Engine::all_reduce(parts, pack_index)` and unpacks; reduce is a batch of one (a value already
/// on its one destination is returned as is); broadcast copies, as ReductionToOneDevice does.
/// `Engine` names the family member and says whether this build can run it.
template <class Engine>
struct AllReduceOps {
  std::int64_t num_packs = 1;
  static constexpr std::string_view name = Engine::name;

  void validate() const {
    if (num_packs < 0)
      throw InvalidArgumentError(std::string(Engine::validation_name) + " requires num_packs >= 0, but " +
                                 std::to_string(num_packs) + " is specified");
  }
  /// Whether this program can run the engine (NCCL: a TU built with the devtensor::nccl component).
  [[nodiscard]] static bool available() noexcept { return Engine::available(); }

  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const std::vector<int>& destinations) const {
    validate();
    return cdo_detail::batch_all_reduce(op, values, destinations, num_packs, Engine::pack_prefix,
                                        [](const std::vector<Tensor<T>>& parts, std::size_t index) {
                                          return Engine::all_reduce(parts, index);
                                        });
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<int>& destinations) const {
    return cdo_detail::reduce_as_batch_of_one(*this, op, value, destinations);
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<std::string>& destinations) const {
    return reduce(op, value, cdo_detail::resolve(destinations));
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<int>& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<std::string>& destinations) const {
    return broadcast(value, cdo_detail::resolve(destinations));
  }
};

namespace cdo_detail {

/// All-reduce by copies, every device included for any device count.
struct HierarchicalCopyEngine {
  static constexpr std::string_view name = "HierarchicalCopyAllReduce";
  static constexpr std::string_view validation_name = "HierarchicalCopy";
  static constexpr const char* pack_prefix = "hierarchical_copy";
  [[nodiscard]] static constexpr bool available() noexcept { return true; }
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce(const std::vector<Tensor<T>>& parts, std::size_t index) {
    return hierarchical_copy(parts, index);
  }
};

/// All-reduce with NCCL across real, distinct GPUs: every rank's result is a new tensor on its own
/// GPU, the calls grouped and queued on the devices' streams. The kernel is registered at run time
/// by src/devtensor_nccl.cpp, which the devtensor::nccl component links (device/physical.hpp), so
/// a program links NCCL or not as a whole.
struct NcclEngine {
  static constexpr std::string_view name = "NcclAllReduce";
  static constexpr std::string_view validation_name = "NCCL all-reduce";
  static constexpr const char* pack_prefix = "nccl";
  [[nodiscard]] static bool available() noexcept { return detail::gpu_all_reduce_kernel() != nullptr; }
  /// Whether the registered kernel can also join a communicator that spans processes.
  [[nodiscard]] static bool available_across_processes() noexcept {
    const detail::GpuAllReduceKernel* kernel = detail::gpu_all_reduce_kernel();
    return kernel && kernel->new_unique_id && kernel->all_reduce_sum_across_processes;
  }

  /// @throws UnimplementedError without the kernel; InvalidArgumentError for parts that are not
  ///         on real GPUs.
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce(const std::vector<Tensor<T>>& parts, std::size_t) {
    return call(parts, [&](const detail::GpuAllReduceKernel& kernel, const auto&... buffers) {
      kernel.all_reduce_sum(buffers...);
    });
  }
  /// The same across processes: `parts` are this worker's ranks of `clique`, every worker's GPUs
  /// are summed. @throws UnimplementedError when the kernel cannot cross processes.
  template <Numeric T>
  static std::vector<Tensor<T>> all_reduce_across_processes(const std::vector<Tensor<T>>& parts,
                                                            const detail::GpuCliqueAcrossProcesses& clique,
                                                            std::string_view what) {
    return call(parts, [&](const detail::GpuAllReduceKernel& kernel, const auto&... buffers) {
      if (!kernel.all_reduce_sum_across_processes)
        throw UnimplementedError(std::string("The all-reduce kernel '") + kernel.name + "' cannot cross processes");
      kernel.all_reduce_sum_across_processes(clique, what, buffers...);
    });
  }

 private:
  /// A new result per part on its GPU; `launch(kernel, dtype, count, send, recv, ordinals, streams)`.
  template <Numeric T, class Launch>
  static std::vector<Tensor<T>> call(const std::vector<Tensor<T>>& parts, Launch launch) {
    const detail::GpuAllReduceKernel* kernel = detail::gpu_all_reduce_kernel();
    if (!kernel)
      throw UnimplementedError(
          "NcclAllReduce: Nccl kernel is not found in this program. Build at least one translation unit "
          "with the devtensor::nccl component (it registers the kernel), or use HierarchicalCopyAllReduce "
          "or ReductionToOneDevice.");
    std::vector<Tensor<T>> out;
    std::vector<const void*> send;
    std::vector<void*> recv, streams;
    std::vector<int> ordinals;
    for (const auto& part : parts) {
      const auto& device = part.device_info();
      if (!device.is_gpu || device.simulated)
        throw InvalidArgumentError("NcclAllReduce needs real GPUs, but a value is on " + device.full_name +
                                   (device.simulated ? " (a simulated GPU)" : "") +
                                   ". Use HierarchicalCopyAllReduce or ReductionToOneDevice for these devices.");
      out.push_back(Tensor<T>::empty(part.shape(), part.device_index(), "NcclAllReduce"));
      send.push_back(part.data());
      recv.push_back(out.back().mutable_data());
      ordinals.push_back(device.platform_ordinal);
      streams.push_back(device.stream);
    }
    if (!parts.empty() && parts[0].num_elements() > 0)
      launch(*kernel, dtype_enum_name<T>(), static_cast<std::size_t>(parts[0].num_elements()),
             std::span<const void* const>(send), std::span<void* const>(recv), std::span<const int>(ordinals),
             std::span<void* const>(streams));
    return out;
  }
};

}  // namespace cdo_detail

using HierarchicalCopyAllReduce = AllReduceOps<cdo_detail::HierarchicalCopyEngine>;
using NcclAllReduce = AllReduceOps<cdo_detail::NcclEngine>;

namespace cdo_detail {

inline logging::FirstN& collective_logs() {
  static logging::FirstN site(10);
  return site;
}

/// Below this many bytes a ring's share per device is too small to pay for waking a thread
/// (~20-50 us on these VMs): the calling thread does every share.
inline constexpr std::int64_t kParallelRingBytes = std::int64_t{1} << 20;

/// Runs share(k) for k in [0, n): shares 1.. on their own threads, share 0 on the caller.
template <class Share>
void run_shares(std::size_t n, bool parallel, Share share) {
  if (!parallel || n < 2) {
    for (std::size_t k = 0; k < n; ++k) share(k);
    return;
  }
  std::vector<std::jthread> helpers;
  helpers.reserve(n - 1);
  for (std::size_t k = 1; k < n; ++k) helpers.emplace_back([&share, k] { share(k); });
  share(0);
}

/// The in-process ring all-reduce: the flat `parts` (one per device, equal lengths)
/// are cut into one chunk per device; device k sums chunk k of every part (reduce-scatter) and the
/// chunks are then gathered on every device (all-gather). On host memory (CPUs, simulated GPUs)
/// each device's share runs on its own thread and writes straight into one result buffer, which
/// logical CPUs then share (one address space, as for every host tensor a cross-device op moves),
/// so the all-gather costs nothing for them and one copy per simulated GPU. Other devices do the
/// same with device ops: split, add_n on the chunk's owner, copies, concat.
template <Numeric T>
std::vector<Tensor<T>> ring_all_reduce(const std::vector<Tensor<T>>& parts) {
  const std::size_t n = parts.size();
  if (n == 1) return parts;
  const std::int64_t total = parts[0].num_elements();
  bool host = true;
  for (const auto& p : parts) host = host && p.host_memory();
  std::vector<std::int64_t> bounds(n + 1);
  for (std::size_t k = 0; k <= n; ++k) bounds[k] = total * static_cast<std::int64_t>(k) / static_cast<std::int64_t>(n);
  if (host) {
    auto sum = Tensor<T>::empty(parts[0].shape(), parts[0].device_index(), "CollectiveReduceV2");
    std::vector<const T*> inputs;
    for (const auto& p : parts) inputs.push_back(p.data());
    T* o = sum.mutable_data();
    const bool parallel = total * static_cast<std::int64_t>(sizeof(T)) >= kParallelRingBytes;
    run_shares(n, parallel, [&](std::size_t k) {
      for (std::int64_t i = bounds[k]; i < bounds[k + 1]; ++i) o[i] = static_cast<T>(inputs[0][i] + inputs[1][i]);
      for (std::size_t d = 2; d < n; ++d)
        for (std::int64_t i = bounds[k]; i < bounds[k + 1]; ++i) o[i] = static_cast<T>(o[i] + inputs[d][i]);
    });
    std::vector<Tensor<T>> out(n);
    // Logical CPUs alias the result (nothing to copy); simulated GPUs copy it, each on its thread.
    const bool copies = info(parts[0].device_index()).is_gpu;
    run_shares(n, parallel && copies, [&](std::size_t d) { out[d] = copy_to(sum, parts[d].device_index()); });
    return out;
  }
  std::vector<std::int64_t> sizes;
  for (std::size_t k = 0; k < n; ++k) sizes.push_back(bounds[k + 1] - bounds[k]);
  std::vector<std::vector<Tensor<T>>> chunks(n);  // chunks[d][k]: device d's chunk k
  for (std::size_t d = 0; d < n; ++d) {
    DeviceScope scope(parts[d].device_info().spec);
    chunks[d] = split(parts[d], sizes, 0);
  }
  std::vector<Tensor<T>> reduced(n);  // reduce-scatter: chunk k summed on device k
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<Tensor<T>> column;
    for (std::size_t d = 0; d < n; ++d) column.push_back(chunks[d][k]);
    reduced[k] = sum_on(column, parts[k].device_index());
  }
  std::vector<Tensor<T>> out(n);  // all-gather
  for (std::size_t d = 0; d < n; ++d) {
    std::vector<Tensor<T>> gathered;
    for (std::size_t k = 0; k < n; ++k) gathered.push_back(copy_to(reduced[k], parts[d].device_index()));
    DeviceScope scope(parts[d].device_info().spec);
    out[d] = concat(gathered, 0);
  }
  return out;
}

}  // namespace cdo_detail

/// tf.distribute.experimental.CollectiveAllReduce within one process: values are
/// packed by CommunicationOptions::bytes_per_pack (group_by_size, the list reversed first, as
/// TensorFlow does to overlap with backpropagation) and each pack is all-reduced across the
/// devices. RING: the in-process ring (every device does its share in parallel); NCCL: NCCL
/// across distinct real GPUs (the devtensor::nccl component); AUTO: NCCL when it can run there,
/// else the ring. int32 values go through ReductionToOneDevice, as in TensorFlow.
///
/// MultiWorkerMirroredStrategy gives it a clique of every worker's GPUs: all_reduce_across_workers
/// then sums every replica of every process in one NCCL call per pack, on the devices.
class CollectiveAllReduce {
 public:
  static constexpr std::string_view name = "CollectiveAllReduce";

  explicit CollectiveAllReduce(CommunicationOptions options = CommunicationOptions()) : options_(options) {}
  /// This process's GPUs are ranks of `clique`, which spans the workers (nullptr: none).
  CollectiveAllReduce(CommunicationOptions options, std::shared_ptr<const detail::GpuCliqueAcrossProcesses> clique)
      : options_(options), clique_(std::move(clique)) {}

  [[nodiscard]] const CommunicationOptions& options() const noexcept { return options_; }
  /// Whether all_reduce_across_workers can run (NCCL between the workers' GPUs).
  [[nodiscard]] bool spans_workers() const noexcept { return clique_ != nullptr; }

  /// Every worker's replicas reduced with NCCL across the processes: `values` are this worker's
  /// replicas on `devices` (its GPUs, ranks of the clique), and MEAN divides by every rank.
  /// @throws FailedPreconditionError without a clique (spans_workers() is false).
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> all_reduce_across_workers(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                             const std::vector<int>& devices, std::string_view what) const {
    if (!clique_)
      throw FailedPreconditionError("This CollectiveAllReduce has no NCCL clique across workers; "
                                    "MultiWorkerMirroredStrategy makes one when every worker has its own GPUs");
    cdo_detail::require_destinations(devices);
    if (values.empty()) return {};
    for (const auto& v : values) {
      cdo_detail::require_components(v);
      if (cdo_detail::devices_of(v) != devices)
        throw InvalidArgumentError("An all-reduce across workers needs each replica's value on its own device");
    }
    return all_reduce(op, values, devices, options_, what);
  }
  /// What the values on `devices` would use: NCCL or RING (AUTO resolved).
  [[nodiscard]] CommunicationImplementation implementation_for(const std::vector<int>& devices) const {
    const auto requested = options_.implementation();
    if (requested == CommunicationImplementation::RING) return requested;
    bool real_gpus = !devices.empty();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const auto& d = cdo_detail::info(devices[i]);
      real_gpus = real_gpus && d.is_gpu && !d.simulated;
      for (std::size_t j = 0; j < i; ++j)  // logical GPUs sharing a physical GPU cannot form an NCCL clique
        real_gpus = real_gpus && cdo_detail::info(devices[j]).physical_index != d.physical_index;
    }
    return real_gpus && NcclAllReduce::available() ? CommunicationImplementation::NCCL : CommunicationImplementation::RING;
  }

  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const std::vector<int>& destinations, CommunicationOptions options = CommunicationOptions()) const {
    cdo_detail::require_destinations(destinations);
    if (values.empty()) return {};
    for (const auto& v : values) cdo_detail::require_components(v);
    if constexpr (std::is_same_v<T, std::int32_t>) {
      return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
    } else {
      const auto devices = cdo_detail::devices_of(values[0]);
      for (const auto& v : values)
        if (cdo_detail::devices_of(v) != devices) return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
      const auto reduced = all_reduce(op, values, devices, options_.merge(options), {});
      if (devices == destinations) return reduced;
      // Other destinations: each takes the component on its device, else a copy of the primary.
      std::vector<Mirrored<Tensor<T>>> out(reduced.size());
      for (std::size_t i = 0; i < reduced.size(); ++i)
        for (int d : destinations) {
          const auto at = std::find(devices.begin(), devices.end(), d);
          out[i].values.push_back(at != devices.end() ? reduced[i].values[static_cast<std::size_t>(at - devices.begin())]
                                                      : cdo_detail::copy_to(reduced[i].primary(), d));
        }
      return out;
    }
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<int>& destinations) const {
    return cdo_detail::reduce_as_batch_of_one(*this, op, value, destinations);
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<std::string>& destinations) const {
    return reduce(op, value, cdo_detail::resolve(destinations));
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<int>& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<std::string>& destinations) const {
    return broadcast(value, cdo_detail::resolve(destinations));
  }

 private:
  CommunicationOptions options_;
  std::shared_ptr<const detail::GpuCliqueAcrossProcesses> clique_;

  /// Packs, all-reduces each pack and unpacks. `across` (non-empty: the operation's name): NCCL
  /// over the clique of every worker's GPUs; otherwise this process's devices only.
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> all_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                              const std::vector<int>& devices, const CommunicationOptions& options,
                                              std::string_view across) const {
    const std::size_t n = devices.size();
    const bool spans = !across.empty();
    const auto implementation = spans ? CommunicationImplementation::NCCL : implementation_for(devices);
    const std::size_t group_size = spans ? static_cast<std::size_t>(clique_->num_ranks) : n;
    // Reversed, then packed by size: the last gradients (computed first) go first.
    std::vector<std::size_t> order(values.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
    std::vector<Tensor<T>> first_replica;
    for (auto i : order) first_replica.push_back(values[i].values[0]);
    std::vector<std::vector<std::size_t>> packs;  // indices into values
    {
      std::size_t next = 0;
      for (const auto& pack : group_by_size(first_replica, options.bytes_per_pack())) {
        packs.emplace_back();
        for (std::size_t j = 0; j < pack.size(); ++j) packs.back().push_back(order[next++]);
      }
    }
    cdo_detail::log_first_10(cdo_detail::collective_logs(), [&] {
      return "Collective all_reduce tensors: " + std::to_string(values.size()) + " all_reduces, num_devices = " +
             std::to_string(n) + ", group_size = " + std::to_string(group_size) + ", implementation = CommunicationImplementation." +
             std::string(to_string(implementation)) + ", num_packs = " + std::to_string(packs.size());
    });
    std::vector<Mirrored<Tensor<T>>> out(values.size());
    for (auto& o : out) o.values.resize(n);
    for (const auto& pack : packs) {
      std::vector<Shape> shapes;
      for (auto i : pack) shapes.push_back(values[i].values[0].shape());
      std::vector<Tensor<T>> flat(n);
      for (std::size_t d = 0; d < n; ++d) {
        std::vector<Tensor<T>> mine;
        for (auto i : pack) mine.push_back(values[i].values[d]);
        DeviceScope scope(cdo_detail::info(devices[d]).spec);
        flat[d] = cdo_detail::copy_to(cdo_detail::pack(mine, 1)[0], devices[d]);
      }
      auto summed = spans ? cdo_detail::NcclEngine::all_reduce_across_processes(flat, *clique_, across)
                    : implementation == CommunicationImplementation::NCCL ? cdo_detail::NcclEngine::all_reduce(flat, 0)
                                                                          : cdo_detail::ring_all_reduce(flat);
      for (std::size_t d = 0; d < n; ++d) {
        DeviceScope scope(cdo_detail::info(devices[d]).spec);
        auto pieces = cdo_detail::unpack(std::vector{summed[d]}, shapes);
        for (std::size_t j = 0; j < pack.size(); ++j) {
          auto piece = op == ReduceOp::MEAN ? cdo_detail::divide(pieces[j], static_cast<std::int64_t>(group_size)) : pieces[j];
          out[pack[j]].values[d] = cdo_detail::copy_to(piece, devices[d]);
        }
      }
    }
    return out;
  }
};

/// TensorFlow 2.21's default (MirroredExtended._make_collective_ops_with_fallbacks),
/// decided when the strategy is built: CPUs mixed with GPUs → ReductionToOneDevice; all CPUs, or
/// more logical than physical GPUs → CollectiveAllReduce(RING); physical GPUs →
/// CollectiveAllReduce(AUTO), which is NCCL when this program has the kernel.
class AutoCrossDeviceOps {
 public:
  static constexpr std::string_view name = "auto";
  AutoCrossDeviceOps() = default;

  void select(const std::vector<int>& devices) {
    std::size_t gpus = 0;
    for (int d : devices) gpus += cdo_detail::info(d).is_gpu ? 1u : 0u;
    if (gpus > 0 && gpus < devices.size()) {
      chosen_ = ReductionToOneDevice{};
      return;
    }
    if (gpus == 0) {
      chosen_ = CollectiveAllReduce(CommunicationOptions(0, std::nullopt, CommunicationImplementation::RING));
      return;
    }
    std::size_t logical_gpus = 0;
    for (const auto& d : Context::global().logical_devices()) logical_gpus += d.is_gpu ? 1u : 0u;
    const auto physical_gpus = config::list_physical_devices("GPU").size();
    const auto implementation = logical_gpus > physical_gpus ? CommunicationImplementation::RING : CommunicationImplementation::AUTO;
    chosen_ = CollectiveAllReduce(CommunicationOptions(0, std::nullopt, implementation));
  }
  [[nodiscard]] std::string_view chosen_name() const {
    return std::visit([](const auto& ops) { return std::decay_t<decltype(ops)>::name; }, chosen_);
  }
  /// The collective's options when the choice is CollectiveAllReduce.
  [[nodiscard]] std::optional<CommunicationOptions> collective_options() const {
    if (const auto* c = std::get_if<CollectiveAllReduce>(&chosen_)) return c->options();
    return std::nullopt;
  }
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const std::vector<int>& destinations) const {
    return std::visit([&](const auto& ops) { return ops.batch_reduce(op, values, destinations); }, chosen_);
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const std::vector<int>& destinations) const {
    return std::visit([&](const auto& ops) { return ops.reduce(op, value, destinations); }, chosen_);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const std::vector<int>& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }

 private:
  std::variant<ReductionToOneDevice, CollectiveAllReduce> chosen_;
};

}  // namespace distribute
}  // namespace devtensor
