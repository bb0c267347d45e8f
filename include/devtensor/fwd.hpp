#pragma once
/// @file fwd.hpp
/// @brief Forward declarations of devtensor's main types, for headers that only name them.

#include "devtensor/config.hpp"

namespace devtensor {
class Error;
class InvalidArgumentError;
class NotFoundError;
class FailedPreconditionError;
class ResourceExhaustedError;
class UnimplementedError;
class InternalError;
class DeviceSpec;
class DeviceScope;
class Context;
struct cpu_t;
struct gpu_t;
struct Device;
struct PhysicalDeviceInfo;
namespace config {
struct PhysicalDevice;
struct LogicalDevice;
struct LogicalDeviceConfiguration;
}  // namespace config
}  // namespace devtensor
