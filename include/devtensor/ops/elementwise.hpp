#pragma once
/// @file elementwise.hpp
/// @brief The elementwise ops, each defined once (ops/op_def.hpp): unary math, binary math with
/// NumPy broadcasting, integer floor division, the gradient kernels and comparison masks, add_n;
/// then their public functions and operators. Their CPU and CUDA bodies are
/// ops/cpu/elementwise_bodies.hpp and ops/cuda/elementwise_bodies.cuh.
///
/// An elementwise op is its scalar function: the family bases UnaryOp and BinaryOp make the CPU
/// loop (ops/cpu/elementwise.hpp: vectorised, threaded above 256 Ki elements) and the CUDA kernel
/// (ops/cuda/kernels.cuh) from it, so CPU and GPU compute the same thing by construction. Integer
/// add, sub, mul, neg, abs and square wrap modulo 2^N (core/arith.hpp says why).

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/gradient_helpers.hpp"
#include "devtensor/ops/op_def.hpp"
#include "devtensor/ops/run_op.hpp"

namespace devtensor::ops {

/// Elementwise unary ops: out[i] = Self{}(in[i]), same shape.
template <class Self, class Types>
struct UnaryOp : OpTable<Types, Types> {
  // A graph may fuse it with its neighbours (graph/optimizer.hpp).
  static constexpr OpTraits traits{.pointwise_arity = 1, .handles_unknown_dims = true};
  struct Attrs {};
  static const Shape& output_shape(const Attrs&, const Shape& x) noexcept { return x; }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

/// Elementwise binary ops: out = Self{}(a, b) with NumPy broadcasting.
template <class Self, class Types>
struct BinaryOp : OpTable<Types, Types> {
  static constexpr OpTraits traits{.pointwise_arity = 2, .handles_unknown_dims = true};
  struct Attrs {};
  static Shape output_shape(const Attrs&, const Shape& a, const Shape& b) { return broadcast_shapes(a, b, Self::name); }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
};

struct ReluGrad;
struct SigmoidGrad;
struct TanhGrad;
struct SqrtGrad;
struct GreaterEqual;
struct Equal;

// --- unary --------------------------------------------------------------------------------------

struct Neg : UnaryOp<Neg, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Neg";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return arith::neg(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {neg(a.dy[0])};
  }
};
struct Abs : UnaryOp<Abs, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Abs";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return arith::abs(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // dy · sign(x), sign(0) = 0
    const auto zero = constant_like<T>(T{0});
    return {mul(a.dy[0], sub(run_op<GreaterEqual>({}, a.x[0], zero), run_op<GreaterEqual>({}, zero, a.x[0])))};
  }
};
struct Square : UnaryOp<Square, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Square";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return arith::mul(x, x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {mul(a.dy[0], mul(a.x[0], constant_like<T>(T{2})))};
  }
};
struct Sqrt : UnaryOp<Sqrt, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Sqrt";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return std::sqrt(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {run_op<SqrtGrad>({}, a.y[0], a.dy[0])};
  }
};
struct Exp : UnaryOp<Exp, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Exp";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return std::exp(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {mul(a.dy[0], a.y[0])};
  }
};
struct Log : UnaryOp<Log, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Log";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return std::log(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {div(a.dy[0], a.x[0])};
  }
};
struct Relu : UnaryOp<Relu, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Relu";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {  // max(x, 0): NaN and -0 stay, as TensorFlow's
    return x < T{0} ? T{0} : x;
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {run_op<ReluGrad>({}, a.dy[0], a.y[0])};
  }
};
struct Sigmoid : UnaryOp<Sigmoid, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Sigmoid";
  // In 16-bit floats TensorFlow's kernel computes e^x / (e^x + 1), each step rounded in T (1
  // where e^x overflows); in float and double 1 / (1 + e^-x).
  static constexpr bool rounds_each_step = true;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    if constexpr (is_sixteen_bit_float_v<T>) {
      const T e = arith::exp(x);
      return e == std::numeric_limits<T>::infinity() ? T{1} : e / (e + T{1});
    } else {
      return T{1} / (T{1} + std::exp(-x));
    }
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {run_op<SigmoidGrad>({}, a.y[0], a.dy[0])};
  }
};
struct Tanh : UnaryOp<Tanh, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Tanh";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    return std::tanh(x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {run_op<TanhGrad>({}, a.y[0], a.dy[0])};
  }
};

