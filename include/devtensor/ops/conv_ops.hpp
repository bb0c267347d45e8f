#pragma once
/// @file conv_ops.hpp
/// @brief The convolution and pooling ops (TensorFlow's nn_ops), each defined once (ops/op_def.hpp):
/// Conv2D and its two backprops, BiasAdd/BiasAddGrad, MaxPool/MaxPoolGrad, AvgPool/AvgPoolGrad.
/// The ops work on NHWC tensors and HWIO filters, as TensorFlow's CPU kernels; the public
/// functions (ops/conv.hpp) take NCHW too, by transposing around them. CPU bodies: im2col + GEMM
/// (ops/cpu/conv.hpp), oneDNN through the onednn component; GPU bodies: cuDNN through the cudnn
/// component, else patches + cuBLAS (ops/cuda/conv.cuh).

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/op_def.hpp"

namespace devtensor::ops {

/// TensorFlow's `padding` attribute: SAME (the output is ceil(input / stride), the padding split
/// with the extra row or column after), VALID (none) or EXPLICIT (given per side).
enum class PaddingKind : std::uint8_t { valid, same, explicit_ };

/// A 2-D sliding window: strides and dilations over rows and columns, the padding, and for
/// EXPLICIT the padding before and after the rows, then the columns.
struct Window2D {
  std::array<std::int64_t, 2> strides{1, 1};
  std::array<std::int64_t, 2> dilations{1, 1};
  PaddingKind padding = PaddingKind::valid;
  std::array<std::int64_t, 4> explicit_paddings{};  // top, bottom, left, right
};

/// Where a 2-D window runs over an NHWC input: the sizes, and the padding before each axis.
struct WindowGeometry {
  std::int64_t batch = 0, in_rows = 0, in_cols = 0, channels = 0;
  std::int64_t k_rows = 0, k_cols = 0;  // the window (a filter's first two dimensions)
  std::int64_t out_rows = 0, out_cols = 0;
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t stride_rows = 1, stride_cols = 1, dil_rows = 1, dil_cols = 1;
};

/// TensorFlow's GetWindowedOutputSize for one axis: the output size and the padding before it.
/// An unknown input size (-1, a graph's static shape) gives -1. @throws InvalidArgumentError
/// "Computed output size would be negative" as TensorFlow's.
struct AxisWindow {
  std::int64_t out = -1;
  std::int64_t pad_before = 0;
};
AxisWindow axis_window(std::int64_t in, std::int64_t window, std::int64_t stride, std::int64_t dilation,
                       PaddingKind padding, std::int64_t explicit_before, std::int64_t explicit_after,
                       std::string_view op);

/// The window's geometry over an NHWC input of shape `input` and a window of k_rows x k_cols.
WindowGeometry window_geometry(const Window2D& w, const Shape& input, std::int64_t k_rows, std::int64_t k_cols,
                               std::string_view op);

/// Conv2D's checks and geometry (input NHWC, filter HWIO): TensorFlow's texts for ranks, depths,
/// strides and dilations. `channels` of the result is the input's depth.
WindowGeometry conv_geometry(const Window2D& w, const Shape& input, const Shape& filter, std::string_view op);

/// Conv2D: out[n, r, c, o] = Σ in[n, r·s + i·d − pad, c·s + j·d − pad, k] · filter[i, j, k, o].
struct Conv2D : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Conv2D";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = Window2D;
  /// @throws InvalidArgumentError for ranks other than 4, depths that differ, strides or
  /// dilations below 1, a window larger than a VALID input; UnimplementedError for strides in the
  /// batch or depth dimension, dilations with strides, and grouped convolutions.
  static Shape output_shape(const Attrs& attrs, const Shape& input, const Shape& filter);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// The gradient of Conv2D with respect to its input, of shape `input_sizes` (TensorFlow's first
/// input, an attribute here): inputs filter and out_backprop.
struct Conv2DBackpropInput : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Conv2DBackpropInput";
  struct Attrs {
    Window2D window;
    std::array<std::int64_t, 4> input_sizes{};
  };
  /// @throws InvalidArgumentError when out_backprop is not the shape Conv2D makes from
  /// input_sizes and the filter, and for Conv2D's reasons.
  static Shape output_shape(const Attrs& attrs, const Shape& filter, const Shape& out_backprop);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// The gradient of Conv2D with respect to its filter, of shape `filter_sizes`: inputs input and
/// out_backprop.
struct Conv2DBackpropFilter : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Conv2DBackpropFilter";
  struct Attrs {
    Window2D window;
    std::array<std::int64_t, 4> filter_sizes{};
  };
  /// @throws InvalidArgumentError as Conv2DBackpropInput.
  static Shape output_shape(const Attrs& attrs, const Shape& input, const Shape& out_backprop);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// value + bias along the channel axis: the last (NHWC, and any rank >= 2), or axis 1 (NCHW).
struct BiasAdd : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "BiasAdd";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {
    bool channels_first = false;  // data_format NCHW
  };
  /// Channels last, it adds the bias to every row: the graph's fusion pass runs it as an add in a
  /// chain (after a Conv2D or MatMul whose product it reads: TensorFlow's _FusedConv2D).
  static constexpr bool adds_a_row(const Attrs& attrs) noexcept { return !attrs.channels_first; }
  /// @throws InvalidArgumentError "Biases must be 1D", "Input tensor must be at least 2D", "Must
  /// provide as many biases as the last dimension of the input tensor" (TensorFlow's texts).
  static Shape output_shape(const Attrs& attrs, const Shape& value, const Shape& bias);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// The sum of out_backprop over every axis but the channel axis: BiasAdd's bias gradient.
struct BiasAddGrad : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "BiasAddGrad";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = BiasAdd::Attrs;
  /// @throws InvalidArgumentError for a rank below 2.
  static Shape output_shape(const Attrs& attrs, const Shape& out_backprop);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// A pooling window: its size over rows and columns, and the window's strides and padding (SAME
/// or VALID; TensorFlow's pools take no dilation).
struct PoolAttrs {
  std::array<std::int64_t, 2> ksize{1, 1};
  Window2D window;
};
/// The pool's geometry over an NHWC input. @throws InvalidArgumentError "Input must be 4 or
/// 5-dimensional" (devtensor pools in 2-D only: "4-dimensional"), "Sliding window ksize must be
/// positive", and TensorFlow's window errors.
WindowGeometry pool_geometry(const PoolAttrs& attrs, const Shape& input, std::string_view op);
/// The pooled shape (unknown dimensions stay unknown).
Shape pool_output_shape(const PoolAttrs& attrs, const Shape& input, std::string_view op);

/// The maximum of each window (padding never wins: it is not part of any window's values).
struct MaxPool : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "MaxPool";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = PoolAttrs;
  static Shape output_shape(const Attrs& attrs, const Shape& input) { return pool_output_shape(attrs, input, name); }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// MaxPool's gradient: each window's gradient goes to its maximum, the first in row-major order
/// when several tie (TensorFlow's CPU kernel). Inputs orig_input, orig_output, grad. No gradient
/// of its own yet (TensorFlow's MaxPoolGradGrad).
struct MaxPoolGrad : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "MaxPoolGrad";
  using Attrs = PoolAttrs;
  /// @throws InvalidArgumentError when orig_output or grad is not the pooled shape of orig_input.
  static Shape output_shape(const Attrs& attrs, const Shape& orig_input, const Shape& orig_output, const Shape& grad);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

/// The mean of each window over its positions inside the input (SAME's padding is not counted,
/// as TensorFlow's).
struct AvgPool : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "AvgPool";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = PoolAttrs;
  static Shape output_shape(const Attrs& attrs, const Shape& input) { return pool_output_shape(attrs, input, name); }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// AvgPool's gradient: each window's gradient shared equally among its positions. Input grad;
/// the original input's shape is an attribute (TensorFlow's first input).
struct AvgPoolGrad : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "AvgPoolGrad";
  struct Attrs {
    PoolAttrs pool;
    std::array<std::int64_t, 4> orig_input_shape{};
  };
  /// @throws InvalidArgumentError when grad is not the pooled shape of orig_input_shape.
  static Shape output_shape(const Attrs& attrs, const Shape& grad);
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

using ConvOps = TypeList<Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter, BiasAdd, BiasAddGrad, MaxPool, MaxPoolGrad,
                         AvgPool, AvgPoolGrad>;

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION AxisWindow axis_window(std::int64_t in, std::int64_t window, std::int64_t stride,
                                            std::int64_t dilation, PaddingKind padding, std::int64_t explicit_before,
                                            std::int64_t explicit_after, std::string_view op) {
  if (in < 0) return {};
  // Checked: strides, dilations and paddings come from users (and fuzzers) at any size.
  const std::int64_t effective =
      checked_add(checked_mul(window - 1, dilation, "the dilated window", op), 1, "the dilated window", op);
  // (in - effective + stride) / stride, TensorFlow's VALID size, without overflowing for any stride.
  const auto valid_size = [&](std::int64_t padded) {
    const std::int64_t diff = padded - effective;
    return diff >= 0 ? diff / stride + 1 : (diff + stride) / stride;
  };
  AxisWindow w;
  switch (padding) {
    case PaddingKind::valid: w.out = valid_size(in); break;
    case PaddingKind::same: {
      w.out = in == 0 ? 0 : (in - 1) / stride + 1;  // ceil(in / stride)
      const std::int64_t needed = std::max<std::int64_t>(0, ((w.out - 1) * stride - in) + effective);
      w.pad_before = needed / 2;  // the odd one after, as TensorFlow's
      break;
    }
    case PaddingKind::explicit_:
      w.out = valid_size(
          checked_add(checked_add(in, explicit_before, "the padded size", op), explicit_after, "the padded size", op));
      w.pad_before = explicit_before;
      break;
  }
  if (w.out < 0)
    throw InvalidArgumentError("Computed output size would be negative: " + std::to_string(w.out) + " [input_size: " +
                               std::to_string(in) + ", effective_filter_size: " + std::to_string(effective) +
                               ", stride: " + std::to_string(stride) + "]" + op_suffix(op));
  return w;
}

DEVTENSOR_DEFINITION WindowGeometry window_geometry(const Window2D& w, const Shape& input, std::int64_t k_rows,
                                                    std::int64_t k_cols, std::string_view op) {
  for (std::size_t i = 0; i < 2; ++i) {
    if (w.strides[i] < 1)
      throw InvalidArgumentError("Stride must be > 0, but got " + std::to_string(w.strides[i]) + op_suffix(op));
    if (w.dilations[i] < 1) throw InvalidArgumentError("Dilated rates should be larger than 0." + op_suffix(op));
  }
  if (w.padding == PaddingKind::explicit_)
    for (const std::int64_t p : w.explicit_paddings)
      if (p < 0)
        throw InvalidArgumentError("All explicit paddings must be non-negative, got " + std::to_string(p) +
                                   op_suffix(op));
  WindowGeometry g;
  g.batch = input[0];
  g.in_rows = input[1];
  g.in_cols = input[2];
  g.channels = input[3];
  g.k_rows = k_rows;
  g.k_cols = k_cols;
  g.stride_rows = w.strides[0];
  g.stride_cols = w.strides[1];
  g.dil_rows = w.dilations[0];
  g.dil_cols = w.dilations[1];
  const auto& e = w.explicit_paddings;
  const AxisWindow rows = axis_window(g.in_rows, k_rows, g.stride_rows, g.dil_rows, w.padding, e[0], e[1], op);
  const AxisWindow cols = axis_window(g.in_cols, k_cols, g.stride_cols, g.dil_cols, w.padding, e[2], e[3], op);
  g.out_rows = rows.out;
  g.out_cols = cols.out;
  g.pad_top = rows.pad_before;
  g.pad_left = cols.pad_before;
  return g;
}

DEVTENSOR_DEFINITION WindowGeometry conv_geometry(const Window2D& w, const Shape& input, const Shape& filter,
                                                  std::string_view op) {
  if (input.rank() != 4) throw InvalidArgumentError("input must be 4-dimensional" + input.to_string() + op_suffix(op));
  if (filter.rank() != 4)
    throw InvalidArgumentError("filter must be 4-dimensional: " + filter.to_string() + op_suffix(op));
  if (input[3] >= 0 && filter[2] >= 0 && input[3] != filter[2]) {
    if (filter[2] > 0 && input[3] % filter[2] == 0)
      throw UnimplementedError("Grouped convolutions (input depth " + std::to_string(input[3]) + ", filter depth " +
                               std::to_string(filter[2]) +
                               ") are not supported yet: give the filter the input's depth" + op_suffix(op));
    throw InvalidArgumentError("input depth must be evenly divisible by filter depth: " + std::to_string(input[3]) +
                               " vs " + std::to_string(filter[2]) + op_suffix(op));
  }
  if ((w.strides[0] > 1 || w.strides[1] > 1) && (w.dilations[0] > 1 || w.dilations[1] > 1))
    throw UnimplementedError(
        "Current implementation does not yet support dilations with strides greater than 1; "
        "use strides of 1 with dilations, or dilations of 1" +
        op_suffix(op));
  if (filter[0] == 0 || filter[1] == 0)
    throw InvalidArgumentError("filter must have a window of at least 1x1: " + filter.to_string() + op_suffix(op));
  return window_geometry(w, input, filter[0], filter[1], op);
}

DEVTENSOR_DEFINITION Shape Conv2D::output_shape(const Attrs& attrs, const Shape& input, const Shape& filter) {
  const WindowGeometry g = conv_geometry(attrs, input, filter, name);
  return Shape::partial({g.batch, g.out_rows, g.out_cols, filter[3]});
}

namespace window_detail {
/// The backprops' check: out_backprop is what Conv2D makes of the input and filter sizes.
inline void check_out_backprop(const Window2D& w, const Shape& input, const Shape& filter, const Shape& out_backprop,
                               std::string_view op) {
  if (out_backprop.rank() != 4)
    throw InvalidArgumentError("out_backprop must be 4-dimensional: " + out_backprop.to_string() + op_suffix(op));
  const WindowGeometry g = conv_geometry(w, input, filter, op);
  const Shape expected({g.batch, g.out_rows, g.out_cols, filter[3]});
  if (out_backprop != expected)
    throw InvalidArgumentError("Conv2D's out_backprop of shape " + out_backprop.to_string() + " does not match the " +
                               "computed output " + expected.to_string() + " of input " + input.to_string() +
                               " and filter " + filter.to_string() + op_suffix(op));
}
}  // namespace window_detail

DEVTENSOR_DEFINITION Shape Conv2DBackpropInput::output_shape(const Attrs& attrs, const Shape& filter,
                                                             const Shape& out_backprop) {
  const Shape input(attrs.input_sizes, name);
  window_detail::check_out_backprop(attrs.window, input, filter, out_backprop, name);
  return input;
}

DEVTENSOR_DEFINITION Shape Conv2DBackpropFilter::output_shape(const Attrs& attrs, const Shape& input,
                                                              const Shape& out_backprop) {
  const Shape filter(attrs.filter_sizes, name);
  window_detail::check_out_backprop(attrs.window, input, filter, out_backprop, name);
  return filter;
}

DEVTENSOR_DEFINITION Shape BiasAdd::output_shape(const Attrs& attrs, const Shape& value, const Shape& bias) {
  if (bias.rank() != 1) throw InvalidArgumentError("Biases must be 1D: " + bias.to_string() + " [Op:BiasAdd]");
  if (value.rank() < 2)
    throw InvalidArgumentError("Input tensor must be at least 2D: " + value.to_string() + " [Op:BiasAdd]");
  const std::int64_t channels = attrs.channels_first ? value[1] : value[value.rank() - 1];
  if (channels >= 0 && bias[0] >= 0 && channels != bias[0])
    throw InvalidArgumentError(
        std::string("Must provide as many biases as the ") + (attrs.channels_first ? "channel" : "last") +
        " dimension of the input tensor: " + bias.to_string() + " vs. " + value.to_string() + " [Op:BiasAdd]");
  return value;
}

DEVTENSOR_DEFINITION Shape BiasAddGrad::output_shape(const Attrs& attrs, const Shape& out_backprop) {
  if (out_backprop.rank() < 2)
    throw InvalidArgumentError("Input tensor must be at least 2D: " + out_backprop.to_string() + " [Op:BiasAddGrad]");
  return Shape::partial({attrs.channels_first ? out_backprop[1] : out_backprop[out_backprop.rank() - 1]});
}

DEVTENSOR_DEFINITION WindowGeometry pool_geometry(const PoolAttrs& attrs, const Shape& input, std::string_view op) {
  if (input.rank() != 4) throw InvalidArgumentError("Input must be 4-dimensional" + op_suffix(op));
  if (attrs.ksize[0] < 1 || attrs.ksize[1] < 1)
    throw InvalidArgumentError("Sliding window ksize must be positive. The specified or inferred ksize is: 1," +
                               std::to_string(attrs.ksize[0]) + "," + std::to_string(attrs.ksize[1]) + ",1" +
                               op_suffix(op));
  if (attrs.window.padding == PaddingKind::explicit_)
    throw UnimplementedError(
        "Explicit padding is not supported by pooling: pad the input (dt::pad), then pool "
        "with VALID" +
        op_suffix(op));
  return window_geometry(attrs.window, input, attrs.ksize[0], attrs.ksize[1], op);
}

DEVTENSOR_DEFINITION Shape pool_output_shape(const PoolAttrs& attrs, const Shape& input, std::string_view op) {
  const WindowGeometry g = pool_geometry(attrs, input, op);
  return Shape::partial({g.batch, g.out_rows, g.out_cols, g.channels});
}

DEVTENSOR_DEFINITION Shape MaxPoolGrad::output_shape(const Attrs& attrs, const Shape& orig_input,
                                                     const Shape& orig_output, const Shape& grad) {
  const Shape pooled = pool_output_shape(attrs, orig_input, name);
  if (orig_output != pooled || grad != pooled)
    throw InvalidArgumentError("orig_output " + orig_output.to_string() + " and grad " + grad.to_string() +
                               " must both be the pooled shape " + pooled.to_string() + " [Op:MaxPoolGrad]");
  return orig_input;
}

DEVTENSOR_DEFINITION Shape AvgPoolGrad::output_shape(const Attrs& attrs, const Shape& grad) {
  const Shape input(attrs.orig_input_shape, name);
  const Shape pooled = pool_output_shape(attrs.pool, input, name);
  if (grad != pooled)
    throw InvalidArgumentError("grad " + grad.to_string() + " must be the pooled shape " + pooled.to_string() +
                               " of orig_input_shape " + input.to_string() + " [Op:AvgPoolGrad]");
  return input;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::ops
