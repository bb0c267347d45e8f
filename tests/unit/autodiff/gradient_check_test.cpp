// Every differentiable op's gradient against central finite differences in double precision.
// Each check differentiates L(x...) = sum(f(x...) * W) for a fixed random W, so the whole
// vector-Jacobian product is compared, not just the gradient of a sum.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <functional>
#include <random>
#include <set>
#include <string>

#include "devtensor/devtensor.hpp"
#include "devtensor/ops/op_list.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
using Tensor = dt::Tensor<double>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {

std::vector<double> random_values(std::size_t n, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

Tensor random_tensor(const dt::Shape& shape, unsigned seed, double lo = -2.0, double hi = 2.0) {
  return dt::constant<double>(random_values(static_cast<std::size_t>(shape.num_elements()), seed, lo, hi), shape);
}

/// L = sum(f(inputs) * W) with W fixed per output shape.
double loss_value(const Fn& f, const std::vector<Tensor>& inputs, const Tensor& weights) {
  return dt::reduce_sum(dt::mul(f(inputs), weights)).item();
}

/// The op types whose gradients a check below compared with finite differences.
std::set<std::string>& checked_ops() {
  static std::set<std::string> ops;
  return ops;
}

/// Compares the tape's gradient of L with central differences for every input element. `name` is
/// the TensorFlow op type(s) it checks, then what it checks after a colon: "AddV2",
/// "Mul, AddV2: x*x + x".
void check_gradient(const std::string& name, const Fn& f, std::vector<Tensor> inputs, double tol = 1e-6,
                    double eps = 1e-6) {
  const std::string ops = name.substr(0, name.find(':'));
  for (std::size_t begin = 0; begin < ops.size();) {
    const std::size_t end = ops.find(", ", begin);
    checked_ops().insert(ops.substr(begin, end - begin));
    begin = end == std::string::npos ? ops.size() : end + 2;
  }
  BOOST_TEST_CONTEXT(name) {
    const Tensor probe = f(inputs);
    const Tensor weights = random_tensor(probe.shape(), 99, 0.5, 1.5);
    std::vector<Tensor> analytic;
    {
      dt::GradientTape tape;
      for (const auto& x : inputs) tape.watch(x);
      const Tensor loss = dt::reduce_sum(dt::mul(f(inputs), weights));
      analytic = tape.gradient(loss, inputs);
    }
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      BOOST_TEST_REQUIRE(analytic[k].defined(), "input " << k << " got no gradient");
      BOOST_TEST_REQUIRE(analytic[k].shape() == inputs[k].shape());
      const auto got = analytic[k].to_vector();
      auto values = inputs[k].to_vector();
      for (std::size_t i = 0; i < values.size(); ++i) {
        auto perturbed = inputs;
        const double v = values[i];
        values[i] = v + eps;
        perturbed[k] = dt::constant<double>(values, inputs[k].shape());
        const double up = loss_value(f, perturbed, weights);
        values[i] = v - eps;
        perturbed[k] = dt::constant<double>(values, inputs[k].shape());
        const double down = loss_value(f, perturbed, weights);
        values[i] = v;
        const double numeric = (up - down) / (2 * eps);
        BOOST_TEST(std::abs(got[i] - numeric) <= tol * (1.0 + std::abs(numeric)),
                   "input " << k << " element " << i << ": tape " << got[i] << " vs numeric " << numeric);
      }
    }
  }
}

// The public op functions, whose last parameter is TensorFlow's `name=`.
using UnaryFn = Tensor (*)(const Tensor&, const dt::OpOptions&);
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&, const dt::OpOptions&);

