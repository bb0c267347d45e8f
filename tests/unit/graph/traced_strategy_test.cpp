// A distributed train step traced once for the whole loop (seed 001's distributed_train_step, as
// TensorFlow 2.21 traces it): strategy.run, batch_reduce_to, apply_gradients on mirrored variables
// and strategy.reduce inside dt::function give the eager loop's losses and weights.
#include <boost/test/unit_test.hpp>

#include <cstddef>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "seed_loop.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

namespace {

void check_traced_equals_eager(auto ops) {
  ds::MirroredStrategy strategy({}, ops);
  const auto eager = dt::test::run_seed_loop(strategy, false);
  const auto traced = dt::test::run_seed_loop(strategy, true);
  BOOST_TEST(traced.traces == 1);  // once for the whole loop
  BOOST_TEST_REQUIRE(traced.losses.size() == eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i) BOOST_TEST(traced.losses[i] == eager.losses[i], boost::test_tools::tolerance(1e-6f));
  for (std::size_t i = 0; i < eager.weights.size(); ++i) BOOST_TEST(traced.weights[i] == eager.weights[i], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(traced.losses.back() < traced.losses.front());
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(traced_strategy, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(three_virtual_cpus) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}});
  check_traced_equals_eager(ds::ReductionToOneDevice{});
}

BOOST_AUTO_TEST_CASE(two_simulated_gpus) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  check_traced_equals_eager(ds::HierarchicalCopyAllReduce{.num_packs = 1});
}

BOOST_AUTO_TEST_SUITE_END()
