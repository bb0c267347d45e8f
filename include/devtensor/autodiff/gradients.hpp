#pragma once
/// @file gradients.hpp
/// @brief The gradient of every differentiable op, looked up by op name when a tape differentiates.
///
/// Each gradient is written with devtensor's own ops, so it runs wherever the placer puts those
/// ops (GradientTape wraps each one in a DeviceScope naming the forward op's device) and is itself
/// recorded by any outer tape: nested tapes give higher derivatives. Gradients follow TensorFlow's
/// (math_grad.py, array_grad.py, nn_grad.py): broadcasting is undone by summing over the broadcast
/// axes, maximum/minimum send the gradient to the first input on ties, reduce_max shares it among
/// tied maxima.

#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/autodiff/record.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/grad_ops.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/matmul.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace autodiff_detail {

/// What a gradient function sees: the forward op's inputs x, outputs y, the outputs' gradients dy.
template <Floating T>
struct GradArgs {
  const detail::OpRecord& record;
  std::vector<Tensor<T>> x;
  std::vector<Tensor<T>> y;
  std::vector<Tensor<T>> dy;
  [[nodiscard]] const detail::OpAttrs& attrs() const noexcept { return record.attrs; }
};

/// Sums `g` over the axes along which a tensor of `shape` was broadcast to g's shape.
template <Floating T>
Tensor<T> unbroadcast(const Tensor<T>& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  std::vector<std::int64_t> axes;
  const std::size_t lead = g.rank() - shape.rank();
  for (std::size_t d = 0; d < g.rank(); ++d)
    if (d < lead || (shape[d - lead] == 1 && g.shape()[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
  const Tensor<T> summed = axes.empty() ? g : reduce_sum(g, axes);
  return reshape(summed, shape.dims_vector());
}

/// `dy` of a reduction reshaped so that it broadcasts against the input (reduced axes as 1).
template <Floating T>
Tensor<T> with_kept_dims(const Tensor<T>& dy, const Shape& input, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> dims = input.dims_vector();
  for (auto a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(dy, dims);
}

/// A scalar the backward pass needs (2 in d(x²), the count in d(mean)): made by Fill on the device
/// the gradient runs on, not copied from the host, so a step on a GPU has no host→device copy.
template <Floating T>
Tensor<T> constant_like(T value) {
  return fill<T>(Shape{}, value);
}

#define DEVTENSOR_GRADIENT(Name) \
  struct Name {                  \
    template <Floating T>        \
    static std::vector<Tensor<T>> backward(const GradArgs<T>& a);  \
  };                             \
  template <Floating T>          \
  std::vector<Tensor<T>> Name::backward(const GradArgs<T>& a)

DEVTENSOR_GRADIENT(AddGrad) {
  return {unbroadcast(a.dy[0], a.x[0].shape()), unbroadcast(a.dy[0], a.x[1].shape())};
}
DEVTENSOR_GRADIENT(SubGrad) {
  return {unbroadcast(a.dy[0], a.x[0].shape()), unbroadcast(neg(a.dy[0]), a.x[1].shape())};
}
DEVTENSOR_GRADIENT(MulGrad) {
  return {unbroadcast(mul(a.dy[0], a.x[1]), a.x[0].shape()), unbroadcast(mul(a.x[0], a.dy[0]), a.x[1].shape())};
}
DEVTENSOR_GRADIENT(DivGrad) {  // d(x/z)/dz = -(x/z)/z
  return {unbroadcast(div(a.dy[0], a.x[1]), a.x[0].shape()),
          unbroadcast(neg(mul(a.dy[0], div(a.y[0], a.x[1]))), a.x[1].shape())};
}
DEVTENSOR_GRADIENT(MaximumGrad) {
  const auto to_first = mul(a.dy[0], grad_ops::greater_equal(a.x[0], a.x[1]));
  return {unbroadcast(to_first, a.x[0].shape()), unbroadcast(sub(a.dy[0], to_first), a.x[1].shape())};
}
DEVTENSOR_GRADIENT(MinimumGrad) {
  const auto to_first = mul(a.dy[0], grad_ops::greater_equal(a.x[1], a.x[0]));
  return {unbroadcast(to_first, a.x[0].shape()), unbroadcast(sub(a.dy[0], to_first), a.x[1].shape())};
}
DEVTENSOR_GRADIENT(NegGrad) { return {neg(a.dy[0])}; }
DEVTENSOR_GRADIENT(AbsGrad) {  // dy · sign(x), sign(0) = 0
  const auto zero = constant_like<T>(T{0});
  return {mul(a.dy[0], sub(grad_ops::greater_equal(a.x[0], zero), grad_ops::greater_equal(zero, a.x[0])))};
}
DEVTENSOR_GRADIENT(SquareGrad) { return {mul(a.dy[0], mul(a.x[0], constant_like<T>(T{2})))}; }
DEVTENSOR_GRADIENT(SqrtGradOfSqrt) { return {grad_ops::sqrt_grad(a.y[0], a.dy[0])}; }
DEVTENSOR_GRADIENT(ExpGrad) { return {mul(a.dy[0], a.y[0])}; }
DEVTENSOR_GRADIENT(LogGrad) { return {div(a.dy[0], a.x[0])}; }
DEVTENSOR_GRADIENT(ReluGradOfRelu) { return {grad_ops::relu_grad(a.dy[0], a.y[0])}; }
DEVTENSOR_GRADIENT(SigmoidGradOfSigmoid) { return {grad_ops::sigmoid_grad(a.y[0], a.dy[0])}; }
DEVTENSOR_GRADIENT(TanhGradOfTanh) { return {grad_ops::tanh_grad(a.y[0], a.dy[0])}; }
DEVTENSOR_GRADIENT(AddNGrad) { return std::vector<Tensor<T>>(a.x.size(), a.dy[0]); }
DEVTENSOR_GRADIENT(MatMulGrad) {
  const auto& x = a.x[0];
  const auto& w = a.x[1];
  const auto& g = a.dy[0];
  const bool ta = a.attrs().transpose_a;
  const bool tb = a.attrs().transpose_b;
  if (!ta && !tb) return {matmul(g, w, false, true), matmul(x, g, true, false)};
  if (ta && !tb) return {matmul(w, g, false, true), matmul(x, g)};
  if (!ta && tb) return {matmul(g, w), matmul(g, x, true, false)};
  return {matmul(w, g, true, true), matmul(g, x, true, true)};
}
DEVTENSOR_GRADIENT(SumGrad) {
  return {broadcast_to(with_kept_dims(a.dy[0], a.x[0].shape(), a.attrs().list), a.x[0].shape())};
}
DEVTENSOR_GRADIENT(MeanGrad) {
  std::int64_t count = 1;
  for (auto axis : a.attrs().list) count *= a.x[0].shape()[static_cast<std::size_t>(axis)];
  const auto spread = broadcast_to(with_kept_dims(a.dy[0], a.x[0].shape(), a.attrs().list), a.x[0].shape());
  return {div(spread, constant_like<T>(static_cast<T>(count)))};
}
DEVTENSOR_GRADIENT(MaxGrad) {  // shared equally among the elements equal to the maximum
  const auto& axes = a.attrs().list;
  const auto selected = grad_ops::equal(a.x[0], with_kept_dims(a.y[0], a.x[0].shape(), axes));
  const auto count = reduce_sum(selected, axes, /*keepdims=*/true);
  return {mul(selected, div(with_kept_dims(a.dy[0], a.x[0].shape(), axes), count))};
}
DEVTENSOR_GRADIENT(ReshapeGrad) { return {reshape(a.dy[0], a.x[0].shape().dims_vector())}; }
DEVTENSOR_GRADIENT(TransposeGrad) {
  const auto& perm = a.attrs().list;
  std::vector<std::int64_t> inverse(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) inverse[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {transpose(a.dy[0], inverse)};
}
DEVTENSOR_GRADIENT(ConcatGrad) {
  std::vector<std::int64_t> sizes;
  const auto axis = static_cast<std::size_t>(a.attrs().axis);
  for (const auto& x : a.x) sizes.push_back(x.shape()[axis]);
  return split(a.dy[0], sizes, a.attrs().axis);
}
DEVTENSOR_GRADIENT(SplitGrad) { return {concat(a.dy, a.attrs().axis)}; }
DEVTENSOR_GRADIENT(SliceGrad) {
  const auto& begin = a.attrs().list;
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  for (std::size_t d = 0; d < begin.size(); ++d)
    paddings.emplace_back(begin[d], a.x[0].shape()[d] - begin[d] - a.dy[0].shape()[d]);
  return {pad(a.dy[0], paddings)};
}
DEVTENSOR_GRADIENT(PadGrad) {
  std::vector<std::int64_t> begin;
  for (std::size_t d = 0; d < a.x[0].rank(); ++d) begin.push_back(a.attrs().list[2 * d]);
  return {slice(a.dy[0], begin, a.x[0].shape().dims_vector())};
}
DEVTENSOR_GRADIENT(BroadcastToGrad) { return {unbroadcast(a.dy[0], a.x[0].shape())}; }
DEVTENSOR_GRADIENT(IdentityGrad) { return {a.dy[0]}; }
// Gradients of gradient kernels, for second derivatives.
DEVTENSOR_GRADIENT(ReluGradGrad) {  // inputs (dy, features): linear in dy, flat in the features
  return {grad_ops::relu_grad(a.dy[0], a.x[1]), zeros<T>(a.x[1].shape())};
}
DEVTENSOR_GRADIENT(SigmoidGradGrad) {  // out = g·s·(1 − s); inputs (s, g)
  const auto& s = a.x[0];
  const auto& g = a.x[1];
  const auto one_minus_2s = sub(constant_like<T>(T{1}), mul(constant_like<T>(T{2}), s));
  return {mul(mul(a.dy[0], g), one_minus_2s), grad_ops::sigmoid_grad(s, a.dy[0])};
}
DEVTENSOR_GRADIENT(TanhGradGrad) {  // out = g·(1 − t²); inputs (t, g)
  const auto& t = a.x[0];
  const auto& g = a.x[1];
  return {neg(mul(mul(a.dy[0], g), mul(constant_like<T>(T{2}), t))), grad_ops::tanh_grad(t, a.dy[0])};
}
DEVTENSOR_GRADIENT(SqrtGradGrad) {  // out = g / (2r); inputs (r, g)
  const auto& r = a.x[0];
  return {neg(mul(a.dy[0], div(a.y[0], r))), grad_ops::sqrt_grad(r, a.dy[0])};
}

#undef DEVTENSOR_GRADIENT

using ErasedBackward = std::vector<detail::TapeTensor> (*)(const detail::OpRecord&,
                                                          const std::vector<detail::TapeTensor>&);

template <class G, Floating T>
std::vector<detail::TapeTensor> run_backward(const detail::OpRecord& r, const std::vector<detail::TapeTensor>& dy) {
  GradArgs<T> args{r, {}, {}, {}};
  for (const auto& x : r.inputs) args.x.push_back(x.as<T>());
  for (const auto& y : r.outputs) args.y.push_back(y.as<T>());
  for (const auto& g : dy) args.dy.push_back(g.as<T>());
  std::vector<detail::TapeTensor> out;
  for (const auto& g : G::template backward<T>(args))
    out.push_back(g.defined() ? detail::tape_tensor(g) : detail::TapeTensor{});
  return out;
}

template <class G>
std::vector<detail::TapeTensor> erased(const detail::OpRecord& r, const std::vector<detail::TapeTensor>& dy) {
  if (r.outputs.at(0).dtype == detail::DType::float64) return run_backward<G, double>(r, dy);
  return run_backward<G, float>(r, dy);
}

/// Cast's gradient is the output gradient cast back to the input's type (float <-> double).
inline std::vector<detail::TapeTensor> cast_backward(const detail::OpRecord& r,
                                                     const std::vector<detail::TapeTensor>& dy) {
  const auto& g = dy.at(0);
  const bool to_double = r.inputs.at(0).dtype == detail::DType::float64;
  if (g.dtype == r.inputs[0].dtype) return {g};
  if (to_double) return {detail::tape_tensor(cast<double>(g.as<float>()))};
  return {detail::tape_tensor(cast<float>(g.as<double>()))};
}

struct GradientEntry {
  std::string_view op;
  ErasedBackward backward;
};

inline constexpr std::array gradient_table{
    GradientEntry{"AddV2", &erased<AddGrad>},
    GradientEntry{"Sub", &erased<SubGrad>},
    GradientEntry{"Mul", &erased<MulGrad>},
    GradientEntry{"RealDiv", &erased<DivGrad>},
    GradientEntry{"Maximum", &erased<MaximumGrad>},
    GradientEntry{"Minimum", &erased<MinimumGrad>},
    GradientEntry{"Neg", &erased<NegGrad>},
    GradientEntry{"Abs", &erased<AbsGrad>},
    GradientEntry{"Square", &erased<SquareGrad>},
    GradientEntry{"Sqrt", &erased<SqrtGradOfSqrt>},
    GradientEntry{"Exp", &erased<ExpGrad>},
    GradientEntry{"Log", &erased<LogGrad>},
    GradientEntry{"Relu", &erased<ReluGradOfRelu>},
    GradientEntry{"Sigmoid", &erased<SigmoidGradOfSigmoid>},
    GradientEntry{"Tanh", &erased<TanhGradOfTanh>},
    GradientEntry{"AddN", &erased<AddNGrad>},
    GradientEntry{"MatMul", &erased<MatMulGrad>},
    GradientEntry{"Sum", &erased<SumGrad>},
    GradientEntry{"Mean", &erased<MeanGrad>},
    GradientEntry{"Max", &erased<MaxGrad>},
    GradientEntry{"Reshape", &erased<ReshapeGrad>},
    GradientEntry{"Transpose", &erased<TransposeGrad>},
    GradientEntry{"ConcatV2", &erased<ConcatGrad>},
    GradientEntry{"SplitV", &erased<SplitGrad>},
    GradientEntry{"Slice", &erased<SliceGrad>},
    GradientEntry{"Pad", &erased<PadGrad>},
    GradientEntry{"BroadcastTo", &erased<BroadcastToGrad>},
    GradientEntry{"Identity", &erased<IdentityGrad>},
    GradientEntry{"ReadVariableOp", &erased<IdentityGrad>},
    GradientEntry{"Cast", &cast_backward},
    GradientEntry{"ReluGrad", &erased<ReluGradGrad>},
    GradientEntry{"SigmoidGrad", &erased<SigmoidGradGrad>},
    GradientEntry{"TanhGrad", &erased<TanhGradGrad>},
    GradientEntry{"SqrtGrad", &erased<SqrtGradGrad>},
};

inline ErasedBackward find_backward(std::string_view op) noexcept {
  for (const auto& entry : gradient_table)
    if (entry.op == op) return entry.backward;
  return nullptr;
}

}  // namespace autodiff_detail

/// True when GradientTape can differentiate op `op_name` (TensorFlow's op name, e.g. "MatMul").
[[nodiscard]] inline bool has_gradient(std::string_view op_name) noexcept {
  return autodiff_detail::find_backward(op_name) != nullptr;
}

}  // namespace devtensor