Fn unary(UnaryFn op) {
  return [op](const std::vector<Tensor>& x) { return op(x[0], {}); };
}
Fn binary(BinaryFn op) {
  return [op](const std::vector<Tensor>& x) { return op(x[0], x[1], {}); };
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(gradient_check, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(binary_ops_with_broadcasting) {
  const std::vector<std::pair<dt::Shape, dt::Shape>> shapes{{dt::Shape({2, 3}), dt::Shape({2, 3})},
                                                            {dt::Shape({2, 3}), dt::Shape({3})},
                                                            {dt::Shape({2, 1}), dt::Shape({1, 3})},
                                                            {dt::Shape({}), dt::Shape({2, 2})},
                                                            {dt::Shape({2, 1, 3}), dt::Shape({4, 1})}};
  unsigned seed = 1;
  for (const auto& [sa, sb] : shapes) {
    check_gradient("AddV2", binary(&dt::add<double>), {random_tensor(sa, seed), random_tensor(sb, seed + 1)});
    check_gradient("Sub", binary(&dt::sub<double>), {random_tensor(sa, seed), random_tensor(sb, seed + 1)});
    check_gradient("Mul", binary(&dt::mul<double>), {random_tensor(sa, seed), random_tensor(sb, seed + 1)});
    check_gradient("RealDiv", binary(&dt::div<double>),
                   {random_tensor(sa, seed), random_tensor(sb, seed + 1, 0.5, 2.0)});
    // Inputs from disjoint ranges never tie; ties are tested separately.
    check_gradient("Maximum", binary(&dt::maximum<double>),
                   {random_tensor(sa, seed, -2, 2), random_tensor(sb, seed + 1, -2, 2)});
    check_gradient("Minimum", binary(&dt::minimum<double>),
                   {random_tensor(sa, seed, -2, 2), random_tensor(sb, seed + 1, -2, 2)});
    seed += 2;
  }
}

BOOST_AUTO_TEST_CASE(unary_ops) {
  const dt::Shape s({3, 4});
  check_gradient("Neg", unary(&dt::neg<double>), {random_tensor(s, 3)});
  check_gradient("Abs", unary(&dt::abs<double>), {random_tensor(s, 4)});
  check_gradient("Square", unary(&dt::square<double>), {random_tensor(s, 5)});
  check_gradient("Sqrt", unary(&dt::sqrt<double>), {random_tensor(s, 6, 0.5, 3.0)});
  check_gradient("Exp", unary(&dt::exp<double>), {random_tensor(s, 7)});
  check_gradient("Log", unary(&dt::log<double>), {random_tensor(s, 8, 0.5, 3.0)});
  check_gradient("Relu", unary(&dt::relu<double>), {random_tensor(s, 9)});
  check_gradient("Sigmoid", unary(&dt::sigmoid<double>), {random_tensor(s, 10)});
  check_gradient("Tanh", unary(&dt::tanh<double>), {random_tensor(s, 11)});
  check_gradient("Softplus", unary(&dt::softplus<double>), {random_tensor(s, 13, -20.0, 20.0)});
  check_gradient("Identity", unary(&dt::identity<double>), {random_tensor(s, 12)});
}

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_over_every_axis) {
  const dt::Shape s({2, 3, 4});
  for (std::int64_t axis : {-1, 0, 1}) {
    check_gradient("Softmax: axis " + std::to_string(axis),
                   [axis](const std::vector<Tensor>& x) { return dt::softmax(x[0], axis); }, {random_tensor(s, 14)});
    check_gradient("LogSoftmax: axis " + std::to_string(axis),
                   [axis](const std::vector<Tensor>& x) { return dt::log_softmax(x[0], axis); },
                   {random_tensor(s, 15)});
  }
  // Large logits: the shift by the row's maximum keeps the gradient finite and right.
  check_gradient("Softmax: logits near 500",
                 unary([](const Tensor& x, const dt::OpOptions&) { return dt::softmax(x); }),
                 {random_tensor(dt::Shape({3, 5}), 16, 495.0, 505.0)});
  check_gradient(
      "LogSoftmax, Softmax: second derivative",
      [](const std::vector<Tensor>& x) {
        dt::GradientTape inner;
        inner.watch(x[0]);
        const auto y = dt::reduce_sum(dt::mul(dt::log_softmax(x[0]), dt::softmax(x[0])));
        return inner.gradient(y, x[0]);
      },
      {random_tensor(dt::Shape({2, 3}), 17)}, 1e-5);
}

BOOST_AUTO_TEST_CASE(add_n_and_a_tensor_used_twice) {
  const dt::Shape s({2, 3});
  check_gradient("AddN",
                 [](const std::vector<Tensor>& x) {
                   return dt::add_n(std::vector{x[0], x[1], x[2], x[0]});
                 },
                 {random_tensor(s, 1), random_tensor(s, 2), random_tensor(s, 3)});
  check_gradient("Mul, AddV2: x*x + x", [](const std::vector<Tensor>& x) { return dt::add(dt::mul(x[0], x[0]), x[0]); },
                 {random_tensor(s, 4)});
}

BOOST_AUTO_TEST_CASE(matmul_every_transpose_and_batches) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const dt::Shape sa = ta ? dt::Shape({4, 3}) : dt::Shape({3, 4});
      const dt::Shape sb = tb ? dt::Shape({2, 4}) : dt::Shape({4, 2});
      check_gradient("MatMul: ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
                     [ta, tb](const std::vector<Tensor>& x) { return dt::matmul(x[0], x[1], ta, tb); },
                     {random_tensor(sa, 20), random_tensor(sb, 21)});
      const dt::Shape ba = ta ? dt::Shape({2, 4, 3}) : dt::Shape({2, 3, 4});
      const dt::Shape bb = tb ? dt::Shape({2, 2, 4}) : dt::Shape({2, 4, 2});
      check_gradient("MatMul: batched",
                     [ta, tb](const std::vector<Tensor>& x) { return dt::matmul(x[0], x[1], ta, tb); },
                     {random_tensor(ba, 22), random_tensor(bb, 23)});
    }
}

