// Built against the installed package with the host compiler and no CUDA include path.
#include <devtensor/devtensor.hpp>

// devtensor's headers must not pull in CUDA for a consumer of the core target. (This machine's
// image links CUDA headers into /usr/local/include, so only what was included can be checked.)
#if defined(__CUDA_RUNTIME_API_H__) || defined(__CUDA_RUNTIME_H__)
#error "devtensor pulled a CUDA header into a CPU-only consumer"
#endif

#include <cstdio>

#if DEVTENSOR_WITH_ONEDNN
#include <devtensor/ops/cpu/convolution_engine.hpp>

// The onednn component's object installed its engine before main, and a float32 convolution runs
// on it.
bool onednn_runs_convolutions() {
  const auto* engine = devtensor::ops::cpu::linked_convolution_engine();
  if (engine == nullptr) return false;
  const auto before = engine->runs();
  const auto y =
      devtensor::conv2d(devtensor::ones<float>({1, 4, 4, 2}), devtensor::ones<float>({3, 3, 2, 3}), 1, "SAME");
  std::printf("cpu_consumer: %.*s ran Conv2D, y[0, 1, 1, 0] = %g\n", static_cast<int>(engine->name.size()),
              engine->name.data(), static_cast<double>(y.to_vector()[(1 * 4 + 1) * 3]));
  return engine->runs() == before + 1 && y.to_vector()[(1 * 4 + 1) * 3] == 18.0f;
}
#else
bool onednn_runs_convolutions() { return true; }
#endif

int main() {
  static_assert(DEVTENSOR_VERSION_MAJOR == 0 && DEVTENSOR_VERSION_MINOR == 1);
  devtensor::config::set_simulated_gpus(1);
  std::size_t device_count = 0;
  {
    devtensor::DeviceScope scope("/gpu:0");
    const auto devices = devtensor::config::list_logical_devices();
    device_count = devices.size();
    std::printf("cpu_consumer: %zu logical devices, scope %s\n", devices.size(),
                devtensor::current_device_spec().to_string().c_str());
  }
  devtensor::DeviceScope cpu("/cpu:0");
  return device_count == 2 && onednn_runs_convolutions() ? 0 : 1;
}
