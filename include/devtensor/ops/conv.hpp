#pragma once
/// @file conv.hpp
/// @brief Convolution and pooling as TensorFlow spells them (tf.nn): conv2d, its two backprops,
/// bias_add, max_pool2d, avg_pool2d; their gradients and CPU bodies (the ops: ops/conv_ops.hpp).
///
/// Tensors are NHWC unless `data_format` is "NCHW" (then transposed to NHWC around the op, as
/// TensorFlow's CPU kernels do), filters HWIO. `strides`, `ksize` and `dilations` are an int, 2
/// ints (rows, columns) or 4 in the data format's order; `padding` is "SAME", "VALID" or explicit
/// (before, after) pairs for the 4 dimensions in the data format's order (conv2d only).

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {

/// TensorFlow's int-or-list arguments (`strides=2`, `strides=[1, 2, 2, 1]`).
class SpatialInts {
 public:
  SpatialInts(std::int64_t value) : values_{value} {}  // NOLINT: TensorFlow's strides=2
  SpatialInts(std::initializer_list<std::int64_t> values) : values_(values) {}
  SpatialInts(std::vector<std::int64_t> values) : values_(std::move(values)) {}  // NOLINT
  [[nodiscard]] const std::vector<std::int64_t>& values() const noexcept { return values_; }

 private:
  std::vector<std::int64_t> values_;
};

/// TensorFlow's `padding=`: "SAME", "VALID", or explicit (before, after) pairs, one per dimension.
class Padding {
 public:
  Padding(const char* kind) : Padding(std::string_view(kind)) {}                 // NOLINT: padding="SAME"
  Padding(std::string_view kind) : kind_(kind) {}                                // NOLINT
  Padding(const std::string& kind) : kind_(kind) {}                              // NOLINT
  Padding(std::vector<std::pair<std::int64_t, std::int64_t>> explicit_paddings)  // NOLINT
      : kind_("EXPLICIT"), explicit_(std::move(explicit_paddings)) {}
  Padding(std::initializer_list<std::pair<std::int64_t, std::int64_t>> explicit_paddings)
      : kind_("EXPLICIT"), explicit_(explicit_paddings) {}
  [[nodiscard]] std::string_view kind() const noexcept { return kind_; }
  [[nodiscard]] const std::vector<std::pair<std::int64_t, std::int64_t>>& explicit_paddings() const noexcept {
    return explicit_;
  }

 private:
  std::string kind_;
  std::vector<std::pair<std::int64_t, std::int64_t>> explicit_;
};

/// conv2d's keyword arguments after `padding`.
struct Conv2DOptions {
  std::string_view data_format = "NHWC";
  SpatialInts dilations = 1;
  std::string_view name = {};
};
/// max_pool2d's, avg_pool2d's and bias_add's.
struct PoolOptions {
  std::string_view data_format = "NHWC";
  std::string_view name = {};
};

namespace conv_detail {

/// True for NCHW; @throws InvalidArgumentError for a format other than NHWC and NCHW.
bool channels_first(std::string_view data_format, std::string_view op);
/// An int-or-list argument as (rows, columns). `batch_and_depth_error` names what TensorFlow
/// refuses in the batch and depth positions of a 4-list.
std::array<std::int64_t, 2> spatial(const SpatialInts& v, std::string_view argument, bool nchw, std::string_view op,
                                    std::string_view batch_and_depth_error);
/// The window attributes from TensorFlow's arguments.
ops::Window2D window(const SpatialInts& strides, const Padding& padding, const SpatialInts& dilations, bool nchw,
                     std::string_view op, bool explicit_allowed);
/// NHWC <-> NCHW.
inline constexpr std::array<std::int64_t, 4> kToNhwc{0, 2, 3, 1};
inline constexpr std::array<std::int64_t, 4> kToNchw{0, 3, 1, 2};
template <class T>
Tensor<T> to_nhwc(const Tensor<T>& x, bool nchw) {
  return nchw ? transpose(x, std::vector<std::int64_t>(kToNhwc.begin(), kToNhwc.end())) : x;
}
template <class T>
Tensor<T> from_nhwc(const Tensor<T>& x, bool nchw) {
  return nchw ? transpose(x, std::vector<std::int64_t>(kToNchw.begin(), kToNchw.end())) : x;
}
inline std::array<std::int64_t, 4> sizes_of(const Shape& s, std::string_view what, std::string_view op) {
  if (s.rank() != 4)
    throw InvalidArgumentError(std::string(what) + " must be 4-dimensional: " + s.to_string() +
                               " [Op:" + std::string(op) + "]");
  return {s[0], s[1], s[2], s[3]};
}

}  // namespace conv_detail

/// The 2-D convolution of `input` (NHWC, or NCHW) with `filters` (HWIO). @throws
/// InvalidArgumentError / UnimplementedError with TensorFlow's texts (ops::Conv2D).
template <FloatingElement T>
Tensor<T> conv2d(const Tensor<T>& input, const Tensor<T>& filters, const SpatialInts& strides, const Padding& padding,
                 const Conv2DOptions& options = {}) {
  const bool nchw = conv_detail::channels_first(options.data_format, "Conv2D");
  const auto attrs = conv_detail::window(strides, padding, options.dilations, nchw, "Conv2D", true);
  if (!nchw) return run_op<ops::Conv2D>(OpOptions{options.name}, attrs, input, filters);
  return conv_detail::from_nhwc(run_op<ops::Conv2D>(attrs, conv_detail::to_nhwc(input, true), filters), true);
}

/// The gradient of conv2d with respect to its input (of shape `input_sizes`), given the filter
/// and the output's gradient (tf.compat.v1.nn.conv2d_backprop_input).
template <FloatingElement T>
Tensor<T> conv2d_backprop_input(const Shape& input_sizes, const Tensor<T>& filters, const Tensor<T>& out_backprop,
                                const SpatialInts& strides, const Padding& padding, const Conv2DOptions& options = {}) {
  const bool nchw = conv_detail::channels_first(options.data_format, "Conv2DBackpropInput");
  ops::Conv2DBackpropInput::Attrs attrs{
      conv_detail::window(strides, padding, options.dilations, nchw, "Conv2DBackpropInput", true),
      conv_detail::sizes_of(input_sizes, "input_sizes", "Conv2DBackpropInput")};
  if (!nchw) return run_op<ops::Conv2DBackpropInput>(OpOptions{options.name}, attrs, filters, out_backprop);
  const auto& s = attrs.input_sizes;
  attrs.input_sizes = {s[0], s[2], s[3], s[1]};
  return conv_detail::from_nhwc(
      run_op<ops::Conv2DBackpropInput>(attrs, filters, conv_detail::to_nhwc(out_backprop, true)), true);
}

/// The gradient of conv2d with respect to its filter (of shape `filter_sizes`), given the input
/// and the output's gradient (tf.compat.v1.nn.conv2d_backprop_filter).
template <FloatingElement T>
Tensor<T> conv2d_backprop_filter(const Tensor<T>& input, const Shape& filter_sizes, const Tensor<T>& out_backprop,
                                 const SpatialInts& strides, const Padding& padding,
                                 const Conv2DOptions& options = {}) {
  const bool nchw = conv_detail::channels_first(options.data_format, "Conv2DBackpropFilter");
  const ops::Conv2DBackpropFilter::Attrs attrs{
      conv_detail::window(strides, padding, options.dilations, nchw, "Conv2DBackpropFilter", true),
      conv_detail::sizes_of(filter_sizes, "filter_sizes", "Conv2DBackpropFilter")};
  if (!nchw) return run_op<ops::Conv2DBackpropFilter>(OpOptions{options.name}, attrs, input, out_backprop);
  return run_op<ops::Conv2DBackpropFilter>(attrs, conv_detail::to_nhwc(input, true),
                                           conv_detail::to_nhwc(out_backprop, true));
}

/// value + bias along the channel axis (the last; axis 1 for "NCHW").
template <FloatingElement T>
Tensor<T> bias_add(const Tensor<T>& value, const Tensor<T>& bias, const PoolOptions& options = {}) {
  const bool nchw = conv_detail::channels_first(options.data_format, "BiasAdd");
  return run_op<ops::BiasAdd>(OpOptions{options.name}, {.channels_first = nchw}, value, bias);
}

namespace conv_detail {
template <class Op, class T>
Tensor<T> pool(const Tensor<T>& input, const SpatialInts& ksize, const SpatialInts& strides, const Padding& padding,
               const PoolOptions& options) {
  const bool nchw = channels_first(options.data_format, Op::name);
  const ops::PoolAttrs attrs{
      spatial(ksize, "ksize", nchw, Op::name, "Pooling is not yet supported on the batch dimension."),
      window(strides, padding, 1, nchw, Op::name, false)};
  if (!nchw) return run_op<Op>(OpOptions{options.name}, attrs, input);
  return from_nhwc(run_op<Op>(attrs, to_nhwc(input, true)), true);
}
}  // namespace conv_detail

/// The maximum over each `ksize` window (tf.nn.max_pool2d).
template <FloatingElement T>
Tensor<T> max_pool2d(const Tensor<T>& input, const SpatialInts& ksize, const SpatialInts& strides,
                     const Padding& padding, const PoolOptions& options = {}) {
  return conv_detail::pool<ops::MaxPool>(input, ksize, strides, padding, options);
}
/// The mean over each `ksize` window, padding not counted (tf.nn.avg_pool2d).
template <FloatingElement T>
Tensor<T> avg_pool2d(const Tensor<T>& input, const SpatialInts& ksize, const SpatialInts& strides,
                     const Padding& padding, const PoolOptions& options = {}) {
  return conv_detail::pool<ops::AvgPool>(input, ksize, strides, padding, options);
}

}  // namespace devtensor

