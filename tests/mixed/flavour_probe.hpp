#pragma once
// An op whose GPU kernel exists only in nvcc TUs. Its kernel table differs between flavours, so it
// lives in the ABI-tagged namespace, as every flavour-dependent op must.
#include <devtensor/devtensor.hpp>

#include <string_view>

namespace probe {
inline namespace DEVTENSOR_ABI_NS {
struct NvccOnlyGpuOp {
  static constexpr std::string_view name = "NvccOnlyGpuOp";
  template <devtensor::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, devtensor::cpu_t> || DEVTENSOR_DEVICE_CODE;
};
}  // namespace DEVTENSOR_ABI_NS

struct Report {
  const char* flavour;
  bool gpu_kernel;
  const void* context;
  bool cuda_platform_registered;
  bool nccl_available;  // NcclAllReduce's kernel, registered by the NCCL TU for the whole program
};
Report host_report();
Report cudart_report();
Report nvcc_report();
Report nccl_report();  // only in programs with the NCCL part (PROBE_WITH_NCCL)

// Tensors cross translation units of different flavours: made in one, computed on in another.
devtensor::Tensor<float> host_make();
devtensor::Tensor<float> nvcc_twice(const devtensor::Tensor<float>& t);
devtensor::Tensor<float> cudart_sum(const devtensor::Tensor<float>& t);
}  // namespace probe

#define PROBE_REPORT                                                                     \
  probe::Report {                                                                        \
    DEVTENSOR_FLAVOUR_NAME, devtensor::has_kernel_v<probe::NvccOnlyGpuOp, devtensor::gpu_t, float>, \
        &devtensor::Context::global(), devtensor::Context::global().gpu_platform() != nullptr, \
        devtensor::distribute::NcclAllReduce::available()                                \
  }
