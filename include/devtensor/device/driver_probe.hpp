#pragma once
/// @file driver_probe.hpp
/// @brief Counts the NVIDIA GPUs the kernel driver reports, without the CUDA runtime, so that a
/// program built without devtensor's CUDA component can say that it is not using them.
///
/// The driver lists one directory per GPU, named by its PCI bus id, under /proc/driver/nvidia/gpus
/// (present whenever the nvidia kernel module is loaded, also inside containers that expose GPUs).
/// Reading it costs a directory scan: no library is loaded and no CUDA context is created, which
/// a `dlopen("libcuda.so.1")` + cuInit probe would do (hundreds of milliseconds and device memory).

#include "devtensor/config.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS && defined(__linux__)
#include <dirent.h>
#endif

namespace devtensor::detail {

/// A driver probe: the number of GPUs the driver reports (0 when it reports none or is absent).
using GpuDriverProbe = int (*)() noexcept;

/// The NVIDIA kernel driver's count, from /proc/driver/nvidia/gpus; 0 elsewhere than Linux.
int count_nvidia_driver_gpus() noexcept;

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION int count_nvidia_driver_gpus() noexcept {
#if defined(__linux__)
  DIR* dir = ::opendir("/proc/driver/nvidia/gpus");
  if (!dir) return 0;
  int count = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++count;
  ::closedir(dir);
  return count;
#else
  return 0;
#endif
}
#endif

}  // namespace devtensor::detail
