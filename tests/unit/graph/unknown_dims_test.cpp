// Unknown dimensions in graphs (TensorFlow's None): partial shapes, shape inference over them,
// placeholders and input signatures with None, reduce_retracing, gradients whose shapes are known
// only when the graph runs. Expected shapes and texts were printed by TensorFlow 2.21.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;
using devtensor::InvalidArgumentError;

namespace {
std::string printed(const dt::Tensor<float>& t) {
  std::ostringstream s;
  s << t;
  return s.str();
}
std::string shape_of(const dt::Tensor<float>& t) { return t.shape().to_python(); }

/// 0.1, 0.2, ... in `shape`.
dt::Tensor<float> ramp_tensor(const dt::Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i + 1) - 0.35f;
  return dt::constant<float>(v, shape);
}
}  // namespace

BOOST_AUTO_TEST_SUITE(partial_shapes)

BOOST_AUTO_TEST_CASE(print_compare_and_count) {
  const auto s = dt::Shape::partial({dt::kUnknownDim, 3});
  BOOST_TEST(s.to_python() == "(None, 3)");
  BOOST_TEST(s.to_string() == "[?,3]");
  BOOST_TEST(!s.is_fully_defined());
  BOOST_TEST(s.num_elements() == -1);
  BOOST_TEST(s.is_compatible_with(dt::Shape{5, 3}));
  BOOST_TEST(dt::Shape({5, 3}).is_compatible_with(s));
  BOOST_TEST(!s.is_compatible_with(dt::Shape{5, 4}));
  BOOST_TEST(!s.is_compatible_with(dt::Shape{3}));
  BOOST_TEST(dt::Shape::partial({2, 3}) == dt::Shape({2, 3}));
  BOOST_TEST(dt::Shape({2, 3}).is_fully_defined());
  // A tensor with values never has an unknown dimension; -1 is the only unknown.
  BOOST_CHECK_THROW(dt::Shape({-1, 3}), InvalidArgumentError);
  DEVTENSOR_CHECK_THROW_WITH(dt::Shape::partial({-2, 3}), InvalidArgumentError, "Dimension -2 must be >= 0");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(unknown_dims_in_graphs, dt::test::FreshContext)

// TensorFlow 2.21's static shapes for the same graph.
BOOST_AUTO_TEST_CASE(shape_inference_keeps_what_is_known) {
  v1::Graph g;
  auto scope = g.as_default();
  const auto p = v1::placeholder<float>({-1, 3});
  BOOST_TEST(printed(p) == "Tensor(\"Placeholder:0\", shape=(None, 3), dtype=float32)");
  const auto c = dt::ones<float>({2, 3});
  BOOST_TEST(shape_of(p + dt::ones<float>({1, 3})) == "(None, 3)");
  BOOST_TEST(shape_of(p * dt::ones<float>({1, 1})) == "(None, 3)");
  BOOST_TEST(shape_of(p + dt::ones<float>({5, 1})) == "(5, 3)");
  BOOST_TEST(shape_of(dt::concat(std::vector{p, c}, 0)) == "(None, 3)");
  BOOST_TEST(shape_of(dt::concat(std::vector{p, c}, 1)) == "(2, 6)");
  BOOST_TEST(shape_of(dt::add_n(std::vector{p, c})) == "(2, 3)");
  BOOST_TEST(shape_of(dt::add_n(std::vector{p, p})) == "(None, 3)");
  BOOST_TEST(shape_of(dt::transpose(p)) == "(3, None)");
  BOOST_TEST(shape_of(dt::reshape(p, {-1})) == "(None,)");
  BOOST_TEST(shape_of(dt::reshape(p, {3, -1})) == "(3, None)");
  BOOST_TEST(shape_of(dt::reduce_mean(p, std::vector<std::int64_t>{1}, true)) == "(None, 1)");
  BOOST_TEST(shape_of(dt::reduce_sum(p, std::vector<std::int64_t>{0})) == "(3,)");
  BOOST_TEST(shape_of(dt::matmul(p, p, false, true)) == "(None, None)");
  BOOST_TEST(shape_of(dt::matmul(p, dt::ones<float>({3, 4}))) == "(None, 4)");
  BOOST_TEST(shape_of(dt::relu(p).cast<double>().cast<float>()) == "(None, 3)");
  // What is known is still checked.
  DEVTENSOR_CHECK_THROW_WITH((void)dt::matmul(p, dt::ones<float>({4, 2})), InvalidArgumentError,
                             "Matrix size-incompatible: In[0]: [?,3], In[1]: [4,2]");
  DEVTENSOR_CHECK_THROW_WITH((void)(p + dt::ones<float>({2, 4})), InvalidArgumentError,
                             "Incompatible shapes: [?,3] vs. [2,4]");
  // Ops whose shape functions need every dimension say so when the graph is built.
  BOOST_TEST(shape_of(dt::slice(p, {0, 0}, {1, 3})) == "(1, 3)");  // checked against the batch when it runs
  DEVTENSOR_CHECK_THROW_WITH((void)dt::zeros<float>(p.shape()), InvalidArgumentError,
                             "Fill needs fully defined shapes in a graph, but its output has shape (None, 3)");
}

// TensorFlow 2.21: feeding 2 rows gives [[9, 9, 9, 9], [6, 6, 6, 6]]; a (1, 2) feed is refused.
BOOST_AUTO_TEST_CASE(a_placeholder_with_none_takes_any_batch) {
  v1::Graph g;
  dt::Tensor<float> p, m;
  {
    auto scope = g.as_default();
    p = v1::placeholder<float>({-1, 3});
    m = dt::matmul(p + dt::ones<float>({1, 3}), dt::ones<float>({3, 4}));
  }
  v1::Session sess(g);
  const auto two = sess.run(m, {{p, std::vector<float>{1, 2, 3, 1, 1, 1}, dt::Shape{2, 3}}});
  BOOST_TEST(two.shape() == dt::Shape({2, 4}));
  BOOST_TEST(two.to_vector() == (std::vector<float>{9, 9, 9, 9, 6, 6, 6, 6}), boost::test_tools::per_element());
  BOOST_TEST(sess.run(m, {{p, dt::ones<float>({5, 3})}}).shape() == dt::Shape({5, 4}));
  DEVTENSOR_CHECK_THROW_WITH((void)sess.run(m, {{p, std::vector<float>{1, 2}, dt::Shape{1, 2}}}), InvalidArgumentError,
                             "Cannot feed value of shape (1, 2) for Tensor Placeholder:0, which has shape (None, 3)");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)sess.run(m), InvalidArgumentError,
      "You must feed a value for placeholder tensor 'Placeholder' with dtype float and shape [?,3]");
}

