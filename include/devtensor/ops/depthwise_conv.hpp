#pragma once
/// @file depthwise_conv.hpp
/// @brief Depthwise convolution as TensorFlow defines it: the ops DepthwiseConv2dNative and its
/// two backprops (one struct each, ops/op_def.hpp), tf.nn's depthwise_conv2d and the v1 backprop
/// functions, their gradients and CPU bodies (ops/cpu/depthwise.hpp).
///
/// Filters are [rows, columns, in_depth, channel_multiplier]; output channel k·m + q is input
/// channel k convolved with filter[:, :, k, q]. TensorFlow's own CPU kernel takes equal row and
/// column strides and no dilations (tf.nn.depthwise_conv2d reaches rates through space_to_batch);
/// devtensor's body takes dilations directly, so both spellings work, with the same values.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/conv.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

/// The depthwise window's checks and geometry (input NHWC, filter [rows, cols, depth,
/// multiplier]). @throws InvalidArgumentError with TensorFlow's texts for ranks, depths and
/// unequal strides, and the window's errors.
WindowGeometry depthwise_geometry(const Window2D& w, const Shape& input, const Shape& filter, std::string_view op);

struct DepthwiseConv2dNative : OpTable<FloatingTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "DepthwiseConv2dNative";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = Window2D;
  static Shape output_shape(const Attrs& attrs, const Shape& input, const Shape& filter);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// The input's gradient, of shape `input_sizes`: inputs filter and out_backprop.
struct DepthwiseConv2dNativeBackpropInput : OpTable<FloatingTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "DepthwiseConv2dNativeBackpropInput";
  struct Attrs {
    Window2D window;
    std::array<std::int64_t, 4> input_sizes{};
  };
  /// @throws InvalidArgumentError "DepthwiseConv2DBackpropInput: depth_multiplier * in_depth not
  /// equal to out_depth", and when out_backprop is not the forward op's output shape.
  static Shape output_shape(const Attrs& attrs, const Shape& filter, const Shape& out_backprop);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// The filter's gradient, of shape `filter_sizes`: inputs input and out_backprop.
struct DepthwiseConv2dNativeBackpropFilter : OpTable<FloatingTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "DepthwiseConv2dNativeBackpropFilter";
  struct Attrs {
    Window2D window;
    std::array<std::int64_t, 4> filter_sizes{};
  };
  static Shape output_shape(const Attrs& attrs, const Shape& input, const Shape& out_backprop);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

using DepthwiseOps =
    TypeList<DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropInput, DepthwiseConv2dNativeBackpropFilter>;

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION WindowGeometry depthwise_geometry(const Window2D& w, const Shape& input, const Shape& filter,
                                                       std::string_view op) {
  if (input.rank() != 4) throw InvalidArgumentError("input must be 4-dimensional" + input.to_string() + op_suffix(op));
  if (filter.rank() != 4)
    throw InvalidArgumentError("filter must be 4-dimensional: " + filter.to_string() + op_suffix(op));
  if (input[3] >= 0 && filter[2] >= 0 && input[3] != filter[2])
    throw InvalidArgumentError("input and filter must have the same depth: " + std::to_string(input[3]) + " vs " +
                               std::to_string(filter[2]) + op_suffix(op));
  if (w.strides[0] != w.strides[1])
    throw InvalidArgumentError(
        "Current implementation only supports equal length strides in the row and column "
        "dimensions." +
        op_suffix(op));
  if (filter[0] == 0 || filter[1] == 0)
    throw InvalidArgumentError("filter must have a window of at least 1x1: " + filter.to_string() + op_suffix(op));
  return window_geometry(w, input, filter[0], filter[1], op);
}

DEVTENSOR_DEFINITION Shape DepthwiseConv2dNative::output_shape(const Attrs& attrs, const Shape& input,
                                                               const Shape& filter) {
  const WindowGeometry g = depthwise_geometry(attrs, input, filter, name);
  const std::int64_t depth = input[3] >= 0 ? input[3] : filter[2];
  const std::int64_t out_depth =
      depth >= 0 && filter[3] >= 0 ? checked_mul(depth, filter[3], "the output depth", name) : kUnknownDim;
  return Shape::partial({g.batch, g.out_rows, g.out_cols, out_depth});
}

