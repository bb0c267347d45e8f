#pragma once
// One program made of a .cpp file that knows nothing of CUDA (compiled against devtensor::devtensor
// alone) and a .cu file compiled by nvcc, linked with devtensor::cuda (and devtensor::nccl when
// found). Both must see one Context, one kernel registry and the same placement.
#include <devtensor/devtensor.hpp>

#include <string>

namespace probe {

struct Report {
  const char* part;
  const void* add_slot;  // kernel_slot<AddV2, GPU, float>: one object per program
  bool add_gpu_body;     // the registry holds AddV2's GPU body
  const void* context;
  bool cuda_platform;      // registered by the kernel TU
  bool nccl_available;     // registered by the NCCL engine TU
  std::string add_device;  // where add() runs
};
Report host_report();
Report nvcc_report();

// Tensors cross translation units: made in one, computed on in another.
devtensor::Tensor<float> host_make();
devtensor::Tensor<float> nvcc_twice(const devtensor::Tensor<float>& t);
devtensor::Tensor<float> host_sum(const devtensor::Tensor<float>& t);

inline Report make_report(const char* part) {
  namespace dt = devtensor;
  return {part,
          &dt::kernel_slot<dt::ops::Add, dt::gpu_t, float>,
          dt::kernel_support<dt::ops::Add, float>.gpu_present(),
          &dt::Context::global(),
          dt::Context::global().gpu_platform() != nullptr,
          dt::distribute::NcclAllReduce::available(),
          dt::add(dt::constant<float>({1}), dt::constant<float>({1})).device()};
}

}  // namespace probe