BOOST_AUTO_TEST_CASE(reductions_over_axes_with_and_without_keepdims) {
  const dt::Shape s({2, 3, 4});
  using Axes = std::optional<std::vector<std::int64_t>>;
  for (const Axes& axes : {Axes{}, Axes{{0}}, Axes{{-1}}, Axes{{0, 2}}, Axes{{1}}})
    for (bool keep : {false, true}) {
      check_gradient("Sum", [=](const std::vector<Tensor>& x) { return dt::reduce_sum(x[0], axes, keep); },
                     {random_tensor(s, 30)});
      check_gradient("Mean", [=](const std::vector<Tensor>& x) { return dt::reduce_mean(x[0], axes, keep); },
                     {random_tensor(s, 31)});
      check_gradient("Max", [=](const std::vector<Tensor>& x) { return dt::reduce_max(x[0], axes, keep); },
                     {random_tensor(s, 32)});
    }
}

BOOST_AUTO_TEST_CASE(shape_and_data_movement_ops) {
  check_gradient("Reshape",
                 [](const std::vector<Tensor>& x) {
                   return dt::reshape(x[0], {3, -1});
                 },
                 {random_tensor(dt::Shape({2, 3, 2}), 40)});
  check_gradient("Transpose",
                 [](const std::vector<Tensor>& x) {
                   return dt::transpose(x[0], {2, 0, 1});
                 },
                 {random_tensor(dt::Shape({2, 3, 4}), 41)});
  check_gradient("ConcatV2",
                 [](const std::vector<Tensor>& x) {
                   return dt::concat(std::vector{x[0], x[1]}, 1);
                 },
                 {random_tensor(dt::Shape({2, 3}), 42), random_tensor(dt::Shape({2, 1}), 43)});
  check_gradient("SplitV: second piece only",
                 [](const std::vector<Tensor>& x) {
                   return dt::split(x[0], std::vector<std::int64_t>{1, 3}, 1)[1];
                 },
                 {random_tensor(dt::Shape({2, 4}), 44)});
  check_gradient("SplitV: both pieces",
                 [](const std::vector<Tensor>& x) {
                   auto parts = dt::split(x[0], 2, 0);
                   return dt::mul(parts[0], parts[1]);
                 },
                 {random_tensor(dt::Shape({4, 3}), 45)});
  check_gradient("Slice",
                 [](const std::vector<Tensor>& x) {
                   return dt::slice(x[0], {1, 0, 2}, {1, -1, 2});
                 },
                 {random_tensor(dt::Shape({3, 2, 4}), 46)});
  check_gradient("Pad",
                 [](const std::vector<Tensor>& x) {
                   return dt::pad(x[0], {{1, 0}, {2, 1}});
                 },
                 {random_tensor(dt::Shape({2, 3}), 47)});
  check_gradient("BroadcastTo",
                 [](const std::vector<Tensor>& x) {
                   return dt::broadcast_to(x[0], dt::Shape({2, 3, 4}));
                 },
                 {random_tensor(dt::Shape({3, 1}), 48)});
}

