// MirroredStrategy: construction, run (concurrency, contexts, errors), reduce, dataset splitting,
// compute_average_loss, scopes.
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "distribute_test_support.hpp"

namespace dt = devtensor;
namespace ds = dt::distribute;
using dt::test::virtual_cpus;

namespace {
constexpr const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr const char* kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
}  // namespace

BOOST_FIXTURE_TEST_SUITE(mirrored_strategy, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(devices_are_canonical_and_ordered) {
  virtual_cpus(3);
  {
    ds::MirroredStrategy hidden({"/cpu:0"}, ds::ReductionToOneDevice{});
    BOOST_TEST(log.count("Using MirroredStrategy") == 0u);  // a Python INFO line: hidden by default
  }
  dt::logging::set_verbosity(dt::LogSeverity::info);  // tf.get_logger().setLevel("INFO")
  ds::MirroredStrategy strategy({"/cpu:2", "/CPU:0"}, ds::ReductionToOneDevice{});
  BOOST_TEST(strategy.num_replicas_in_sync() == 2);
  BOOST_TEST(strategy.devices() == std::vector<std::string>({"/job:localhost/replica:0/task:0/device:CPU:2", kCpu0}),
             boost::test_tools::per_element());
  BOOST_TEST(log.count("Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:CPU:2', "
                       "'/job:localhost/replica:0/task:0/device:CPU:0')") == 1u);
  ds::MirroredStrategy one({"/cpu:1"}, ds::ReductionToOneDevice{});
  BOOST_TEST(log.count("Using MirroredStrategy with devices ('/job:localhost/replica:0/task:0/device:CPU:1',)") == 1u);
}

BOOST_AUTO_TEST_CASE(default_devices_are_the_gpus_else_the_cpus) {
  virtual_cpus(2);
  ds::MirroredStrategy cpus;
  BOOST_TEST(cpus.devices() == std::vector<std::string>({kCpu0, kCpu1}), boost::test_tools::per_element());
  // TensorFlow 2.21: all CPUs → CollectiveAllReduce with RING.
  BOOST_TEST(cpus.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  BOOST_TEST(cpus.cross_device_ops().chosen_description() == "CollectiveAllReduce (RING)");
  BOOST_TEST((cpus.cross_device_ops().collective_options()->implementation() == ds::CommunicationImplementation::RING));

  dt::testing::reset_context();
  dt::config::set_simulated_gpus(2);
  ds::MirroredStrategy gpus;
  BOOST_TEST(gpus.devices() == std::vector<std::string>({"/job:localhost/replica:0/task:0/device:GPU:0",
                                                         "/job:localhost/replica:0/task:0/device:GPU:1"}),
             boost::test_tools::per_element());
  // Physical (simulated) GPUs → CollectiveAllReduce with AUTO, which is the ring without NCCL.
  BOOST_TEST(gpus.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  BOOST_TEST((gpus.cross_device_ops().collective_options()->implementation() == ds::CommunicationImplementation::AUTO));
  // CPUs mixed with GPUs → ReductionToOneDevice.
  ds::MirroredStrategy mixed({"/cpu:0", "/gpu:0"});
  BOOST_TEST(mixed.cross_device_ops().chosen_name() == "ReductionToOneDevice");
  BOOST_TEST(mixed.cross_device_ops().chosen_description() == "ReductionToOneDevice");
}

BOOST_AUTO_TEST_CASE(bad_device_lists_are_rejected) {
  virtual_cpus(2);
  DEVTENSOR_CHECK_THROW_WITH(ds::MirroredStrategy({"/cpu:0", "/device:CPU:0"}), dt::InvalidArgumentError,
                             "No duplicates allowed in `devices` argument");
  DEVTENSOR_CHECK_THROW_WITH(ds::MirroredStrategy({"/job:worker/replica:0/task:0/device:CPU:0"}),
                             dt::InvalidArgumentError, "Local device should have only 'localhost' in the job field");
  DEVTENSOR_CHECK_THROW_WITH(ds::MirroredStrategy({"/cpu:7"}), dt::InvalidArgumentError,
                             "'/cpu:7' (/job:localhost/replica:0/task:0/device:CPU:7) is not a logical device. "
                             "Available: /job:localhost/replica:0/task:0/device:CPU:0");
  // A full name is printed once.
  DEVTENSOR_CHECK_THROW_WITH(ds::MirroredStrategy({"/job:localhost/replica:0/task:0/device:GPU:0"}),
                             dt::InvalidArgumentError,
                             "'/job:localhost/replica:0/task:0/device:GPU:0' is not a logical device. Available:");
  dt::test::ScopedEnv tf_config("TF_CONFIG",
                                R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}})");
  DEVTENSOR_CHECK_THROW_WITH(ds::MirroredStrategy(), dt::UnimplementedError,
                             "In-graph multi-worker training with `MirroredStrategy` is not supported in eager mode.");
}

BOOST_AUTO_TEST_CASE(run_calls_every_replica_concurrently_on_its_device) {
  const auto names = virtual_cpus(4);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  // Each replica waits for all the others: this finishes only if the replicas run at the same time.
  std::atomic<int> arrived{0};
  auto result = strategy.run([&] {
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    const auto ctx = ds::get_replica_context();
    const auto id = ctx ? ctx->replica_id_in_sync_group : -1;
    return std::tuple{arrived.load(), id, dt::scalar<float>(1).device(), ctx ? ctx->num_replicas_in_sync : 0};
  });
  BOOST_TEST_REQUIRE(result.size() == 4u);
  for (int r = 0; r < 4; ++r) {
    const auto& [seen, id, device, n] = result[static_cast<std::size_t>(r)];
    BOOST_TEST(seen == 4);
    BOOST_TEST(id == r);
    BOOST_TEST(device == "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(r));
    BOOST_TEST(n == 4);
  }
  BOOST_TEST(!ds::get_replica_context().has_value());
  BOOST_TEST(ds::in_cross_replica_context());
}

BOOST_AUTO_TEST_CASE(run_unwraps_distributed_arguments) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  ds::PerReplica<int> ids{{10, 20}};
  ds::Mirrored<int> same{{5, 5}};
  auto out = strategy.run([](int id, int m, double plain) { return id + m + static_cast<int>(plain); }, ids, same, 1.0);
  BOOST_TEST(out.values == std::vector<int>({16, 26}), boost::test_tools::per_element());
  int calls = 0;
  std::mutex m;
  strategy.run([&] {
    std::lock_guard lock(m);
    ++calls;
  });
  BOOST_TEST(calls == 2);
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.run([](int x) { return x; }, ds::PerReplica<int>{{1, 2, 3}}),
                             dt::InvalidArgumentError, "has 3 values for 2 replicas");
}