// The gradients (TensorFlow's _Conv2DGrad, _Conv2DBackpropInputGrad, _Conv2DBackpropFilterGrad,
// _BiasAddGrad, _BiasAddGradGrad, _MaxPoolGrad, _AvgPoolGrad, _AvgPoolGradGrad), written with ops.
namespace devtensor::ops {

template <FloatingElement T>
Grads<T> Conv2D::gradient(const GradArgs<T, Attrs>& a) {
  const auto& x = a.x[0];
  const auto& w = a.x[1];
  const auto& dy = a.dy[0];
  return {run_op<Conv2DBackpropInput>({a.attrs, conv_detail::sizes_of(x.shape(), "input", name)}, w, dy),
          run_op<Conv2DBackpropFilter>({a.attrs, conv_detail::sizes_of(w.shape(), "filter", name)}, x, dy)};
}
template <FloatingElement T>
Grads<T> Conv2DBackpropInput::gradient(const GradArgs<T, Attrs>& a) {
  const auto& w = a.x[0];
  const auto& out_backprop = a.x[1];
  const auto& g = a.dy[0];  // shaped as the input
  return {
      run_op<Conv2DBackpropFilter>({a.attrs.window, conv_detail::sizes_of(w.shape(), "filter", name)}, g, out_backprop),
      run_op<Conv2D>(a.attrs.window, g, w)};
}
template <FloatingElement T>
Grads<T> Conv2DBackpropFilter::gradient(const GradArgs<T, Attrs>& a) {
  const auto& x = a.x[0];
  const auto& out_backprop = a.x[1];
  const auto& g = a.dy[0];  // shaped as the filter
  return {
      run_op<Conv2DBackpropInput>({a.attrs.window, conv_detail::sizes_of(x.shape(), "input", name)}, g, out_backprop),
      run_op<Conv2D>(a.attrs.window, x, g)};
}
template <FloatingElement T>
Grads<T> BiasAdd::gradient(const GradArgs<T, Attrs>& a) {
  return {a.dy[0], run_op<BiasAddGrad>(a.attrs, a.dy[0])};
}
template <FloatingElement T>
Grads<T> BiasAddGrad::gradient(const GradArgs<T, Attrs>& a) {
  // The channel gradient broadcast back over the other axes.
  const Shape& s = a.x[0].shape();
  std::vector<std::int64_t> channel_shape(s.rank(), 1);
  channel_shape[a.attrs.channels_first ? 1 : s.rank() - 1] = s[a.attrs.channels_first ? 1 : s.rank() - 1];
  return {broadcast_to(reshape(a.dy[0], channel_shape), s)};
}
template <FloatingElement T>
Grads<T> MaxPool::gradient(const GradArgs<T, Attrs>& a) {
  return {run_op<MaxPoolGrad>(a.attrs, a.x[0], a.y[0], a.dy[0])};
}
template <FloatingElement T>
Grads<T> AvgPool::gradient(const GradArgs<T, Attrs>& a) {
  return {run_op<AvgPoolGrad>({a.attrs, conv_detail::sizes_of(a.x[0].shape(), "input", name)}, a.dy[0])};
}
template <FloatingElement T>
Grads<T> AvgPoolGrad::gradient(const GradArgs<T, Attrs>& a) {
  return {run_op<AvgPool>(a.attrs.pool, a.dy[0])};
}

}  // namespace devtensor::ops

