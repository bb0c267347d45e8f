// Walkthrough 8: your own ops. An op is a type with a name and a kernel table.
// - ClipOp has only a CPU kernel, inline: on a machine with GPUs the placer runs it on the CPU
//   (and copies its inputs there), as it does for devtensor's own CPU-only ops. Recording it with
//   a backward function makes it differentiable by GradientTape.
// - ScaleOp (08_custom_op.hpp) declares CPU and GPU kernels and registers its bodies: the CPU one
//   below, the CUDA one in 08_custom_op_cuda.cu, compiled when the program links devtensor::cuda.
//   The placer puts it on a real GPU only when the program contains that body.
#include <devtensor/devtensor.hpp>

#include "08_custom_op.hpp"

#include <algorithm>
#include <iostream>

namespace dt = devtensor;

struct ClipOp {
  static constexpr std::string_view name = "Clip";
  template <dt::DeviceTag Tag, class T>
  static constexpr bool has_kernel = std::same_as<Tag, dt::cpu_t> && dt::Numeric<T>;
};

template <dt::Numeric T>
dt::Tensor<T> clip(const dt::Tensor<T>& x, T lo, T hi) {
  const int device = dt::place_op(dt::kernel_support<ClipOp, T>);    // scopes, soft placement, log
  const auto in = dt::to_device(x, device, ClipOp::name);             // copy if x lives elsewhere
  auto out = dt::Tensor<T>::empty(in.shape(), device, ClipOp::name);  // from the device's allocator
  for (std::int64_t i = 0; i < in.num_elements(); ++i)
    out.mutable_data()[i] = std::clamp(in.data()[i], lo, hi);
  if constexpr (dt::Floating<T>)  // the gradient passes where x was inside [lo, hi]
    dt::autodiff::record_operation<T>("Clip", {x}, {out}, [x, lo, hi](const std::vector<dt::Tensor<T>>& dy) {
      auto inside = dt::mul(dt::grad_ops::greater_equal(x, dt::scalar<T>(lo)),
                            dt::grad_ops::greater_equal(dt::scalar<T>(hi), x));
      return std::vector{dt::mul(dy[0], inside)};
    });
  return out;
}

void scale_cpu(const dt::LogicalDeviceInfo&, const float* in, float* out, std::int64_t n, float factor) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = factor * in[i];
}
DEVTENSOR_REGISTER_KERNEL(ScaleOp, dt::cpu_t, float, &scale_cpu);

dt::Tensor<float> scale(const dt::Tensor<float>& x, float factor) {
  const int device = dt::place_op(dt::kernel_support<ScaleOp, float>);  // GPU only if its body is here
  const auto in = dt::to_device(x, device, ScaleOp::name);
  auto out = dt::Tensor<float>::empty(in.shape(), device, ScaleOp::name);
  dt::kernel_for<ScaleOp, float>(out.device_info())(out.device_info(), in.data(), out.mutable_data(),
                                                    in.num_elements(), factor);
  return out;
}

int main() {
  static_assert(dt::has_kernel_v<ClipOp, dt::cpu_t, float>);
  static_assert(!dt::has_kernel_v<ClipOp, dt::gpu_t, float>);
  dt::debugging::set_log_device_placement(true);
  auto x = dt::constant<float>({-2, -0.5f, 0.5f, 2});  // on GPU:0 when there is one
  dt::GradientTape tape;
  tape.watch(x);
  auto y = clip(x, -1.0f, 1.0f);                       // always on the CPU
  auto dy_dx = tape.gradient(dt::reduce_sum(y), x);    // 0 where clipped
  std::cout << "x on " << x.device() << "\ny on " << y.device() << "\n" << y << "\ndy/dx " << dy_dx << "\n";
  auto z = scale(x, 3.0f);  // on GPU:0 when the program contains Scale's CUDA body
  std::cout << "z on " << z.device() << "\n" << z << "\n";
  return y.to_vector() == std::vector<float>{-1, -0.5f, 0.5f, 1} &&
                 dy_dx.to_vector() == std::vector<float>{0, 1, 1, 0} &&
                 z.to_vector() == std::vector<float>{-6, -1.5f, 1.5f, 6}
             ? 0
             : 1;
}