BOOST_AUTO_TEST_CASE(cast_between_float_and_double_passes_the_gradient_through) {
  check_gradient(
      "Cast: round trip",
      [](const std::vector<Tensor>& x) {
        return dt::cast<double>(dt::mul(dt::cast<float>(x[0]), dt::cast<float>(x[0])));
      },
      {random_tensor(dt::Shape({5}), 50)}, 1e-3, 1e-2);  // float resolution: a wide step
  check_gradient(
      "Cast: by Tensor::cast", [](const std::vector<Tensor>& x) { return x[0].cast<float>().cast<double>(); },
      {random_tensor(dt::Shape({5}), 51)}, 1e-3, 1e-2);
}

BOOST_AUTO_TEST_CASE(selection_and_l2_loss) {
  // SelectV2 broadcast three ways: the gradient summed back to each operand's shape.
  const auto condition = dt::constant<bool>({true, false, false, true, true, false}, dt::Shape({2, 1, 3}));
  check_gradient("SelectV2: broadcast condition, x and y",
                 [condition](const std::vector<Tensor>& in) { return dt::where(condition, in[0], in[1]); },
                 {random_tensor(dt::Shape({4, 1}), 80), random_tensor(dt::Shape({3}), 81)});
  check_gradient("L2Loss", [](const std::vector<Tensor>& in) { return dt::l2_loss(in[0]); },
                 {random_tensor(dt::Shape({3, 5}), 82)});
  check_gradient("LRN: TensorFlow's defaults", [](const std::vector<Tensor>& in) { return dt::lrn(in[0]); },
                 {random_tensor(dt::Shape({2, 2, 1, 7}), 84)});
  check_gradient("LRN: the CIFAR-10 tutorial's arguments",
                 [](const std::vector<Tensor>& in) {
                   return dt::lrn(in[0], {.depth_radius = 2, .bias = 1.0f, .alpha = 0.25f, .beta = 0.75f});
                 },
                 {random_tensor(dt::Shape({1, 2, 2, 6}), 85)});
  // Ops of whole tensors with integer indices (not in the op list): rows gathered twice, ids dropped.
  const auto indices = dt::constant<std::int64_t>({2, 0, 2, 1}, dt::Shape({2, 2}));
  check_gradient("GatherV2: axis 1, an index twice",
                 [indices](const std::vector<Tensor>& in) { return dt::gather(in[0], indices, 1); },
                 {random_tensor(dt::Shape({2, 3, 2}), 83)});
  const auto segments = dt::constant<std::int32_t>({1, -1, 1, 0});
  check_gradient("UnsortedSegmentSum: a dropped id",
                 [segments](const std::vector<Tensor>& in) { return dt::unsorted_segment_sum(in[0], segments, 3); },
                 {random_tensor(dt::Shape({4, 2}), 84)});
  const auto labels = dt::constant<std::int64_t>({2, 0, 1, 2, 2, 1}, dt::Shape({2, 3}));
  check_gradient(
      "SparseSoftmaxCrossEntropyWithLogits: rank 3",
      [labels](const std::vector<Tensor>& in) { return dt::sparse_softmax_cross_entropy_with_logits(labels, in[0]); },
      {random_tensor(dt::Shape({2, 3, 4}), 85)});
  // FusedBatchNormV3 (five inputs, six outputs: not in the op list) through y, by x, scale and
  // offset: the batch's statistics (NHWC and NCHW), and given ones (inference).
  check_gradient("FusedBatchNormV3, FusedBatchNormGradV3: training",
                 [](const std::vector<Tensor>& in) { return dt::fused_batch_norm(in[0], in[1], in[2]).y; },
                 {random_tensor(dt::Shape({2, 3, 2, 3}), 86), random_tensor(dt::Shape({3}), 87),
                  random_tensor(dt::Shape({3}), 88)});
  check_gradient("FusedBatchNormV3: training, NCHW",
                 [](const std::vector<Tensor>& in) {
                   return dt::fused_batch_norm(in[0], in[1], in[2], {}, {}, {.data_format = "NCHW"}).y;
                 },
                 {random_tensor(dt::Shape({2, 3, 2, 2}), 89), random_tensor(dt::Shape({3}), 90),
                  random_tensor(dt::Shape({3}), 91)});
  const auto mean = random_tensor(dt::Shape({3}), 92);
  const auto variance = random_tensor(dt::Shape({3}), 93, 0.5, 1.5);
  check_gradient("FusedBatchNormV3: inference",
                 [mean, variance](const std::vector<Tensor>& in) {
                   return dt::fused_batch_norm(in[0], in[1], in[2], mean, variance, {.is_training = false}).y;
                 },
                 {random_tensor(dt::Shape({2, 2, 2, 3}), 94), random_tensor(dt::Shape({3}), 95),
                  random_tensor(dt::Shape({3}), 96)});
}

