// Walkthrough 8: your own ops, defined exactly as devtensor defines its own (ops/op_def.hpp) and
// run by the same run_op: placement (scopes, soft placement, the placement log), copies, outputs
// from the shape function, the body, and the GradientTape record with the op's gradient.
// - Clip has only a CPU kernel: on a machine with GPUs the placer runs it on the CPU (and copies
//   its inputs there), as it does for devtensor's own CPU-only ops.
// - Scale (08_custom_op.hpp) declares CPU and GPU kernels: the CPU body below, the CUDA one in
//   08_custom_op_cuda.cu, compiled when the program links devtensor::cuda. The placer puts it on a
//   real GPU only when the program contains that body.
#include <devtensor/tensors.hpp>

#include "08_custom_op.hpp"

#include <algorithm>
#include <iostream>

namespace dt = devtensor;

/// clip_by_value: every element into [lo, hi].
struct Clip : dt::ops::OpTable<dt::ops::NumericTypes, dt::ops::NoTypes> {
  static constexpr std::string_view name = "ClipByValue";
  struct Attrs {
    dt::ops::Scalar lo, hi;  // any element type, exactly
  };
  static const dt::Shape& output_shape(const Attrs& attrs, const dt::Shape& x) {
    if (attrs.lo.as<double>() > attrs.hi.as<double>())
      throw dt::InvalidArgumentError("clip: lo must not exceed hi [Op:ClipByValue]");
    return x;
  }
  template <class T>
  static void cpu(const dt::ops::KernelContext& ctx) {
    const auto& a = ctx.attr<Attrs>();
    const T* x = ctx.input<T>(0);
    T* y = ctx.output<T>();
    for (std::int64_t i = 0, n = ctx.output_shape().num_elements(); i < n; ++i)
      y[i] = std::clamp(x[i], a.lo.as<T>(), a.hi.as<T>());
  }
  /// The gradient passes where x was inside [lo, hi].
  template <dt::Floating T>
  static dt::ops::Grads<T> gradient(const dt::ops::GradArgs<T, Attrs>& a) {
    const auto& x = a.x[0];
    const auto inside = dt::mul(dt::grad_ops::greater_equal(x, dt::scalar<T>(a.attrs.lo)),
                                dt::grad_ops::greater_equal(dt::scalar<T>(a.attrs.hi), x));
    return {dt::mul(a.dy[0], inside)};
  }
};

/// The public functions are thin, as devtensor's are; `name=` as in TensorFlow.
template <dt::Numeric T>
dt::Tensor<T> clip(const dt::Tensor<T>& x, T lo, T hi, const dt::OpOptions& options = {}) {
  return dt::run_op<Clip>(options, {dt::ops::Scalar::of(lo), dt::ops::Scalar::of(hi)}, x);
}

template <class T>
void Scale::cpu(const dt::ops::KernelContext& ctx) {
  const T* x = ctx.input<T>(0);
  T* y = ctx.output<T>();
  for (std::int64_t i = 0, n = ctx.output_shape().num_elements(); i < n; ++i) y[i] = ctx.attr<Attrs>().factor * x[i];
}

dt::Tensor<float> scale(const dt::Tensor<float>& x, float factor, const dt::OpOptions& options = {}) {
  return dt::run_op<Scale>(options, {factor}, x);
}

int main() {
  static_assert(dt::has_kernel_v<Clip, dt::cpu_t, float>);
  static_assert(!dt::has_kernel_v<Clip, dt::gpu_t, float>);
  dt::debugging::set_log_device_placement(true);
  auto x = dt::constant<float>({-2, -0.5f, 0.5f, 2});  // on GPU:0 when there is one
  dt::GradientTape tape({.persistent = true});         // two gradients below
  tape.watch(x);
  auto y = clip(x, -1.0f, 1.0f, {.name = "clip"});   // always on the CPU
  auto z = scale(x, 3.0f);                           // on GPU:0 when the program contains Scale's CUDA body
  auto dy_dx = tape.gradient(dt::reduce_sum(y), x);  // 0 where clipped
  auto dz_dx = tape.gradient(dt::reduce_sum(z), x);  // 3 everywhere, computed by Scale
  std::cout << "x on " << x.device() << "\ny on " << y.device() << "\n" << y << "\ndy/dx " << dy_dx << "\n";
  std::cout << "z on " << z.device() << "\n" << z << "\ndz/dx " << dz_dx << "\n";
  try {
    (void)clip(x, 1.0f, -1.0f);
  } catch (const dt::InvalidArgumentError& e) {
    std::cout << "clip(x, 1, -1): " << e.what() << "\n";
  }
  return y.to_vector() == std::vector<float>{-1, -0.5f, 0.5f, 1} &&
                 dy_dx.to_vector() == std::vector<float>{0, 1, 1, 0} &&
                 z.to_vector() == std::vector<float>{-6, -1.5f, 1.5f, 6} &&
                 dz_dx.to_vector() == std::vector<float>{3, 3, 3, 3}
             ? 0
             : 1;
}