BOOST_AUTO_TEST_CASE(an_error_in_one_replica_reaches_the_caller_and_the_strategy_stays_usable) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  std::atomic<int> finished{0};
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] {
    const auto id = ds::get_replica_context()->replica_id_in_sync_group;
    if (id == 1) throw dt::InvalidArgumentError("replica 1 failed");
    finished.fetch_add(1);
  }),
                             dt::InvalidArgumentError, "replica 1 failed");
  BOOST_TEST(finished.load() == 2);  // the other replicas ran to completion
  auto again = strategy.run([] { return ds::get_replica_context()->replica_id_in_sync_group; });
  BOOST_TEST(again.values == std::vector<int>({0, 1, 2}), boost::test_tools::per_element());
  // Cross-replica methods are refused inside a replica.
  DEVTENSOR_CHECK_THROW_WITH(strategy.run([&] { (void)strategy.run([] { return 0; }); }), dt::FailedPreconditionError,
                             "requires cross-replica context");
}

BOOST_AUTO_TEST_CASE(reduce_sum_and_mean_on_2_3_and_4_replicas) {
  const auto names = virtual_cpus(4);
  for (std::size_t n : {2u, 3u, 4u}) {
    ds::MirroredStrategy strategy(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(n)),
                                  ds::ReductionToOneDevice{});
    auto values = strategy.run([] {
      const auto id = static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group);
      return dt::constant<float>({id, 10 * id});
    });
    const float s = static_cast<float>(n * (n - 1) / 2);
    auto sum = strategy.reduce(ds::ReduceOp::SUM, values, std::nullopt);
    BOOST_TEST(sum.to_vector() == std::vector<float>({s, 10 * s}), boost::test_tools::per_element());
    BOOST_TEST(sum.device() == kCpu0);
    auto mean = strategy.reduce("mean", values, std::nullopt);
    BOOST_TEST(mean.to_vector() == std::vector<float>({s / static_cast<float>(n), 10 * s / static_cast<float>(n)}),
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(reduce_with_an_axis_weighs_uneven_batches_by_their_counts) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  ds::PerReplica<dt::Tensor<float>> batches{{dt::constant<float>({1, 2, 3}), dt::constant<float>({10})}};
  BOOST_TEST(strategy.reduce(ds::ReduceOp::MEAN, batches, 0).item() == 4.0f);  // 16 / 4, not (2 + 10) / 2
  BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, batches, 0).item() == 16.0f);
  BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, batches, -1).item() == 16.0f);
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.reduce(ds::ReduceOp::SUM, batches, 1), dt::InvalidArgumentError,
                             "`axis` = 1 out of range for `value` with rank 1");
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.reduce("max", batches, 0), dt::InvalidArgumentError,
                             "Expected `reduce_op` to be a `tf.distribute.ReduceOp`, not: max");
  // Non-distributed values: MEAN passes through; SUM over several replicas is an error.
  BOOST_TEST(strategy.reduce(ds::ReduceOp::MEAN, dt::scalar<float>(3), std::nullopt).item() == 3.0f);
  DEVTENSOR_CHECK_THROW_WITH((void)strategy.reduce(ds::ReduceOp::SUM, dt::scalar<float>(3), std::nullopt),
                             dt::InvalidArgumentError, "cannot be reduced with the given reduce op ReduceOp.SUM.");
  // The result lives on the current device.
  dt::DeviceScope scope("/cpu:1");
  BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, batches, 0).device() == kCpu1);
}

