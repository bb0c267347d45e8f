#pragma once
/// @file version.hpp
/// @brief devtensor's version. CMake reads the three numbers from this file, so it is the only place
/// they are written.

#define DEVTENSOR_VERSION_MAJOR 0
#define DEVTENSOR_VERSION_MINOR 1
#define DEVTENSOR_VERSION_PATCH 0
#define DEVTENSOR_VERSION (DEVTENSOR_VERSION_MAJOR * 10000 + DEVTENSOR_VERSION_MINOR * 100 + DEVTENSOR_VERSION_PATCH)

namespace devtensor {
inline constexpr int version_major = DEVTENSOR_VERSION_MAJOR;
inline constexpr int version_minor = DEVTENSOR_VERSION_MINOR;
inline constexpr int version_patch = DEVTENSOR_VERSION_PATCH;
}  // namespace devtensor