/// log(e^x + 1) as TensorFlow computes it: x itself above −(log ε + 2), e^x below log ε + 2,
/// log1p(e^x) between, each step rounded in T (ε of T: float16's 2^-10, bfloat16's 2^-7).
struct Softplus : UnaryOp<Softplus, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "Softplus";
  static constexpr bool rounds_each_step = true;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x) const {
    const T threshold = std::is_same_v<T, float>     ? T(-13.942385152878742)
                        : std::is_same_v<T, double>  ? T(-34.04365338911715)
                        : std::is_same_v<T, float16> ? T(-4.931471805599453)
                                                     : T(-2.852030263919617);  // log(ε) + 2
    if (x > -threshold) return x;
    if (x < threshold) return arith::exp(x);
    return arith::log1p(arith::exp(x));
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {mul(a.dy[0], sigmoid(a.x[0]))};
  }
};

// --- binary -------------------------------------------------------------------------------------

struct Add : BinaryOp<Add, NumericTypes>, Builtin {
  static constexpr std::string_view name = "AddV2";
  static constexpr std::string_view node_name = "Add";  // tf.add's default node name
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return arith::add(x, y);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {unbroadcast(a.dy[0], a.x[0]), unbroadcast(a.dy[0], a.x[1])};
  }
};
struct Sub : BinaryOp<Sub, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Sub";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return arith::sub(x, y);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {unbroadcast(a.dy[0], a.x[0]), unbroadcast(neg(a.dy[0]), a.x[1])};
  }
};
struct Mul : BinaryOp<Mul, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Mul";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return arith::mul(x, y);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return {unbroadcast(mul(a.dy[0], a.x[1]), a.x[0]), unbroadcast(mul(a.x[0], a.dy[0]), a.x[1])};
  }
};
struct RealDiv : BinaryOp<RealDiv, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "RealDiv";
  static constexpr std::string_view node_name = "truediv";  // tf.divide's
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return x / y;
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // d(x/z)/dz = -(x/z)/z
    return {unbroadcast(div(a.dy[0], a.x[1]), a.x[0]), unbroadcast(neg(mul(a.dy[0], div(a.y[0], a.x[1]))), a.x[1])};
  }
};
struct Maximum : BinaryOp<Maximum, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Maximum";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {  // TensorFlow's: a NaN wins, ties give x (-0, +0)
    return (x < y || y != y) ? y : x;
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // ties send the gradient to the first input
    const auto to_first = mul(a.dy[0], run_op<GreaterEqual>({}, a.x[0], a.x[1]));
    return {unbroadcast(to_first, a.x[0]), unbroadcast(sub(a.dy[0], to_first), a.x[1])};
  }
};
struct Minimum : BinaryOp<Minimum, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Minimum";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {  // TensorFlow's: a NaN wins, ties give x
    return (y < x || y != y) ? y : x;
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    const auto to_first = mul(a.dy[0], run_op<GreaterEqual>({}, a.x[1], a.x[0]));
    return {unbroadcast(to_first, a.x[0]), unbroadcast(sub(a.dy[0], to_first), a.x[1])};
  }
};
/// Python's floor division for integers (INT_MIN // -1 wraps to INT_MIN, as NumPy gives). A zero
/// divisor raises InvalidArgumentError after the kernel ran (its outputs are then discarded).
struct FloorDiv : BinaryOp<FloorDiv, IntegerTypes>, Builtin {
  static constexpr std::string_view name = "FloorDiv";
  // Not pointwise: its division-by-zero flag is not a scalar function.
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  /// The scalar function; a zero divisor gives 0 and raises the flag the body reads (a host flag
  /// on the CPU, device memory on a GPU; every writer stores 1, so the race is benign).
  template <class Flag>
  struct Functor {
    Flag* by_zero;
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
      if (y == 0) {
        *by_zero = 1;
        return T{0};
      }
      return arith::floor_div(x, y);
    }
  };
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  [[noreturn]] static void throw_by_zero() { throw InvalidArgumentError("Integer division by zero [Op:FloorDiv]"); }
};

// --- gradient kernels and masks (GradientTape's backward pass, as TensorFlow names them) ---------