// TensorFlow 2.21: input_signature=[TensorSpec([None, 3])] traces once, inside the trace x has
// shape (None, 3) and matmul's result (None, 2); a (2, 4) argument is refused.
BOOST_AUTO_TEST_CASE(an_input_signature_with_none_traces_once) {
  std::vector<std::string> traced_shapes;
  auto g = dt::function(
      [&](const dt::Tensor<float>& x) {
        const auto y = dt::matmul(x, dt::ones<float>({3, 2}));
        traced_shapes.push_back(shape_of(x) + " " + printed(y));
        return y;
      },
      {.name = "g", .input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3})}});
  BOOST_TEST(g(dt::ones<float>({2, 3})).shape() == dt::Shape({2, 2}));
  const auto five = g(ramp_tensor({5, 3}));
  BOOST_TEST(five.shape() == dt::Shape({5, 2}));
  BOOST_TEST(five.to_vector() == dt::matmul(ramp_tensor({5, 3}), dt::ones<float>({3, 2})).to_vector(),
             boost::test_tools::per_element());
  BOOST_TEST(g.experimental_get_tracing_count() == 1);
  BOOST_TEST_REQUIRE(traced_shapes.size() == 1u);
  BOOST_TEST(traced_shapes[0] == "(None, 3) Tensor(\"MatMul:0\", shape=(None, 2), dtype=float32)");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)g(dt::ones<float>({2, 4})), InvalidArgumentError,
      "Binding inputs to tf.function failed due to `Can not cast TensorSpec(shape=(2, 4), "
      "dtype=tf.float32, name=None) to TensorSpec(shape=(None, 3), dtype=tf.float32, name=None)`");
}

