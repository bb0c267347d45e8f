#pragma once
/// @file selection.hpp
/// @brief The ops that pick by position or by condition, each defined once (ops/op_def.hpp):
/// ArgMax, ArgMin (math_ops), OneHot and SelectV2 (array_ops); then argmax, argmin, one_hot and
/// where as TensorFlow spells them (tf.math.argmax, tf.one_hot, tf.where with x and y).
///
/// The element types differ between inputs and outputs here: ArgMax reads numbers and writes int64
/// (or int32) indices, OneHot reads integer indices and writes any type. An op's inputs share one
/// type, so SelectV2 takes its condition in the type of x and y (nonzero is true) and `where`
/// converts TensorFlow's bool condition to it (a Cast node before the SelectV2 in a graph). No GPU
/// body yet: on a GPU they run on the CPU under soft placement.

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/core/error.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/gradient_helpers.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor::ops {

/// ArgMax's and ArgMin's attributes: the axis reduced (TensorFlow's `dimension` input) and the
/// index type (int64 or int32).
struct ArgAttrs {
  std::int64_t axis = 0;
  DType output_type = DType::DT_INT64;
};
/// The input's shape without `axis`. @throws InvalidArgumentError "Expected dimension in the range
/// [-r, r), but got a" and "Reduction axis a is empty in shape [..]" (TensorFlow's texts).
Shape arg_reduced_shape(const ArgAttrs& attrs, const Shape& input, std::string_view op);

/// The index of the largest (`Max`) or smallest value along an axis. TensorFlow's rule, NaN
/// included: the running best starts at the type's lowest (highest) value with index 0 and moves
/// only to a strictly larger (smaller) value, so ties keep the first index, NaN never wins, and a
/// row of NaN or of -inf gives 0.
template <class Self, bool Max>
struct ArgReduceOp : OpTable<NumericTypes, NoTypes>, Builtin {
  static constexpr bool max = Max;
  static constexpr OpTraits traits{.handles_unknown_dims = true, .differentiable = false};
  using Attrs = ArgAttrs;
  static Shape output_shape(const Attrs& attrs, const Shape& input) {
    return arg_reduced_shape(attrs, input, Self::name);
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
};
struct ArgMax : ArgReduceOp<ArgMax, true> {
  static constexpr std::string_view name = "ArgMax";
};
struct ArgMin : ArgReduceOp<ArgMin, false> {
  static constexpr std::string_view name = "ArgMin";
};

/// A one-hot encoding: `on_value` where the index names the position along the new axis, else
/// `off_value`; an index outside [0, depth) gives a row of `off_value` (TensorFlow's rule).
struct OneHot : OpTable<IntegerTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "OneHot";
  static constexpr OpTraits traits{.handles_unknown_dims = true, .differentiable = false};
  struct Attrs {
    std::int64_t depth = 0;
    Scalar on_value = Scalar::of(1.0f);
    Scalar off_value = Scalar::of(0.0f);
    std::int64_t axis = -1;  // where the new axis goes; -1: last
    DType dtype = DType::DT_FLOAT;
  };
  /// @throws InvalidArgumentError "depth must be non-negative, got: d", "Expected axis to be -1 or
  /// between [0, r).  But received: a" (TensorFlow's texts).
  static Shape output_shape(const Attrs& attrs, const Shape& indices);
  template <class I>
  static void cpu(const KernelContext& ctx);
};

/// x where the condition is nonzero, else y, the three broadcast together (TensorFlow's SelectV2,
/// whose condition is bool: devtensor's inputs share a type, see the file's comment).
struct SelectV2 : OpTable<AllTypes, NoTypes>, Builtin {
  static constexpr std::string_view name = "SelectV2";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {};
  /// @throws InvalidArgumentError "condition [..], then [..], and else [..] must be broadcastable".
  static Shape output_shape(const Attrs&, const Shape& condition, const Shape& x, const Shape& y);
  template <class T>
  static void cpu(const KernelContext& ctx);
  /// TensorFlow's _SelectGradV2: the gradient goes to x where the condition holds, to y elsewhere,
  /// each summed over the axes it was broadcast along; none to the condition.
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto zero = constant_like<T>(T{0});
    const auto& c = a.x[0];
    return {Tensor<T>(), unbroadcast(run_op<SelectV2>({}, c, a.dy[0], zero), a.x[1]),
            unbroadcast(run_op<SelectV2>({}, c, zero, a.dy[0]), a.x[2])};
  }
};

