#include <devtensor/devtensor.hpp>

#include <cstdio>

int main() {
  const auto spec = devtensor::DeviceSpec::parse("/job:localhost/replica:0/task:0/gpu:1");
  const bool kernels = devtensor::KernelRegistry::global().contains({"AddV2", "GPU", "DT_FLOAT"});
  std::printf("add_subdirectory_consumer: %s; GPU kernels registered: %d\n", spec.to_string().c_str(), kernels);
#if defined(EXPECT_CUDA_COMPONENT)
  if (!kernels) return 1;
#else
  if (kernels) return 1;
#endif
  return spec.to_string() == "/job:localhost/replica:0/task:0/device:GPU:1" ? 0 : 1;
}