/// dy where the ReLU's input (or output) is positive, else 0; inputs (dy, features).
struct ReluGrad : BinaryOp<ReluGrad, NumericTypes>, Builtin {
  static constexpr std::string_view name = "ReluGrad";
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return y > T{0} ? x : T{0};
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // linear in dy, flat in the features
    return {run_op<ReluGrad>({}, a.dy[0], a.x[1]), zeros<T>(a.x[1].shape())};
  }
};
/// dy · y · (1 − y) for y = sigmoid(x); inputs (y, dy).
// The three gradient kernels below compute in TensorFlow's order, each step rounded in 16-bit
// types too (raw_ops' bits on 40 000 values in float and double, 4 000 in 16 bits: all equal).
struct SigmoidGrad : BinaryOp<SigmoidGrad, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "SigmoidGrad";
  static constexpr bool rounds_each_step = true;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return y * (x * (T{1} - x));
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // out = g·s·(1 − s); inputs (s, g)
    const auto& s = a.x[0];
    const auto& g = a.x[1];
    const auto one_minus_2s = sub(constant_like<T>(T{1}), mul(constant_like<T>(T{2}), s));
    return {mul(mul(a.dy[0], g), one_minus_2s), run_op<SigmoidGrad>({}, s, a.dy[0])};
  }
};
/// dy · (1 − y²) for y = tanh(x); inputs (y, dy).
struct TanhGrad : BinaryOp<TanhGrad, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "TanhGrad";
  static constexpr bool rounds_each_step = true;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return y * (T{1} - x * x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // out = g·(1 − t²); inputs (t, g)
    const auto& t = a.x[0];
    const auto& g = a.x[1];
    return {neg(mul(mul(a.dy[0], g), mul(constant_like<T>(T{2}), t))), run_op<TanhGrad>({}, t, a.dy[0])};
  }
};
/// dy / (2 y) for y = sqrt(x); inputs (y, dy).
struct SqrtGrad : BinaryOp<SqrtGrad, FloatingTypes>, Builtin {
  static constexpr std::string_view name = "SqrtGrad";
  static constexpr bool rounds_each_step = true;
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return y * (T{0.5f} / x);
  }
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {  // out = g / (2r); inputs (r, g)
    const auto& r = a.x[0];
    return {neg(mul(a.dy[0], div(a.y[0], r))), run_op<SqrtGrad>({}, r, a.dy[0])};
  }
};
/// 1 where a >= b, else 0, in the inputs' type (piecewise constant: never recorded).
struct GreaterEqual : BinaryOp<GreaterEqual, NumericTypes>, Builtin {
  static constexpr std::string_view name = "GreaterEqual";
  static constexpr OpTraits traits{.pointwise_arity = 2, .handles_unknown_dims = true, .differentiable = false};
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return x >= y ? T{1} : T{0};
  }
};
/// 1 where a == b, else 0, in the inputs' type (never recorded).
struct Equal : BinaryOp<Equal, NumericTypes>, Builtin {
  static constexpr std::string_view name = "Equal";
  static constexpr OpTraits traits{.pointwise_arity = 2, .handles_unknown_dims = true, .differentiable = false};
  template <class T>
  DEVTENSOR_HOST_DEVICE T operator()(T x, T y) const {
    return x == y ? T{1} : T{0};
  }
};

// --- add_n --------------------------------------------------------------------------------------

/// The elementwise sum of a list of same-shaped tensors.
struct AddN : OpTable<NumericTypes, NumericTypes>, Builtin {
  static constexpr std::string_view name = "AddN";
  static constexpr OpTraits traits{.handles_unknown_dims = true};
  struct Attrs {};
  static Shape output_shape(const Attrs&, std::span<const Shape> inputs) {
    if (inputs.empty()) throw InvalidArgumentError("add_n needs at least one input [Op:AddN]");
    std::vector<std::int64_t> merged = inputs[0].dims_vector();  // unknown dimensions filled in where known
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      if (!inputs[i].is_compatible_with(inputs[0]))
        throw InvalidArgumentError("Shapes of all inputs must match: values[0].shape = " + inputs[0].to_string() +
                                   " != values[" + std::to_string(i) + "].shape = " + inputs[i].to_string() +
                                   " [Op:AddN]");
      for (std::size_t d = 0; d < merged.size(); ++d)
        if (merged[d] < 0) merged[d] = inputs[i][d];
    }
    return Shape::partial(merged);
  }
  template <class T>
  static void cpu(const KernelContext& ctx);
  template <class T>
  static void cuda(const KernelContext& ctx);
  template <FloatingElement T>
  static Grads<T> gradient(const GradArgs<T, Attrs>& a) {
    return Grads<T>(a.x.size(), a.dy[0]);
  }
};