#if DEVTENSOR_HEADER_DEFINITIONS
namespace devtensor::conv_detail {

DEVTENSOR_DEFINITION bool channels_first(std::string_view data_format, std::string_view op) {
  if (data_format == "NHWC") return false;
  if (data_format == "NCHW") return true;
  throw InvalidArgumentError("Invalid data_format: \"" + std::string(data_format) +
                             "\": give \"NHWC\" (channels last) or \"NCHW\" [Op:" + std::string(op) + "]");
}

DEVTENSOR_DEFINITION std::array<std::int64_t, 2> spatial(const SpatialInts& v, std::string_view argument, bool nchw,
                                                         std::string_view op, std::string_view batch_and_depth_error) {
  const auto& x = v.values();
  if (x.size() == 1) return {x[0], x[0]};
  if (x.size() == 2) return {x[0], x[1]};
  if (x.size() == 4) {
    const std::int64_t batch = x[0], depth = nchw ? x[1] : x[3];
    if (batch != 1 || depth != 1)
      throw UnimplementedError(std::string(batch_and_depth_error) + " [Op:" + std::string(op) + "]");
    return nchw ? std::array<std::int64_t, 2>{x[2], x[3]} : std::array<std::int64_t, 2>{x[1], x[2]};
  }
  throw InvalidArgumentError(std::string(argument) +
                             " should be of length 1, 2 or 4. Received: " + std::string(argument) + " of length " +
                             std::to_string(x.size()) + " [Op:" + std::string(op) + "]");
}

DEVTENSOR_DEFINITION ops::Window2D window(const SpatialInts& strides, const Padding& padding,
                                          const SpatialInts& dilations, bool nchw, std::string_view op,
                                          bool explicit_allowed) {
  ops::Window2D w;
  w.strides = spatial(strides, "strides", nchw, op,
                      "Current implementation does not yet support strides in the batch and depth dimensions.");
  w.dilations = spatial(dilations, "dilations", nchw, op,
                        "Current implementation does not yet support dilations in the batch and depth dimensions.");
  const std::string_view kind = padding.kind();
  if (kind == "SAME")
    w.padding = ops::PaddingKind::same;
  else if (kind == "VALID")
    w.padding = ops::PaddingKind::valid;
  else if (kind == "EXPLICIT" && explicit_allowed) {
    const auto& p = padding.explicit_paddings();
    if (p.size() != 4)
      throw InvalidArgumentError("Explicit paddings must be 4 (before, after) pairs, one per dimension; got " +
                                 std::to_string(p.size()) + " [Op:" + std::string(op) + "]");
    const std::size_t batch = 0, depth = nchw ? 1 : 3, rows = nchw ? 2 : 1, cols = nchw ? 3 : 2;
    if (p[batch] != std::pair<std::int64_t, std::int64_t>{0, 0} ||
        p[depth] != std::pair<std::int64_t, std::int64_t>{0, 0})
      throw InvalidArgumentError(
          "Explicit padding of the batch or depth dimension is not supported; pad rows and "
          "columns only [Op:" +
          std::string(op) + "]");
    w.padding = ops::PaddingKind::explicit_;
    w.explicit_paddings = {p[rows].first, p[rows].second, p[cols].first, p[cols].second};
  } else {
    throw InvalidArgumentError("Value for attr 'padding' of \"" + std::string(kind) +
                               "\" is not in the list of allowed values: \"SAME\", \"VALID\"" +
                               (explicit_allowed ? ", \"EXPLICIT\"" : "") + " [Op:" + std::string(op) + "]");
  }
  return w;
}

}  // namespace devtensor::conv_detail
#endif  // DEVTENSOR_HEADER_DEFINITIONS

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/conv.hpp"
#include "devtensor/ops/cpu/in_float.hpp"

