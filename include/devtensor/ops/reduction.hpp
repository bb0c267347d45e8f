#pragma once
/// @file reduction.hpp
/// @brief The reductions, each defined once (ops/op_def.hpp): Sum, Mean and Max over every axis,
/// one axis or several, with keepdims; reduce_sum, reduce_mean, reduce_max.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/gradient_helpers.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

/// A reduction's attributes: the axes (all when none; negative counts from the end).
struct ReduceAttrs {
  std::optional<std::vector<std::int64_t>> axes;
  bool keepdims = false;
};
/// Which axes of `input` are reduced. @throws InvalidArgumentError for an axis out of range or
/// given twice (" [Op:<op>]").
std::vector<bool> reduced_dims(const ReduceAttrs& attrs, const Shape& input, std::string_view op);
/// The reduction's output shape.
Shape reduced_shape(const ReduceAttrs& attrs, const Shape& input, std::string_view op);

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::vector<bool> reduced_dims(const ReduceAttrs& attrs, const Shape& input, std::string_view op) {
  std::vector<bool> reduce(input.rank(), !attrs.axes.has_value());
  if (attrs.axes)
    for (auto a : *attrs.axes) {
      const std::size_t axis = input.axis(a, "Invalid reduction dimension: axis");
      if (reduce[axis])
        throw InvalidArgumentError("Axis " + std::to_string(a) + " specified more than once [Op:" + std::string(op) +
                                   "]");
      reduce[axis] = true;
    }
  return reduce;
}

DEVTENSOR_DEFINITION Shape reduced_shape(const ReduceAttrs& attrs, const Shape& input, std::string_view op) {
  const auto reduce = reduced_dims(attrs, input, op);
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < input.rank(); ++d) {
    if (!reduce[d])
      dims.push_back(input[d]);
    else if (attrs.keepdims)
      dims.push_back(1);
  }
  return Shape::partial(dims);  // an unknown dimension kept stays unknown
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// A reduction over `Attrs::axes` (all when none; negative counts from the end).
template <class Self, Reduction Kind>
struct ReduceOp : OpTable<NumericTypes, NumericTypes>, Builtin {
  static constexpr Reduction kind = Kind;
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  using Attrs = ReduceAttrs;
  static std::vector<bool> reduced(const Attrs& attrs, const Shape& input) {
    return reduced_dims(attrs, input, Self::name);
  }
  /// The reduced axes in increasing order (what the gradients need).
  static std::vector<std::int64_t> reduced_axes(const Attrs& attrs, const Shape& input) {
    const auto reduce = reduced(attrs, input);
    std::vector<std::int64_t> out;
    for (std::size_t d = 0; d < reduce.size(); ++d)
      if (reduce[d]) out.push_back(static_cast<std::int64_t>(d));
    return out;
  }
  static Shape output_shape(const Attrs& attrs, const Shape& input) { return reduced_shape(attrs, input, Self::name); }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

struct Sum : ReduceOp<Sum, Reduction::sum> {
  static constexpr std::string_view name = "Sum";
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto& x = a.x[0];
    const auto kept = with_kept_dims(a.dy[0], x.shape(), reduced_axes(a.attrs, x.shape()));
    // A dimension a graph does not know: spread by broadcasting against x's shape when it runs.
    if (!x.shape().is_fully_defined()) [[unlikely]]
      return {mul(kept, ones_like(x))};
    return {broadcast_to(kept, x.shape())};
  }
};
/// The mean; integer types divide with truncation, as TensorFlow does, and the mean of nothing is
/// NaN for floating types and 0 for integers (0 / 0, as TensorFlow and NumPy give it).
struct Mean : ReduceOp<Mean, Reduction::mean> {
  static constexpr std::string_view name = "Mean";
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto& x = a.x[0];
    const auto axes = reduced_axes(a.attrs, x.shape());
    if (!x.shape().is_fully_defined()) [[unlikely]] {  // a graph's unknown dimension: counted when it runs
      const auto ones = ones_like(x);
      return {div(mul(with_kept_dims(a.dy[0], x.shape(), axes), ones), reduce_sum(ones, axes, /*keepdims=*/true))};
    }
    std::int64_t count = 1;
    for (auto axis : axes) count *= x.shape()[static_cast<std::size_t>(axis)];
    const auto spread = broadcast_to(with_kept_dims(a.dy[0], x.shape(), axes), x.shape());
    return {div(spread, constant_like<T>(static_cast<T>(count)))};
  }
};
struct Max : ReduceOp<Max, Reduction::max> {
  static constexpr std::string_view name = "Max";
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // shared equally among the elements equal to the maximum
    const auto& x = a.x[0];
    const auto axes = reduced_axes(a.attrs, x.shape());
    const auto selected = grad_ops::equal(x, with_kept_dims(a.y[0], x.shape(), axes));
    const auto count = reduce_sum(selected, axes, /*keepdims=*/true);
    return {mul(selected, div(with_kept_dims(a.dy[0], x.shape(), axes), count))};
  }
};

