// Built without CMake by no_cmake_cuda.sh: header-only, linked with the kernel TU nvcc compiled, and
// once more with the cudnn engine's object too (then run with the argument "cudnn"). The CUDA
// platform, the GPU bodies and the engine are registered during static initialisation; without a
// GPU the convolution runs on the CPU.
#include <devtensor/devtensor.hpp>
#include <devtensor/ops/cuda/convolution_engine.hpp>

#include <cstdio>
#include <string>

namespace dt = devtensor;

int main(int argc, char** argv) {
  const auto* platform = dt::Context::global().gpu_platform();
  const bool conv_on_gpu = dt::KernelRegistry::global().contains({"Conv2D", "GPU", "DT_FLOAT"});
  const auto* engine = dt::ops::cuda::convolution_engine();
  const auto y = dt::conv2d(dt::ones<float>({1, 4, 4, 2}), dt::ones<float>({3, 3, 2, 1}), 1, "SAME");
  std::printf("platform %s, Conv2D's GPU body %s, engine %s; conv2d's center %g on %s\n",
              platform ? platform->name : "none", conv_on_gpu ? "registered" : "missing",
              engine ? std::string(engine->name).c_str() : "none", static_cast<double>(y.to_vector()[5]),
              y.device().c_str());
  const bool cudnn_linked = argc > 1 && std::string(argv[1]) == "cudnn";
  const bool engine_ok =
      cudnn_linked ? engine != nullptr && std::string(engine->name).starts_with("cuDNN 9.") : engine == nullptr;
  return platform != nullptr && std::string(platform->name) == "CUDA" && conv_on_gpu && engine_ok &&
                 y.to_vector()[5] == 18.0f
             ? 0
             : 1;
}
