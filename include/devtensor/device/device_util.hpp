#pragma once
/// @file device_util.hpp
/// @brief device_util::canonicalize: TensorFlow's distribute helper that completes a device name
/// into a full one (the strategies' and cross-device ops' spelling of devices).

#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/device/spec.hpp"

namespace devtensor {

/// TensorFlow's distribute helper device_util.canonicalize, eager flavour.
namespace device_util {

/// Completes `device` (full or local form) into a full name: fields it leaves unset come from
/// `default_spec`, then from "/job:localhost/replica:0/task:0/device:CPU:0".
/// Example: "/gpu:1" -> "/job:localhost/replica:0/task:0/device:GPU:1".
/// @throws InvalidArgumentError when either string does not parse.
std::string canonicalize(std::string_view device, std::string_view default_spec = "");

}  // namespace device_util

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::string device_util::canonicalize(std::string_view device, std::string_view default_spec) {
  DeviceSpec result = DeviceSpec::parse("/job:localhost/replica:0/task:0/device:CPU:0");
  if (!default_spec.empty()) result = result.overridden_by(DeviceSpec::parse_full_or_local(default_spec));
  return result.overridden_by(DeviceSpec::parse_full_or_local(device)).to_string();
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