BOOST_AUTO_TEST_CASE(distributed_datasets_split_each_global_batch) {
  const auto names = virtual_cpus(3);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  auto data = dt::data::Dataset<float>::from_tensor_slices(dt::test::iota(15)).batch(10);  // 10, then 5
  std::vector<std::vector<std::int64_t>> sizes;
  std::vector<float> order;
  for (const auto& per_replica : strategy.experimental_distribute_dataset(data)) {
    std::vector<std::int64_t> step;
    for (std::size_t r = 0; r < 3; ++r) {
      const auto& [piece] = per_replica[r];
      BOOST_TEST(piece.device() == "/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(r));
      step.push_back(piece.shape()[0]);
      for (float v : piece.to_vector()) order.push_back(v);
    }
    sizes.push_back(step);
  }
  BOOST_TEST_REQUIRE(sizes.size() == 2u);
  BOOST_TEST(sizes[0] == std::vector<std::int64_t>({4, 3, 3}), boost::test_tools::per_element());
  BOOST_TEST(sizes[1] == std::vector<std::int64_t>({4, 1, 0}), boost::test_tools::per_element());  // runs out in order
  BOOST_TEST(order == dt::test::iota(15).to_vector(),
             boost::test_tools::per_element());  // every element once, in order
  BOOST_TEST(ds::batch_sizes_for_worker(10, 2, 2, 1) == std::vector<std::int64_t>({2, 2, 3, 3}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(compute_average_loss_divides_by_the_global_batch) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names, ds::ReductionToOneDevice{});
  auto per_replica = strategy.run([] {
    return dt::nn::compute_average_loss(dt::constant<float>({1, 2, 3}));  // default global batch: 3 x 2
  });
  BOOST_TEST(strategy.reduce(ds::ReduceOp::SUM, per_replica, std::nullopt).item() == 2.0f);  // 12 / 6
  BOOST_TEST(dt::nn::compute_average_loss(dt::constant<float>({1, 2, 3}), 4).item() == 1.5f);
  BOOST_TEST(dt::nn::compute_average_loss(dt::constant<float>({1, 2, 3}), 0).item() == 0.0f);
  DEVTENSOR_CHECK_THROW_WITH((void)dt::nn::compute_average_loss(dt::scalar<float>(1), 4), dt::InvalidArgumentError,
                             "Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1");
  auto guard = strategy.scope();
  DEVTENSOR_CHECK_THROW_WITH((void)dt::nn::compute_average_loss(dt::constant<float>({1})), dt::FailedPreconditionError,
                             "You are calling `compute_average_loss` in cross replica context");
  BOOST_TEST(dt::nn::scale_regularization_loss(dt::constant<float>({4, 2})).item() == 6.0f);
}

BOOST_AUTO_TEST_CASE(scopes_nest_only_for_the_same_strategy) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy a(names, ds::ReductionToOneDevice{});
  ds::MirroredStrategy b(names, ds::ReductionToOneDevice{});
  auto outer = a.scope();
  {
    auto again = a.scope();  // the same strategy: fine
  }
  DEVTENSOR_CHECK_THROW_WITH((void)b.scope(), dt::InvalidArgumentError,
                             "Mixing different tf.distribute.Strategy objects");
}

BOOST_AUTO_TEST_SUITE_END()
