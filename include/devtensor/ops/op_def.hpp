#pragma once
/// @file op_def.hpp
/// @brief How an op is defined: one struct per op that holds everything about it.
///
/// An op is data (TensorFlow registers an op three times, REGISTER_OP, REGISTER_KERNEL_BUILDER and
/// RegisterGradient; here one struct says it all):
///
///     struct Softplus : ops::UnaryOp<Softplus, ops::FloatTypes> {   // family: elementwise unary
///       static constexpr std::string_view name = "Softplus";        // TensorFlow's op type
///       template <class T>                                          // the scalar function, for
///       DEVTENSOR_HOST_DEVICE T operator()(T x) const { ... }       // the CPU and CUDA bodies
///       template <Floating T>                                       // the gradient, by type
///       static Grads<T> gradient(const GradArgs<T, Attrs>& a) { ... }
///     };
///
/// In general an op struct has
/// - `name`, and a kernel table (`KernelTable<CpuTypes, GpuTypes>`: which element types have a
///   CPU and a GPU kernel; `has_kernel_v` reads it at compile time);
/// - optionally `node_name`: the default name of its graph nodes when TensorFlow's Python function
///   names them otherwise than the op type (tf.add makes AddV2 nodes named `Add`);
/// - `Attrs`: its attributes, typed, with defaults (an empty struct when it has none);
/// - `output_shape(attrs, input shapes...)` (`output_shapes` for several outputs): the shape
///   function, which also validates, with TensorFlow's messages;
/// - `cpu<T>(const KernelContext&)` and, when it has GPU types, `cuda<T>(...)`: its bodies, declared
///   in the struct and defined beside the CPU loops and the CUDA kernels (the CUDA ones for nvcc
///   only). Family bases (UnaryOp, BinaryOp) define both from the scalar function;
/// - `gradient<T>(GradArgs)`, written with devtensor's ops (so it runs wherever they are placed and
///   is itself differentiable);
/// - `traits`: an OpTraits aggregate of what the op is (elementwise, a view, stateful, a collective,
///   ...), written with designated initialisers, so a misspelt property does not compile. Graph
///   passes, the executor and CUDA-graph capture read a node's traits, never flags of their own.
/// run_op (ops/run_op.hpp) runs any such op; ops/op_list.hpp lists devtensor's own, and the CUDA
/// translation unit, docs/op_support.md, the gradient and fuzz tests iterate over that list.

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/source_location.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/ops/kernel_context.hpp"
#include "devtensor/ops/op_traits.hpp"
#include "devtensor/ops/traits.hpp"
#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

/// TensorFlow's `name=`, which every op takes: graph mode names its node so; eager ops ignore it,
/// as TensorFlow's do. `where` is the caller's line, filled in at the call (a default member
/// initializer is evaluated where the options are built): when an op without tensor inputs is the
/// program's first, the configuration errors that follow name that line as the initialiser.
struct OpOptions {
  std::string_view name;
  CallSite where = CallSite::here();
};

namespace ops {

template <class... Ts>
struct TypeList {
  template <class T>
  static constexpr bool contains = is_one_of_v<T, Ts...>;
  static constexpr std::size_t size = sizeof...(Ts);
};
using AllTypes = TypeList<float, double, std::int32_t, std::int64_t, bool, float16, bfloat16>;
using NumericTypes = TypeList<float, double, std::int32_t, std::int64_t, float16, bfloat16>;
/// The types devtensor differentiates (Floating): what layers, gradients and convolutions take.
using FloatTypes = TypeList<float, double>;
/// The 16-bit floats (Note [Sixteen-bit floats]).
using SixteenBitTypes = TypeList<float16, bfloat16>;
/// Every floating element type: the elementwise math ops take them all.
using FloatingTypes = TypeList<float, double, float16, bfloat16>;
using IntegerTypes = TypeList<std::int32_t, std::int64_t>;
using NoTypes = TypeList<>;

/// Two lists joined.
template <class A, class B>
struct Concat;
template <class... As, class... Bs>
struct Concat<TypeList<As...>, TypeList<Bs...>> {
  using type = TypeList<As..., Bs...>;
};
template <class... Lists>
struct Join;
template <>
struct Join<> {
  using type = TypeList<>;
};
template <class First, class... Rest>
struct Join<First, Rest...> {
  using type = typename Concat<First, typename Join<Rest...>::type>::type;
};

/// An op's kernel table: CPU kernels for the types in `Cpu`, GPU kernels for those in `Gpu`.
template <class Cpu, class Gpu>
struct KernelTable {
  using cpu_types = Cpu;
  using gpu_types = Gpu;
  /// devtensor's CPU bodies are templates the op's own code instantiates: never looked up.
  static constexpr bool inline_cpu_kernel = true;
  template <DeviceTag Tag, class T>
  static constexpr bool has_kernel =
      std::same_as<std::remove_cvref_t<Tag>, cpu_t> ? Cpu::template contains<T> : Gpu::template contains<T>;
};

/// The marker of devtensor's own ops (those of ops/op_list.hpp): GradientTape installs their
/// gradients from the op list when it first differentiates, so running an op never instantiates
/// its gradient. Users' ops leave it out: run_op records their gradient with each run.
struct Builtin {};

/// The base of an op defined as data, devtensor's or a user's: a kernel table whose bodies
/// (`body<T>`, what the registry keeps) all have the one signature `Kernel`.
template <class Cpu, class Gpu>
struct OpTable : KernelTable<Cpu, Gpu> {
  template <class T>
  using body = Kernel;
};

/// What a gradient sees: the forward op's inputs x and outputs y, the outputs' gradients dy, and
/// the op's attributes.
template <FloatingElement T, class Attrs>
struct GradArgs {
  const std::vector<Tensor<T>>& x;
  const std::vector<Tensor<T>>& y;
  const std::vector<Tensor<T>>& dy;
  const Attrs& attrs;
};
/// A gradient's result: one gradient per input (an undefined Tensor for "none").
template <FloatingElement T>
using Grads = std::vector<Tensor<T>>;

/// An op defined as data (a shape function and a Kernel body per element type).
template <class Op>
concept DataOp = requires {
  typename Op::Attrs;
  { Op::name } -> std::convertible_to<std::string_view>;
  requires std::same_as<typename Op::template body<float>, Kernel>;
};
/// The default name of Op's graph nodes: `node_name` when it has one, else the op type.
template <class Op>
constexpr std::string_view default_node_name() noexcept {
  if constexpr (requires { Op::node_name; })
    return Op::node_name;
  else
    return Op::name;
}

template <class Op, class T>
concept HasGradient = FloatingElement<T> && requires(const GradArgs<T, typename Op::Attrs>& a) {
  { Op::template gradient<T>(a) } -> std::same_as<Grads<T>>;
};
/// Ops that are not differentiable by nature (comparisons): never recorded.
template <class Op>
constexpr bool differentiable() {
  return op_traits<Op>().differentiable;
}

}  // namespace ops
}  // namespace devtensor