// TensorFlow 2.21 with reduce_retracing=True: batches of 2, 3, 4, 5 rows trace (2, 3), then
// (None, 3) once for the rest; (2, 4) then traces (None, None).
BOOST_AUTO_TEST_CASE(reduce_retracing_relaxes_the_dimensions_that_change) {
  std::vector<std::string> traced_shapes;
  auto f = dt::function(
      [&](const dt::Tensor<float>& x) {
        traced_shapes.push_back(shape_of(x));
        return dt::reduce_sum(x * 2.0f + 1.0f);
      },
      {.name = "f", .reduce_retracing = true});
  for (std::int64_t n : {2, 3, 4, 5}) BOOST_TEST(f(dt::ones<float>({n, 3})).item() == static_cast<float>(9 * n));
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
  BOOST_TEST(f(dt::ones<float>({2, 4})).item() == 24.0f);
  BOOST_TEST(f(dt::ones<float>({6, 1})).item() == 18.0f);
  BOOST_TEST(f.experimental_get_tracing_count() == 3);
  BOOST_TEST(traced_shapes == (std::vector<std::string>{"(2, 3)", "(None, 3)", "(None, None)"}),
             boost::test_tools::per_element());
  // Without reduce_retracing every new shape traces.
  auto exact = dt::function([](const dt::Tensor<float>& x) { return dt::reduce_sum(x); });
  for (std::int64_t n : {2, 3, 4}) (void)exact(dt::ones<float>({n, 3}));
  BOOST_TEST(exact.experimental_get_tracing_count() == 3);
}

// The seeds' model trained with a batch size the graph does not know: one trace serves batches
// of 4 and 7 rows, and its losses, gradients and weights equal eager execution's (Mean's count
// and the bias's reduction come from the shapes the tensors have when the graph runs).
BOOST_AUTO_TEST_CASE(gradients_over_an_unknown_batch_equal_eager_ones) {
  const auto run = [](bool traced) {
    dt::Variable<float> w1(ramp_tensor({3, 4})), b1(ramp_tensor({4})), w2(ramp_tensor({4, 1})),
        b2(dt::constant<float>({0.05f}));
    const dt::nn::optimizers::SGD sgd{.learning_rate = 0.05};
    const auto step = [&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
      dt::GradientTape tape;
      const auto h = dt::relu(dt::matmul(x, w1.value()) + b1.value());
      const auto prediction = dt::matmul(h, w2.value()) + b2.value();
      const auto loss = dt::reduce_mean(dt::square(prediction - y)) + dt::reduce_sum(dt::tanh(h)) * 0.01f;
      const auto grads = tape.gradient(loss, std::vector{w1, b1, w2, b2});
      sgd.apply_gradients(grads, {w1, b1, w2, b2});
      return loss;
    };
    auto traced_step = dt::function(
        step, {.name = "train_step",
               .input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3}), dt::TensorSpec::of<float>({-1, 1})}});
    std::vector<float> losses;
    for (std::int64_t n : {4, 7, 4, 7}) {
      const auto x = ramp_tensor({n, 3}), y = dt::reduce_sum(ramp_tensor({n, 3}), std::vector<std::int64_t>{1}, true);
      losses.push_back((traced ? traced_step(x, y) : step(x, y)).item());
    }
    if (traced) BOOST_TEST(traced_step.experimental_get_tracing_count() == 1);
    auto weights = w1.to_vector();
    for (const auto* v : {&b1, &w2, &b2})
      for (float e : v->to_vector()) weights.push_back(e);
    return std::pair{losses, weights};
  };
  const auto eager = run(false);
  const auto traced = run(true);
  BOOST_TEST_REQUIRE(traced.first.size() == eager.first.size());
  for (std::size_t i = 0; i < eager.first.size(); ++i) BOOST_TEST(std::abs(traced.first[i] - eager.first[i]) <= 1e-6f);
  BOOST_TEST_REQUIRE(traced.second.size() == eager.second.size());
  for (std::size_t i = 0; i < eager.second.size(); ++i)
    BOOST_TEST(std::abs(traced.second[i] - eager.second[i]) <= 1e-6f);
}

