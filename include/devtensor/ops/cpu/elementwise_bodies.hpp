#pragma once
/// @file elementwise_bodies.hpp
/// @brief The CPU bodies of the elementwise ops (elementwise.hpp), compiled where
/// DEVTENSOR_CPU_KERNEL_BODIES says: in every translation unit header-only, in src/devtensor.cpp
/// in compiled mode.

#include "devtensor/ops/elementwise.hpp"

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"

namespace devtensor::ops {

template <class Self, class Types>
template <class T>
void UnaryOp<Self, Types>::cpu(const KernelContext& ctx) {
  cpu::unary(ctx.input<T>(0), ctx.output<T>(), ctx.output_shape().num_elements(), scalar_function_t<Self, T>{});
}
template <class Self, class Types>
template <class T>
void BinaryOp<Self, Types>::cpu(const KernelContext& ctx) {
  cpu::binary(ctx.input<T>(0), ctx.input_shape(0), ctx.input<T>(1), ctx.input_shape(1), ctx.output<T>(),
              ctx.output_shape(), scalar_function_t<Self, T>{});
}
template <class T>
void FloorDiv::cpu(const KernelContext& ctx) {
  std::atomic<int> by_zero{0};  // set from the CPU kernel's threads
  cpu::binary(ctx.input<T>(0), ctx.input_shape(0), ctx.input<T>(1), ctx.input_shape(1), ctx.output<T>(),
              ctx.output_shape(), Functor<std::atomic<int>>{&by_zero});
  if (by_zero.load() != 0) throw_by_zero();
}
template <class T>
void AddN::cpu(const KernelContext& ctx) {
  T* o = ctx.output<T>();
  const std::int64_t n = ctx.output_shape().num_elements();
  backend::cpu::parallel_for(n, cpu::kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
    const T* first = ctx.input<T>(0);
    for (std::int64_t i = begin; i < end; ++i) o[i] = first[i];
    for (std::size_t k = 1; k < ctx.inputs.size(); ++k) {
      const T* x = ctx.input<T>(k);
      for (std::int64_t i = begin; i < end; ++i) o[i] = arith::add(o[i], x[i]);
    }
  });
}

}  // namespace devtensor::ops
#endif