using SelectionOps = TypeList<ArgMax, ArgMin, OneHot, SelectV2>;

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Shape arg_reduced_shape(const ArgAttrs& attrs, const Shape& input, std::string_view op) {
  const auto rank = static_cast<std::int64_t>(input.rank());
  if (attrs.axis < -rank || attrs.axis >= rank)
    throw InvalidArgumentError("Expected dimension in the range [" + std::to_string(-rank) + ", " +
                               std::to_string(rank) + "), but got " + std::to_string(attrs.axis) +
                               " [Op:" + std::string(op) + "]");
  if (attrs.output_type != DType::DT_INT64 && attrs.output_type != DType::DT_INT32)
    throw InvalidArgumentError(std::string(op) + "'s output_type must be int32 or int64 [Op:" + std::string(op) + "]");
  const auto axis = static_cast<std::size_t>(attrs.axis < 0 ? attrs.axis + rank : attrs.axis);
  if (input[axis] == 0)
    throw InvalidArgumentError("Reduction axis " + std::to_string(attrs.axis) + " is empty in shape " +
                               input.to_string() + " [Op:" + std::string(op) + "]");
  std::vector<std::int64_t> dims = input.dims_vector();
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  return Shape::partial(dims);
}

DEVTENSOR_DEFINITION Shape OneHot::output_shape(const Attrs& attrs, const Shape& indices) {
  if (attrs.depth < 0)
    throw InvalidArgumentError("depth must be non-negative, got: " + std::to_string(attrs.depth) + " [Op:OneHot]");
  const auto rank = static_cast<std::int64_t>(indices.rank());
  if (attrs.axis != -1 && (attrs.axis < 0 || attrs.axis > rank))
    throw InvalidArgumentError("Expected axis to be -1 or between [0, " + std::to_string(rank + 1) +
                               ").  But received: " + std::to_string(attrs.axis) + " [Op:OneHot]");
  std::vector<std::int64_t> dims = indices.dims_vector();
  dims.insert(dims.begin() + (attrs.axis == -1 ? rank : attrs.axis), attrs.depth);
  return Shape::partial(dims, name);
}

