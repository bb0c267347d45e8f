#pragma once
/// @file conv.cuh
/// @brief GPU bodies of the convolutions, the pools and the bias (compiled in
/// src/devtensor_cuda.cu). Float32 convolutions go to cuDNN when the cudnn component is linked
/// (Note [A GPU convolution engine]); otherwise, and for float64, patches + cuBLAS
/// (Note [Patches on a GPU]). Pools and BiasAdd run one thread per output element of the
/// functions in ops/window_elements.hpp; BiasAddGrad is a GPU reduction.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "devtensor/core/checked.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/cuda/convolution_engine.hpp"
#include "devtensor/ops/cuda/kernels.cuh"
#include "devtensor/ops/cuda/matmul.hpp"
#include "devtensor/ops/cuda/reduce.cuh"
#include "devtensor/ops/window_elements.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::ops::cuda {

// Note [Patches on a GPU]
// A convolution is the product of its patch matrix [positions, k_rows·k_cols·depth] and the HWIO
// filter seen as a matrix [k_rows·k_cols·depth, out_depth] (ops/cpu/conv.hpp's Note [im2col in
// slices]). Here the patch matrix of as many whole images as fit in kPatchBytes is written by one
// kernel (a thread per element: window::patch_value) into a buffer from the device's allocator,
// then multiplied by cuBLAS; the filter's gradient accumulates patchesᵀ · dy over the slices
// (beta = 1), and the input's gradient multiplies dy · filterᵀ into patch gradients that a second
// kernel gathers back into the input's positions (window::gathered_patch_gradient: no atomics, the
// CPU's order of addition). A 1x1 window with stride 1 and no padding needs no patches.

/// Most bytes of patches per slice (at least one image's): large products keep cuBLAS efficient;
/// the buffer comes from the device's allocator and is free again when the body returns.
inline constexpr std::int64_t kPatchBytes = std::int64_t{256} << 20;

template <class T>
std::int64_t images_per_slice(const WindowGeometry& g) {
  const std::int64_t per_image =
      std::max<std::int64_t>(1, g.out_rows * g.out_cols * window::patch_size(g) * std::int64_t{sizeof(T)});
  return std::clamp<std::int64_t>(kPatchBytes / per_image, 1, std::max<std::int64_t>(1, g.batch));
}

template <class T>
std::shared_ptr<TensorStorage> patch_buffer(const Device& device, const WindowGeometry& g, std::int64_t images,
                                            std::string_view op) {
  const std::int64_t rows = images * g.out_rows * g.out_cols;
  return allocate_storage(device, checked_byte_count(rows * window::patch_size(g), sizeof(T), op),
                          Shape{rows, window::patch_size(g)}, dtype_string<T>(), op);
}

// The per-element functions as device functors (a host function cannot be launched directly).
template <class T>
struct PatchValues {
  WindowGeometry g;
  const T* input;
  __device__ T operator()(std::int64_t e) const { return window::patch_value(g, input, e); }
};
template <class T>
struct GatheredPatchGradients {
  WindowGeometry g;
  const T* dpatches;
  __device__ T operator()(std::int64_t e) const { return window::gathered_patch_gradient(g, dpatches, e); }
};
template <class T>
struct PooledMaxima {
  WindowGeometry g;
  const T* input;
  __device__ T operator()(std::int64_t e) const { return window::pooled_max(g, input, e); }
};
template <class T>
struct PooledMeans {
  WindowGeometry g;
  const T* input;
  __device__ T operator()(std::int64_t e) const { return window::pooled_mean(g, input, e); }
};
template <class T>
struct GatheredMaxGradients {
  WindowGeometry g;
  const T* input;
  const T* dy;
  __device__ T operator()(std::int64_t e) const { return window::gathered_max_gradient(g, input, dy, e); }
};
template <class T>
struct GatheredMeanGradients {
  WindowGeometry g;
  const T* dy;
  __device__ T operator()(std::int64_t e) const { return window::gathered_mean_gradient(g, dy, e); }
};
template <class T>
struct BiasedValues {
  const T* value;
  const T* bias;
  std::int64_t channels, inner;
  __device__ T operator()(std::int64_t e) const { return window::biased(value, bias, channels, inner, e); }
};

/// The geometry of `images` images from the first of a slice (the per-element functions index
/// images from 0).
inline WindowGeometry slice_of(WindowGeometry g, std::int64_t images) {
  g.batch = images;
  return g;
}

/// Conv2D on a real GPU (NHWC input, HWIO filter).
template <class T>
void conv2d(const Device& device, const WindowGeometry& g, const T* input, const T* filter, std::int64_t out_depth,
            T* out) {
  const std::int64_t positions = g.out_rows * g.out_cols;
  if (g.batch * positions * out_depth == 0) return;
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine != nullptr && engine->forward(device, g, input, filter, out_depth, out))
      return;
  const std::int64_t k = window::patch_size(g);
  if (window::is_pointwise(g) || k == 0)
    return gemm(device, false, false, 1, g.batch * positions, out_depth, k, input, filter, out);
  const std::int64_t images = images_per_slice<T>(g);
  const auto patches = patch_buffer<T>(device, g, images, Conv2D::name);
  T* patch = static_cast<T*>(patches->data);
  const std::int64_t image_in = g.in_rows * g.in_cols * g.channels;
  for (std::int64_t first = 0; first < g.batch; first += images) {
    const std::int64_t count = std::min(images, g.batch - first);
    generate(device, patch, count * positions * k, PatchValues<T>{slice_of(g, count), input + first * image_in});
    gemm(device, false, false, 1, count * positions, out_depth, k, patch, filter, out + first * positions * out_depth);
  }
}