BOOST_AUTO_TEST_CASE(convolution_and_pooling) {
  namespace ops = dt::ops;
  const auto x = random_tensor(dt::Shape({2, 5, 4, 3}), 70);
  const auto w = random_tensor(dt::Shape({3, 2, 3, 2}), 71);
  check_gradient("Conv2D: SAME, strides 2",
                 [](const std::vector<Tensor>& in) { return dt::conv2d(in[0], in[1], 2, "SAME"); }, {x, w});
  check_gradient("Conv2D: VALID, dilations 2",
                 [](const std::vector<Tensor>& in) { return dt::conv2d(in[0], in[1], 1, "VALID", {.dilations = 2}); },
                 {x, random_tensor(dt::Shape({2, 2, 3, 2}), 72)});
  check_gradient("Conv2D: explicit padding, NCHW",
                 [](const std::vector<Tensor>& in) {
                   return dt::conv2d(in[0], in[1], {1, 2}, {{0, 0}, {0, 0}, {1, 0}, {2, 1}}, {.data_format = "NCHW"});
                 },
                 {random_tensor(dt::Shape({1, 3, 4, 5}), 73), w});
  // The backprops as functions of both their tensor inputs (their own gradients: second order).
  const auto dy = random_tensor(dt::Shape({2, 3, 2, 2}), 74);
  check_gradient("Conv2DBackpropInput",
                 [](const std::vector<Tensor>& in) {
                   return dt::conv2d_backprop_input(dt::Shape({2, 5, 4, 3}), in[0], in[1], 2, "SAME");
                 },
                 {w, dy});
  check_gradient("Conv2DBackpropFilter",
                 [](const std::vector<Tensor>& in) {
                   return dt::conv2d_backprop_filter(in[0], dt::Shape({3, 2, 3, 2}), in[1], 2, "SAME");
                 },
                 {x, dy});
  // Depthwise: x's 3 channels, a 3x2 window, 2 filters per channel (6 output channels).
  check_gradient("DepthwiseConv2dNative: SAME, strides 2",
                 [](const std::vector<Tensor>& in) { return dt::depthwise_conv2d(in[0], in[1], 2, "SAME"); }, {x, w});
  check_gradient("DepthwiseConv2dNative: VALID, dilations 2, NCHW, multiplier 1",
                 [](const std::vector<Tensor>& in) {
                   return dt::depthwise_conv2d(in[0], in[1], 1, "VALID", {.data_format = "NCHW", .dilations = 2});
                 },
                 {random_tensor(dt::Shape({1, 3, 5, 4}), 86), random_tensor(dt::Shape({2, 1, 3, 1}), 87)});
  const auto depthwise_dy = random_tensor(dt::Shape({2, 3, 2, 6}), 88);
  check_gradient("DepthwiseConv2dNativeBackpropInput",
                 [](const std::vector<Tensor>& in) {
                   return dt::depthwise_conv2d_backprop_input(dt::Shape({2, 5, 4, 3}), in[0], in[1], 2, "SAME");
                 },
                 {w, depthwise_dy});
  check_gradient("DepthwiseConv2dNativeBackpropFilter",
                 [](const std::vector<Tensor>& in) {
                   return dt::depthwise_conv2d_backprop_filter(in[0], dt::Shape({3, 2, 3, 2}), in[1], 2, "SAME");
                 },
                 {x, depthwise_dy});
  check_gradient("BiasAdd: NHWC", [](const std::vector<Tensor>& in) { return dt::bias_add(in[0], in[1]); },
                 {x, random_tensor(dt::Shape({3}), 75)});
  check_gradient("BiasAdd: NCHW, rank 3",
                 [](const std::vector<Tensor>& in) { return dt::bias_add(in[0], in[1], {.data_format = "NCHW"}); },
                 {random_tensor(dt::Shape({2, 3, 4}), 76), random_tensor(dt::Shape({3}), 77)});
  check_gradient("BiasAddGrad", [](const std::vector<Tensor>& in) { return dt::run_op<ops::BiasAddGrad>({}, in[0]); },
                 {x});
  check_gradient("MaxPool: 3x3, strides 2, SAME",
                 [](const std::vector<Tensor>& in) { return dt::max_pool2d(in[0], 3, 2, "SAME"); }, {x});
  check_gradient("MaxPool: 2x1, VALID, NCHW",
                 [](const std::vector<Tensor>& in) {
                   return dt::max_pool2d(in[0], {2, 1}, 1, "VALID", {.data_format = "NCHW"});
                 },
                 {random_tensor(dt::Shape({1, 2, 3, 3}), 78)});
  check_gradient("AvgPool: 3x3, strides 2, SAME",
                 [](const std::vector<Tensor>& in) { return dt::avg_pool2d(in[0], 3, 2, "SAME"); }, {x});
  check_gradient("AvgPoolGrad",
                 [](const std::vector<Tensor>& in) {
                   return dt::run_op<ops::AvgPoolGrad>(
                       {{{3, 3}, {.strides = {2, 2}, .padding = ops::PaddingKind::same}}, {2, 5, 4, 3}}, in[0]);
                 },
                 {random_tensor(dt::Shape({2, 3, 2, 3}), 79)});
}