DEVTENSOR_DEFINITION Shape SelectV2::output_shape(const Attrs&, const Shape& condition, const Shape& x,
                                                  const Shape& y) {
  try {
    return broadcast_shapes(condition, broadcast_shapes(x, y, name), name);
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError("condition " + condition.to_string() + ", then " + x.to_string() + ", and else " +
                               y.to_string() + " must be broadcastable [Op:SelectV2]");
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::ops

namespace devtensor {

namespace selection_detail {
template <class Op, class Index, Numeric T>
Tensor<Index> arg_reduce(const Tensor<T>& input, std::int64_t axis, const OpOptions& options) {
  static_assert(std::same_as<Index, std::int64_t> || std::same_as<Index, std::int32_t>,
                "the index type is std::int64_t (TensorFlow's default) or std::int32_t");
  return run_op<Op, Index>(options, ops::ArgAttrs{axis, dtype_enum<Index>()}, input);
}
}  // namespace selection_detail

/// The index of the largest value along `axis` (0 by default, as tf.math.argmax's None), as int64
/// or, `argmax<std::int32_t>(x, axis)`, int32. Ties give the first index; NaN never wins.
/// @throws InvalidArgumentError for an axis out of range, or an empty axis.
template <class Index = std::int64_t, Numeric T>
Tensor<Index> argmax(const Tensor<T>& input, std::int64_t axis = 0, const OpOptions& options = {}) {
  return selection_detail::arg_reduce<ops::ArgMax, Index>(input, axis, options);
}
/// The index of the smallest value along `axis`; as argmax otherwise.
template <class Index = std::int64_t, Numeric T>
Tensor<Index> argmin(const Tensor<T>& input, std::int64_t axis = 0, const OpOptions& options = {}) {
  return selection_detail::arg_reduce<ops::ArgMin, Index>(input, axis, options);
}

/// one_hot's keyword arguments: the values written, and where the new axis goes (-1: last).
template <Element T>
struct OneHotOptions {
  T on_value = T{1};
  T off_value = T{0};
  std::int64_t axis = -1;
  std::string_view name = {};
};

/// A tensor of T with a new axis of `depth`: `on_value` at each index's position, `off_value`
/// elsewhere (tf.one_hot; float unless `one_hot<double>(...)`, ...). Indices outside [0, depth)
/// give rows of `off_value`. @throws InvalidArgumentError for a negative depth or a bad axis.
template <Element T = float, class I>
requires(std::same_as<I, std::int32_t> ||
         std::same_as<I, std::int64_t>) Tensor<T> one_hot(const Tensor<I>& indices, std::int64_t depth,
                                                          const OneHotOptions<T>& options = {}) {
  const ops::OneHot::Attrs attrs{depth, ops::Scalar::of(options.on_value), ops::Scalar::of(options.off_value),
                                 options.axis, dtype_enum<T>()};
  return run_op<ops::OneHot, T>(OpOptions{options.name}, attrs, indices);
}

/// x where `condition` is true, y elsewhere, the three broadcast together (tf.where with x and y;
/// TensorFlow's SelectV2). @throws InvalidArgumentError when the shapes do not broadcast.
template <Element T>
Tensor<T> where(const Tensor<bool>& condition, const Tensor<T>& x, const Tensor<T>& y, const OpOptions& options = {}) {
  if constexpr (std::same_as<T, bool>) {
    return run_op<ops::SelectV2>(options, {}, condition, x, y);
  } else {
    require_defined_inputs(ops::SelectV2::name, condition);
    return run_op<ops::SelectV2>(options, {}, cast<T>(condition), x, y);
  }
}

}  // namespace devtensor

#if DEVTENSOR_CPU_KERNEL_BODIES
#include "devtensor/ops/cpu/selection.hpp"

namespace devtensor::ops {
template <class Self, bool Max>
template <class T>
void ArgReduceOp<Self, Max>::cpu(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const Shape& shape = ctx.input_shape(0);
  const auto axis = shape.axis(attrs.axis);
  const auto [outer, length, inner] = cpu::split_at_axis(shape, axis);
  if (attrs.output_type == DType::DT_INT32)
    cpu::arg_reduce<Max>(ctx.input<T>(0), outer, length, inner, ctx.output<std::int32_t>());
  else
    cpu::arg_reduce<Max>(ctx.input<T>(0), outer, length, inner, ctx.output<std::int64_t>());
}

template <class I>
void OneHot::cpu(const KernelContext& ctx) {
  const auto& a = ctx.attr<Attrs>();
  const Shape& shape = ctx.input_shape(0);
  const auto axis = static_cast<std::size_t>(a.axis == -1 ? static_cast<std::int64_t>(shape.rank()) : a.axis);
  std::int64_t before = 1, after = 1;
  for (std::size_t d = 0; d < shape.rank(); ++d) (d < axis ? before : after) *= shape[d];
  const auto run = [&]<class T>() {
    cpu::one_hot(ctx.input<I>(0), before, a.depth, after, a.on_value.as<T>(), a.off_value.as<T>(), ctx.output<T>());
  };
  switch (a.dtype) {
    case DType::DT_FLOAT: run.template operator()<float>(); break;
    case DType::DT_DOUBLE: run.template operator()<double>(); break;
    case DType::DT_INT32: run.template operator()<std::int32_t>(); break;
    case DType::DT_INT64: run.template operator()<std::int64_t>(); break;
    case DType::DT_HALF: run.template operator()<float16>(); break;
    case DType::DT_BFLOAT16: run.template operator()<bfloat16>(); break;
    default: run.template operator()<bool>(); break;
  }
}

template <class T>
void SelectV2::cpu(const KernelContext& ctx) {
  cpu::select(ctx.input<T>(0), ctx.input_shape(0), ctx.input<T>(1), ctx.input_shape(1), ctx.input<T>(2),
              ctx.input_shape(2), ctx.output<T>(), ctx.output_shape());
}
}  // namespace devtensor::ops
#endif
