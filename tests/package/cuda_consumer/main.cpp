// A g++-only consumer of the installed cuda component, through a static library. The CUDA
// platform and the GPU bodies must be registered (the kernel object was linked); without a driver
// that is zero GPUs, not an error, and the ops run on the CPU. Where the cudnn component was found
// and linked, its convolution engine was installed before main.
#include <devtensor/devtensor.hpp>
#include <devtensor/ops/cuda/convolution_engine.hpp>

#include <cstdio>
#include <string>

devtensor::Tensor<float> doubled(const devtensor::Tensor<float>& t);

int main() {
  namespace dt = devtensor;
  const auto gpus = dt::config::list_physical_devices("GPU");
  const auto* platform = dt::Context::global().gpu_platform();
  const auto provider = dt::KernelRegistry::global().provider({"AddV2", "GPU", "DT_FLOAT"});
  const auto kernels = dt::KernelRegistry::global().list().size();
  const auto sum = dt::reduce_sum(doubled(dt::constant<float>({1, 2, 3}))).item();
  std::printf("cuda_consumer: %zu GPUs (%s); platform %s; %zu GPU kernels registered, AddV2 from %s; sum %.1f\n",
              gpus.size(), dt::Context::global().gpu_platform_status().c_str(), platform ? platform->name : "none",
              kernels, provider ? provider->c_str() : "nowhere", static_cast<double>(sum));
  const auto* engine = dt::ops::cuda::convolution_engine();
#if DEVTENSOR_WITH_CUDNN
  const bool engine_ok = engine != nullptr && std::string(engine->name).starts_with("cuDNN 9.");
#else
  const bool engine_ok = engine == nullptr;
#endif
  std::printf("cuda_consumer: convolution engine %s; Conv2D's GPU body %s\n",
              engine ? std::string(engine->name).c_str() : "none",
              dt::KernelRegistry::global().contains({"Conv2D", "GPU", "DT_FLOAT"}) ? "registered" : "missing");
  const bool ok = engine_ok && dt::KernelRegistry::global().contains({"Conv2D", "GPU", "DT_FLOAT"}) &&
                  platform != nullptr && std::string(platform->name) == "CUDA" && provider &&
                  provider->find("devtensor::cuda") != std::string::npos && kernels > 100 && sum == 12.0f;
  return ok ? 0 : 1;
}