// float16 and bfloat16 run the float bodies: cpu::in_float (Note [Sixteen-bit bodies in float]).
namespace devtensor::ops {
template <class T>
void Conv2D::cpu(const KernelContext& ctx) {
  const WindowGeometry g = conv_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), ctx.input_shape(1), name);
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::conv2d(g, in(0), in(1), ctx.input_shape(1)[3], out(0)); });
}
template <class T>
void Conv2DBackpropInput::cpu(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const WindowGeometry g = conv_geometry(attrs.window, ctx.output_shape(), ctx.input_shape(0), name);
  cpu::in_float<T>(
      ctx, 1, [&](auto in, auto out) { cpu::conv2d_backprop_input(g, in(0), in(1), ctx.input_shape(0)[3], out(0)); });
}
template <class T>
void Conv2DBackpropFilter::cpu(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const WindowGeometry g = conv_geometry(attrs.window, ctx.input_shape(0), ctx.output_shape(), name);
  cpu::in_float<T>(
      ctx, 1, [&](auto in, auto out) { cpu::conv2d_backprop_filter(g, in(0), in(1), ctx.output_shape()[3], out(0)); });
}
template <class T>
void BiasAdd::cpu(const KernelContext& ctx) {
  // (an array, not a structured binding: clang 14 does not let a lambda capture those)
  const auto around = cpu::around_channels(ctx.input_shape(0), ctx.attr<Attrs>().channels_first);
  cpu::in_float<T>(ctx, 1,
                   [&](auto in, auto out) { cpu::bias_add(in(0), in(1), around[0], around[1], around[2], out(0)); });
}
template <class T>
void BiasAddGrad::cpu(const KernelContext& ctx) {
  const auto around = cpu::around_channels(ctx.input_shape(0), ctx.attr<Attrs>().channels_first);
  cpu::in_float<T>(ctx, 1,
                   [&](auto in, auto out) { cpu::bias_add_grad(in(0), around[0], around[1], around[2], out(0)); });
}
template <class T>
void MaxPool::cpu(const KernelContext& ctx) {
  const WindowGeometry g = pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name);
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::max_pool(g, in(0), out(0)); });
}
template <class T>
void MaxPoolGrad::cpu(const KernelContext& ctx) {
  const WindowGeometry g = pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name);
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::max_pool_grad(g, in(0), in(2), out(0)); });
}
template <class T>
void AvgPool::cpu(const KernelContext& ctx) {
  const WindowGeometry g = pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name);
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::avg_pool(g, in(0), out(0)); });
}
template <class T>
void AvgPoolGrad::cpu(const KernelContext& ctx) {
  const WindowGeometry g = pool_geometry(ctx.attr<Attrs>().pool, ctx.output_shape(), name);
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::avg_pool_grad(g, in(0), out(0)); });
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/conv.cuh"

