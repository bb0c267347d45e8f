#pragma once
/// @file convolution_engine.hpp
/// @brief Where cuDNN plugs into the GPU bodies of the convolutions: the cudnn component
/// (src/devtensor_cudnn.cpp) installs a table of three functions when a program links it; the
/// CUDA bodies (ops/cuda/conv.cuh) try it first for float32 (Note [A GPU convolution engine]).
/// No CUDA header here: the host compiler builds the engine, nvcc the bodies.

#include <atomic>
#include <cstdint>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/ops/conv_ops.hpp"

namespace devtensor {
struct Device;
}

namespace devtensor::ops::cuda {

// Note [A GPU convolution engine]
// devtensor::cuda always has GPU bodies for Conv2D and its backprops (patches + cuBLAS), so a
// program without cuDNN still convolves on the GPU. cuDNN is faster, but it is a 500 MB library
// the user may not have (Debian has no package; the GPU machine has it only in PyTorch's Python
// environment): it comes with the cudnn component, whose object fills this table before main. A
// body looks the table up at each call (one acquire load) and runs its own code when there is
// none or when the engine declines (returns false: a geometry cuDNN cannot express, such as SAME
// padding that pads more after than before, or a status cuDNN reports as not supported).

/// Float32 NHWC convolutions over HWIO filters on a real GPU: the arguments are the CUDA bodies'
/// (device buffers, queued on `device`'s stream). Each returns true when it queued its output,
/// false when it declined (nothing queued).
struct ConvolutionEngine {
  std::string_view name;
  bool (*forward)(const Device& device, const WindowGeometry& g, const float* input, const float* filter,
                  std::int64_t out_depth, float* out);
  bool (*backprop_input)(const Device& device, const WindowGeometry& g, const float* filter, const float* dy,
                         std::int64_t out_depth, float* dx);
  bool (*backprop_filter)(const Device& device, const WindowGeometry& g, const float* input, const float* dy,
                          std::int64_t out_depth, float* dfilter);
  /// How many convolutions the engine has queued (not declined) in this process: tests and logs.
  std::int64_t (*runs)();
};

namespace engine_detail {
DEVTENSOR_EXPORT inline std::atomic<const ConvolutionEngine*>& slot() noexcept {
  static std::atomic<const ConvolutionEngine*> installed{nullptr};
  return installed;
}
}  // namespace engine_detail

/// Installs `engine` (a table that lives as long as the program; null uninstalls): the cudnn
/// component's object calls it once, before main; tests uninstall it to reach the bodies' own code.
inline void install_convolution_engine(const ConvolutionEngine* engine) noexcept {
  engine_detail::slot().store(engine, std::memory_order_release);
}

/// The engine the next float32 convolution on a GPU tries (null: none linked).
[[nodiscard]] inline const ConvolutionEngine* convolution_engine() noexcept {
  return engine_detail::slot().load(std::memory_order_acquire);
}

}  // namespace devtensor::ops::cuda