namespace depthwise_detail {
/// The backprops' check: out_backprop is what the forward op makes of the input and filter.
inline void check_out_backprop(const Window2D& w, const Shape& input, const Shape& filter, const Shape& out_backprop,
                               std::string_view what, std::string_view op) {
  if (out_backprop.rank() != 4)
    throw InvalidArgumentError("out_backprop must be 4-dimensional: " + out_backprop.to_string() + op_suffix(op));
  const Shape expected = DepthwiseConv2dNative::output_shape(w, input, filter);
  if (out_backprop[3] != expected[3])
    throw InvalidArgumentError(std::string(what) + ": depth_multiplier * in_depth not equal to out_depth" +
                               op_suffix(op));
  if (out_backprop != expected)
    throw InvalidArgumentError(std::string(what) + ": out_backprop of shape " + out_backprop.to_string() +
                               " is not the forward output " + expected.to_string() + " of input " + input.to_string() +
                               " and filter " + filter.to_string() + op_suffix(op));
}
}  // namespace depthwise_detail

DEVTENSOR_DEFINITION Shape DepthwiseConv2dNativeBackpropInput::output_shape(const Attrs& attrs, const Shape& filter,
                                                                            const Shape& out_backprop) {
  const Shape input(attrs.input_sizes, name);
  depthwise_detail::check_out_backprop(attrs.window, input, filter, out_backprop, "DepthwiseConv2DBackpropInput", name);
  return input;
}

