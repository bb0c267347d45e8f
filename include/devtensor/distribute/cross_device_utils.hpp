#pragma once
/// @file cross_device_utils.hpp
/// @brief What every cross-device algorithm shares: Destinations (devices, or their names resolved
/// once), moving and summing tensors between devices, packing, argument checks and TensorFlow's
/// log lines.
///
/// Copies between devices are plain transfers, whatever the device policy (TensorFlow's
/// collectives ignore it too).

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace distribute {

/// Where a cross-device operation puts its results: Devices, or device names in any spelling
/// TensorFlow accepts ("/cpu:1", "/device:GPU:0", full names), resolved once, when the value is
/// made. Every algorithm takes this one type, so none needs an overload for names.
class Destinations {
 public:
  Destinations() = default;
  Destinations(std::vector<const Device*> devices) : devices_(std::move(devices)) {}  // NOLINT: implicit
  Destinations(std::initializer_list<const Device*> devices) : devices_(devices) {}
  /// @throws InvalidArgumentError for a name that is not a logical device.
  Destinations(const std::vector<std::string>& names) {  // NOLINT: implicit, as TensorFlow takes strings
    const DeviceSet& set = device_set("a cross-device op");
    for (const auto& name : names) devices_.push_back(&set.find(name));
  }

  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }
  [[nodiscard]] bool empty() const noexcept { return devices_.empty(); }
  [[nodiscard]] const Device& operator[](std::size_t i) const noexcept { return *devices_[i]; }
  [[nodiscard]] const std::vector<const Device*>& devices() const noexcept { return devices_; }
  friend bool operator==(const Destinations&, const Destinations&) = default;

 private:
  std::vector<const Device*> devices_;
};

namespace cdo_detail {

/// `t` on `device`: itself when already there, a tensor sharing its buffer between logical CPUs
/// (one address space, as TensorFlow's same-process rendezvous shares host tensors), else a
/// transfer (no device-policy check).
template <Element T>
Tensor<T> copy_to(const Tensor<T>& t, const Device& device) {
  if (&t.device_info() == &device) return t;
  if (!t.device_info().is_gpu && !device.is_gpu) return Tensor<T>(alias_storage(t.storage(), device), t.shape());
  auto out = Tensor<T>::empty(t.shape(), device, "_Send");
  copy_bytes(out.mutable_data(), device, t.data(), t.device_info(),
             static_cast<std::size_t>(t.num_elements()) * sizeof(T));
  return out;
}

/// The sum of `parts` computed on `device`. Host-memory devices (CPUs, simulated GPUs) read each
/// other's buffers directly, so the sum is one pass over the inputs, without staging copies;
/// otherwise the parts are copied to `device` and added there with add_n.
template <Numeric T>
Tensor<T> sum_on(const std::vector<Tensor<T>>& parts, const Device& device) {
  bool host = device.host_memory();
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
  DeviceScope scope(device.spec);
  return add_n(local);
}

template <Numeric T>
Tensor<T> divide(const Tensor<T>& t, std::int64_t n) {
  DeviceScope scope(t.device_info().spec);
  return div(t, scalar<T>(static_cast<T>(n)));
}

/// "('/job:...', '/job:...')" or "('/job:...',)": Python's repr of a tuple of device names, as
/// TensorFlow's logs print a strategy's or a destination's devices.
inline std::string python_tuple(const std::vector<std::string>& names) {
  std::string s = "(";
  for (std::size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + (names.size() == 1 ? ",)" : ")");
}
inline std::string python_tuple(const Destinations& devices) {
  std::vector<std::string> names;
  for (const Device* d : devices.devices()) names.push_back(d->full_name);
  return python_tuple(names);
}

/// The count of one log_first_n site, one per program for each tag type.
template <class Site>
inline constinit logging::FirstN first_10_site{10};

/// TensorFlow's `logging.log_first_n(logging.INFO, line, 10)`: a Python-logger INFO line, written
/// on the first 10 calls of the site `Site` names; `make_line` runs only when the line is shown.
template <class Site, class MakeLine>
void log_first_10(MakeLine make_line) {
  if (first_10_site<Site>.next() && log_enabled(LogSource::python_logger, LogSeverity::info))
    log(LogSource::python_logger, LogSeverity::info, make_line());
}

/// The devices of a PerReplica value's components, in replica order.
template <class V>
Destinations devices_of(const PerReplica<Tensor<V>>& value) {
  std::vector<const Device*> out;
  for (const auto& t : value.values) out.push_back(&t.device_info());
  return out;
}

inline void require_destinations(const Destinations& destinations) {
  if (destinations.empty()) throw InvalidArgumentError("destinations can not be empty");
}
template <class V>
void require_components(const PerReplica<Tensor<V>>& value) {
  if (value.values.empty()) throw InvalidArgumentError("A PerReplica value needs at least one component");
  for (const auto& t : value.values)
    if (!t.defined())
      throw InvalidArgumentError(
          "A PerReplica value has an undefined tensor component (default-constructed or moved from)");
  for (const auto& t : value.values)
    if (t.shape() != value.values[0].shape())
      throw InvalidArgumentError("PerReplica components must have equal shapes to be reduced: " +
                                 value.values[0].shape().to_string() + " vs. " + t.shape().to_string());
}

/// A single value already on its one destination needs no reduction.
template <class V>
bool already_reduced(const PerReplica<Tensor<V>>& value, const Destinations& destinations) {
  return value.size() == 1 && destinations.size() == 1 && &value.values[0].device_info() == &destinations[0];
}

/// TensorFlow's batch_reduce shortcut: when every value is a single component already on the one
/// destination (one replica), the values are the result and no collective runs (on one GPU, no
/// NCCL communicator is made). Returns nothing otherwise.
template <class V>
std::optional<std::vector<Mirrored<Tensor<V>>>> batch_already_reduced(const std::vector<PerReplica<Tensor<V>>>& values,
                                                                      const Destinations& destinations) {
  for (const auto& v : values)
    if (!already_reduced(v, destinations)) return std::nullopt;
  std::vector<Mirrored<Tensor<V>>> out;
  for (const auto& v : values) out.push_back({{v.values[0]}});
  return out;
}

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

}  // namespace cdo_detail
}  // namespace distribute
}  // namespace devtensor
