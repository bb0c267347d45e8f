#pragma once
/// @file device_set.hpp
/// @brief DeviceSet: the process's logical devices as immutable Device values, built once at
/// initialisation, in TensorFlow's order, with the one lookup of a device by name.
///
/// The Context builds it when it initialises and never changes it, so a `const Device&` taken from
/// it stays valid for the life of the process (Context::reset_for_testing aside). Everything below
/// the placer receives devices from it as values instead of looking them up again.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/device_info.hpp"
#include "devtensor/device/device_util.hpp"
#include "devtensor/device/spec.hpp"

namespace devtensor {

class DeviceSet {
 public:
  DeviceSet() = default;
  /// `devices` in logical order: CPUs first, then GPUs. Sets each device's logical_index.
  /// `physical_gpus`: how many GPUs the machine has (visible or not), for strategies' defaults.
  DeviceSet(std::vector<Device> devices, std::size_t physical_gpus);
  // Moving keeps every Device where it is (a vector's buffer moves whole); a copy would not.
  DeviceSet(DeviceSet&&) noexcept = default;
  DeviceSet& operator=(DeviceSet&&) noexcept = default;
  DeviceSet(const DeviceSet&) = delete;
  DeviceSet& operator=(const DeviceSet&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return devices_.size(); }
  [[nodiscard]] bool empty() const noexcept { return devices_.empty(); }
  [[nodiscard]] const Device& operator[](std::size_t i) const noexcept { return devices_[i]; }
  [[nodiscard]] auto begin() const noexcept { return devices_.begin(); }
  [[nodiscard]] auto end() const noexcept { return devices_.end(); }

  /// CPU:0, where host-side work (datasets, results of cross-replica reductions) lives.
  [[nodiscard]] const Device& host_cpu() const noexcept { return devices_.front(); }
  /// TensorFlow's preference order: GPUs (priority 210) by name, then CPUs (70) by name.
  [[nodiscard]] std::span<const Device* const> by_priority() const noexcept { return by_priority_; }
  [[nodiscard]] std::size_t physical_gpus() const noexcept { return physical_gpus_; }
  [[nodiscard]] bool has_real_gpus() const noexcept { return has_real_gpus_; }

  /// The device a spec names exactly (its type and id set; unset job/replica/task match), or
  /// nullptr.
  [[nodiscard]] const Device* find(const DeviceSpec& spec) const noexcept;
  /// The device called `name` in any spelling TensorFlow accepts ("/gpu:1", "/device:GPU:1", the
  /// full name). @throws InvalidArgumentError naming the devices there are, when none is.
  [[nodiscard]] const Device& find(std::string_view name) const;

  /// "a, b, c": the devices' full names, for messages.
  [[nodiscard]] std::string names() const;

 private:
  std::vector<Device> devices_;
  std::vector<const Device*> by_priority_;
  std::size_t physical_gpus_ = 0;
  bool has_real_gpus_ = false;
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION DeviceSet::DeviceSet(std::vector<Device> devices, std::size_t physical_gpus)
    : devices_(std::move(devices)), physical_gpus_(physical_gpus) {
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    devices_[i].logical_index = static_cast<int>(i);
    has_real_gpus_ = has_real_gpus_ || devices_[i].real_gpu();
  }
  for (const bool gpus : {true, false})
    for (const auto& d : devices_)
      if (d.is_gpu == gpus) by_priority_.push_back(&d);
}

DEVTENSOR_DEFINITION const Device* DeviceSet::find(const DeviceSpec& spec) const noexcept {
  if (!spec.type() || !spec.id()) return nullptr;
  for (const auto& d : devices_)
    if (spec.matches(d.spec)) return &d;
  return nullptr;
}

DEVTENSOR_DEFINITION const Device& DeviceSet::find(std::string_view name) const {
  const std::string full = device_util::canonicalize(name);
  for (const auto& d : devices_)
    if (d.full_name == full) return d;
  // The canonical name only when it says more than the user's spelling.
  throw InvalidArgumentError("'" + std::string(name) + "'" + (full == name ? std::string() : " (" + full + ")") +
                             " is not a logical device. Available: " + names() +
                             ". Name one of these, or configure the device before devtensor initializes.");
}

DEVTENSOR_DEFINITION std::string DeviceSet::names() const {
  std::string out;
  for (const auto& d : devices_) out += (out.empty() ? "" : ", ") + d.full_name;
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