// (None, 3) * (None, 3) may broadcast when the graph runs ([1, 3] against [5, 3]): the gradients'
// shapes and values come from the values' shapes then, as TensorFlow's BroadcastGradientArgs.
BOOST_AUTO_TEST_CASE(gradients_of_broadcasts_found_when_the_graph_runs) {
  const auto grads = [](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    dt::GradientTape tape({.persistent = true});
    tape.watch(x);
    tape.watch(y);
    const auto loss = dt::reduce_sum(x * y + x / (y * y + 1.0f) - y);
    return std::pair{tape.gradient(loss, x), tape.gradient(loss, y)};
  };
  const auto spec = dt::TensorSpec::of<float>({-1, 3});
  auto traced = dt::function(grads, {.input_signature = std::vector{spec, spec}});
  for (const auto& [xs, ys] : {std::pair{dt::Shape{1, 3}, dt::Shape{5, 3}}, std::pair{dt::Shape{4, 3}, dt::Shape{1, 3}},
                               std::pair{dt::Shape{2, 3}, dt::Shape{2, 3}}}) {
    const auto x = ramp_tensor(xs), y = ramp_tensor(ys) * 2.0f;
    const auto [gx, gy] = traced(x, y);
    const auto [ex, ey] = grads(x, y);
    BOOST_TEST(gx.shape() == xs);
    BOOST_TEST(gy.shape() == ys);
    const auto gxv = gx.to_vector(), exv = ex.to_vector(), gyv = gy.to_vector(), eyv = ey.to_vector();
    for (std::size_t i = 0; i < exv.size(); ++i) BOOST_TEST(std::abs(gxv[i] - exv[i]) <= 1e-5f);
    for (std::size_t i = 0; i < eyv.size(); ++i) BOOST_TEST(std::abs(gyv[i] - eyv[i]) <= 1e-5f);
  }
  BOOST_TEST(traced.experimental_get_tracing_count() == 1);
}

// d/dx of reductions over an unknown dimension: sum and mean (all axes, one axis).
BOOST_AUTO_TEST_CASE(reduction_gradients_over_unknown_dimensions) {
  const auto grads = [](const auto& f, const dt::Tensor<float>& x) {
    dt::GradientTape tape;
    tape.watch(x);
    return tape.gradient(f(x), x);
  };
  const auto loss = [](const dt::Tensor<float>& x) {
    return dt::reduce_mean(x * x) + dt::reduce_sum(dt::reduce_mean(x, std::vector<std::int64_t>{0}) * 3.0f) +
           dt::reduce_sum(dt::reduce_sum(x, std::vector<std::int64_t>{1}) *
                          dt::reduce_sum(x, std::vector<std::int64_t>{1}));
  };
  auto traced = dt::function([&](const dt::Tensor<float>& x) { return grads(loss, x); },
                             {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, -1})}});
  for (const auto& shape : {dt::Shape{2, 3}, dt::Shape{5, 2}}) {
    const auto x = ramp_tensor(shape);
    const auto eager = grads(loss, x).to_vector();
    const auto in_graph = traced(x).to_vector();
    BOOST_TEST_REQUIRE(in_graph.size() == eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i) BOOST_TEST(std::abs(in_graph[i] - eager[i]) <= 1e-6f);
  }
  BOOST_TEST(traced.experimental_get_tracing_count() == 1);
}

