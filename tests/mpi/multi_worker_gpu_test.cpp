// MultiWorkerMirroredStrategy on real GPUs, with the real NCCL kernel between processes. CTest
// runs it under `mpiexec -n 2`; without a CUDA device every rank exits 77 and CTest reports it
// Skipped. What runs depends on the machine, and both branches are checked:
// - a GPU for each worker on this host: each worker keeps its own (set_visible_devices by local
//   rank, TensorFlow's way), NCCL joins them, sums and Keras fit match one process;
// - fewer GPUs than workers (the lent one-H100 machine): the workers share a GPU, which NCCL does
//   not allow (one rank per GPU; NCCL's documentation warns that it "may lead to hangs"), so
//   asking for NCCL is refused on every worker with the way out, and AUTO sums through MPI.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp"
#include "devtensor_test.hpp"
#include "fit_equivalence.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;
namespace nn = devtensor::nn;

namespace {

struct Launch {
  int rank = 0, size = 1, local_rank = 0;
  Launch() {
    if (const auto launch = ds::cluster_resolver::MpiLaunch::from_environment()) {
      rank = launch->rank;
      size = launch->size;
      local_rank = launch->local_rank;
    }
  }
};

/// A fresh context in which this worker sees GPU <local rank> only when there is one per worker.
/// Returns whether it does. Workers sharing a GPU grow their memory as they need it (TensorFlow's
/// advice for processes that share one): by default the first worker to allocate would take
/// almost all of it, and the other's first allocation (or NCCL's) would fail.
bool own_gpu_per_worker(const Launch& launch) {
  dt::testing::reset_context();
  const auto gpus = dt::config::list_physical_devices("GPU");
  if (gpus.size() < static_cast<std::size_t>(launch.size)) {
    for (const auto& gpu : gpus) dt::config::experimental::set_memory_growth(gpu, true);
    return false;
  }
  dt::config::set_visible_devices(gpus.at(static_cast<std::size_t>(launch.local_rank)), "GPU");
  return true;
}

ds::CommunicationOptions communication(ds::CommunicationImplementation implementation) {
  return ds::CommunicationOptions(0, 60.0, implementation);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(multi_worker_gpu)

BOOST_AUTO_TEST_CASE(nccl_between_workers_or_a_clear_refusal) {
  const Launch launch;
  const bool own = own_gpu_per_worker(launch);
  dt::test::ScopedEnv none("TF_CONFIG", std::nullopt);
  BOOST_TEST_MESSAGE("worker " << launch.rank << " of " << launch.size
                               << (own ? ": a GPU of its own" : ": GPUs shared"));
  if (!own && launch.size > 1) {
    DEVTENSOR_CHECK_THROW_WITH(ds::MultiWorkerMirroredStrategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                                               communication(ds::CommunicationImplementation::NCCL)),
                               dt::InvalidArgumentError,
                               "and NCCL allows one rank per GPU. Give each worker its own GPU");
  }
  ds::MultiWorkerMirroredStrategy strategy(
      ds::cluster_resolver::TFConfigClusterResolver(),
      communication(own ? ds::CommunicationImplementation::NCCL : ds::CommunicationImplementation::AUTO));
  BOOST_TEST(strategy.nccl_between_workers() == (own && launch.size > 1));
  const int replicas = strategy.num_replicas_in_sync();
  const auto ids = strategy.run(
      [] { return dt::fill<float>({1000}, static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group)); });
  const auto big = strategy.run([] { return dt::fill<float>({3, 1 << 16}, 1.0f); });
  const auto sums = strategy.batch_reduce_to(ds::ReduceOp::SUM, std::vector{ids, big});
  const auto means = strategy.batch_reduce_to(ds::ReduceOp::MEAN, std::vector{ids, big});
  const float id_sum = static_cast<float>(replicas * (replicas - 1) / 2);
  for (const auto& component : sums[0].values) {
    BOOST_TEST(component.device_info().is_gpu);
    for (float v : component.to_vector()) BOOST_TEST_REQUIRE(v == id_sum);
  }
  for (float v : sums[1].primary().to_vector()) BOOST_TEST_REQUIRE(v == static_cast<float>(replicas));
  for (float v : means[0].primary().to_vector())
    BOOST_TEST_REQUIRE(v == id_sum / static_cast<float>(replicas), boost::test_tools::tolerance(1e-6f));
}

// Keras fit across the workers' GPUs gives the weights of one process training on its CPU.
BOOST_AUTO_TEST_CASE(fit_across_workers_matches_one_process) {
  const Launch launch;
  const bool own = own_gpu_per_worker(launch);
  dt::test::ScopedEnv none("TF_CONFIG", std::nullopt);
  ds::MultiWorkerMirroredStrategy strategy(ds::cluster_resolver::TFConfigClusterResolver(),
                                           communication(ds::CommunicationImplementation::AUTO));
  BOOST_TEST(strategy.nccl_between_workers() == (own && launch.size > 1));
  (void)dt::test::check_fit_matches_one_process(
      strategy, {.rows = 64,
                 .batch = 16,
                 .epochs = 2,
                 .features = 4,
                 .hidden = 16,
                 .optimizer = [] { return nn::optimizers::Adam{.learning_rate = 0.01}; },
                 .weight_tolerance = 1e-4f});
}

BOOST_AUTO_TEST_SUITE_END()
