// The cudart flavour (host compiler + devtensor::cuda): real GPUs are discovered through the
// runtime API; without a driver that is zero GPUs, not an error.
#include <devtensor/devtensor.hpp>

#include <cstdio>
#include <cstring>

const char* nvcc_flavour();

int main() {
  const auto gpus = devtensor::config::list_physical_devices("GPU");
  std::printf("cuda_consumer: %zu GPUs (%s); flavours %s + %s\n", gpus.size(),
              devtensor::Context::global().gpu_platform_status().c_str(), DEVTENSOR_FLAVOUR_NAME,
              nvcc_flavour());
  return std::strcmp(nvcc_flavour(), "nvcc") == 0 && std::strcmp(DEVTENSOR_FLAVOUR_NAME, "cudart") == 0 ? 0 : 1;
}
