// Traced functions (tf.function): one trace per signature, TensorFlow 2.21's names, logs and texts,
// results equal to eager execution, variables captured by handle, calls from several threads.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
using devtensor::InvalidArgumentError;

namespace {
using devtensor::test::kCpu0;

auto matmul_plus_one() {
  return dt::function([](const dt::Tensor<float>& a, const dt::Tensor<float>& b) { return dt::matmul(a, b) + 1.0f; },
                      {.name = "f", .arg_names = {"a", "b"}});
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(traced_function, dt::test::FreshContext)

// TensorFlow 2.21: f(a, b), f(a, b), f(ones([4, 3]), b) traces twice.
BOOST_AUTO_TEST_CASE(one_trace_per_signature) {
  auto f = matmul_plus_one();
  const auto a = dt::ones<float>({2, 3});
  const auto b = dt::ones<float>({3, 2});
  BOOST_TEST(f(a, b).to_vector() == (std::vector<float>{4, 4, 4, 4}), boost::test_tools::per_element());
  (void)f(a, b);
  BOOST_TEST(f.experimental_get_tracing_count() == 1);
  BOOST_TEST(f(dt::ones<float>({4, 3}), b).shape() == dt::Shape({4, 2}));
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
  (void)f(dt::ones<double>({2, 3}).cast<float>(), b);  // same dtype, shape and device: no trace
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
}

BOOST_AUTO_TEST_CASE(other_arguments_trace_by_value) {
  int traces = 0;  // host code runs only while tracing
  auto scale = dt::function([&](const dt::Tensor<float>& x, float factor) {
    ++traces;
    return x * factor;
  });
  const auto x = dt::constant<float>({1, 2});
  BOOST_TEST(scale(x, 2.0f).to_vector() == (std::vector<float>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(scale(x, 2.0f).to_vector() == (std::vector<float>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(scale(x, 3.0f).to_vector() == (std::vector<float>{3, 6}), boost::test_tools::per_element());
  BOOST_TEST(traces == 2);
  BOOST_TEST(scale.experimental_get_tracing_count() == 2);
}

// TensorFlow 2.21 with tf.debugging.set_log_device_placement(True): the body's placement, then
// the call as one op.
BOOST_AUTO_TEST_CASE(placement_log_and_call_line) {
  dt::debugging::set_log_device_placement(true);
  auto f = matmul_plus_one();
  log.clear();
  (void)f(dt::ones<float>({2, 3}), dt::ones<float>({3, 2}));
  std::vector<std::string> lines;
  for (const auto& l : log.lines())
    if (l.find("_EagerConst") == std::string::npos && l.find("op Fill") == std::string::npos) lines.push_back(l);
  const std::string cpu(kCpu0);
  const std::vector<std::string> expected{"a: (_Arg): " + cpu,
                                          "b: (_Arg): " + cpu,
                                          "MatMul: (MatMul): " + cpu,
                                          "add: (AddV2): " + cpu,
                                          "Identity: (Identity): " + cpu,
                                          "identity_RetVal: (_Retval): " + cpu,
                                          "add/y: (Const): " + cpu};
  BOOST_TEST_REQUIRE(lines.size() == expected.size() + 1);
  BOOST_TEST(std::vector<std::string>(lines.begin(), lines.end() - 1) == expected, boost::test_tools::per_element());
  BOOST_TEST(lines.back().starts_with("Executing op __inference_f_"));
  BOOST_TEST(lines.back().ends_with(" in device " + cpu));
  const auto concrete = f.get_concrete_function(dt::ones<float>({2, 3}), dt::ones<float>({3, 2}));
  BOOST_TEST(concrete->node_names() ==
                 (std::vector<std::string>{"a", "b", "MatMul", "add/y", "add", "Identity", "identity_RetVal"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(results_equal_eager_execution) {
  const auto body = [](const dt::Tensor<float>& x, const dt::Tensor<float>& w) {
    auto h = dt::relu(dt::matmul(x, w) + 0.5f);
    return dt::tanh(h * h - dt::sigmoid(h)) / 3.0f;
  };
  const auto x = dt::constant<float>({-1.5f, 0.25f, 2, 3.5f, -0.75f, 1}, {2, 3});
  const auto w = dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2});
  auto traced = dt::function(body);
  BOOST_TEST(traced(x, w).to_vector() == body(x, w).to_vector(), boost::test_tools::per_element());  // bitwise
}

BOOST_AUTO_TEST_CASE(simulated_gpus_run_the_traced_graph) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  auto f = matmul_plus_one();
  const auto a = dt::ones<float>({2, 3});
  const auto b = dt::ones<float>({3, 2});
  const auto out = f(a, b);
  BOOST_TEST(out.device() == "/job:localhost/replica:0/task:0/device:GPU:0");  // GPU first, as eager
  BOOST_TEST(out.to_vector() == dt::add(dt::matmul(a, b), dt::scalar<float>(1)).to_vector(),
             boost::test_tools::per_element());
}

// TensorFlow 2.21's TypeError text, as InvalidArgumentError.
BOOST_AUTO_TEST_CASE(input_signature_fixes_one_signature) {
  auto g = dt::function([](const dt::Tensor<float>& x) { return x * 2.0f; },
                        {.name = "g", .input_signature = std::vector{dt::TensorSpec::of<float>({2})}});
  BOOST_TEST(g(dt::constant<float>({1, 2})).to_vector() == (std::vector<float>{2, 4}),
             boost::test_tools::per_element());
  DEVTENSOR_CHECK_THROW_WITH((void)g(dt::constant<float>({1, 2, 3})), InvalidArgumentError,
                             "Binding inputs to tf.function failed due to `Can not cast TensorSpec(shape=(3,), "
                             "dtype=tf.float32, name=None) to TensorSpec(shape=(2,), dtype=tf.float32, name=None)`.");
  auto h = dt::function([](const dt::Tensor<std::int32_t>& x) { return x * 2; },
                        {.name = "h", .input_signature = std::vector{dt::TensorSpec::of<float>({2})}});
  DEVTENSOR_CHECK_THROW_WITH((void)h(dt::constant<std::int32_t>({1, 2})), InvalidArgumentError,
                             "Can not cast TensorSpec(shape=(2,), dtype=tf.int32, name=None) to TensorSpec(shape=(2,), "
                             "dtype=tf.float32, name=None)");
  BOOST_TEST(g.experimental_get_tracing_count() == 1);
}

// TensorFlow 2.21 warns at the 5th and 6th of 7 retracing calls, then stays quiet.
BOOST_AUTO_TEST_CASE(frequent_retracing_warns_twice) {
  auto h = dt::function([](const dt::Tensor<float>& x) { return x + 1.0f; }, {.name = "h"});
  for (std::int64_t i = 0; i < 7; ++i) (void)h(dt::ones<float>({i + 1}));
  BOOST_TEST(log.count("triggered tf.function retracing") == 2u);
  BOOST_TEST(
      log.count("5 out of the last 5 calls to <function h> triggered tf.function retracing. Tracing is expensive") ==
      1u);
  BOOST_TEST(log.count("6 out of the last 6 calls to <function h>") == 1u);
  BOOST_TEST(h.experimental_get_tracing_count() == 7);
}

BOOST_AUTO_TEST_CASE(variables_are_captured_by_handle) {
  dt::Variable<float> v(dt::constant<float>({1, 2}));
  auto step = dt::function([&](const dt::Tensor<float>& x) {
    v.assign(v.value() * x);  // runs at every call although no output needs it
    return v.value() + 0.0f;
  });
  const auto two = dt::constant<float>({2, 2});
  BOOST_TEST(step(two).to_vector() == (std::vector<float>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(step(two).to_vector() == (std::vector<float>{4, 8}), boost::test_tools::per_element());
  v.assign(dt::constant<float>({1, 1}));  // an eager assignment is seen by the next call
  BOOST_TEST(step(two).to_vector() == (std::vector<float>{2, 2}), boost::test_tools::per_element());
  BOOST_TEST(step.experimental_get_tracing_count() == 1);
  auto add_to = dt::function([&](const dt::Tensor<float>& x) { v.assign_add(x); });
  add_to(two);
  BOOST_TEST(v.to_vector() == (std::vector<float>{4, 4}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_tape_around_a_call_differentiates_through_it) {
  dt::Variable<float> w(dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2}));
  const auto loss = [&](const dt::Tensor<float>& x) {
    return dt::reduce_sum(dt::tanh(dt::matmul(x, w.value()) * 2.0f));
  };
  auto traced = dt::function(loss);
  const auto x = dt::constant<float>({-1.5f, 0.25f, 2, 3.5f, -0.75f, 1}, {2, 3});
  const auto gradients = [&](auto& f) {
    dt::GradientTape tape({.persistent = true});
    tape.watch(x);
    const auto y = f(x);
    return std::pair{tape.gradient(y, x).to_vector(), tape.gradient(y, w).to_vector()};
  };
  const auto eager = gradients(loss);
  const auto through = gradients(traced);
  BOOST_TEST(through.first == eager.first, boost::test_tools::per_element());
  BOOST_TEST(through.second == eager.second, boost::test_tools::per_element());
}

// Structures of tensors in and out (tf.nest): a dataset's (x, y) tuple, a (loss, gradients) pair.
BOOST_AUTO_TEST_CASE(nested_arguments_and_results) {
  auto f = dt::function(
      [](const std::tuple<dt::Tensor<float>, dt::Tensor<float>>& batch, const std::vector<dt::Tensor<float>>& extra) {
        const auto& [x, y] = batch;
        return std::pair{dt::reduce_sum(x * y), std::vector{x + extra.at(0), y - extra.at(1)}};
      },
      {.arg_names = {"x", "y", "e0", "e1"}});
  const auto x = dt::constant<float>({1, 2}), y = dt::constant<float>({3, 4});
  const std::vector extra{dt::constant<float>({10, 10}), dt::constant<float>({1, 1})};
  const auto [total, parts] = f(std::tuple{x, y}, extra);
  BOOST_TEST(total.item() == 11.0f);
  BOOST_TEST_REQUIRE(parts.size() == 2u);
  BOOST_TEST(parts[0].to_vector() == (std::vector<float>{11, 12}), boost::test_tools::per_element());
  BOOST_TEST(parts[1].to_vector() == (std::vector<float>{2, 3}), boost::test_tools::per_element());
  const auto names = f.get_concrete_function(std::tuple{x, y}, extra)->node_names();
  BOOST_TEST(
      std::vector<std::string>(names.begin(), names.begin() + 4) == (std::vector<std::string>{"x", "y", "e0", "e1"}),
      boost::test_tools::per_element());
  (void)f(std::tuple{x, y}, std::vector{extra[0], extra[1], extra[0]});  // a longer vector: a new signature
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
}

BOOST_AUTO_TEST_CASE(reading_values_while_tracing_is_an_error) {
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::scalar<float>(x.to_vector()[0]); },
                        {.arg_names = {"x"}});
  DEVTENSOR_CHECK_THROW_WITH((void)f(dt::constant<float>({1})), InvalidArgumentError, "Tensor 'x:0' is symbolic");
  BOOST_TEST(f.experimental_get_tracing_count() == 0);  // a failed trace is not kept
}

BOOST_AUTO_TEST_CASE(a_function_called_while_tracing_is_inlined) {
  auto inner = dt::function([](const dt::Tensor<float>& x) { return dt::relu(x); });
  auto outer = dt::function([&](const dt::Tensor<float>& x) { return inner(x) * 2.0f; });
  BOOST_TEST(outer(dt::constant<float>({-1, 3})).to_vector() == (std::vector<float>{0, 6}),
             boost::test_tools::per_element());
  BOOST_TEST(inner.experimental_get_tracing_count() == 0);
  const auto concrete = outer.get_concrete_function(dt::constant<float>({-1, 3}));
  const auto names = concrete->node_names();
  BOOST_TEST(std::count(names.begin(), names.end(), "Relu") == 1);
}

BOOST_AUTO_TEST_CASE(several_threads_call_one_function) {
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::relu(x) * 2.0f; });
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const float v = static_cast<float>(t * 100 + i);
        ok += f(dt::constant<float>({v, -v})).to_vector() == std::vector<float>{2 * v, 0} ? 1 : 0;
      }
    });
  for (auto& t : threads) t.join();
  BOOST_TEST(ok.load() == 200);
  BOOST_TEST(f.experimental_get_tracing_count() == 1);
}

// TensorFlow 2.21: a variable created on the first call (guarded by host state) is made once,
// from its initial value's ops run eagerly; the first call traces twice (the second trace may not
// create variables) and later calls replay. A function that creates a variable at every trace
// gets TensorFlow's singleton error.
BOOST_AUTO_TEST_CASE(variables_created_on_the_first_trace) {
  std::optional<dt::Variable<float>> v;
  auto f = dt::function([&](const dt::Tensor<float>& x) {
    if (!v) v.emplace(dt::ones<float>({2}) * 3.0f);
    v->assign_add(x);
    return v->read_value();
  });
  BOOST_TEST(f(dt::constant<float>({1, 2})).to_vector() == (std::vector<float>{4, 5}),
             boost::test_tools::per_element());
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
  BOOST_TEST(!v->value().symbolic());
  BOOST_TEST(f(dt::constant<float>({1, 2})).to_vector() == (std::vector<float>{5, 7}),
             boost::test_tools::per_element());
  BOOST_TEST(f.experimental_get_tracing_count() == 2);
  BOOST_TEST(v->to_vector() == (std::vector<float>{5, 7}), boost::test_tools::per_element());

  auto every_trace = dt::function([](const dt::Tensor<float>& x) {
    dt::Variable<float> w(dt::ones<float>({1}));
    return w.read_value() + x;
  });
  DEVTENSOR_CHECK_THROW_WITH(
      (void)every_trace(dt::constant<float>({1})), InvalidArgumentError,
      "tf.function only supports singleton tf.Variables created on the first call. Make sure the "
      "tf.Variable is only created once or created outside tf.function.");
  std::optional<dt::Variable<float>> from_argument;
  auto g = dt::function([&](const dt::Tensor<float>& x) {
    if (!from_argument) from_argument.emplace(x * 2.0f);
    return from_argument->read_value();
  });
  DEVTENSOR_CHECK_THROW_WITH((void)g(dt::constant<float>({1})), InvalidArgumentError,
                             "The initial value of a variable created in a traced function depends on the function's "
                             "arguments (You must feed a value for placeholder tensor 'x'");
  BOOST_TEST(!from_argument.has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(traced_training, dt::test::FreshContext)

// A train step traced once: a tape inside the trace, the optimizer's update as a node. Its losses
// and weights equal the eager step's over several calls (the same kernels in the same order).
BOOST_AUTO_TEST_CASE(a_traced_train_step_equals_the_eager_one) {
  const auto run = [](bool traced) {
    dt::Variable<float> w(dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2}));
    dt::Variable<float> b(dt::constant<float>({0.1f, -0.2f}));
    const dt::nn::optimizers::SGD sgd{.learning_rate = 0.1, .momentum = 0.9};
    const auto step = [&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
      dt::GradientTape tape;
      const auto prediction = dt::matmul(x, w.value()) + b.value();
      const auto loss = dt::reduce_mean(dt::square(prediction - y));
      const auto grads = tape.gradient(loss, std::vector{w, b});
      sgd.apply_gradients(grads, {w, b});
      return loss;
    };
    auto traced_step = dt::function(step, {.name = "train_step"});
    const auto x = dt::constant<float>({-1.5f, 0.25f, 2, 3.5f, -0.75f, 1}, {2, 3});
    const auto y = dt::constant<float>({1, 0, 0, 1}, {2, 2});
    std::vector<float> losses;
    for (int i = 0; i < 4; ++i) losses.push_back((traced ? traced_step(x, y) : step(x, y)).item());
    if (traced) BOOST_TEST(traced_step.experimental_get_tracing_count() == 1);
    BOOST_TEST(sgd.iterations() == 4);
    auto weights = w.to_vector();
    for (float v : b.to_vector()) weights.push_back(v);
    return std::pair{losses, weights};
  };
  const auto eager = run(false);
  const auto traced = run(true);
  BOOST_TEST(traced.first == eager.first, boost::test_tools::per_element());
  BOOST_TEST(traced.second == eager.second, boost::test_tools::per_element());
  BOOST_TEST(traced.first.back() < traced.first.front());  // it trains
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(print_op, dt::test::FreshContext)

// tf.print's formatting, checked with TensorFlow 2.21.
BOOST_AUTO_TEST_CASE(print_formats_as_tensorflow) {
  std::ostringstream out;
  const dt::PrintOpOptions to_out{.output_stream = &out};
  dt::print({dt::constant<float>({1.0f, 2.5f, -3.0f})}, to_out);
  dt::print({"loss:", dt::scalar<float>(0.25f), dt::constant<std::int32_t>({1, 2, 3, 4}, {2, 2})}, to_out);
  dt::print({dt::range<std::int32_t>(0, 10)}, to_out);
  dt::print({dt::constant<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2})}, to_out);
  BOOST_TEST(out.str() ==
             "[1 2.5 -3]\nloss: 0.25 [[1 2]\n [3 4]]\n[0 1 2 ... 7 8 9]\n[[[1 2]\n  [3 4]]\n\n [[5 6]\n  [7 8]]]\n");
  DEVTENSOR_CHECK_THROW_WITH(dt::print(dt::Tensor<float>()), InvalidArgumentError, "undefined tensor");
}

// TensorFlow 2.21: Python's print runs while tracing, tf.print at every call.
BOOST_AUTO_TEST_CASE(print_is_a_node_in_a_trace) {
  std::ostringstream out;
  int traces = 0;
  auto f = dt::function([&](const dt::Tensor<float>& x) {
    ++traces;
    dt::print({"x =", x}, {.output_stream = &out});
    return x + 1.0f;
  });
  (void)f(dt::constant<float>({1}));
  (void)f(dt::constant<float>({2}));
  BOOST_TEST(out.str() == "x = [1]\nx = [2]\n");
  BOOST_TEST(traces == 1);
}

BOOST_AUTO_TEST_SUITE_END()
