#pragma once
/// @file nn_ops.hpp
/// @brief The neural-network ops (TensorFlow's nn_ops), each defined once (ops/op_def.hpp):
/// Softmax and LogSoftmax over the last axis, L2Loss, LRN and LRNGrad; softmax, log_softmax over
/// any axis, l2_loss, local_response_normalization (lrn).
///
/// Both are numerically stable: each row is shifted by its maximum before the exponential, and
/// the row's sum of exponentials is accumulated in double (as the reductions accumulate), so a
/// row of logits 1000 and 1001 gives 0.2689…, 0.7310…, not NaN. A row of -inf gives NaN, as
/// TensorFlow's; so does a row holding NaN or +inf, throughout (TensorFlow 2.21's CPU kernel
/// leaves that row's finite entries at 0). The gradients are TensorFlow's (_SoftmaxGrad,
/// _LogSoftmaxGrad), written with ops, so they are differentiable again.

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor::ops {

/// Softmax (or its log, `Log`) over the last axis of logits of rank >= 1.
template <class Self, bool Log>
struct SoftmaxOp : OpTable<FloatingTypes, FloatingTypes>, Builtin {
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  static constexpr bool log = Log;
  struct Attrs {};
  /// @throws InvalidArgumentError for a scalar (TensorFlow's text).
  static const Shape& output_shape(const Attrs&, const Shape& logits) {
    if (logits.rank() < 1)
      throw InvalidArgumentError("logits must have >= 1 dimension, got " + logits.to_string() +
                                 " [Op:" + std::string(Self::name) + "]");
    return logits;
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

struct Softmax : SoftmaxOp<Softmax, false> {
  static constexpr std::string_view name = "Softmax";
  /// (dy − Σ dy·y) · y, the sum over the last axis.
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto& y = a.y[0];
    return {mul(sub(a.dy[0], reduce_sum(mul(a.dy[0], y), -1, /*keepdims=*/true)), y)};
  }
};
struct LogSoftmax : SoftmaxOp<LogSoftmax, true> {
  static constexpr std::string_view name = "LogSoftmax";
  /// dy − Σ dy · exp(y), the sum over the last axis.
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {sub(a.dy[0], mul(reduce_sum(a.dy[0], -1, /*keepdims=*/true), exp(a.y[0])))};
  }
};

/// sum(x²) / 2 over every element, a scalar (TensorFlow's weight-decay term). The sum is
/// accumulated in double, as the reductions accumulate.
struct L2Loss : OpTable<FloatTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "L2Loss";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {};
  static Shape output_shape(const Attrs&, const Shape&) { return Shape{}; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  /// x · dy (TensorFlow's _L2LossGrad).
  template <Floating T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {mul(a.x[0], a.dy[0])};
  }
};

/// LRN's attributes (TensorFlow's defaults).
struct LrnAttrs {
  std::int64_t depth_radius = 5;
  float bias = 1.0f;
  float alpha = 1.0f;
  float beta = 0.5f;
};

/// Local response normalisation across the depth (last) axis of a 4-D input:
/// sqr_sum[..., d] = Σ in[..., c]² over |c − d| ≤ depth_radius, out = in / (bias + alpha · sqr_sum)^beta.
struct LRN : OpTable<FloatTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "LRN";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = LrnAttrs;
  /// @throws InvalidArgumentError "in must be 4-dimensional", "depth_radius = -1 larger than int
  /// max" (TensorFlow's texts: a negative radius reads as a huge unsigned one there).
  static Shape output_shape(const Attrs& attrs, const Shape& input);
  template <class T>
  static void cpu(const KernelContext& ctx);
  /// LRNGrad(dy, x, y) (TensorFlow's _LRNGrad).
  template <Floating T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a);
};

/// LRN's gradient: inputs input_grads, input_image, output_image (all of one 4-D shape). No
/// gradient of its own (TensorFlow has none).
struct LRNGrad : OpTable<FloatTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "LRNGrad";
  using Attrs = LrnAttrs;
  /// @throws InvalidArgumentError "input_grads, input_image, and out_image should have the same
  /// shape", and LRN's reasons.
  static Shape output_shape(const Attrs& attrs, const Shape& grads, const Shape& image, const Shape& output);
  template <class T>
  static void cpu(const KernelContext& ctx);
};

using NnOps = TypeList<Softmax, LogSoftmax, L2Loss, LRN, LRNGrad>;

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Shape LRN::output_shape(const Attrs& attrs, const Shape& input) {
  if (input.rank() != 4) throw InvalidArgumentError("in must be 4-dimensional [Op:" + std::string(name) + "]");
  if (attrs.depth_radius < 0 || attrs.depth_radius > std::numeric_limits<std::int32_t>::max())
    throw InvalidArgumentError("depth_radius = " + std::to_string(attrs.depth_radius) +
                               " larger than int max [Op:" + std::string(name) + "]");
  return input;
}
DEVTENSOR_DEFINITION Shape LRNGrad::output_shape(const Attrs& attrs, const Shape& grads, const Shape& image,
                                                 const Shape& output) {
  if (grads.rank() != 4 || image.rank() != 4 || output.rank() != 4)
    throw InvalidArgumentError("inputs must be 4-dimensional [Op:" + std::string(name) + "]");
  if (grads != image || image != output)
    throw InvalidArgumentError(
        "input_grads, input_image, and out_image should have the same shape [Op:" + std::string(name) + "]");
  (void)LRN::output_shape(attrs, image);
  return image;
}
#endif

}  // namespace devtensor::ops