BOOST_AUTO_TEST_CASE(gradient_kernels_have_gradients_for_second_derivatives) {
  // d/dx of (d/dx f) against finite differences of the first derivative.
  const auto first_derivative = [](UnaryFn f) {
    return [f](const std::vector<Tensor>& x) {
      dt::GradientTape inner;
      inner.watch(x[0]);
      const Tensor y = f(x[0], {});
      return inner.gradient(y, x[0]);
    };
  };
  const dt::Shape s({6});
  check_gradient("SigmoidGrad: d2 sigmoid", first_derivative(&dt::sigmoid<double>), {random_tensor(s, 60)}, 1e-5);
  check_gradient("TanhGrad: d2 tanh", first_derivative(&dt::tanh<double>), {random_tensor(s, 61)}, 1e-5);
  check_gradient("SqrtGrad: d2 sqrt", first_derivative(&dt::sqrt<double>), {random_tensor(s, 62, 0.5, 2.0)}, 1e-5);
  check_gradient("ReluGrad: d2 relu", first_derivative(&dt::relu<double>), {random_tensor(s, 63)}, 1e-5);
  check_gradient("Exp: d2 exp", first_derivative(&dt::exp<double>), {random_tensor(s, 64)}, 1e-5);
}

// Runs after the checks above (and brings them into a filtered run): every op of the op list that
// GradientTape can differentiate had its gradient checked.
BOOST_AUTO_TEST_CASE(
    every_differentiable_op_has_its_gradient_checked,
    *boost::unit_test::depends_on("gradient_check/binary_ops_with_broadcasting") *
        boost::unit_test::depends_on("gradient_check/unary_ops") *
        boost::unit_test::depends_on("gradient_check/softmax_and_log_softmax_over_every_axis") *
        boost::unit_test::depends_on("gradient_check/add_n_and_a_tensor_used_twice") *
        boost::unit_test::depends_on("gradient_check/matmul_every_transpose_and_batches") *
        boost::unit_test::depends_on("gradient_check/reductions_over_axes_with_and_without_keepdims") *
        boost::unit_test::depends_on("gradient_check/shape_and_data_movement_ops") *
        boost::unit_test::depends_on("gradient_check/cast_between_float_and_double_passes_the_gradient_through") *
        boost::unit_test::depends_on("gradient_check/convolution_and_pooling") *
        boost::unit_test::depends_on("gradient_check/selection_and_l2_loss") *
        boost::unit_test::depends_on("gradient_check/gradient_kernels_have_gradients_for_second_derivatives")) {
  int differentiable = 0;
  dt::ops::for_each_op(dt::ops::BuiltinOps{}, [&]<class Op>() {
    if constexpr (dt::autodiff_detail::has_gradient_v<Op>) {
      ++differentiable;
      BOOST_TEST(checked_ops().contains(std::string(Op::name)), Op::name << " has a gradient that no check compares");
    }
  });
  BOOST_TEST(differentiable >= 30);
}

BOOST_AUTO_TEST_SUITE_END()
