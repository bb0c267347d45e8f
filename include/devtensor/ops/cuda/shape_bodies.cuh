#pragma once
/// @file shape_bodies.cuh
/// @brief The CUDA bodies of the shape and data-movement ops (shape_ops.hpp), compiled by
/// src/devtensor_cuda.cu.

#include "devtensor/ops/shape_ops.hpp"

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops {

template <class T>
void Transpose::cuda(const KernelContext& ctx) {
  const Shape& out = ctx.output_shape();
  cuda::strided_copy(ctx.device, ctx.input<T>(0), source_strides(ctx.attr<Attrs>(), ctx.input_shape(0)), 0,
                     ctx.output<T>(), out.strides(), 0, out.dims(), name);
}

template <class T>
void ConcatV2::cuda(const KernelContext& ctx) {
  const Shape& out = ctx.output_shape();
  const std::size_t ax = out.axis(ctx.attr<Attrs>().axis, "axis");
  const auto out_strides = out.strides();
  std::int64_t along = 0;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Shape& s = ctx.input_shape(i);
    cuda::strided_copy(ctx.device, ctx.input<T>(i), s.strides(), 0, ctx.output<T>(), out_strides,
                       along * out_strides[ax], s.dims(), name);
    along += s[ax];
  }
}

template <class T>
void Split::cuda(const KernelContext& ctx) {
  const Shape& s = ctx.input_shape(0);
  const std::size_t ax = s.axis(ctx.attr<Attrs>().axis, "split dimension");
  const auto strides = s.strides();
  std::int64_t begin = 0;
  for (std::size_t k = 0; k < ctx.outputs.size(); ++k) {
    const Shape& piece = ctx.output_shape(k);
    cuda::strided_copy(ctx.device, ctx.input<T>(0), strides, begin * strides[ax], ctx.output<T>(k), piece.strides(), 0,
                       piece.dims(), name);
    begin += piece[ax];
  }
}

template <class T>
void Slice::cuda(const KernelContext& ctx) {
  const auto strides = ctx.input_shape(0).strides();
  const auto& begin = ctx.attr<Attrs>().begin;
  std::int64_t offset = 0;
  for (std::size_t d = 0; d < begin.size(); ++d) offset += begin[d] * strides[d];
  const Shape& out = ctx.output_shape();
  cuda::strided_copy(ctx.device, ctx.input<T>(0), strides, offset, ctx.output<T>(), out.strides(), 0, out.dims(), name);
}

template <class T>
void BroadcastTo::cuda(const KernelContext& ctx) {
  const Shape& shape = ctx.output_shape();
  cuda::strided_copy(ctx.device, ctx.input<T>(0), cpu::detail::broadcast_strides(ctx.input_shape(0), shape.rank()), 0,
                     ctx.output<T>(), shape.strides(), 0, shape.dims(), name);
}

template <class T>
void Pad::cuda(const KernelContext& ctx) {
  const Shape& s = ctx.input_shape(0);
  const Shape& out = ctx.output_shape();
  const auto out_strides = out.strides();
  std::int64_t offset = 0;
  const auto& paddings = ctx.attr<Attrs>().paddings;
  for (std::size_t d = 0; d < s.rank(); ++d) offset += paddings[d].first * out_strides[d];
  cuda::fill(ctx.device, ctx.output<T>(), out.num_elements(), T{});
  cuda::strided_copy(ctx.device, ctx.input<T>(0), s.strides(), 0, ctx.output<T>(), out_strides, offset, s.dims(), name);
}

template <class U>
struct ConvertTo {
  template <class T>
  __device__ U operator()(T v) const {
    return arith::convert<U>(v);
  }
};
template <class T>
void Cast::cuda(const KernelContext& ctx) {
  const T* in = ctx.input<T>(0);
  const std::int64_t n = ctx.output_shape().num_elements();
  switch (ctx.attr<Attrs>().to) {
    case DType::DT_FLOAT: return cuda::map(ctx.device, in, ctx.output<float>(), n, ConvertTo<float>{});
    case DType::DT_DOUBLE: return cuda::map(ctx.device, in, ctx.output<double>(), n, ConvertTo<double>{});
    case DType::DT_INT32: return cuda::map(ctx.device, in, ctx.output<std::int32_t>(), n, ConvertTo<std::int32_t>{});
    case DType::DT_INT64: return cuda::map(ctx.device, in, ctx.output<std::int64_t>(), n, ConvertTo<std::int64_t>{});
    case DType::DT_BOOL: return cuda::map(ctx.device, in, ctx.output<bool>(), n, ConvertTo<bool>{});
    case DType::DT_HALF: return cuda::map(ctx.device, in, ctx.output<float16>(), n, ConvertTo<float16>{});
    case DType::DT_BFLOAT16: return cuda::map(ctx.device, in, ctx.output<bfloat16>(), n, ConvertTo<bfloat16>{});
  }
}

}  // namespace devtensor::ops
#endif
