#pragma once
// Walkthrough 8's Scale op, shared by 08_custom_op.cpp (its CPU body) and 08_custom_op_cuda.cu
// (its CUDA body, built when the CUDA component exists).
#include <devtensor/devtensor.hpp>

#include <string_view>

/// y = factor · x, defined as devtensor defines its own ops (include/devtensor/ops/op_def.hpp):
/// its TensorFlow name, typed attributes, a shape function, a CPU and a CUDA body, a gradient.
/// Both bodies are declared here; the CUDA one comes from the kernel registry, so the program
/// decides at run time whether it can run on a GPU (TensorFlow's REGISTER_KERNEL_BUILDER).
struct Scale : devtensor::ops::OpTable<devtensor::ops::TypeList<float>, devtensor::ops::TypeList<float>> {
  static constexpr std::string_view name = "Scale";
  struct Attrs {
    float factor = 1;
  };
  static const devtensor::Shape& output_shape(const Attrs&, const devtensor::Shape& x) noexcept { return x; }
  template <class T>
  static void cpu(const devtensor::ops::KernelContext& ctx);  // 08_custom_op.cpp
  template <class T>
  static void cuda(const devtensor::ops::KernelContext& ctx);  // 08_custom_op_cuda.cu
  /// d(factor · x)/dx = factor: the gradient is Scale itself, so it runs where Scale runs.
  template <devtensor::Floating T>
  requires std::same_as<T, float>
  static devtensor::ops::Grads<T> gradient(const devtensor::ops::GradArgs<T, Attrs>& a) {
    return {devtensor::run_op<Scale>(a.attrs, a.dy[0])};
  }
};
