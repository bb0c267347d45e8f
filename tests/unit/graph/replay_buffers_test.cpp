// Replays reuse small buffers (Note [Replays reuse small buffers], graph/executor.hpp): a kernel
// writes into the previous run's buffer only when nothing else holds it. These tests hold on to
// every kind of reference a buffer can have (a result, a variable's value, a tape's record, a
// session's variable) and check that the next replay leaves it alone; large values are still
// freed at their last use.
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

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
