#pragma once
/// @file creation.hpp
/// @brief Tensors from values: constant (TensorFlow's _EagerConst: a copy from the host, placed as
/// an op), and the ops Fill and Range, each defined once (ops/op_def.hpp); zeros, ones, fill, range.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/core/arith.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/ops/functors.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

/// A tensor from host values (constant): placed like an op with a kernel on every device; a copy,
/// no body.
struct EagerConst : KernelTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "_EagerConst";
  struct Attrs {};
};

/// A tensor of a shape with every element one value.
struct Fill : OpTable<AllTypes, AllTypes>, Builtin {
  static constexpr std::string_view name = "Fill";
  struct Attrs {
    Shape shape;
    Scalar value;
  };
  static const Shape& output_shape(const Attrs& attrs) noexcept { return attrs.shape; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

/// start, start + delta, ...: `size` values (range() computes and checks it from the limit).
struct Range : OpTable<NumericTypes, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Range";
  struct Attrs {
    Scalar start;
    Scalar delta;
    std::int64_t size = 0;
  };
  static Shape output_shape(const Attrs& attrs) { return Shape{attrs.size}; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

/// Ones in the shape of the input, whatever its shape is when the op runs (TensorFlow's
/// OnesLike): what a gradient uses where a graph does not know a dimension.
struct OnesLike : OpTable<NumericTypes, NumericTypes>, Builtin {
  static constexpr std::string_view name = "OnesLike";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {};
  static const Shape& output_shape(const Attrs&, const Shape& x) noexcept { return x; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

using CreationOps = TypeList<EagerConst, Fill, Range, OnesLike>;

}  // namespace devtensor::ops

namespace devtensor {

/// `n` elements from `values` (one value fills them all) as row-major bytes: what a graph's Const
/// node keeps and a Session's host feed holds.
template <Element T>
std::vector<std::byte> host_bytes(const std::vector<T>& values, std::int64_t n) {
  std::vector<std::byte> bytes(static_cast<std::size_t>(n) * sizeof(T));
  for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
    const T v = values[values.size() == 1 ? 0 : i];  // std::vector<bool> has no data()
    std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
  }
  return bytes;
}

namespace ops {
/// A tensor from host values, in row-major order (one value fills the shape): TensorFlow's
/// _EagerConst eagerly, a copy to the device placed as an op; in a graph a Const node, which keeps
/// the values (one value: a splat) and makes them on its device at each run.
template <Element T>
struct Const : TensorLevel {
  static constexpr std::string_view name = "Const";
  static constexpr OpTraits traits{.handles_unknown_dims = true, .differentiable = false};
  struct Attrs {
    const std::vector<T>& values;
    const Shape& shape;
    const OpOptions& options;
  };

  /// The Const node (defined below: compiled once in compiled mode, Note [Explicit instantiations]).
  static Tensor<T> graph(graph::Graph& graph, const Attrs& a);

  static Tensor<T> eager(const Attrs& a) {
    const auto n = a.shape.num_elements();
    const auto count = static_cast<std::int64_t>(a.values.size());
    const Device& device = place_constant(a.options.where);
    auto out = Tensor<T>::empty(a.shape, device, EagerConst::name);
    // Values start on the host; a real GPU gets them by copy.
    std::vector<T> host;
    if constexpr (std::is_same_v<T, bool>) {
      static_assert(sizeof(bool) == 1);
      host.reserve(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) host.push_back(a.values[count == 1 ? 0 : static_cast<std::size_t>(i)]);
      // std::vector<bool> has no data(): copy element by element into a byte buffer.
      std::vector<unsigned char> bytes(host.begin(), host.end());
      copy_bytes(out.mutable_data(), out.device_info(), bytes.data(), host_buffer_device(), bytes.size());
    } else {
      if (count == 1 && n != 1) host.assign(static_cast<std::size_t>(n), a.values[0]);
      const T* src = host.empty() ? a.values.data() : host.data();
      copy_bytes(out.mutable_data(), out.device_info(), src, host_buffer_device(),
                 static_cast<std::size_t>(n) * sizeof(T));
    }
    return out;
  }
};

template <Element T>
Tensor<T> Const<T>::graph(graph::Graph& graph, const Attrs& a) {
  const auto count = static_cast<std::int64_t>(a.values.size());
  return graph::add_constant(graph, a.options.name, dtype_enum<T>(), a.shape, host_bytes(a.values, count))
      .template as<T>();
}
// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
#define DEVTENSOR_ALL(T) DEVTENSOR_EXTERN_TEMPLATE struct Const<T>;
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
#endif
// clang-format on
}  // namespace ops

/// A tensor of `shape` from `values` in row-major order; one value fills the whole shape.
/// Created on the requested device (TensorFlow's _EagerConst), with soft placement as for ops:
/// place_constant() says where.
/// @throws InvalidArgumentError when the number of values does not fit the shape.
template <Element T>
Tensor<T> constant(const std::vector<T>& values, const Shape& shape, const OpOptions& options = {}) {
  const auto n = shape.num_elements();
  const auto count = static_cast<std::int64_t>(values.size());
  if (count != n && count != 1)
    throw InvalidArgumentError("constant: " + std::to_string(count) + " values do not fit shape " + shape.to_string() +
                               ", which has " + std::to_string(n) +
                               " elements. Pass one value per element, or a single value to fill "
                               "the shape.");
  return run_op<ops::Const<T>>({values, shape, options});
}

template <Element T>
Tensor<T> constant(std::initializer_list<T> values, const Shape& shape, const OpOptions& options = {}) {
  return constant<T>(std::vector<T>(values), shape, options);
}
/// A vector (rank 1) from the values. (No `name=` here: `constant(v, {0})` must mean a shape; the
/// forms with a shape take one.)
template <Element T>
Tensor<T> constant(std::initializer_list<T> values) {
  return constant<T>(std::vector<T>(values), Shape{static_cast<std::int64_t>(values.size())});
}
template <Element T>
Tensor<T> constant(const std::vector<T>& values) {
  return constant<T>(values, Shape{static_cast<std::int64_t>(values.size())});
}
/// A scalar (rank 0).
template <Element T>
Tensor<T> scalar(T value, const OpOptions& options = {}) {
  return constant<T>(std::vector<T>{value}, Shape{}, options);
}
/// A scalar of an attribute's value, converted to T (`dt::scalar<T>(a.attrs.lo)` in a gradient).
template <Element T>
Tensor<T> scalar(const ops::Scalar& value, const OpOptions& options = {}) {
  return scalar<T>(value.as<T>(), options);
}

/// A tensor of `shape` with every element `value` (TensorFlow's Fill).
template <Element T>
Tensor<T> fill(const Shape& shape, std::type_identity_t<T> value, const OpOptions& options = {}) {
  return run_op<ops::Fill, T>(options, {shape, ops::Scalar::of<T>(value)});
}
template <Element T>
Tensor<T> zeros(const Shape& shape, const OpOptions& options = {}) {
  return fill<T>(shape, T{0}, options);
}
template <Element T>
Tensor<T> ones(const Shape& shape, const OpOptions& options = {}) {
  return fill<T>(shape, T{1}, options);
}
/// Ones in x's shape (TensorFlow's ones_like; in a graph, the shape x has when the graph runs).
template <Numeric T>
Tensor<T> ones_like(const Tensor<T>& x, const OpOptions& options = {}) {
  return run_op<ops::OnesLike>(options, {}, x);
}

namespace op_detail {
/// Range's element count, computed in long double (exact for every int64 difference) and checked
/// before it becomes an int64: a NaN or infinite argument or a count beyond int64 is an error
/// naming the argument, not an undefined conversion.
template <Numeric T>
std::int64_t range_size(T start, T limit, T delta) {
  if constexpr (is_floating_element_v<T>) {
    const auto check_finite = [](T v, const char* name) {
      if (!std::isfinite(static_cast<double>(v)))
        throw InvalidArgumentError(std::string("Requires ") + name + " to be finite, got " +
                                   number_string(static_cast<double>(v)) + " [Op:Range]");
    };
    check_finite(start, "start");
    check_finite(limit, "limit");
    check_finite(delta, "delta");
  }
  if (delta == T{0}) throw InvalidArgumentError("Requires delta != 0: 0 [Op:Range]");
  if ((delta > T{0} && start > limit) || (delta < T{0} && start < limit))
    throw InvalidArgumentError("Requires start <= limit when delta > 0 (or start >= limit when delta < 0): " +
                               number_string(start) + "/" + number_string(limit) + " [Op:Range]");
  using Wide = long double;
  Wide size = 0;
  if constexpr (std::is_integral_v<T>) {
    // ceil(|limit - start| / |delta|) in integers: the difference as an unsigned magnitude.
    const auto magnitude = [](T a, T b) {
      return a > b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                   : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
    };
    const std::uint64_t span = magnitude(limit, start);
    const std::uint64_t step =
        delta < T{0} ? std::uint64_t{0} - static_cast<std::uint64_t>(delta) : static_cast<std::uint64_t>(delta);
    size = static_cast<Wide>(span / step + (span % step != 0));
  } else {
    size = std::ceil(std::fabs((static_cast<Wide>(limit) - static_cast<Wide>(start)) / static_cast<Wide>(delta)));
  }
  if (!(size <= static_cast<Wide>(std::numeric_limits<std::int64_t>::max())))
    throw InvalidArgumentError(
        "Requires ((limit - start) / delta) <= " + std::to_string(std::numeric_limits<std::int64_t>::max()) +
        ": start " + number_string(start) + ", limit " + number_string(limit) + ", delta " + number_string(delta) +
        " [Op:Range]");
  return static_cast<std::int64_t>(size);
}

}  // namespace op_detail

/// [start, start + delta, ...) up to `limit` (exclusive), as TensorFlow's range.
/// @throws InvalidArgumentError for delta == 0, a delta that moves away from the limit, a NaN or
/// infinite argument (naming it), or more than 2^63 - 1 elements.
template <Numeric T>
Tensor<T> range(T start, T limit, T delta = T{1}, const OpOptions& options = {}) {
  const std::int64_t n = op_detail::range_size(start, limit, delta);
  return run_op<ops::Range, T>(options, {ops::Scalar::of<T>(start), ops::Scalar::of<T>(delta), n});
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
namespace op_detail {
#define DEVTENSOR_ALL(T) DEVTENSOR_GRAPH_OP(Fill, T, 0) DEVTENSOR_GRAPH_OP(OnesLike, T, 1)
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
}  // namespace op_detail
#endif
// clang-format on

}  // namespace devtensor

#if DEVTENSOR_CPU_KERNEL_BODIES
namespace devtensor::ops {
template <class T>
void Fill::cpu(const KernelContext& ctx) {
  T* o = ctx.output<T>();
  const T value = ctx.attr<Attrs>().value.as<T>();
  for (std::int64_t i = 0, n = ctx.output_shape().num_elements(); i < n; ++i) o[i] = value;
}
template <class T>
void OnesLike::cpu(const KernelContext& ctx) {
  T* o = ctx.output<T>();
  for (std::int64_t i = 0, n = ctx.output_shape().num_elements(); i < n; ++i) o[i] = T{1};
}
template <class T>
void Range::cpu(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  const T start = attrs.start.as<T>();
  const T delta = attrs.delta.as<T>();
  T* o = ctx.output<T>();
  for (std::int64_t i = 0; i < attrs.size; ++i) o[i] = range_value(start, delta, i);
}
}  // namespace devtensor::ops
#endif

#if defined(DEVTENSOR_CUDA_KERNEL_BODIES)
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops {
template <class T>
void Fill::cuda(const KernelContext& ctx) {
  cuda::fill(ctx.device, ctx.output<T>(), ctx.output_shape().num_elements(), ctx.attr<Attrs>().value.as<T>());
}
template <class T>
void OnesLike::cuda(const KernelContext& ctx) {
  cuda::fill(ctx.device, ctx.output<T>(), ctx.output_shape().num_elements(), T{1});
}
template <class T>
struct RangeValue {
  T start;
  T delta;
  __device__ T operator()(std::int64_t i) const { return range_value(start, delta, i); }
};
template <class T>
void Range::cuda(const KernelContext& ctx) {
  const auto& attrs = ctx.attr<Attrs>();
  cuda::generate(ctx.device, ctx.output<T>(), attrs.size, RangeValue<T>{attrs.start.as<T>(), attrs.delta.as<T>()});
}
}  // namespace devtensor::ops
#endif