namespace devtensor {

namespace nn_ops_detail {
/// Op over `axis` of x: the last axis directly; another by swapping it last and back (TensorFlow
/// transposes so too). @throws InvalidArgumentError for an axis out of range.
template <class Op, FloatingElement T>
Tensor<T> over_axis(const Tensor<T>& x, std::int64_t axis, const OpOptions& options) {
  const auto rank = static_cast<std::int64_t>(x.rank());
  if (rank == 0 || axis == -1 || axis == rank - 1) return run_op<Op>(options, {}, x);
  if (axis < -rank || axis >= rank)
    throw InvalidArgumentError("axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                               std::to_string(rank) + " [Op:" + std::string(Op::name) + "]");
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
  for (std::int64_t d = 0; d < rank; ++d) perm[static_cast<std::size_t>(d)] = d;
  std::swap(perm[static_cast<std::size_t>(axis < 0 ? axis + rank : axis)], perm.back());
  return transpose(run_op<Op>(options, {}, transpose(x, perm)), perm);  // the swap is its own inverse
}
}  // namespace nn_ops_detail

/// exp(x) / Σ exp(x) over `axis` (the last by default), computed stably.
/// @throws InvalidArgumentError for a scalar or an axis out of range.
template <FloatingElement T>
Tensor<T> softmax(const Tensor<T>& logits, std::int64_t axis = -1, const OpOptions& options = {}) {
  return nn_ops_detail::over_axis<ops::Softmax>(logits, axis, options);
}
/// x − log Σ exp(x) over `axis` (the last by default), computed stably.
/// @throws InvalidArgumentError for a scalar or an axis out of range.
template <FloatingElement T>
Tensor<T> log_softmax(const Tensor<T>& logits, std::int64_t axis = -1, const OpOptions& options = {}) {
  return nn_ops_detail::over_axis<ops::LogSoftmax>(logits, axis, options);
}

/// tf.nn.local_response_normalization's keyword arguments.
struct LrnOptions {
  std::int64_t depth_radius = 5;
  float bias = 1.0f;
  float alpha = 1.0f;
  float beta = 0.5f;
  std::string_view name = {};
};

/// Local response normalisation across the last axis of a 4-D input (NHWC):
/// input / (bias + alpha · Σ input² over depth_radius neighbours each side)^beta
/// (tf.nn.local_response_normalization). @throws InvalidArgumentError (ops::LRN).
template <Floating T>
Tensor<T> local_response_normalization(const Tensor<T>& input, const LrnOptions& options = {}) {
  return run_op<ops::LRN>(OpOptions{options.name}, {options.depth_radius, options.bias, options.alpha, options.beta},
                          input);
}
/// tf.nn.lrn, the same function.
template <Floating T>
Tensor<T> lrn(const Tensor<T>& input, const LrnOptions& options = {}) {
  return local_response_normalization(input, options);
}

/// sum(t²) / 2, a scalar (tf.nn.l2_loss).
template <Floating T>
Tensor<T> l2_loss(const Tensor<T>& t, const OpOptions& options = {}) {
  return run_op<ops::L2Loss>(options, {}, t);
}

}  // namespace devtensor

namespace devtensor::ops {
template <Floating T>
Grads<T> LRN::gradient(const GradArgs<T, Attrs>& a) {
  return {run_op<LRNGrad>(a.attrs, a.dy[0], a.x[0], a.y[0])};
}
}  // namespace devtensor::ops

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/in_float.hpp"
#include "devtensor/ops/cpu/lrn.hpp"
#include "devtensor/ops/cpu/softmax.hpp"

namespace devtensor::ops {
template <class Self, bool Log>
template <class T>
void SoftmaxOp<Self, Log>::cpu(const KernelContext& ctx) {
  const Shape& shape = ctx.input_shape(0);
  const std::int64_t classes = shape[shape.rank() - 1];
  cpu::in_float<T>(ctx, 1, [&](auto in, auto out) {  // 16 bits: Note [Sixteen-bit bodies in float]
    cpu::softmax_rows(in(0), classes > 0 ? shape.num_elements() / classes : 0, classes, Log, out(0));
  });
}
template <class T>
void LRN::cpu(const KernelContext& ctx) {
  const Shape& shape = ctx.input_shape(0);
  const std::int64_t depth = shape[3];
  const auto& a = ctx.attr<Attrs>();
  cpu::lrn_rows(ctx.input<T>(0), depth > 0 ? shape.num_elements() / depth : 0, depth, a.depth_radius,
                static_cast<T>(a.bias), static_cast<T>(a.alpha), static_cast<T>(a.beta), ctx.output<T>());
}
template <class T>
void LRNGrad::cpu(const KernelContext& ctx) {
  const Shape& shape = ctx.input_shape(0);
  const std::int64_t depth = shape[3];
  const auto& a = ctx.attr<Attrs>();
  cpu::lrn_grad_rows(ctx.input<T>(0), ctx.input<T>(1), ctx.input<T>(2), depth > 0 ? shape.num_elements() / depth : 0,
                     depth, a.depth_radius, static_cast<T>(a.bias), static_cast<T>(a.alpha), static_cast<T>(a.beta),
                     ctx.output<T>());
}
template <class T>
void L2Loss::cpu(const KernelContext& ctx) {
  *ctx.output<T>() = static_cast<T>(cpu::sum_of_squares(ctx.input<T>(0), ctx.input_shape(0).num_elements()) / 2);
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/softmax.cuh"

namespace devtensor::ops {
template <class Self, bool Log>
template <class T>
void SoftmaxOp<Self, Log>::cuda(const KernelContext& ctx) {
  const Shape& shape = ctx.input_shape(0);
  const std::int64_t classes = shape[shape.rank() - 1];
  cuda::softmax_rows(ctx.device, ctx.input<T>(0), classes > 0 ? shape.num_elements() / classes : 0, classes, Log,
                     ctx.output<T>(), Self::name);
}
}  // namespace devtensor::ops
#endif
