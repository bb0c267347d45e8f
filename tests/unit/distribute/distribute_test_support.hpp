#pragma once
// Shared by the distribution tests: n virtual CPUs (or simulated GPUs) in a fresh Context.
#include <initializer_list>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace devtensor::test {

/// Configures n logical CPUs and returns their names "/cpu:0" ... "/cpu:n-1".
inline std::vector<std::string> virtual_cpus(int n) {
  std::vector<config::LogicalDeviceConfiguration> logical(static_cast<std::size_t>(n));
  config::set_logical_device_configuration(config::list_physical_devices("CPU")[0], logical);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("/cpu:" + std::to_string(i));
  return names;
}

/// Values 0..n-1 scaled, on the current device.
inline Tensor<float> iota(std::int64_t n, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i) * scale + offset);
  return constant<float>(v, {n});
}

/// Logical devices by their position in the DeviceSet, as cross-device destinations.
inline distribute::Destinations devices_at(std::initializer_list<int> indices) {
  std::vector<const Device*> out;
  const auto& devices = Context::global().devices();
  for (int i : indices) out.push_back(&devices[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace devtensor::test