namespace devtensor::ops {
template <class T>
void Conv2D::cuda(const KernelContext& ctx) {
  const WindowGeometry g = conv_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), ctx.input_shape(1), name);
  cuda::conv2d(ctx.device, g, ctx.input<T>(0), ctx.input<T>(1), ctx.input_shape(1)[3], ctx.output<T>());
}
template <class T>
void Conv2DBackpropInput::cuda(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const WindowGeometry g = conv_geometry(attrs.window, ctx.output_shape(), ctx.input_shape(0), name);
  cuda::conv2d_backprop_input(ctx.device, g, ctx.input<T>(0), ctx.input<T>(1), ctx.input_shape(0)[3], ctx.output<T>());
}
template <class T>
void Conv2DBackpropFilter::cuda(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const WindowGeometry g = conv_geometry(attrs.window, ctx.input_shape(0), ctx.output_shape(), name);
  cuda::conv2d_backprop_filter(ctx.device, g, ctx.input<T>(0), ctx.input<T>(1), ctx.output_shape()[3], ctx.output<T>());
}
template <class T>
void BiasAdd::cuda(const KernelContext& ctx) {
  const auto [outer, channels, inner] = window::around_channels(ctx.input_shape(0), ctx.attr<Attrs>().channels_first);
  cuda::bias_add(ctx.device, ctx.input<T>(0), ctx.input<T>(1), outer, channels, inner, ctx.output<T>());
}
template <class T>
void BiasAddGrad::cuda(const KernelContext& ctx) {
  cuda::bias_add_grad(ctx.device, ctx.input<T>(0), ctx.input_shape(0), ctx.attr<Attrs>().channels_first,
                      ctx.output<T>());
}
template <class T>
void MaxPool::cuda(const KernelContext& ctx) {
  cuda::max_pool(ctx.device, pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name), ctx.input<T>(0),
                 ctx.output<T>());
}
template <class T>
void MaxPoolGrad::cuda(const KernelContext& ctx) {
  cuda::max_pool_grad(ctx.device, pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name), ctx.input<T>(0),
                      ctx.input<T>(2), ctx.output<T>());
}
template <class T>
void AvgPool::cuda(const KernelContext& ctx) {
  cuda::avg_pool(ctx.device, pool_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), name), ctx.input<T>(0),
                 ctx.output<T>());
}
template <class T>
void AvgPoolGrad::cuda(const KernelContext& ctx) {
  cuda::avg_pool_grad(ctx.device, pool_geometry(ctx.attr<Attrs>().pool, ctx.output_shape(), name), ctx.input<T>(0),
                      ctx.output<T>());
}
}  // namespace devtensor::ops
#endif