using ReductionOps = TypeList<Sum, Mean, Max>;

}  // namespace devtensor::ops

namespace devtensor {

/// Sum over every axis (axes = std::nullopt), the given axes (negative counts from the end), with
/// reduced axes kept as size 1 when `keepdims`. @throws InvalidArgumentError for an axis out of
/// range or given twice.
template <Numeric T>
Tensor<T> reduce_sum(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims = false,
                     const OpOptions& options = {}) {
  return run_op<ops::Sum>(options, {std::move(axes), keepdims}, t);
}
/// Over every axis. (An overload, not a defaulted std::nullopt: moving a disengaged
/// std::optional<std::vector> inlined into a caller makes GCC 12 report a false
/// -Wmaybe-uninitialized in -O2 -Werror builds.)
template <Numeric T>
Tensor<T> reduce_sum(const Tensor<T>& t) {
  return run_op<ops::Sum>(ops::ReduceAttrs{}, t);
}
/// The mean; integer types divide with truncation, as TensorFlow does; the mean of nothing is NaN
/// (floating types) or 0 (integers).
template <Numeric T>
Tensor<T> reduce_mean(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims = false,
                      const OpOptions& options = {}) {
  return run_op<ops::Mean>(options, {std::move(axes), keepdims}, t);
}
/// Over every axis. (An overload, not a defaulted std::nullopt: moving a disengaged
/// std::optional<std::vector> inlined into a caller makes GCC 12 report a false
/// -Wmaybe-uninitialized in -O2 -Werror builds.)
template <Numeric T>
Tensor<T> reduce_mean(const Tensor<T>& t) {
  return run_op<ops::Mean>(ops::ReduceAttrs{}, t);
}
template <Numeric T>
Tensor<T> reduce_max(const Tensor<T>& t, std::optional<std::vector<std::int64_t>> axes, bool keepdims = false,
                     const OpOptions& options = {}) {
  return run_op<ops::Max>(options, {std::move(axes), keepdims}, t);
}
/// Over every axis. (An overload, not a defaulted std::nullopt: moving a disengaged
/// std::optional<std::vector> inlined into a caller makes GCC 12 report a false
/// -Wmaybe-uninitialized in -O2 -Werror builds.)
template <Numeric T>
Tensor<T> reduce_max(const Tensor<T>& t) {
  return run_op<ops::Max>(ops::ReduceAttrs{}, t);
}
template <Numeric T>
Tensor<T> reduce_sum(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_sum(t, std::vector<std::int64_t>{axis}, keepdims);
}
template <Numeric T>
Tensor<T> reduce_mean(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_mean(t, std::vector<std::int64_t>{axis}, keepdims);
}
template <Numeric T>
Tensor<T> reduce_max(const Tensor<T>& t, std::int64_t axis, bool keepdims = false) {
  return reduce_max(t, std::vector<std::int64_t>{axis}, keepdims);
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
namespace op_detail {
#define DEVTENSOR_ALL(T) DEVTENSOR_GRAPH_OP(Sum, T, 1) DEVTENSOR_GRAPH_OP(Mean, T, 1) DEVTENSOR_GRAPH_OP(Max, T, 1)
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
}  // namespace op_detail
#endif
// clang-format on

}  // namespace devtensor

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/reduce.hpp"

namespace devtensor::ops {
template <class Self, Reduction Kind>
template <class T>
void ReduceOp<Self, Kind>::cpu(const KernelContext& ctx) {
  cpu::reduce(ctx.input<T>(0), ctx.input_shape(0), reduced(ctx.attr<Attrs>(), ctx.input_shape(0)), Kind,
              ctx.output<T>());
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/reduce.cuh"

namespace devtensor::ops {
template <class Self, Reduction Kind>
template <class T>
void ReduceOp<Self, Kind>::cuda(const KernelContext& ctx) {
  cuda::reduce(ctx.device, ctx.input<T>(0), ctx.input_shape(0), reduced(ctx.attr<Attrs>(), ctx.input_shape(0)), Kind,
               ctx.output<T>(), Self::name);
}
}  // namespace devtensor::ops
#endif
