#pragma once
/// @file device_lib.hpp
/// @brief devtensor::device_lib::list_local_devices (TensorFlow's device_lib).

#include <cstdint>
#include <string>
#include <vector>

#include "devtensor/core/source_location.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::device_lib {

/// TensorFlow's DeviceAttributes, as device_lib shows them.
struct DeviceAttributes {
  std::string name;                  // "/device:GPU:0"
  std::string device_type;           // "GPU"
  std::uint64_t memory_limit = 0;    // bytes: the allocator's limit (CPU: 256 MiB, as TensorFlow)
  std::string physical_device_desc;  // "device: 0, name: ..., pci bus id: ..., compute capability: 9.0"
  std::string full_name;             // "/job:localhost/replica:0/task:0/device:GPU:0"
};

/// Every logical device with its attributes; initialises the Context.
inline std::vector<DeviceAttributes> list_local_devices(SourceLocation where = SourceLocation::current()) {
  std::vector<DeviceAttributes> out;
  for (const auto& d : Context::global().devices("device_lib::list_local_devices()", where))
    out.push_back({d.device.name, d.device_type, d.memory_limit, d.physical_device_desc, d.full_name});
  return out;
}

}  // namespace devtensor::device_lib