/// The elementwise family, in the op list's order.
using ElementwiseOps =
    TypeList<Neg, Abs, Square, Sqrt, Exp, Log, Relu, Sigmoid, Tanh, Softplus, Add, Sub, Mul, RealDiv, FloorDiv, Maximum,
             Minimum, AddN, ReluGrad, SigmoidGrad, TanhGrad, SqrtGrad, GreaterEqual, Equal>;

}  // namespace devtensor::ops

// --- the public functions -----------------------------------------------------------------------

namespace devtensor {

/// a + b with broadcasting (TensorFlow's AddV2).
template <Numeric T>
Tensor<T> add(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  return run_op<ops::Add>(options, {}, a, b);
}
template <Numeric T>
Tensor<T> sub(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  return run_op<ops::Sub>(options, {}, a, b);
}
template <Numeric T>
Tensor<T> mul(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  return run_op<ops::Mul>(options, {}, a, b);
}
/// a / b: true division for floating types (RealDiv), floor division for integers (FloorDiv, as
/// Python's //; INT_MIN // -1 wraps to INT_MIN). @throws InvalidArgumentError on integer division
/// by zero.
template <Numeric T>
Tensor<T> div(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  if constexpr (is_floating_element_v<T>)
    return run_op<ops::RealDiv>(options, {}, a, b);
  else
    return run_op<ops::FloorDiv>(options, {}, a, b);
}
template <Numeric T>
Tensor<T> maximum(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  return run_op<ops::Maximum>(options, {}, a, b);
}
template <Numeric T>
Tensor<T> minimum(const Tensor<T>& a, const Tensor<T>& b, const OpOptions& options = {}) {
  return run_op<ops::Minimum>(options, {}, a, b);
}

// Explicit-tag forms: `add(devtensor::gpu, a, b)` (static CPU fallback, see with_kernel_device).
template <DeviceTag Tag, Numeric T>
Tensor<T> add(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Add, Tag, T>(tag, [&] { return add(a, b); });
}
template <DeviceTag Tag, Numeric T>
Tensor<T> sub(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Sub, Tag, T>(tag, [&] { return sub(a, b); });
}
template <DeviceTag Tag, Numeric T>
Tensor<T> mul(Tag tag, const Tensor<T>& a, const Tensor<T>& b) {
  return with_kernel_device<ops::Mul, Tag, T>(tag, [&] { return mul(a, b); });
}

template <Numeric T>
Tensor<T> neg(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Neg>(options, {}, a);
}
template <Numeric T>
Tensor<T> abs(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Abs>(options, {}, a);
}
template <Numeric T>
Tensor<T> square(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Square>(options, {}, a);
}
template <FloatingElement T>
Tensor<T> sqrt(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Sqrt>(options, {}, a);
}
template <FloatingElement T>
Tensor<T> exp(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Exp>(options, {}, a);
}
template <FloatingElement T>
Tensor<T> log(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Log>(options, {}, a);
}
template <Numeric T>
Tensor<T> relu(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Relu>(options, {}, a);
}
template <FloatingElement T>
Tensor<T> sigmoid(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Sigmoid>(options, {}, a);
}
template <FloatingElement T>
Tensor<T> tanh(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Tanh>(options, {}, a);
}
/// log(e^x + 1), TensorFlow's tf.math.softplus.
template <FloatingElement T>
Tensor<T> softplus(const Tensor<T>& a, const OpOptions& options = {}) {
  return run_op<ops::Softplus>(options, {}, a);
}

/// The elementwise sum of same-shaped tensors (TensorFlow's AddN).
/// @throws InvalidArgumentError for no inputs or shapes that differ.
template <Numeric T>
Tensor<T> add_n(const std::vector<Tensor<T>>& inputs, const OpOptions& options = {}) {
  return run_op_list<ops::AddN>({}, inputs, options);
}
template <DeviceTag Tag, Numeric T>
Tensor<T> add_n(Tag tag, const std::vector<Tensor<T>>& inputs) {
  return with_kernel_device<ops::AddN, Tag, T>(tag, [&] { return add_n(inputs); });
}

/// The kernels gradients use that are not user ops: recorded (ReluGrad, SigmoidGrad, TanhGrad,
/// SqrtGrad, so that nested tapes give second derivatives) or piecewise constant (the masks).
namespace grad_ops {
/// dy where the ReLU's input (or output) is positive, else 0.
template <Numeric T>
Tensor<T> relu_grad(const Tensor<T>& dy, const Tensor<T>& features) {
  return run_op<ops::ReluGrad>({}, dy, features);
}
/// dy · y · (1 − y) for y = sigmoid(x).
template <FloatingElement T>
Tensor<T> sigmoid_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return run_op<ops::SigmoidGrad>({}, y, dy);
}
/// dy · (1 − y²) for y = tanh(x).
template <FloatingElement T>
Tensor<T> tanh_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return run_op<ops::TanhGrad>({}, y, dy);
}
/// dy / (2 y) for y = sqrt(x).
template <FloatingElement T>
Tensor<T> sqrt_grad(const Tensor<T>& y, const Tensor<T>& dy) {
  return run_op<ops::SqrtGrad>({}, y, dy);
}
/// 1 where a >= b, else 0 (broadcasting).
template <Numeric T>
Tensor<T> greater_equal(const Tensor<T>& a, const Tensor<T>& b) {
  return run_op<ops::GreaterEqual>({}, a, b);
}
/// 1 where a == b, else 0 (broadcasting).
template <Numeric T>
Tensor<T> equal(const Tensor<T>& a, const Tensor<T>& b) {
  return run_op<ops::Equal>({}, a, b);
}
}  // namespace grad_ops

}  // namespace devtensor

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // Note [Explicit instantiations]
namespace devtensor::op_detail {
#define DEVTENSOR_NUMERIC(T)                                                                                      \
  DEVTENSOR_GRAPH_OP(Add, T, 2) DEVTENSOR_GRAPH_OP(Sub, T, 2) DEVTENSOR_GRAPH_OP(Mul, T, 2)                       \
  DEVTENSOR_GRAPH_OP(Maximum, T, 2) DEVTENSOR_GRAPH_OP(Minimum, T, 2) DEVTENSOR_GRAPH_OP(Neg, T, 1)               \
  DEVTENSOR_GRAPH_OP(Abs, T, 1) DEVTENSOR_GRAPH_OP(Square, T, 1) DEVTENSOR_GRAPH_OP(Relu, T, 1)
#define DEVTENSOR_FLOATING(T)                                                                                     \
  DEVTENSOR_GRAPH_OP(RealDiv, T, 2) DEVTENSOR_GRAPH_OP(Sqrt, T, 1) DEVTENSOR_GRAPH_OP(Exp, T, 1)                  \
  DEVTENSOR_GRAPH_OP(Log, T, 1) DEVTENSOR_GRAPH_OP(Sigmoid, T, 1) DEVTENSOR_GRAPH_OP(Tanh, T, 1)                  \
  DEVTENSOR_GRAPH_OP(Softplus, T, 1)
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_NUMERIC)
DEVTENSOR_FLOATING(float) DEVTENSOR_FLOATING(double)
DEVTENSOR_GRAPH_OP(FloorDiv, std::int32_t, 2) DEVTENSOR_GRAPH_OP(FloorDiv, std::int64_t, 2)
#undef DEVTENSOR_FLOATING
#undef DEVTENSOR_NUMERIC
}  // namespace devtensor::op_detail
// add_n whole: a list op, not the 1-element hot path that keeps the other ops' eager half inline
namespace devtensor {
#define DEVTENSOR_ADD_N(T) DEVTENSOR_EXTERN_TEMPLATE Tensor<T> add_n<T>(const std::vector<Tensor<T>>&, const OpOptions&);
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ADD_N)
#undef DEVTENSOR_ADD_N
}  // namespace devtensor
#endif
// clang-format on

// The bodies, in files of their own: devtensor/ops/cpu/elementwise_bodies.hpp (CPU),
// devtensor/ops/cuda/elementwise_bodies.cuh (CUDA).
#include "devtensor/ops/cpu/elementwise_bodies.hpp"
#include "devtensor/ops/cuda/elementwise_bodies.cuh"
