#pragma once
/// @file elementwise_bodies.cuh
/// @brief The CUDA bodies of the elementwise ops (elementwise.hpp), compiled by
/// src/devtensor_cuda.cu.

#include "devtensor/ops/elementwise.hpp"

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops {

template <class Self, class Types>
template <class T>
void UnaryOp<Self, Types>::cuda(const KernelContext& ctx) {
  cuda::map(ctx.device, ctx.input<T>(0), ctx.output<T>(), ctx.output_shape().num_elements(),
            scalar_function_t<Self, T>{});
}
template <class Self, class Types>
template <class T>
void BinaryOp<Self, Types>::cuda(const KernelContext& ctx) {
  cuda::zip(ctx.device, ctx.input<T>(0), ctx.input_shape(0), ctx.input<T>(1), ctx.input_shape(1), ctx.output<T>(),
            ctx.output_shape(), Self::name, scalar_function_t<Self, T>{});
}
template <class T>
void FloorDiv::cuda(const KernelContext& ctx) {
  // The kernel raises a flag in device memory, read back (a synchronisation) only here.
  auto flag = Tensor<std::int32_t>::empty(Shape{}, ctx.device, name);
  const std::int32_t zero = 0;
  copy_bytes(flag.mutable_data(), ctx.device, &zero, host_buffer_device(), sizeof zero);
  cuda::zip(ctx.device, ctx.input<T>(0), ctx.input_shape(0), ctx.input<T>(1), ctx.input_shape(1), ctx.output<T>(),
            ctx.output_shape(), name, Functor<int>{flag.mutable_data()});
  if (flag.item() != 0) throw_by_zero();
}
template <class T>
void AddN::cuda(const KernelContext& ctx) {
  std::vector<const T*> pointers;
  pointers.reserve(ctx.inputs.size());
  for (std::size_t k = 0; k < ctx.inputs.size(); ++k) pointers.push_back(ctx.input<T>(k));
  cuda::sum_into(ctx.device, ctx.output<T>(), pointers.data(), pointers.size(), ctx.output_shape().num_elements());
}

}  // namespace devtensor::ops
#endif
