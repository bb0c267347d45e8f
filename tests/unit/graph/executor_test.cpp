// How the executor replays a graph, one suite each:
// - replay_buffers: replays reuse small buffers (Note [Replays reuse small buffers], graph/executor.hpp): a
//   kernel writes into the previous run's buffer only when nothing else holds it. These tests hold on to
//   every kind of reference a buffer can have (a result, a variable's value, a tape's record, a session's
//   variable) and check that the next replay leaves it alone; large values are still freed at their last use.
// - optimizer: graph optimisations (graph/optimizer.hpp), elementwise chains and MatMul epilogues fused into
//   one node. Every fused op applies the same scalar function to the same values as the unfused graph, so
//   results are compared bitwise with eager execution (Note [Fused elementwise chains]).
// - cuda_graph: replay as a CUDA graph (Note [CUDA-graph replay], graph/cuda_graph.hpp) through the fake
//   GPU platform, which "captures" by running the work and replays by running the executor again on the
//   capture's input buffers: the stages, the static inputs and outputs, and every fallback.
// One translation unit: each graph test file costs CI a compile of devtensor.hpp in three build trees.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_kernels.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;

namespace {
dt::Tensor<float> chain(const dt::Tensor<float>& x) {
  auto y = dt::relu(x) + x;
  y = dt::square(y * x - x);
  return dt::neg(dt::abs(y + x) * x) + x;
}
std::vector<float> values_of(float v) { return chain(dt::constant<float>({v, -v})).to_vector(); }
}  // namespace

