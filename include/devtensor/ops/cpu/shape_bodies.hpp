#pragma once
/// @file shape_bodies.hpp
/// @brief The CPU bodies of the shape and data-movement ops (shape_ops.hpp), compiled where
/// DEVTENSOR_CPU_KERNEL_BODIES says: in every translation unit header-only, in src/devtensor.cpp
/// in compiled mode.

#include "devtensor/ops/shape_ops.hpp"

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/elementwise.hpp"

namespace devtensor::ops {
namespace shape_detail {

/// dst[i] = src[offset(i)] for every element of a row-major output of `dims`, the source offset
/// advancing by `strides` per output dimension (0 for a broadcast dimension): transpose and
/// broadcast_to.
template <class T>
void strided_gather(const T* src, const std::vector<std::int64_t>& strides, std::span<const std::int64_t> dims,
                    T* dst) {
  const std::size_t rank = dims.size();
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t offset = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    dst[i] = src[offset];
    for (std::size_t d = rank; d-- > 0;) {  // advance the odometer
      ++index[d];
      offset += strides[d];
      if (index[d] < dims[d]) break;
      offset -= strides[d] * index[d];
      index[d] = 0;
    }
  }
}

/// Copies an n-dimensional box: `dst` (shape `box`, contiguous) from `src` (shape `src_shape`)
/// starting at `begin`.
template <class T>
void copy_box(const T* src, const Shape& src_shape, const std::vector<std::int64_t>& begin,
              std::span<const std::int64_t> box, T* dst) {
  const std::size_t rank = box.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const auto strides = src_shape.strides();
  std::int64_t n = 1;
  for (auto d : box) n *= d;
  if (n == 0) return;
  const std::int64_t inner = box[rank - 1];
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t row = 0; row < n / inner; ++row) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += (begin[d] + index[d]) * strides[d];
    std::copy(src + offset, src + offset + inner, dst + row * inner);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < box[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace shape_detail

template <class T>
void Transpose::cpu(const KernelContext& ctx) {
  shape_detail::strided_gather(ctx.input<T>(0), source_strides(ctx.attr<Attrs>(), ctx.input_shape(0)),
                               ctx.output_shape().dims(), ctx.output<T>());
}

template <class T>
void ConcatV2::cpu(const KernelContext& ctx) {
  const Shape& out = ctx.output_shape();
  const std::size_t ax = out.axis(ctx.attr<Attrs>().axis, "axis");
  std::int64_t outer = 1;
  for (std::size_t d = 0; d < ax; ++d) outer *= out[d];
  std::int64_t inner = 1;
  for (std::size_t d = ax + 1; d < out.rank(); ++d) inner *= out[d];
  std::int64_t column = 0;
  T* o = ctx.output<T>();
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const T* x = ctx.input<T>(i);
    const std::int64_t width = ctx.input_shape(i)[ax] * inner;
    for (std::int64_t r = 0; r < outer; ++r)
      std::copy(x + r * width, x + (r + 1) * width, o + r * out[ax] * inner + column);
    column += width;
  }
}

template <class T>
void Split::cpu(const KernelContext& ctx) {
  const Shape& s = ctx.input_shape(0);
  const std::size_t ax = s.axis(ctx.attr<Attrs>().axis, "split dimension");
  std::vector<std::int64_t> begin(s.rank(), 0);
  for (std::size_t k = 0; k < ctx.outputs.size(); ++k) {
    shape_detail::copy_box(ctx.input<T>(0), s, begin, ctx.output_shape(k).dims(), ctx.output<T>(k));
    begin[ax] += ctx.output_shape(k)[ax];
  }
}

template <class T>
void Slice::cpu(const KernelContext& ctx) {
  shape_detail::copy_box(ctx.input<T>(0), ctx.input_shape(0), ctx.attr<Attrs>().begin, ctx.output_shape().dims(),
                         ctx.output<T>());
}

template <class T>
void BroadcastTo::cpu(const KernelContext& ctx) {
  const Shape& shape = ctx.output_shape();
  const std::int64_t n = shape.num_elements();
  const T* src = ctx.input<T>(0);
  T* dst = ctx.output<T>();
  if (ctx.input_shape(0).num_elements() == 1)
    std::fill(dst, dst + n, src[0]);
  else
    shape_detail::strided_gather(src, cpu::detail::broadcast_strides(ctx.input_shape(0), shape.rank()), shape.dims(),
                                 dst);
}

template <class T>
void Pad::cpu(const KernelContext& ctx) {
  const Shape& s = ctx.input_shape(0);
  const Shape& out = ctx.output_shape();
  const auto& paddings = ctx.attr<Attrs>().paddings;
  T* o = ctx.output<T>();
  const T* x = ctx.input<T>(0);
  std::fill(o, o + out.num_elements(), T{});
  // Scatter the input rows into the box at the paddings' begin (copy_box's inverse).
  const std::size_t rank = s.rank();
  const std::int64_t n = s.num_elements();
  if (rank == 0) {
    if (n) o[0] = x[0];
    return;
  }
  if (n == 0) return;
  const auto strides = out.strides();
  const std::int64_t inner = s[rank - 1];
  std::vector<std::int64_t> index(rank, 0);
  for (std::int64_t row = 0; row < n / inner; ++row) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < rank; ++d) offset += (paddings[d].first + index[d]) * strides[d];
    std::copy(x + row * inner, x + (row + 1) * inner, o + offset);
    for (std::size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < s[d]) break;
      index[d] = 0;
    }
  }
}

template <class T>
void Cast::cpu(const KernelContext& ctx) {
  const T* src = ctx.input<T>(0);
  const std::int64_t n = ctx.output_shape().num_elements();
  const auto convert = [&]<class U>(U* dst) {
    for (std::int64_t i = 0; i < n; ++i) dst[i] = arith::convert<U>(src[i]);
  };
  switch (ctx.attr<Attrs>().to) {
    case DType::DT_FLOAT: return convert(ctx.output<float>());
    case DType::DT_DOUBLE: return convert(ctx.output<double>());
    case DType::DT_INT32: return convert(ctx.output<std::int32_t>());
    case DType::DT_INT64: return convert(ctx.output<std::int64_t>());
    case DType::DT_BOOL: return convert(ctx.output<bool>());
    case DType::DT_HALF: return convert(ctx.output<float16>());
    case DType::DT_BFLOAT16: return convert(ctx.output<bfloat16>());
  }
}

}  // namespace devtensor::ops
#endif