DEVTENSOR_DEFINITION Shape DepthwiseConv2dNativeBackpropFilter::output_shape(const Attrs& attrs, const Shape& input,
                                                                             const Shape& out_backprop) {
  const Shape filter(attrs.filter_sizes, name);
  depthwise_detail::check_out_backprop(attrs.window, input, filter, out_backprop, "DepthwiseConv2DBackpropFilter",
                                       name);
  return filter;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::ops

namespace devtensor {

/// The depthwise convolution of `input` (NHWC, or NCHW) with `filter` [rows, cols, depth,
/// multiplier] (tf.nn.depthwise_conv2d; its `dilations` are the rates). @throws
/// InvalidArgumentError / UnimplementedError with TensorFlow's texts (ops::DepthwiseConv2dNative).
template <FloatingElement T>
Tensor<T> depthwise_conv2d(const Tensor<T>& input, const Tensor<T>& filter, const SpatialInts& strides,
                           const Padding& padding, const Conv2DOptions& options = {}) {
  constexpr std::string_view op = ops::DepthwiseConv2dNative::name;
  const bool nchw = conv_detail::channels_first(options.data_format, op);
  const auto attrs = conv_detail::window(strides, padding, options.dilations, nchw, op, true);
  if (!nchw) return run_op<ops::DepthwiseConv2dNative>(OpOptions{options.name}, attrs, input, filter);
  return conv_detail::from_nhwc(run_op<ops::DepthwiseConv2dNative>(attrs, conv_detail::to_nhwc(input, true), filter),
                                true);
}

/// The gradient of depthwise_conv2d with respect to its input, of shape `input_sizes`
/// (tf.compat.v1.nn.depthwise_conv2d_native_backprop_input).
template <FloatingElement T>
Tensor<T> depthwise_conv2d_backprop_input(const Shape& input_sizes, const Tensor<T>& filter,
                                          const Tensor<T>& out_backprop, const SpatialInts& strides,
                                          const Padding& padding, const Conv2DOptions& options = {}) {
  constexpr std::string_view op = ops::DepthwiseConv2dNativeBackpropInput::name;
  const bool nchw = conv_detail::channels_first(options.data_format, op);
  ops::DepthwiseConv2dNativeBackpropInput::Attrs attrs{
      conv_detail::window(strides, padding, options.dilations, nchw, op, true),
      conv_detail::sizes_of(input_sizes, "input_sizes", op)};
  if (!nchw)
    return run_op<ops::DepthwiseConv2dNativeBackpropInput>(OpOptions{options.name}, attrs, filter, out_backprop);
  const auto& s = attrs.input_sizes;
  attrs.input_sizes = {s[0], s[2], s[3], s[1]};
  return conv_detail::from_nhwc(
      run_op<ops::DepthwiseConv2dNativeBackpropInput>(attrs, filter, conv_detail::to_nhwc(out_backprop, true)), true);
}

/// The gradient of depthwise_conv2d with respect to its filter, of shape `filter_sizes`
/// (tf.compat.v1.nn.depthwise_conv2d_native_backprop_filter).
template <FloatingElement T>
Tensor<T> depthwise_conv2d_backprop_filter(const Tensor<T>& input, const Shape& filter_sizes,
                                           const Tensor<T>& out_backprop, const SpatialInts& strides,
                                           const Padding& padding, const Conv2DOptions& options = {}) {
  constexpr std::string_view op = ops::DepthwiseConv2dNativeBackpropFilter::name;
  const bool nchw = conv_detail::channels_first(options.data_format, op);
  const ops::DepthwiseConv2dNativeBackpropFilter::Attrs attrs{
      conv_detail::window(strides, padding, options.dilations, nchw, op, true),
      conv_detail::sizes_of(filter_sizes, "filter_sizes", op)};
  if (!nchw)
    return run_op<ops::DepthwiseConv2dNativeBackpropFilter>(OpOptions{options.name}, attrs, input, out_backprop);
  return run_op<ops::DepthwiseConv2dNativeBackpropFilter>(attrs, conv_detail::to_nhwc(input, true),
                                                          conv_detail::to_nhwc(out_backprop, true));
}

}  // namespace devtensor

// The gradients (TensorFlow's _DepthwiseConv2dNativeGrad and its backprops' gradients).
namespace devtensor::ops {

template <FloatingElement T>
Grads<T> DepthwiseConv2dNative::gradient(const GradArgs<T, Attrs>& a) {
  const auto& x = a.x[0];
  const auto& w = a.x[1];
  const auto& dy = a.dy[0];
  return {
      run_op<DepthwiseConv2dNativeBackpropInput>({a.attrs, conv_detail::sizes_of(x.shape(), "input", name)}, w, dy),
      run_op<DepthwiseConv2dNativeBackpropFilter>({a.attrs, conv_detail::sizes_of(w.shape(), "filter", name)}, x, dy)};
}
template <FloatingElement T>
Grads<T> DepthwiseConv2dNativeBackpropInput::gradient(const GradArgs<T, Attrs>& a) {
  const auto& w = a.x[0];
  const auto& out_backprop = a.x[1];
  const auto& g = a.dy[0];  // shaped as the input
  return {run_op<DepthwiseConv2dNativeBackpropFilter>(
              {a.attrs.window, conv_detail::sizes_of(w.shape(), "filter", name)}, g, out_backprop),
          run_op<DepthwiseConv2dNative>(a.attrs.window, g, w)};
}
template <FloatingElement T>
Grads<T> DepthwiseConv2dNativeBackpropFilter::gradient(const GradArgs<T, Attrs>& a) {
  const auto& x = a.x[0];
  const auto& out_backprop = a.x[1];
  const auto& g = a.dy[0];  // shaped as the filter
  return {run_op<DepthwiseConv2dNativeBackpropInput>({a.attrs.window, conv_detail::sizes_of(x.shape(), "input", name)},
                                                     g, out_backprop),
          run_op<DepthwiseConv2dNative>(a.attrs.window, x, g)};
}

}  // namespace devtensor::ops

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/depthwise.hpp"
#include "devtensor/ops/cpu/in_float.hpp"

// float16 and bfloat16 run the float bodies: cpu::in_float (Note [Sixteen-bit bodies in float]).
namespace devtensor::ops {
template <class T>
void DepthwiseConv2dNative::cpu(const KernelContext& ctx) {
  const WindowGeometry g = depthwise_geometry(ctx.attr<Attrs>(), ctx.input_shape(0), ctx.input_shape(1), name);
  const std::int64_t multiplier = ctx.input_shape(1)[3];
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) { cpu::depthwise_conv(g, multiplier, in(0), in(1), out(0)); });
}
template <class T>
void DepthwiseConv2dNativeBackpropInput::cpu(const KernelContext& ctx) {
  const WindowGeometry g = depthwise_geometry(ctx.attr<Attrs>().window, ctx.output_shape(), ctx.input_shape(0), name);
  const std::int64_t multiplier = ctx.input_shape(0)[3];
  cpu::in_float<T>(ctx, 1,
                   [&](auto in, auto out) { cpu::depthwise_backprop_input(g, multiplier, in(0), in(1), out(0)); });
}
template <class T>
void DepthwiseConv2dNativeBackpropFilter::cpu(const KernelContext& ctx) {
  const WindowGeometry g = depthwise_geometry(ctx.attr<Attrs>().window, ctx.input_shape(0), ctx.output_shape(), name);
  const std::int64_t multiplier = ctx.output_shape()[3];
  cpu::in_float<T>(ctx, 1,
                   [&](auto in, auto out) { cpu::depthwise_backprop_filter(g, multiplier, in(0), in(1), out(0)); });
}
}  // namespace devtensor::ops
#endif