// Pad and Slice keep an unknown size (TensorFlow 2.21: tf.pad of a (None, 3) placeholder is
// (None, 6), tf.slice to the end (None, 2)), run on any batch, and differentiate in a function
// whose batch is None; ZeroPadding2D so in a TF1 graph.
BOOST_AUTO_TEST_CASE(pad_and_slice_keep_unknown_sizes_and_differentiate) {
  v1::Graph graph;
  dt::Tensor<float> p, padded, sliced, images, image_p;
  {
    auto scope = graph.as_default();
    p = v1::placeholder<float>({-1, 3});
    padded = dt::pad(p, {{0, 0}, {1, 2}});
    sliced = dt::slice(p, {1, 0}, {-1, 2});
    image_p = v1::placeholder<float>({-1, 4, 4, 1});
    images = dt::nn::ZeroPadding2D({{1, 0}, {0, 2}})(image_p);
  }
  BOOST_TEST(shape_of(padded) == "(None, 6)");
  BOOST_TEST(shape_of(sliced) == "(None, 2)");
  BOOST_TEST(shape_of(images) == "(None, 5, 6, 1)");
  v1::Session session(graph);
  for (const std::int64_t batch : {2, 5}) {
    const auto x = ramp_tensor({batch, 3});
    BOOST_TEST(session.run(padded, {{p, x}}).to_vector() == dt::pad(x, {{0, 0}, {1, 2}}).to_vector(),
               boost::test_tools::per_element());
    BOOST_TEST(session.run(sliced, {{p, x}}).to_vector() == dt::slice(x, {1, 0}, {-1, 2}).to_vector(),
               boost::test_tools::per_element());
    BOOST_TEST(session.run(images, {{image_p, ramp_tensor({batch, 4, 4, 1})}}).shape() == dt::Shape({batch, 5, 6, 1}));
  }
  // Gradients through both in a function traced once for every batch.
  const auto grads = [](const dt::Tensor<float>& x) {
    dt::GradientTape tape;
    tape.watch(x);
    const auto y = dt::slice(dt::pad(x, {{0, 0}, {2, 1}}), {1, 1}, {-1, 4});
    return tape.gradient(dt::reduce_sum(y * y), x);
  };
  auto traced = dt::function(grads, {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3})}});
  for (const std::int64_t batch : {2, 5}) {
    const auto x = ramp_tensor({batch, 3});
    const auto eager = grads(x).to_vector();
    const auto in_graph = traced(x).to_vector();
    BOOST_TEST_REQUIRE(in_graph.size() == eager.size());
    for (std::size_t i = 0; i < eager.size(); ++i) BOOST_TEST(std::abs(in_graph[i] - eager[i]) <= 1e-6f);
  }
  BOOST_TEST(traced.experimental_get_tracing_count() == 1);
  // An unknown axis padded after it, or sliced short of its end: its gradient's size is known only
  // when the graph runs, and says so.
  auto padded_after = dt::function(
      [](const dt::Tensor<float>& x) {
        dt::GradientTape tape;
        tape.watch(x);
        return tape.gradient(dt::reduce_sum(dt::pad(x, {{0, 1}, {0, 0}})), x);
      },
      {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3})}});
  DEVTENSOR_CHECK_THROW_WITH((void)padded_after(ramp_tensor({2, 3})), dt::UnimplementedError,
                             "The gradient of Pad over axis 0 of unknown size, padded after it");
  auto sliced_short = dt::function(
      [](const dt::Tensor<float>& x) {
        dt::GradientTape tape;
        tape.watch(x);
        return tape.gradient(dt::reduce_sum(dt::slice(x, {0, 0}, {1, -1})), x);
      },
      {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3})}});
  DEVTENSOR_CHECK_THROW_WITH((void)sliced_short(ramp_tensor({2, 3})), dt::UnimplementedError,
                             "The gradient of Slice over axis 0 of unknown size, sliced short of its end");
}

BOOST_AUTO_TEST_SUITE_END()
