// Built against the installed package with the host compiler and no CUDA include path.
#include <devtensor/devtensor.hpp>

// devtensor's headers must not pull in CUDA for a consumer of the core target. (This machine's
// image links CUDA headers into /usr/local/include, so only what was included can be checked.)
#if defined(__CUDA_RUNTIME_API_H__) || defined(__CUDA_RUNTIME_H__)
#error "devtensor pulled a CUDA header into a CPU-only consumer"
#endif

#include <cstdio>

int main() {
  static_assert(DEVTENSOR_VERSION_MAJOR == 0 && DEVTENSOR_VERSION_MINOR == 1);
  devtensor::config::set_simulated_gpus(1);
  devtensor::DeviceScope scope("/gpu:0");
  const auto devices = devtensor::config::list_logical_devices();
  std::printf("cpu_consumer: %zu logical devices, scope %s\n", devices.size(),
              devtensor::current_device_spec().to_string().c_str());
  return devices.size() == 2 ? 0 : 1;
}