/// Conv2DBackpropInput on a real GPU: dx (NHWC, g's input) from the filter and dy.
template <class T>
void conv2d_backprop_input(const Device& device, const WindowGeometry& g, const T* filter, const T* dy,
                           std::int64_t out_depth, T* dx) {
  const std::int64_t image_in = g.in_rows * g.in_cols * g.channels;
  if (g.batch * image_in == 0) return;
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine != nullptr && engine->backprop_input(device, g, filter, dy, out_depth, dx))
      return;
  const std::int64_t positions = g.out_rows * g.out_cols;
  const std::int64_t k = window::patch_size(g);
  if (window::is_pointwise(g))  // dx = dy · filterᵀ
    return gemm(device, false, true, 1, g.batch * positions, g.channels, out_depth, dy, filter, dx);
  const std::int64_t images = images_per_slice<T>(g);
  const auto patches = patch_buffer<T>(device, g, images, Conv2DBackpropInput::name);
  T* dpatch = static_cast<T*>(patches->data);
  for (std::int64_t first = 0; first < g.batch; first += images) {
    const std::int64_t count = std::min(images, g.batch - first);
    gemm(device, false, true, 1, count * positions, k, out_depth, dy + first * positions * out_depth, filter, dpatch);
    generate(device, dx + first * image_in, count * image_in, GatheredPatchGradients<T>{slice_of(g, count), dpatch});
  }
}

/// Conv2DBackpropFilter on a real GPU: dfilter (HWIO) = Σ over images of patchesᵀ · dy.
template <class T>
void conv2d_backprop_filter(const Device& device, const WindowGeometry& g, const T* input, const T* dy,
                            std::int64_t out_depth, T* dfilter) {
  const std::int64_t k = window::patch_size(g);
  if (k * out_depth == 0) return;
  const std::int64_t positions = g.out_rows * g.out_cols;
  if (g.batch * positions == 0) return fill(device, dfilter, k * out_depth, T{0});
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine != nullptr && engine->backprop_filter(device, g, input, dy, out_depth, dfilter))
      return;
  if (window::is_pointwise(g))  // dfilter = inputᵀ · dy
    return gemm(device, true, false, 1, k, out_depth, g.batch * positions, input, dy, dfilter);
  const std::int64_t images = images_per_slice<T>(g);
  const auto patches = patch_buffer<T>(device, g, images, Conv2DBackpropFilter::name);
  T* patch = static_cast<T*>(patches->data);
  const std::int64_t image_in = g.in_rows * g.in_cols * g.channels;
  for (std::int64_t first = 0; first < g.batch; first += images) {
    const std::int64_t count = std::min(images, g.batch - first);
    generate(device, patch, count * positions * k, PatchValues<T>{slice_of(g, count), input + first * image_in});
    gemm(device, true, false, 1, k, out_depth, count * positions, patch, dy + first * positions * out_depth, dfilter,
         /*accumulate=*/first > 0);
  }
}

template <class T>
void max_pool(const Device& device, const WindowGeometry& g, const T* input, T* out) {
  generate(device, out, g.batch * g.out_rows * g.out_cols * g.channels, PooledMaxima<T>{g, input});
}
template <class T>
void max_pool_grad(const Device& device, const WindowGeometry& g, const T* input, const T* dy, T* dx) {
  generate(device, dx, g.batch * g.in_rows * g.in_cols * g.channels, GatheredMaxGradients<T>{g, input, dy});
}
template <class T>
void avg_pool(const Device& device, const WindowGeometry& g, const T* input, T* out) {
  generate(device, out, g.batch * g.out_rows * g.out_cols * g.channels, PooledMeans<T>{g, input});
}
template <class T>
void avg_pool_grad(const Device& device, const WindowGeometry& g, const T* dy, T* dx) {
  generate(device, dx, g.batch * g.in_rows * g.in_cols * g.channels, GatheredMeanGradients<T>{g, dy});
}

/// out[outer, channel, inner] = value + bias[channel].
template <class T>
void bias_add(const Device& device, const T* value, const T* bias, std::int64_t outer, std::int64_t channels,
              std::int64_t inner, T* out) {
  generate(device, out, outer * channels * inner, BiasedValues<T>{value, bias, channels, inner});
}

/// grad[channel] = Σ dy over every other axis: a GPU reduction (accumulating as the CPU's).
template <class T>
void bias_add_grad(const Device& device, const T* dy, const Shape& shape, bool channels_first, T* grad) {
  const std::size_t channel_axis = channels_first ? 1 : shape.rank() - 1;
  std::vector<bool> reduced(shape.rank(), true);
  reduced[channel_axis] = false;
  reduce(device, dy, shape, reduced, cpu::ReduceKind::sum, grad, BiasAddGrad::name);
}

}  // namespace devtensor::ops::cuda