BOOST_FIXTURE_TEST_SUITE(replay_buffers, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(results_the_caller_holds_keep_their_values) {
  auto f = dt::function(chain);
  const auto a = f(dt::constant<float>({1.5f, -1.5f}));
  const auto b = f(dt::constant<float>({2.5f, -2.5f}));
  { (void)f(dt::constant<float>({7, -7})); }  // dropped: its buffers are free for the next call
  const auto c = f(dt::constant<float>({-0.5f, 0.5f}));
  BOOST_TEST(a.to_vector() == values_of(1.5f), boost::test_tools::per_element());
  BOOST_TEST(b.to_vector() == values_of(2.5f), boost::test_tools::per_element());
  BOOST_TEST(c.to_vector() == values_of(-0.5f), boost::test_tools::per_element());
  BOOST_TEST(a.storage() != b.storage());
  BOOST_TEST(f.experimental_get_tracing_count() == 1);
}

// A variable assigned a node's output holds that buffer: the next call must not write into it.
BOOST_AUTO_TEST_CASE(a_variable_keeps_the_value_it_was_assigned) {
  dt::Variable<float> v(dt::constant<float>({0, 0}));
  auto f = dt::function([&](const dt::Tensor<float>& x) {
    v.assign(x * 2.0f);
    return x + 1.0f;
  });
  (void)f(dt::constant<float>({1, 2}));
  const auto held = v.value();
  (void)f(dt::constant<float>({5, 6}));
  BOOST_TEST(held.to_vector() == (std::vector<float>{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(v.to_vector() == (std::vector<float>{10, 12}), boost::test_tools::per_element());
}

// A tape around a call records fresh tensors; replays before and after it reuse buffers.
BOOST_AUTO_TEST_CASE(a_tape_around_a_replay_differentiates_it) {
  auto f = dt::function(chain);
  const auto x = dt::constant<float>({1.5f, -0.5f});
  (void)f(x);
  (void)f(x);
  const auto gradient = [&](auto& g) {
    dt::GradientTape tape;
    tape.watch(x);
    return tape.gradient(dt::reduce_sum(g(x)), x).to_vector();
  };
  auto eager = chain;
  BOOST_TEST(gradient(f) == gradient(eager), boost::test_tools::per_element());
  (void)f(x);
  BOOST_TEST(gradient(f) == gradient(eager), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(session_results_and_variables_keep_their_values) {
  v1::Graph g;
  dt::Tensor<float> x, y, total_value;
  dt::graph::Operation init, add_to_total;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({2}, {.name = "x"});
    y = dt::square(x) + 1.0f;
    const v1::Variable<float> total(dt::constant<float>({0, 0}), {.name = "total"});
    add_to_total = total.assign(y * 2.0f);  // the variable holds the buffer mul wrote
    total_value = total.read_value();
    init = v1::global_variables_initializer();
  }
  v1::Session sess(g);
  sess.run(init);
  const auto first = sess.run(y, {{x, std::vector<float>{1, 2}}});
  sess.run(add_to_total, {{x, std::vector<float>{1, 2}}});
  const auto assigned = sess.run(total_value);
  const auto second = sess.run(y, {{x, std::vector<float>{3, 4}}});
  BOOST_TEST(first.to_vector() == (std::vector<float>{2, 5}), boost::test_tools::per_element());
  BOOST_TEST(assigned.to_vector() == (std::vector<float>{4, 10}), boost::test_tools::per_element());
  BOOST_TEST(sess.run(total_value).to_vector() == (std::vector<float>{4, 10}), boost::test_tools::per_element());
  sess.run(add_to_total, {{x, std::vector<float>{3, 4}}});
  BOOST_TEST(second.to_vector() == (std::vector<float>{10, 17}), boost::test_tools::per_element());
  BOOST_TEST(assigned.to_vector() == (std::vector<float>{4, 10}), boost::test_tools::per_element());
  BOOST_TEST(sess.run(total_value).to_vector() == (std::vector<float>{20, 34}), boost::test_tools::per_element());
}

// Values above Executable::kKeptBytes are not kept between calls: once the caller drops the
// result, the device's memory is back where it was. (Bytes in use count whole allocator chunks,
// so a peak is not compared here: it varies with the free list's fragmentation.)
BOOST_AUTO_TEST_CASE(large_values_are_not_kept_between_calls) {
  dt::config::set_simulated_gpus(1, dt::kGiB);
  constexpr std::int64_t n = 1 << 20;
  const auto x = dt::ones<float>({n});  // on GPU:0
  auto f = dt::function([](const dt::Tensor<float>& t) { return (t * 2.0f + 1.0f) * 3.0f; });
  (void)f(x);
  const auto base = dt::config::experimental::get_memory_info("GPU:0").current;
  for (int call = 0; call < 3; ++call) {
    {
      const auto out = f(x);
      BOOST_TEST(out.to_vector()[7] == 9.0f);
      BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current - base >= n * 4);
    }
    BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").current == base);
  }
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// Eight elementwise ops over x ([rows, cols]) with a scalar and a bias ([cols]) broadcast.
dt::Tensor<float> eight_ops(const dt::Tensor<float>& x, const dt::Tensor<float>& bias) {
  auto y = x * 1.5f + bias;        // Mul, AddV2
  y = dt::maximum(y - 0.25f, x);   // Sub, Maximum
  y = dt::square(dt::neg(y)) * x;  // Neg, Square, Mul
  return dt::relu(y - bias);       // Sub, Relu (the eighth and ninth)
}

std::vector<float> ramp(std::int64_t n, float step) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<std::int64_t>(i % 97) - 48) * step;
  return v;
}

std::ptrdiff_t count(const std::vector<std::string>& ops, const std::string& op) {
  return std::count(ops.begin(), ops.end(), op);
}

/// Restores the process's optimizer options when it goes.
struct OptimizerOptionsGuard {
  dt::graph::OptimizerOptions saved = dt::config::optimizer::get_experimental_options();
  ~OptimizerOptionsGuard() { dt::config::optimizer::set_experimental_options(saved); }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(optimizer, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(an_elementwise_chain_runs_as_one_fused_node) {
  const auto x = dt::constant<float>(ramp(15, 0.3f), {3, 5});
  const auto bias = dt::constant<float>({0.5f, -1, 2, 0, 0.25f});
  auto f = dt::function(eight_ops);
  const auto ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(count(ops, "_FusedElementwise") == 1);
  for (const char* op : {"Mul", "AddV2", "Sub", "Maximum", "Neg", "Square", "Relu"})
    BOOST_TEST(count(ops, op) == 0, op);
  // Bitwise: the same scalar functions on the same values.
  BOOST_TEST(f(x, bias).to_vector() == eight_ops(x, bias).to_vector(), boost::test_tools::per_element());
  const auto y = dt::constant<float>(ramp(15, -0.7f), {3, 5});
  BOOST_TEST(f(y, bias).to_vector() == eight_ops(y, bias).to_vector(), boost::test_tools::per_element());
}

// Above 2^19 elements the fused loop is split over threads, blocks straddle the bias's rows.
BOOST_AUTO_TEST_CASE(a_large_chain_is_split_into_blocks_and_threads) {
  const auto x = dt::constant<float>(ramp(700 * 1001, 0.01f), {700, 1001});
  const auto bias = dt::constant<float>(ramp(1001, 0.02f));
  auto f = dt::function(eight_ops);
  BOOST_TEST(count(f.get_concrete_function(x, bias)->optimized_ops(), "_FusedElementwise") == 1);
  const auto fused = f(x, bias).to_vector();
  const auto eager = eight_ops(x, bias).to_vector();
  BOOST_TEST(fused.size() == eager.size());
  BOOST_TEST((fused == eager));
}

BOOST_AUTO_TEST_CASE(integers_fuse_too) {
  auto g = [](const dt::Tensor<std::int32_t>& x) { return dt::abs(x * 3 - 7) + x; };
  auto f = dt::function(g);
  const auto x = dt::constant<std::int32_t>({-4, 0, 9, 2147483647});
  BOOST_TEST(count(f.get_concrete_function(x)->optimized_ops(), "_FusedElementwise") == 1);
  BOOST_TEST(f(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());
}

// A value with two readers, or one the caller fetches, must exist: the chain is cut there.
BOOST_AUTO_TEST_CASE(values_read_twice_or_returned_are_kept) {
  auto g = [](const dt::Tensor<float>& x) {
    const auto shared = dt::exp(x * 0.5f);     // read by two ops
    const auto returned = dt::tanh(x) - 1.0f;  // returned as well as read
    return std::vector{shared * 2.0f + shared * 3.0f, returned * returned + 1.0f, returned};
  };
  auto f = dt::function(g);
  const auto x = dt::constant<float>({-2, -0.5f, 0, 1, 3});
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(ops, "Exp") + count(ops, "Sub") == 0);  // each is the root of its own group
  BOOST_TEST(count(ops, "_FusedElementwise") >= 3);
  const auto got = f(x);
  const auto want = g(x);
  for (std::size_t i = 0; i < want.size(); ++i)
    BOOST_TEST(got[i].to_vector() == want[i].to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(matmul_with_bias_and_relu_is_one_fused_matmul) {
  const auto x = dt::constant<float>(ramp(4 * 6, 0.1f), {4, 6});
  const auto w = dt::constant<float>(ramp(6 * 3, -0.2f), {6, 3});
  const auto b = dt::constant<float>({0.1f, -0.4f, 2});
  auto dense = [](const dt::Tensor<float>& in, const dt::Tensor<float>& kernel, const dt::Tensor<float>& shift) {
    return dt::relu(dt::matmul(in, kernel) + shift);
  };
  auto f = dt::function(dense);
  const auto ops = f.get_concrete_function(x, w, b)->optimized_ops();
  BOOST_TEST(count(ops, "_FusedMatMul") == 1);
  BOOST_TEST(count(ops, "MatMul") + count(ops, "AddV2") + count(ops, "Relu") == 0);
  BOOST_TEST(f(x, w, b).to_vector() == dense(x, w, b).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(f(x * 2.0f, w, b).to_vector() == dense(x * 2.0f, w, b).to_vector(), boost::test_tools::per_element());

  // A product that is also returned stays a MatMul; its readers still fuse.
  auto both =
      dt::function([](const dt::Tensor<float>& in, const dt::Tensor<float>& kernel, const dt::Tensor<float>& shift) {
        const auto z = dt::matmul(in, kernel);
        return std::vector{z, dt::relu(z + shift) * 2.0f};
      });
  const auto kept = both.get_concrete_function(x, w, b)->optimized_ops();
  BOOST_TEST(count(kept, "MatMul") == 1);
  BOOST_TEST(count(kept, "_FusedMatMul") == 0);
  BOOST_TEST(both(x, w, b)[1].to_vector() == (dense(x, w, b) * 2.0f).to_vector(), boost::test_tools::per_element());
}

// A convolution with its bias (channels last) and Relu is one _FusedConv2D on a CPU (TensorFlow's
// remapper): the convolution writes the output, the add and the Relu run over it in blocks, bit for
// bit the unfused ops. Channels first, BiasAdd adds along axis 1 and stays unfused.
BOOST_AUTO_TEST_CASE(conv2d_with_bias_and_relu_is_one_fused_conv2d) {
  const auto x = dt::constant<float>(ramp(2 * 5 * 5 * 3, 0.1f), {2, 5, 5, 3});
  const auto w = dt::constant<float>(ramp(3 * 3 * 3 * 4, -0.2f), {3, 3, 3, 4});
  const auto b = dt::constant<float>({0.1f, -0.4f, 2, -30});
  auto layer = [](const dt::Tensor<float>& in, const dt::Tensor<float>& kernel, const dt::Tensor<float>& shift) {
    return dt::relu(dt::bias_add(dt::conv2d(in, kernel, 1, "SAME"), shift));
  };
  auto f = dt::function(layer);
  const auto ops = f.get_concrete_function(x, w, b)->optimized_ops();
  BOOST_TEST(count(ops, "_FusedConv2D") == 1);
  BOOST_TEST(count(ops, "Conv2D") + count(ops, "BiasAdd") + count(ops, "Relu") == 0);
  BOOST_TEST(f(x, w, b).to_vector() == layer(x, w, b).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(f(x * 2.0f, w, b).to_vector() == layer(x * 2.0f, w, b).to_vector(), boost::test_tools::per_element());

  auto nchw =
      dt::function([](const dt::Tensor<float>& in, const dt::Tensor<float>& kernel, const dt::Tensor<float>& shift) {
        return dt::relu(
            dt::bias_add(dt::conv2d(in, kernel, 1, "SAME", {.data_format = "NCHW"}), shift, {.data_format = "NCHW"}));
      });
  const auto x_nchw = dt::transpose(x, {0, 3, 1, 2});
  const auto unfused = nchw.get_concrete_function(x_nchw, w, b)->optimized_ops();
  BOOST_TEST(count(unfused, "_FusedConv2D") == 0);
  BOOST_TEST(count(unfused, "BiasAdd") == 1);
  BOOST_TEST(nchw(x_nchw, w, b).to_vector() == dt::transpose(layer(x, w, b), {0, 3, 1, 2}).to_vector(),
             boost::test_tools::per_element());
}

// A tape records ops: a call under one runs the unfused graph, and gradients are eager's.
BOOST_AUTO_TEST_CASE(a_tape_around_a_call_differentiates_the_unfused_graph) {
  const auto x = dt::constant<float>(ramp(4 * 6, 0.1f), {4, 6});
  dt::Variable<float> w(dt::constant<float>(ramp(6 * 3, -0.2f), {6, 3}));
  dt::Variable<float> b(dt::constant<float>({0.1f, -0.4f, 2}));
  auto loss = [&](const dt::Tensor<float>& in) {
    return dt::reduce_sum(dt::square(dt::relu(dt::matmul(in, w.value()) + b.value())));
  };
  auto f = dt::function(loss);
  BOOST_TEST(count(f.get_concrete_function(x)->optimized_ops(), "_FusedMatMul") == 1);
  const auto grads_of = [&](auto&& callable) {
    dt::GradientTape tape;
    const auto y = callable(x);
    return tape.gradient(y, std::vector{w, b});
  };
  const auto traced = grads_of(f);
  const auto eager = grads_of(loss);
  for (std::size_t i = 0; i < 2; ++i)
    BOOST_TEST(traced[i].to_vector() == eager[i].to_vector(), boost::test_tools::per_element());
  BOOST_TEST(f(x).to_vector() == loss(x).to_vector(), boost::test_tools::per_element());  // and fused again
}

// What a fused node cannot read, it leaves alone: a column broadcast, unknown dimensions.
BOOST_AUTO_TEST_CASE(shapes_a_fused_node_cannot_read_are_left_alone) {
  auto column = [](const dt::Tensor<float>& x, const dt::Tensor<float>& c) { return dt::relu(x + c) * 2.0f; };
  auto f = dt::function(column);
  const auto x = dt::constant<float>(ramp(6, 1), {2, 3});
  const auto c = dt::constant<float>({1, -100}, {2, 1});
  const auto ops = f.get_concrete_function(x, c)->optimized_ops();
  BOOST_TEST(count(ops, "AddV2") == 1);  // [2, 1] against [2, 3]: not fused, its readers are
  BOOST_TEST(count(ops, "_FusedElementwise") == 1);
  BOOST_TEST(f(x, c).to_vector() == column(x, c).to_vector(), boost::test_tools::per_element());

  auto partial = dt::function([](const dt::Tensor<float>& in) { return dt::relu(in * 2.0f) + 1.0f; },
                              {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 3})}});
  const auto ops2 = partial.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(ops2, "_FusedElementwise") == 0);
  BOOST_TEST(partial(x).to_vector() == (dt::relu(x * 2.0f) + 1.0f).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(remapping_off_keeps_every_op) {
  OptimizerOptionsGuard guard;
  dt::config::optimizer::set_experimental_options({.remapping = false});
  BOOST_TEST(!dt::config::optimizer::get_experimental_options().remapping);
  const auto x = dt::constant<float>(ramp(15, 0.3f), {3, 5});
  const auto bias = dt::constant<float>({0.5f, -1, 2, 0, 0.25f});
  auto f = dt::function(eight_ops);
  const auto ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(count(ops, "_FusedElementwise") == 0);
  BOOST_TEST(count(ops, "Relu") == 1);
  BOOST_TEST(f(x, bias).to_vector() == eight_ops(x, bias).to_vector(), boost::test_tools::per_element());
}

// v1 sessions optimise too; a fed intermediate cuts the chain, and its producers do not run.
BOOST_AUTO_TEST_CASE(sessions_fuse_and_feeds_cut_chains) {
  v1::Graph g;
  dt::Tensor<float> x, doubled, y;
  {
    auto scope = g.as_default();
    x = v1::placeholder<float>({3}, {.name = "x"});
    doubled = x * 2.0f;
    y = dt::relu(doubled + 1.0f) - 3.0f;
  }
  v1::Session sess(g);
  BOOST_TEST(sess.run(y, {{x, std::vector<float>{-1, 1, 2}}}).to_vector() == (std::vector<float>{-3, 0, 2}),
             boost::test_tools::per_element());
  BOOST_TEST(sess.run(y, {{doubled, std::vector<float>{-4, 0, 10}}}).to_vector() == (std::vector<float>{-3, -2, 8}),
             boost::test_tools::per_element());
}

// Constant folding: what depends only on constants runs once, when the graph is optimised.
BOOST_AUTO_TEST_CASE(constants_are_folded_and_failures_wait_for_the_run) {
  auto g = [](const dt::Tensor<float>& x) {
    const auto c = dt::constant<float>({1, 2, 3}) * 2.0f + 1.0f;  // Mul, AddV2 of constants
    return x * c;
  };
  auto f = dt::function(g);
  const auto x = dt::constant<float>({0.5f, -1, 4});
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(ops, "AddV2") == 0);
  BOOST_TEST(count(ops, "Mul") == 1);  // x * c: x is an argument
  BOOST_TEST(f(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(f(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());  // the constant is intact

  // A constant op that fails is not folded: the call fails with the op's own error.
  auto h = dt::function([](const dt::Tensor<std::int32_t>& v) {
    return v + dt::constant<std::int32_t>({7}) / dt::constant<std::int32_t>({0});
  });
  DEVTENSOR_CHECK_THROW_WITH((void)h(dt::constant<std::int32_t>({1})), dt::InvalidArgumentError,
                             "Integer division by zero");
}

// Common subexpressions and Identity nodes, seen with fusion off (which would hide them).
BOOST_AUTO_TEST_CASE(duplicates_are_computed_once_and_identities_bypassed) {
  OptimizerOptionsGuard guard;
  dt::config::optimizer::set_experimental_options({.remapping = false});
  auto g = [](const dt::Tensor<float>& x) {
    const auto a = dt::exp(x) * 2.0f;
    const auto b = dt::exp(x) * 2.0f;  // the same ops on the same values: computed once
    return dt::identity(dt::identity(a) + b);
  };
  auto f = dt::function(g);
  const auto x = dt::constant<float>({0.5f, -1, 2});
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(ops, "Exp") == 1);
  BOOST_TEST(count(ops, "Mul") == 1);
  BOOST_TEST(count(ops, "Identity") == 1);  // the function's output, which is fetched
  BOOST_TEST(f(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());

  dt::config::optimizer::set_experimental_options({.constant_folding = false,
                                                   .arithmetic_optimization = false,
                                                   .dependency_optimization = false,
                                                   .remapping = false});
  auto plain = dt::function(g);
  const auto all = plain.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(all, "Exp") == 2);
  BOOST_TEST(count(all, "Identity") == 3);
  BOOST_TEST(plain(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());
}

// Arithmetic that returns an input (TensorFlow's arithmetic optimizer), seen with fusion off: it is
// skipped where that keeps every bit, -0 and NaN included; x + 0.0f stays (-0 + 0 is +0), and so
// does arithmetic whose result has another shape than the input.
BOOST_AUTO_TEST_CASE(arithmetic_that_returns_an_input_is_skipped_where_exact) {
  OptimizerOptionsGuard guard;
  dt::config::optimizer::set_experimental_options({.remapping = false});
  const auto bits = [](const dt::Tensor<float>& t) {
    std::vector<std::uint32_t> out;
    for (float v : t.to_vector()) out.push_back(std::bit_cast<std::uint32_t>(v));
    return out;
  };
  auto skipped = [](const dt::Tensor<float>& x) { return -(-((1.0f * (x * 1.0f)) / 1.0f - 0.0f)); };
  auto kept = [](const dt::Tensor<float>& x) { return (x + 0.0f) - -0.0f; };
  auto f = dt::function(skipped);
  auto h = dt::function(kept);
  const auto x = dt::constant<float>({-0.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(), -2.5f, 1e-40f});
  const auto skipped_ops = f.get_concrete_function(x)->optimized_ops();
  for (const char* op : {"Mul", "RealDiv", "Sub", "Neg"}) BOOST_TEST(count(skipped_ops, op) == 0, op);
  BOOST_TEST(bits(f(x)) == bits(skipped(x)), boost::test_tools::per_element());
  const auto kept_ops = h.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(kept_ops, "AddV2") == 1);
  BOOST_TEST(count(kept_ops, "Sub") == 1);
  BOOST_TEST(bits(h(x)) == bits(kept(x)), boost::test_tools::per_element());
  BOOST_TEST(h(x).to_vector()[0] == 0.0f);
  BOOST_TEST(!std::signbit(h(x).to_vector()[0]));  // +0: the AddV2 ran
  // A scalar times ones of another shape is those ones' shape: the Mul stays.
  auto broadcast = dt::function([](const dt::Tensor<float>& s) { return s * dt::constant<float>({1, 1, 1}); });
  BOOST_TEST(count(broadcast.get_concrete_function(dt::scalar<float>(2))->optimized_ops(), "Mul") == 1);
  BOOST_TEST(broadcast(dt::scalar<float>(2)).to_vector() == (std::vector<float>{2, 2, 2}),
             boost::test_tools::per_element());
  // Integers: x + 0 and 0 + x are x.
  auto ints = dt::function([](const dt::Tensor<std::int32_t>& i) { return (0 + (i + 0)) * 1; });
  const auto i = dt::constant<std::int32_t>({-3, 0, 7});
  const auto int_ops = ints.get_concrete_function(i)->optimized_ops();
  BOOST_TEST(count(int_ops, "AddV2") + count(int_ops, "Mul") == 0);
  BOOST_TEST(ints(i).to_vector() == i.to_vector(), boost::test_tools::per_element());
  // Off with arithmetic_optimization.
  dt::config::optimizer::set_experimental_options({.arithmetic_optimization = false, .remapping = false});
  auto plain = dt::function(skipped);
  BOOST_TEST(count(plain.get_concrete_function(x)->optimized_ops(), "Neg") == 2);
}

// A Sum or Mean over trailing axes runs over the blocks of the chain that produces its input (one
// pass; the chain's result is never written), with the unfused graph's sums bit for bit: rows that
// cross blocks, a whole-tensor sum, rows split over threads. A reduction over leading axes is left.
BOOST_AUTO_TEST_CASE(reductions_run_over_their_producers_blocks) {
  const auto rows = [](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    return dt::reduce_mean(dt::square(x - y), 1, /*keepdims=*/true);
  };
  const auto whole = [](const dt::Tensor<float>& x) { return dt::reduce_sum(dt::relu(x * 0.5f + 1.0f)); };
  const auto columns = [](const dt::Tensor<float>& x) { return dt::reduce_sum(dt::exp(x * 0.1f), 0); };
  auto f_rows = dt::function(rows);
  auto f_whole = dt::function(whole);
  auto f_columns = dt::function(columns);
  const auto x = dt::constant<float>(ramp(300 * 7, 0.37f), {300, 7});
  const auto y = dt::constant<float>(ramp(300 * 7, -0.11f), {300, 7});
  const auto row_ops = f_rows.get_concrete_function(x, y)->optimized_ops();
  BOOST_TEST(count(row_ops, "_FusedReduction") == 1);
  BOOST_TEST(count(row_ops, "Mean") + count(row_ops, "Square") + count(row_ops, "Sub") == 0);
  BOOST_TEST(f_rows(x, y).shape() == dt::Shape({300, 1}));
  BOOST_TEST(f_rows(x, y).to_vector() == rows(x, y).to_vector(), boost::test_tools::per_element());
  const auto flat = dt::constant<float>(ramp(1000, 0.013f));
  BOOST_TEST(count(f_whole.get_concrete_function(flat)->optimized_ops(), "_FusedReduction") == 1);
  BOOST_TEST(f_whole(flat).item() == whole(flat).item());
  BOOST_TEST(f_whole(flat).item() == whole(flat).item());  // a replay reuses the output's buffer
  const auto column_ops = f_columns.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(column_ops, "Sum") == 1);
  BOOST_TEST(f_columns(x).to_vector() == columns(x).to_vector(), boost::test_tools::per_element());
  // 2048 rows of 1024: tasks of whole rows on the thread pool.
  const auto big_x = dt::constant<float>(ramp(std::int64_t{2048} * 1024, 0.001f), {2048, 1024});
  const auto big_y = dt::constant<float>(ramp(std::int64_t{2048} * 1024, 0.003f), {2048, 1024});
  BOOST_TEST(f_rows(big_x, big_y).to_vector() == rows(big_x, big_y).to_vector(), boost::test_tools::per_element());
  // Doubles too.
  auto f_double = dt::function([](const dt::Tensor<double>& d) { return dt::reduce_sum(dt::square(d) - 1.0); });
  const auto d = dt::constant<double>({0.5, -1.5, 3.25, 1e-3});
  BOOST_TEST(count(f_double.get_concrete_function(d)->optimized_ops(), "_FusedReduction") == 1);
  BOOST_TEST(f_double(d).item() == dt::reduce_sum(dt::square(d) - 1.0).item());
}

// A gradient's seed (Fill of ones) and what it goes through fold into constants.
BOOST_AUTO_TEST_CASE(a_gradients_fills_are_folded) {
  const auto w = dt::Variable<float>(dt::constant<float>({0.5f, -1, 2}));
  auto g = [&](const dt::Tensor<float>& x) {
    dt::GradientTape tape;
    const auto loss = dt::reduce_mean(dt::square(x * w.value()));
    return tape.gradient(loss, std::vector{w})[0];
  };
  auto f = dt::function(g);
  const auto x = dt::constant<float>({1, 2, 3});
  const auto ops = f.get_concrete_function(x)->optimized_ops();
  BOOST_TEST(count(ops, "Fill") == 0);
  BOOST_TEST(count(ops, "BroadcastTo") == 0);
  BOOST_TEST(f(x).to_vector() == g(x).to_vector(), boost::test_tools::per_element());
}

// The memory plan (Note [A replay's memory plan]): values above 16 KiB share the plan's buffers,
// which stay with the executable, so a replay allocates only its results.
BOOST_AUTO_TEST_CASE(a_replay_allocates_only_its_results) {
  OptimizerOptionsGuard guard;
  dt::config::optimizer::set_experimental_options({.remapping = false});  // keep the intermediates
  auto g = [](const dt::Tensor<float>& x) {
    const auto a = dt::exp(x * 0.01f);  // 4 values of 64 KiB before the sum
    return dt::reduce_sum(dt::square(a - 1.0f) + a);
  };
  auto f = dt::function(g);
  const auto x = dt::constant<float>(ramp(128 * 128, 0.5f), {128, 128});
  const auto& cpu = x.device_info();
  const auto concrete = f.get_concrete_function(x);
  const auto ops = concrete->optimized_ops();
  for (const char* op : {"Mul", "Exp", "Sub", "Square", "AddV2", "Sum"}) BOOST_TEST(count(ops, op) == 1, op);
  (void)f(x);  // fills the plan's buffers
  const auto before = cpu.allocator->stats().num_allocs;
  dt::Tensor<float> last;
  for (int i = 0; i < 3; ++i) last = f(x);
  BOOST_TEST(cpu.allocator->stats().num_allocs - before == 3);  // one result per call
  BOOST_TEST(last.to_vector() == g(x).to_vector(), boost::test_tools::per_element());
}

// A planned value that something still holds after its last read keeps its buffer: a view of it
// returned to the caller, a variable assigned it.
BOOST_AUTO_TEST_CASE(planned_buffers_something_holds_are_not_reused) {
  OptimizerOptionsGuard guard;
  dt::config::optimizer::set_experimental_options({.remapping = false});
  dt::Variable<float> kept(dt::zeros<float>(dt::Shape({64, 128})));
  auto f = dt::function([&](const dt::Tensor<float>& x) {
    const auto doubled = x * 2.0f;             // 32 KiB, planned
    kept.assign(doubled + 1.0f);               // the variable holds this one
    return dt::reshape(doubled - 3.0f, {-1});  // a view of a planned value, returned
  });
  const auto x1 = dt::constant<float>(ramp(64 * 128, 1), {64, 128});
  const auto x2 = dt::constant<float>(ramp(64 * 128, -2), {64, 128});
  const auto r1 = f(x1);
  const auto k1 = kept.value();
  const auto r2 = f(x2);
  (void)f(x2 * 3.0f);
  BOOST_TEST(r1.to_vector() == dt::reshape(x1 * 2.0f - 3.0f, {-1}).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(r2.to_vector() == dt::reshape(x2 * 2.0f - 3.0f, {-1}).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(k1.to_vector() == (x1 * 2.0f + 1.0f).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

// --- replay as a CUDA graph, on the fake GPU platform ---------------------------------------------

namespace {
struct FakeGpu : dt::test::FakeGpuPlatform {
  dt::test::FakeGpuKernels kernels;
};
using Stage = dt::graph::CudaGraphReplay::Stage;

/// Seed 001's kind of step: a linear model, MSE, SGD with momentum, on one device.
struct LinearStep {
  dt::Variable<float> w, b;
  dt::nn::optimizers::SGD sgd{.learning_rate = 0.1, .momentum = 0.9};
  LinearStep()
      : w(dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2})), b(dt::constant<float>({0.1f, -0.2f})) {}
  dt::Tensor<float> operator()(const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    dt::GradientTape tape;
    const auto loss = dt::reduce_mean(dt::square(dt::matmul(x, w.value()) + b.value() - y));
    sgd.apply_gradients(tape.gradient(loss, std::vector{w, b}), {w, b});
    return loss;
  }
};
const std::vector<float> kX1{-1.5f, 0.25f, 2, 3.5f, -0.75f, 1}, kX2{0.5f, 1.25f, -2, 0.5f, 0.75f, -1};
const std::vector<float> kY{1, 0, 0, 1};
}  // namespace

BOOST_FIXTURE_TEST_SUITE(cuda_graph, FakeGpu)

// A real GPU's op bodies run inside the platform's profiler ranges (NVTX with CUDA), named by their
// op as timelines name them, closed again when a body throws; CPU ops open none.
BOOST_AUTO_TEST_CASE(gpu_op_bodies_run_in_profiler_ranges_named_by_their_op) {
  auto& recorder = dt::test::fake_gpu_recorder();
  {
    dt::DeviceScope cpu("/cpu:0");  // (without a scope, the GPU's: TensorFlow's default)
    const auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
    (void)dt::matmul(a, a);
  }
  BOOST_TEST(recorder.ranges.empty());
  {
    dt::DeviceScope gpu("/GPU:0");
    const auto b = dt::constant<float>({1, 2, 3, 4}, {2, 2});
    (void)dt::relu(dt::matmul(b, b));
  }
  std::vector<std::string> opened;
  int depth = 0;
  for (const auto& r : recorder.ranges) {
    if (r == ")") {
      BOOST_TEST(--depth >= 0);
    } else {
      ++depth;
      opened.push_back(r);
    }
  }
  BOOST_TEST(depth == 0);  // every range closed
  BOOST_TEST(std::count(opened.begin(), opened.end(), "MatMul") == 1);
  BOOST_TEST(std::count(opened.begin(), opened.end(), "Relu") == 1);
  // In a traced function's run too: its nodes' bodies.
  recorder.ranges.clear();
  dt::DeviceScope gpu("/GPU:0");
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::tanh(dt::matmul(x, x)); });
  const auto x = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  (void)f(x);
  BOOST_TEST(std::count(recorder.ranges.begin(), recorder.ranges.end(), "MatMul") >= 1);
  BOOST_TEST(std::count(recorder.ranges.begin(), recorder.ranges.end(), ")") ==
             static_cast<std::ptrdiff_t>(recorder.ranges.size() / 2));
}

// Warm-up, capture, then replays; every call's loss and the weights equal the op-by-op function's
// bit for bit (the same kernels on the same values), the arguments alternating between two batches
// so that a replay that did not copy its arguments in would be caught.
BOOST_AUTO_TEST_CASE(a_training_step_replays_and_equals_op_by_op) {
  const auto run = [](bool cuda_graph) {
    dt::DeviceScope scope("/GPU:0");
    LinearStep model;
    auto step = dt::function([&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) { return model(x, y); },
                             {.name = "train_step", .cuda_graph = cuda_graph});
    const auto x1 = dt::constant<float>(kX1, {2, 3}), x2 = dt::constant<float>(kX2, {2, 3});
    const auto y = dt::constant<float>(kY, {2, 2});
    std::vector<float> losses;
    for (int i = 0; i < 6; ++i) losses.push_back(step(i % 2 ? x2 : x1, y).item());
    auto weights = model.w.to_vector();
    for (float v : model.b.to_vector()) weights.push_back(v);
    const auto* replay = step.get_concrete_function(x1, y)->cuda_graph();
    return std::tuple{losses, weights, replay ? replay->stage() : Stage::op_by_op, replay ? replay->launches() : -1};
  };
  const auto [plain_losses, plain_weights, plain_stage, plain_launches] = run(false);
  const auto [losses, weights, stage, launches] = run(true);
  BOOST_TEST(plain_launches == -1);
  BOOST_TEST(losses == plain_losses, boost::test_tools::per_element());
  BOOST_TEST(weights == plain_weights, boost::test_tools::per_element());
  BOOST_TEST((stage == Stage::replay));
  BOOST_TEST(launches == 4);  // calls 3 to 6; the fake's capture (call 2) ran its work itself
  auto& recorder = dt::test::fake_gpu_recorder();
  BOOST_TEST(recorder.captures == 1);
  BOOST_TEST(recorder.launches == 4);
  BOOST_TEST(recorder.graphs_destroyed == 1);  // the function is gone
  BOOST_TEST(log.count("CUDA graph") == 0);
}

// A replay runs no host code (ops/capture.hpp): the optimizer's step count, host state its step
// advances, is advanced after each launch by the work the capture registered; where a launch runs
// the host code itself (the fake's default), it is not advanced twice.
BOOST_AUTO_TEST_CASE(a_replay_repeats_the_host_work_of_a_step) {
  dt::DeviceScope scope("/GPU:0");
  const auto x = dt::constant<float>(kX1, {2, 3}), y = dt::constant<float>(kY, {2, 2});
  for (const bool device_work_only : {true, false}) {
    dt::test::fake_gpu_recorder().replays_run_host_work = !device_work_only;
    LinearStep model;
    auto step = dt::function([&](const dt::Tensor<float>& a, const dt::Tensor<float>& b) { return model(a, b); },
                             {.name = "train_step", .cuda_graph = true});
    for (int i = 0; i < 5; ++i) (void)step(x, y);  // op by op, captured, then 3 replays
    BOOST_TEST((step.get_concrete_function(x, y)->cuda_graph()->stage() == Stage::replay));
    BOOST_TEST(model.sgd.iterations() == 5);
  }
}

// Adam's update kernels read their step size from GPU memory, where a one-thread kernel computes
// it from the step count kept there (ops::AdamStepSize): a replayed graph takes each step with its
// own. The fake replays here what a real graph would: the update kernels recorded while capturing,
// with their arguments, and no host code. The weights, the moments and the count equal the op-by-op
// steps', across a restore too (it sets the GPU's count, and the step is captured again).
BOOST_AUTO_TEST_CASE(an_adam_step_replays_with_its_step_size_computed_on_the_gpu) {
  dt::DeviceScope scope("/GPU:0");
  const auto run = [](bool cuda_graph) {
    dt::test::fake_gpu_recorder().reset(1);
    dt::test::fake_gpu_recorder().replays_run_host_work = false;
    dt::Variable<float> w(dt::constant<float>({0.5f, -1, 2, 0.25f}));
    const dt::nn::optimizers::Adam adam{.learning_rate = 0.1};
    auto step = dt::function(
        [&](const dt::Tensor<float>& g) {
          adam.apply_gradients({g}, {w});
          return dt::reduce_sum(g);
        },
        {.name = "adam_step", .cuda_graph = cuda_graph});
    std::vector<float> seen;
    for (int i = 0; i < 8; ++i) {
      if (i == 5) adam.restore({w}, 40, {dt::ones<float>({4}), dt::ones<float>({4})});
      const auto f = static_cast<float>(i);
      (void)step(dt::constant<float>({0.5f * f, -1, 2 - f, 0.25f}));
      for (float v : w.to_vector()) seen.push_back(v);
    }
    for (const auto& slot : adam.slot_values({w}))
      for (float v : slot.to_vector()) seen.push_back(v);
    seen.push_back(static_cast<float>(adam.iterations()));
    return seen;
  };
  const auto plain = run(false);
  const auto replayed = run(true);
  BOOST_TEST(replayed == plain, boost::test_tools::per_element());
  BOOST_TEST(plain.back() == 43.0f);  // restored to 40 before the sixth step
  auto& recorder = dt::test::fake_gpu_recorder();
  BOOST_TEST(recorder.captures == 2);  // the second call, and the sixth after the restore (an update)
  BOOST_TEST(recorder.updates == 1);
  BOOST_TEST(recorder.launches == 5);
  BOOST_TEST(log.count("CUDA graph") == 0);
}

// A whole training step with Adam replays (the fake's default: a launch runs the step again) with
// the op-by-op step's losses and weights, bit for bit.
BOOST_AUTO_TEST_CASE(an_adam_training_step_replays) {
  dt::DeviceScope scope("/GPU:0");
  const auto run = [](bool cuda_graph) {
    dt::Variable<float> w(dt::constant<float>({0.5f, -1, 2, 0.25f, 1.5f, -0.5f}, {3, 2}));
    const dt::nn::optimizers::Adam adam{.learning_rate = 0.1, .amsgrad = true};
    auto step = dt::function(
        [&](const dt::Tensor<float>& x) {
          dt::GradientTape tape;
          const auto loss = dt::reduce_sum(dt::square(dt::matmul(x, w.value())));
          adam.apply_gradients(tape.gradient(loss, std::vector{w}), {w});
          return loss;
        },
        {.name = "adam_step", .cuda_graph = cuda_graph});
    std::vector<float> losses;
    for (int i = 0; i < 5; ++i) losses.push_back(step(dt::constant<float>(i % 2 ? kX2 : kX1, {2, 3})).item());
    BOOST_TEST(adam.iterations() == 5);
    return std::pair{losses, w.to_vector()};
  };
  const auto plain = run(false);
  const auto graphed = run(true);
  BOOST_TEST(graphed.first == plain.first, boost::test_tools::per_element());
  BOOST_TEST(graphed.second == plain.second, boost::test_tools::per_element());
  BOOST_TEST(log.count("CUDA graph") == 0);
  BOOST_TEST(dt::test::fake_gpu_recorder().launches == 3);
}

// Steps the GPU took no part in (the same optimizer updating a variable on the CPU) leave its count
// behind: setting it is host work, so the graph is captured again, that capture fails, and the step
// runs op by op after one WARNING, with the op-by-op results.
BOOST_AUTO_TEST_CASE(an_adam_count_left_behind_means_op_by_op) {
  const auto run = [](bool cuda_graph) {
    dt::Variable<float> on_gpu = [] {
      dt::DeviceScope gpu("/GPU:0");
      return dt::Variable<float>(dt::constant<float>({0.5f, -1}));
    }();
    dt::Variable<float> on_cpu = [] {
      dt::DeviceScope cpu("/cpu:0");
      return dt::Variable<float>(dt::constant<float>({2, 3}));
    }();
    const dt::nn::optimizers::Adam adam{.learning_rate = 0.1};
    auto step = dt::function(
        [&](const dt::Tensor<float>& g) {
          adam.apply_gradients({g}, {on_gpu});
          return dt::reduce_sum(g);
        },
        {.name = "gpu_step", .cuda_graph = cuda_graph});
    dt::DeviceScope gpu("/GPU:0");
    for (int i = 0; i < 6; ++i) {
      if (i == 3) adam.apply_gradients({dt::constant<float>({1, 1})}, {on_cpu});  // a step without the GPU
      (void)step(dt::constant<float>({1, -2}));
    }
    auto seen = on_gpu.to_vector();
    for (float v : on_cpu.to_vector()) seen.push_back(v);
    return seen;
  };
  const auto plain = run(false);
  const auto graphed = run(true);
  BOOST_TEST(graphed == plain, boost::test_tools::per_element());
  BOOST_TEST(log.count("is not replayed as a CUDA graph: the capture failed: Adam's step count on "
                       "/job:localhost/replica:0/task:0/device:GPU:0 is behind the optimizer's") == 1);
}

// A graph reads and writes the addresses of its capture. A variable assigned between calls, or
// slots restored, have new buffers: the next call captures the graph again and updates the graph
// with it (cudaGraphExecUpdate), and the results stay the op-by-op function's, bit for bit, with
// the count restored.
BOOST_AUTO_TEST_CASE(new_buffers_for_variables_or_slots_mean_a_new_capture) {
  const auto run = [](bool cuda_graph) {
    dt::DeviceScope scope("/GPU:0");
    LinearStep model;
    auto step = dt::function([&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) { return model(x, y); },
                             {.name = "train_step", .cuda_graph = cuda_graph});
    const auto x = dt::constant<float>(kX1, {2, 3}), y = dt::constant<float>(kY, {2, 2});
    std::vector<float> losses;
    std::vector<int> captures;
    for (int i = 0; i < 9; ++i) {
      if (i == 4) model.w.assign(dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
      if (i == 7) model.sgd.restore({model.w, model.b}, 40, {dt::ones<float>({3, 2}), dt::ones<float>({2})});
      losses.push_back(step(x, y).item());
      captures.push_back(dt::test::fake_gpu_recorder().captures);
    }
    auto weights = model.w.to_vector();
    for (float v : model.b.to_vector()) weights.push_back(v);
    weights.push_back(static_cast<float>(model.sgd.iterations()));
    return std::tuple{losses, weights, captures};
  };
  const auto [plain_losses, plain_weights, plain_captures] = run(false);
  dt::test::fake_gpu_recorder().reset(1);
  const auto [losses, weights, captures] = run(true);
  BOOST_TEST(losses == plain_losses, boost::test_tools::per_element());
  BOOST_TEST(weights == plain_weights, boost::test_tools::per_element());
  BOOST_TEST(weights.back() == 42.0f);  // restored to 40, then two steps
  BOOST_TEST(captures == (std::vector<int>{0, 1, 1, 1, 2, 2, 2, 3, 3}), boost::test_tools::per_element());
  BOOST_TEST(dt::test::fake_gpu_recorder().updates == 2);
  BOOST_TEST(dt::test::fake_gpu_recorder().graphs_destroyed == 1);  // updated twice, destroyed with the function
}

// PyTorch's contract: a result is the graph's output buffer, overwritten by the next call.
BOOST_AUTO_TEST_CASE(results_are_the_graphs_buffers_until_the_next_call) {
  dt::DeviceScope scope("/GPU:0");
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::square(x) + 1.0f; }, {.cuda_graph = true});
  (void)f(dt::constant<float>({1, 2}));
  const auto captured = f(dt::constant<float>({2, 3}));
  BOOST_TEST(captured.to_vector() == (std::vector<float>{5, 10}), boost::test_tools::per_element());
  const auto kept = captured * 1.0f;  // a new tensor survives the next call
  const auto replayed = f(dt::constant<float>({3, 4}));
  BOOST_TEST(replayed.storage() == captured.storage());
  BOOST_TEST(captured.to_vector() == (std::vector<float>{10, 17}), boost::test_tools::per_element());
  BOOST_TEST(kept.to_vector() == (std::vector<float>{5, 10}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_function_on_cpus_runs_op_by_op_without_a_word) {
  dt::DeviceScope scope("/cpu:0");
  auto f = dt::function([](const dt::Tensor<float>& x) { return x * 2.0f; }, {.cuda_graph = true});
  for (int i = 0; i < 3; ++i) BOOST_TEST(f(dt::constant<float>({1, 2})).to_vector()[1] == 4.0f);
  const auto* replay = f.get_concrete_function(dt::constant<float>({1, 2}))->cuda_graph();
  BOOST_TEST((replay->stage() == Stage::op_by_op));
  BOOST_TEST(replay->why_op_by_op().empty());
  BOOST_TEST(log.count("CUDA graph") == 0);
}

// Each fallback says why, once, and the function keeps giving the op-by-op results.
BOOST_AUTO_TEST_CASE(a_node_on_another_device_means_op_by_op_with_one_warning) {
  dt::DeviceScope scope("/GPU:0");
  auto f = dt::function(
      [](const dt::Tensor<float>& x) {
        dt::Tensor<float> e;
        {
          dt::DeviceScope on_cpu("/cpu:0");
          e = dt::exp(x);
        }
        return e * 2.0f;  // on the GPU
      },
      {.name = "split", .cuda_graph = true});
  for (int i = 0; i < 3; ++i) BOOST_TEST(f(dt::constant<float>({0, 0})).to_vector()[0] == 2.0f);
  BOOST_TEST(log.count("is not replayed as a CUDA graph: node 'Exp' (Exp) runs on /job:localhost/replica:0/task:0/"
                       "device:CPU:0, and a CUDA graph records GPU work only. It runs op by op.") == 1);
  BOOST_TEST(dt::test::fake_gpu_recorder().captures == 0);
}

BOOST_AUTO_TEST_CASE(a_capture_that_fails_means_op_by_op_with_one_warning) {
  dt::DeviceScope scope("/GPU:0");
  auto f = dt::function([](const dt::Tensor<float>& x) { return x - 1.0f; }, {.name = "g", .cuda_graph = true});
  {
    std::lock_guard lock(dt::test::fake_gpu_recorder().mutex);
    dt::test::fake_gpu_recorder().refuse_capture = true;
  }
  for (int i = 0; i < 4; ++i) BOOST_TEST(f(dt::constant<float>({3, 4})).to_vector()[1] == 3.0f);
  BOOST_TEST(log.count("Function __inference_g_") == 1);
  BOOST_TEST(log.count("is not replayed as a CUDA graph: the capture could not start: operation not permitted") == 1);
  const auto* replay = f.get_concrete_function(dt::constant<float>({3, 4}))->cuda_graph();
  BOOST_TEST((replay->stage() == Stage::op_by_op));
  BOOST_TEST(replay->launches() == 0);
}

// A variable assigned a value computed in the graph would hold one of the graph's buffers: the
// capture is run once (this call's results) and the function goes op by op.
BOOST_AUTO_TEST_CASE(a_buffer_held_outside_the_graph_means_op_by_op) {
  dt::DeviceScope scope("/GPU:0");
  dt::Variable<float> kept(dt::zeros<float>({2}));
  auto f = dt::function(
      [&](const dt::Tensor<float>& x) {
        kept.assign(x * 2.0f + 1.0f);
        return x * 3.0f;
      },
      {.cuda_graph = true});
  std::vector<float> seen;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) {
    BOOST_TEST(f(dt::constant<float>({v, -v})).to_vector()[0] == 3 * v);
    seen.push_back(kept.to_vector()[1]);
  }
  BOOST_TEST(seen == (std::vector<float>{-1, -3, -5, -7}), boost::test_tools::per_element());
  BOOST_TEST(log.count("a buffer the capture allocated is held outside the graph") == 1);
  BOOST_TEST(dt::test::fake_gpu_recorder().graphs_destroyed == 1);
}

// Note [Fused chains on a GPU]: a chain with a scalar and a bias runs as one launch of the chain
// kernel (on the fake GPU: the program evaluated on the host), with eager execution's bits.
BOOST_AUTO_TEST_CASE(elementwise_chains_fuse_into_one_gpu_launch) {
  dt::DeviceScope scope("/GPU:0");
  const auto body = [](const dt::Tensor<float>& x, const dt::Tensor<float>& bias) {
    const auto y = dt::relu(x + bias) * 2.0f;
    return dt::tanh(dt::square(y - x) + dt::sigmoid(x)) / 3.0f;
  };
  auto f = dt::function(body);
  const auto x = dt::constant<float>(ramp(64 * 8, 1), {64, 8});
  const auto bias = dt::constant<float>({-1, -0.5f, 0, 0.5f, 1, 1.5f, 2, 2.5f});
  const auto before = dt::test::fake_kernels::chain_launches.load();
  const auto traced = f(x, bias);
  BOOST_TEST(dt::test::fake_kernels::chain_launches.load() - before == 1);
  const auto ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedElementwise") == 1);
  BOOST_TEST(std::count(ops.begin(), ops.end(), "Tanh") == 0);
  BOOST_TEST(traced.to_vector() == body(x, bias).to_vector(), boost::test_tools::per_element());
}

// Note [GEMM epilogues]: MatMul + BiasAdd + Relu is one cuBLASLt call with its epilogue (on the
// fake GPU: the CPU GEMM, then the ops' functors), no chain launch, eager execution's bits, and it
// replays as a CUDA graph. When cuBLASLt has no algorithm for the problem, the GEMM runs into the
// fused node's output and the chain kernel runs over it in place: one GEMM and one chain launch.
BOOST_AUTO_TEST_CASE(matmul_bias_relu_is_one_gemm_with_its_epilogue) {
  namespace fake = dt::test::fake_kernels;
  dt::DeviceScope scope("/GPU:0");
  const auto body = [](const dt::Tensor<float>& x, const dt::Tensor<float>& w, const dt::Tensor<float>& bias) {
    return dt::relu(dt::matmul(x, w) + bias);
  };
  auto f = dt::function(body, {.cuda_graph = true});
  const auto x = dt::constant<float>(ramp(16 * 8, 1), {16, 8});
  const auto w = dt::constant<float>(ramp(8 * 4, 2), {8, 4});
  const auto bias = dt::constant<float>({-40, -0.5f, 0, 30});
  const auto eager = body(x, w, bias).to_vector();
  const auto chains = fake::chain_launches.load();
  const auto gemms = fake::gemm_launches.load();
  BOOST_TEST(f(x, w, bias).to_vector() == eager, boost::test_tools::per_element());
  BOOST_TEST(fake::gemm_launches.load() - gemms == 1);
  BOOST_TEST(fake::chain_launches.load() - chains == 0);
  const auto concrete = f.get_concrete_function(x, w, bias);
  const auto ops = concrete->optimized_ops();
  BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedMatMul") == 1);
  BOOST_TEST(std::count(ops.begin(), ops.end(), "MatMul") == 0);
  BOOST_TEST(std::count(ops.begin(), ops.end(), "Relu") == 0);
  BOOST_TEST(std::count(eager.begin(), eager.end(), 0.0f) > 0);  // the bias makes Relu cut some
  for (int call = 0; call < 3; ++call)                           // captured at the second call, then replayed
    BOOST_TEST(f(x, w, bias).to_vector() == eager, boost::test_tools::per_element());
  BOOST_TEST((concrete->cuda_graph()->stage() == Stage::replay));
  BOOST_TEST(concrete->cuda_graph()->launches() == 2);

  fake::gemm_epilogues = false;  // "no algorithm": the GEMM, then the chain
  auto g = dt::function(body);
  const auto before = fake::chain_launches.load();
  BOOST_TEST(g(x, w, bias).to_vector() == eager, boost::test_tools::per_element());
  BOOST_TEST(fake::chain_launches.load() - before == 1);
  fake::gemm_epilogues = true;
}

// Which chains are an epilogue: a bias over the last dimension ([n] or [1, n], on either side of
// the add), a Relu, the bias then the Relu; with either operand transposed. Anything else after the
// product (another op, a bias of the product's shape, Relu before the add, a batch of matrices)
// runs as a chain over the GEMM's output. All of them give eager execution's bits.
BOOST_AUTO_TEST_CASE(only_bias_and_relu_chains_become_epilogues) {
  namespace fake = dt::test::fake_kernels;
  dt::DeviceScope scope("/GPU:0");
  using T = dt::Tensor<float>;
  const auto x = dt::constant<float>(ramp(6 * 5, -1), {6, 5});
  const auto w = dt::constant<float>(ramp(5 * 3, 0.5f), {5, 3});
  const auto bias = dt::constant<float>({-3, 0.5f, 4});
  const auto full = dt::constant<float>(ramp(6 * 3, -2), {6, 3});
  const auto x3 = dt::reshape(dt::concat(std::vector{x, x}, 0), {2, 6, 5});
  const auto w3 = dt::reshape(dt::concat(std::vector{w, w}, 0), {2, 5, 3});
  struct Case {
    const char* what;
    std::function<T(const T&, const T&)> body;
    T a, b;
    bool epilogue;
  };
  const std::vector<Case> cases{
      {"bias", [&](const T& a, const T& b) { return dt::matmul(a, b) + bias; }, x, w, true},
      {"bias on the left, [1, n]",
       [&](const T& a, const T& b) {
         return dt::reshape(bias, {1, 3}) + dt::matmul(a, b);
       },
       x, w, true},
      {"relu", [&](const T& a, const T& b) { return dt::relu(dt::matmul(a, b)); }, x, w, true},
      {"transposed operands, bias, relu",
       [&](const T& a, const T& b) { return dt::relu(dt::matmul(a, b, true, true) + bias); }, dt::transpose(x),
       dt::transpose(w), true},
      {"one op more", [&](const T& a, const T& b) { return dt::relu(dt::matmul(a, b) + bias) * 2.0f; }, x, w, false},
      {"a bias of the product's shape", [&](const T& a, const T& b) { return dt::matmul(a, b) + full; }, x, w, false},
      {"relu before the bias", [&](const T& a, const T& b) { return dt::relu(dt::matmul(a, b)) + bias; }, x, w, false},
      {"a batch of matrices", [&](const T& a, const T& b) { return dt::matmul(a, b) + bias; }, x3, w3, false},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      auto f = dt::function(c.body);
      const auto eager = c.body(c.a, c.b).to_vector();
      const auto gemms = fake::gemm_launches.load();
      BOOST_TEST(f(c.a, c.b).to_vector() == eager, boost::test_tools::per_element());
      BOOST_TEST((fake::gemm_launches.load() - gemms == 1) == c.epilogue);
      const auto ops = f.get_concrete_function(c.a, c.b)->optimized_ops();
      BOOST_TEST(std::count(ops.begin(), ops.end(), "_FusedMatMul") == 1);
    }
  }
}

// A Sum or Mean over trailing axes ends the chain on a GPU too: one launch of the chain kernel per
// call and no reduction node left, eager's values to rounding (the fake adds a block's threads in
// thread order, the CPU kernel element by element). A row of 15 000 elements is cut into chunks,
// whose partial sums a second pass adds; captured and replayed, it gives the same value.
BOOST_AUTO_TEST_CASE(reductions_end_the_chain_on_a_gpu) {
  dt::DeviceScope scope("/GPU:0");
  const auto row_means = [](const dt::Tensor<float>& x, const dt::Tensor<float>& bias) {
    return dt::reduce_mean(dt::square(x - bias), {1});
  };
  const auto total = [](const dt::Tensor<float>& x) { return dt::reduce_sum(dt::relu(x * 0.5f - 1.0f)); };
  auto f = dt::function(row_means);
  auto g = dt::function(total, {.cuda_graph = true});
  const auto x = dt::constant<float>(ramp(64 * 37, 0.25f), {64, 37});
  const auto bias = dt::constant<float>(ramp(37, -0.5f));
  const auto long_row = dt::constant<float>(ramp(15000, 0.01f), {15000});
  const auto close = [](const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (std::abs(a[i] - b[i]) > 1e-6f * (1 + std::abs(b[i]))) return false;
    return true;
  };
  auto before = dt::test::fake_kernels::chain_launches.load();
  BOOST_TEST(close(f(x, bias).to_vector(), row_means(x, bias).to_vector()));
  BOOST_TEST(dt::test::fake_kernels::chain_launches.load() - before == 1);
  const auto f_ops = f.get_concrete_function(x, bias)->optimized_ops();
  BOOST_TEST(std::count(f_ops.begin(), f_ops.end(), "_FusedReduction") == 1);
  BOOST_TEST(std::count(f_ops.begin(), f_ops.end(), "Mean") == 0);
  BOOST_TEST(std::count(f_ops.begin(), f_ops.end(), "Square") == 0);

  const float expected = dt::reduce_sum(dt::relu(long_row * 0.5f - 1.0f)).item();
  before = dt::test::fake_kernels::chain_launches.load();
  for (int call = 0; call < 4; ++call)  // op by op, captured, then replayed twice
    BOOST_TEST(std::abs(g(long_row).item() - expected) <= 1e-6f * std::abs(expected));
  BOOST_TEST(dt::test::fake_kernels::chain_launches.load() - before == 4);
  const auto g_ops = g.get_concrete_function(long_row)->optimized_ops();
  BOOST_TEST(std::count(g_ops.begin(), g_ops.end(), "_FusedReduction") == 1);
  BOOST_TEST(std::count(g_ops.begin(), g_ops.end(), "Sum") == 0);
  BOOST_TEST((g.get_concrete_function(long_row)->cuda_graph()->stage() == Stage::replay));
}

// Calls whose shapes differ from the capture's, and calls under a tape, run op by op.
BOOST_AUTO_TEST_CASE(other_shapes_and_tapes_run_op_by_op) {
  dt::DeviceScope scope("/GPU:0");
  auto f = dt::function([](const dt::Tensor<float>& x) { return dt::reduce_sum(x * x, {1}); },
                        {.input_signature = std::vector{dt::TensorSpec::of<float>({-1, 2})}, .cuda_graph = true});
  const auto a = dt::constant<float>({1, 2, 3, 4}, {2, 2});
  (void)f(a);
  (void)f(a);  // captured
  BOOST_TEST(f(dt::constant<float>({1, 2, 3, 4, 5, 6}, {3, 2})).to_vector() == (std::vector<float>{5, 25, 61}),
             boost::test_tools::per_element());
  {
    dt::GradientTape tape;
    tape.watch(a);
    const auto y = f(a);
    BOOST_TEST(tape.gradient(dt::reduce_sum(y), a).to_vector() == (std::vector<float>{2, 4, 6, 8}),
               boost::test_tools::per_element());
  }
  BOOST_TEST((f.get_concrete_function(a)->cuda_graph()->stage() == Stage::replay));
  BOOST_TEST(f.get_concrete_function(a)->cuda_graph()->launches() == 0);  // the fake's capture ran itself
  BOOST_TEST(f(a).to_vector() == (std::vector<float>{5, 25}), boost::test_tools::per_element());
  BOOST_TEST(f.get_concrete_function(a)->cuda_graph()->launches() == 1);
}

// --- one graph over several GPUs (Note [CUDA-graph replay], "Several GPUs") -----------------------

namespace {
void use_fake_gpus(int gpus) {
  dt::test::fake_gpu_recorder().reset(gpus);
  dt::testing::reset_context();
}
/// A step across two GPUs: GPU 0's part, copied to GPU 1, where the second argument already is.
std::vector<dt::Tensor<float>> two_gpu_step(const dt::Tensor<float>& x0, const dt::Tensor<float>& x1) {
  dt::Tensor<float> a, b;
  {
    dt::DeviceScope gpu0("/GPU:0");
    a = dt::square(x0) - 1.0f;
  }
  {
    dt::DeviceScope gpu1("/GPU:1");
    b = dt::exp(a * 0.5f) + x1;
  }
  return {a * 2.0f, b};
}
}  // namespace

// The capture starts on GPU 0's stream, GPU 1's stream joins it and is joined back before it ends
// (the fake platform refuses a capture that leaves it unjoined, as CUDA does); each launch waits for
// GPU 1's queued work and GPU 1 then waits for the launch. The arguments' buffers are on their own
// GPUs. Every call equals the op-by-op function's.
BOOST_AUTO_TEST_CASE(one_graph_spans_the_gpus_a_function_runs_on) {
  use_fake_gpus(2);
  auto& recorder = dt::test::fake_gpu_recorder();
  const auto call_all = [](bool cuda_graph) {
    auto f = dt::function(two_gpu_step, {.name = "two_gpus", .cuda_graph = cuda_graph});
    std::vector<std::vector<float>> results;
    for (int i = 0; i < 5; ++i) {
      dt::Tensor<float> x0, x1;
      {
        dt::DeviceScope gpu0("/GPU:0");
        x0 = dt::constant<float>({0.5f * static_cast<float>(i), -1, 2});
      }
      {
        dt::DeviceScope gpu1("/GPU:1");
        x1 = dt::constant<float>({1, 2.0f * static_cast<float>(i), 3});
      }
      for (const auto& r : f(x0, x1)) results.push_back(r.to_vector());
    }
    return results;
  };
  const auto plain = call_all(false);
  const auto stream_of = [](const char* gpu) {
    dt::DeviceScope scope(gpu);
    return dt::constant<float>({1}).device_info().stream;
  };
  void* const stream0 = stream_of("/GPU:0");
  void* const stream1 = stream_of("/GPU:1");
  BOOST_TEST_REQUIRE(stream0 != stream1);
  recorder.reset(2);
  const auto replayed = call_all(true);
  BOOST_TEST_REQUIRE(replayed.size() == plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) BOOST_TEST(replayed[i] == plain[i], boost::test_tools::per_element());
  BOOST_TEST(recorder.captures == 1);
  BOOST_TEST(recorder.launches == 3);
  BOOST_TEST(log.count("CUDA graph") == 0);
  // Capture: fork, join. Three launches: join before, fork after.
  using Wait = std::pair<void*, void*>;
  const Wait fork{stream1, stream0}, join{stream0, stream1};
  BOOST_TEST((recorder.waits == std::vector<Wait>{fork, join, join, fork, join, fork, join, fork}));
  // x1's buffer in the graph is on GPU 1, where x1 is: the only copy between the GPUs is of GPU 0's
  // part, once per run (warm-up, capture, replays).
  const auto copies = [&](int from, int to) {
    return std::count_if(recorder.copies.begin(), recorder.copies.end(),
                         [&](const dt::test::FakeGpuCopy& c) { return c.src_ordinal == from && c.dst_ordinal == to; });
  };
  BOOST_TEST(copies(0, 1) == 5);
  BOOST_TEST(copies(1, 0) == 0);
}

// A GPU platform with graphs but without wait_for captures one GPU: a function across two runs op
// by op, and says so once.
BOOST_AUTO_TEST_CASE(a_platform_without_stream_ordering_captures_one_gpu) {
  static dt::GpuPlatform one_gpu_graphs = dt::test::fake_gpu_platform;  // outlives the fixture's reset
  one_gpu_graphs.wait_for = nullptr;
  dt::Context::global().register_gpu_platform(&one_gpu_graphs);
  use_fake_gpus(2);
  auto f = dt::function(two_gpu_step, {.name = "two_gpus", .cuda_graph = true});
  dt::Tensor<float> x0, x1;
  {
    dt::DeviceScope gpu0("/GPU:0");
    x0 = dt::constant<float>({1, 2});
    x1 = dt::constant<float>({3, 4});  // copied to GPU 1 by the graph's run
  }
  for (int i = 0; i < 3; ++i)
    BOOST_TEST(f(x0, x1)[1].to_vector() == two_gpu_step(x0, x1)[1].to_vector(), boost::test_tools::per_element());
  BOOST_TEST(log.count("is not replayed as a CUDA graph: it runs on 2 GPUs, and the GPU platform 'fake' captures "
                       "graphs of one GPU. It runs op by op.") == 1);
  BOOST_TEST(dt::test::fake_gpu_recorder().captures == 0);
  use_fake_gpus(1);  // before the platform goes
  dt::Context::global().register_gpu_platform(&dt::test::fake_gpu_platform);
}

// Note [One copy per value and device]: a value several nodes read on another device is copied
// there once per run, and the copy lives until the last of them has run. Here a host batch is read
// by two MatMuls on GPU 0, their products by two on GPU 1, and those products by two on the host.
BOOST_AUTO_TEST_CASE(a_value_read_on_another_device_is_copied_there_once_per_run) {
  use_fake_gpus(2);
  auto& recorder = dt::test::fake_gpu_recorder();
  dt::Tensor<float> x, w1, w2;
  {
    dt::DeviceScope host("/cpu:0");
    x = dt::constant<float>({1, -2, 0.5f, 3, 0.25f, -1}, {2, 3});
  }
  {
    dt::DeviceScope gpu0("/GPU:0");
    w1 = dt::constant<float>({0.5f, 1, -1, 2, 0.25f, -0.5f}, {3, 2});
    w2 = dt::constant<float>({1, 0, 2, -1, -0.5f, 1.5f}, {3, 2});
  }
  const auto step = [&](const dt::Tensor<float>& in) -> std::vector<dt::Tensor<float>> {
    dt::Tensor<float> a, b, p, q;
    {
      dt::DeviceScope gpu0("/GPU:0");
      a = dt::matmul(in, w1);
      b = dt::matmul(in, w2);
    }
    {
      dt::DeviceScope gpu1("/GPU:1");
      p = dt::matmul(a, b, true, false);
      q = dt::matmul(b, a, true, false);
    }
    dt::DeviceScope host("/cpu:0");
    return {dt::matmul(p, q), dt::matmul(q, p)};
  };
  auto f = dt::function(step, {.name = "three_devices"});
  (void)f(x);  // traced
  const auto copies_in = [&](auto&& call) {
    const std::size_t before = recorder.copies.size();
    call();
    std::map<std::pair<int, int>, int> out;  // (from, to): copies
    for (std::size_t i = before; i < recorder.copies.size(); ++i)
      ++out[{recorder.copies[i].src_ordinal, recorder.copies[i].dst_ordinal}];
    return out;
  };
  std::vector<dt::Tensor<float>> results;
  const auto copies = copies_in([&] {
    for (int i = 0; i < 3; ++i) results = f(x);
  });
  // Three runs: x to GPU 0 once a run, a and b to GPU 1, p and q to the host (a read each
  // would be 6, 12 and 12).
  BOOST_TEST((copies == std::map<std::pair<int, int>, int>{{{-1, 0}, 3}, {{0, 1}, 6}, {{1, -1}, 6}}));
  const auto eager = step(x);
  for (std::size_t i = 0; i < 2; ++i)
    BOOST_TEST(results[i].to_vector() == eager[i].to_vector(), boost::test_tools::per_element());
  use_fake_gpus(1);
}

// An op of host code (ops::HostFunction) runs that code at every call: a graph records it only
// when its kind says the code just queues device work (OpTraits::capturable), and then only the
// GPUs the graph spans: work on another GPU would run at capture and never again.
namespace {
struct TwiceOnHost {
  static constexpr std::string_view name = "Twice";
  static constexpr dt::ops::OpTraits traits{.communication = true, .capturable = false, .any_thread = false};
};
struct TwiceOnDevice {
  static constexpr std::string_view name = "Twice";
  static constexpr dt::ops::OpTraits traits{.communication = true, .any_thread = false};
};
}  // namespace
BOOST_AUTO_TEST_CASE(host_code_ops_are_recorded_only_when_capturable) {
  use_fake_gpus(2);
  int host_runs = 0;
  const auto make = [&]<class Kind>(Kind, const char* where) {
    return dt::function(
        [&host_runs, where](const dt::Tensor<float>& x) {
          const std::vector<dt::AnyTensor> in{dt::AnyTensor(x * 3.0f)};
          const auto out = dt::run_op<dt::ops::HostFunction<Kind>>(
              {[&host_runs, where](std::span<const dt::AnyTensor> v) {
                 ++host_runs;
                 dt::DeviceScope scope(where);
                 return std::vector<dt::AnyTensor>{dt::AnyTensor(v[0].as<float>() * 2.0f)};
               },
               {{dt::DType::DT_FLOAT, x.shape()}}},
              in);
          return out.front().template as<float>() + 1.0f;
        },
        {.name = "twice", .cuda_graph = true});
  };
  dt::DeviceScope gpu0("/GPU:0");
  const auto x = dt::constant<float>({1, -2});
  auto host_code = make(TwiceOnHost{}, "/GPU:0");
  auto device_work = make(TwiceOnDevice{}, "/GPU:0");
  auto elsewhere = make(TwiceOnDevice{}, "/GPU:1");
  for (int i = 0; i < 4; ++i) {
    BOOST_TEST(host_code(x).to_vector() == (std::vector<float>{7, -11}), boost::test_tools::per_element());
    BOOST_TEST(device_work(x).to_vector() == (std::vector<float>{7, -11}), boost::test_tools::per_element());
    BOOST_TEST(elsewhere(x).to_vector() == (std::vector<float>{7, -11}), boost::test_tools::per_element());
  }
  BOOST_TEST(log.count("is not replayed as a CUDA graph: node 'Twice' (Twice) runs host code at every call, which a "
                       "graph cannot record. It runs op by op.") == 1);
  BOOST_TEST(log.count("is not replayed as a CUDA graph: the capture failed: it allocated on "
                       "/job:localhost/replica:0/task:0/device:GPU:1, a GPU outside the graph. It runs op by op.") ==
             1);
  BOOST_TEST((device_work.get_concrete_function(x)->cuda_graph()->stage() == Stage::replay));
  BOOST_TEST((elsewhere.get_concrete_function(x)->cuda_graph()->stage() == Stage::op_by_op));
  BOOST_TEST(dt::test::fake_gpu_recorder().captures == 2);  // the one that allocated elsewhere, dropped
  BOOST_TEST(host_runs == 4 + 4 + 5);  // the fake replays by running the host code again; one failed capture
}

namespace {
/// Host code that says it only queues device work, though it reads the host (a test's lie).
struct HostRead {
  static constexpr std::string_view name = "HostRead";
  static constexpr dt::ops::OpTraits traits{.communication = true, .any_thread = false};
};
}  // namespace
// A capture that fails after the step's host code ran (here a host read after the update): CUDA
// records without running, so the update never ran, and the host's count of it is undone before
// the op-by-op run counts it (Capture::undo). The platform here says so, as CUDA does, though the
// fake ran the work.
BOOST_AUTO_TEST_CASE(a_failed_capture_undoes_the_host_count_of_its_step) {
  static dt::GpuPlatform records_only = dt::test::fake_gpu_platform;  // outlives the fixture's reset
  records_only.end_capture = [](int ordinal, void* stream, void* earlier, void (*host_work)(void*), void* context,
                                bool* ran, std::string* error) noexcept -> void* {
    void* graph = dt::test::fake_gpu_platform.end_capture(ordinal, stream, earlier, host_work, context, ran, error);
    *ran = false;
    return graph;
  };
  dt::Context::global().register_gpu_platform(&records_only);
  use_fake_gpus(1);
  {
    dt::DeviceScope gpu("/GPU:0");
    dt::Variable<float> w(dt::constant<float>({0.5f, -1}));
    const dt::nn::optimizers::SGD sgd{.learning_rate = 0.1, .momentum = 0.9};
    auto step = dt::function(
        [&](const dt::Tensor<float>& g) {
          sgd.apply_gradients({g}, {w});
          const std::vector<dt::AnyTensor> in{dt::AnyTensor(w.value())};
          return dt::run_op<dt::ops::HostFunction<HostRead>>(
                     {[](std::span<const dt::AnyTensor> v) {
                        const float first = v[0].as<float>().to_vector()[0];  // a host read
                        return std::vector<dt::AnyTensor>{dt::AnyTensor(dt::scalar<float>(first))};
                      },
                      {{dt::DType::DT_FLOAT, dt::Shape{}}}},
                     in)
              .front()
              .as<float>();
        },
        {.name = "reads_back", .cuda_graph = true});
    for (int i = 0; i < 3; ++i) (void)step(dt::constant<float>({1, 1}));
    BOOST_TEST(sgd.iterations() == 3);
    BOOST_TEST(log.count("is not replayed as a CUDA graph: the capture failed") == 1);
  }
  use_fake_gpus(1);  // before the platform goes
  dt::Context::global().register_gpu_platform(&dt::test::fake_gpu_platform);
}

BOOST_AUTO_TEST_SUITE_END()
