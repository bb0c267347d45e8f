// Cross-device ops on 1–5 devices: ReductionToOneDevice, HierarchicalCopyAllReduce (every device
// count, packing), NcclAllReduce's validation, the automatic choice, and their errors.
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "distribute_test_support.hpp"

namespace dt = devtensor;
namespace ds = dt::distribute;
using dt::test::virtual_cpus;

namespace {

/// Component d of value k: k * 100 + d + [0, 1, ..., size), on device d.
ds::PerReplica<dt::Tensor<float>> values_on(int devices, int k, std::int64_t size) {
  ds::PerReplica<dt::Tensor<float>> out;
  for (int d = 0; d < devices; ++d) {
    dt::DeviceScope scope("/cpu:" + std::to_string(d));
    out.values.push_back(dt::test::iota(size, 1.0f, static_cast<float>(k * 100 + d)));
  }
  return out;
}
std::vector<float> expected_sum(int devices, int k, std::int64_t size, bool mean) {
  std::vector<float> out(static_cast<std::size_t>(size), 0.0f);
  for (int d = 0; d < devices; ++d)
    for (std::int64_t i = 0; i < size; ++i) out[static_cast<std::size_t>(i)] += static_cast<float>(i + k * 100 + d);
  if (mean)
    for (auto& v : out) v /= static_cast<float>(devices);
  return out;
}
/// The first n logical devices.
ds::Destinations first(int n) {
  std::vector<const dt::Device*> out;
  const auto& devices = dt::Context::global().devices();
  for (int i = 0; i < n; ++i) out.push_back(&devices[static_cast<std::size_t>(i)]);
  return out;
}
using dt::test::devices_at;

}  // namespace

BOOST_FIXTURE_TEST_SUITE(cross_device_ops, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(reduction_to_one_device_sums_then_broadcasts) {
  virtual_cpus(4);
  dt::logging::set_verbosity(dt::LogSeverity::info);  // the "Reduce to" lines are Python INFO lines
  for (int n : {2, 3, 4})
    for (bool mean : {false, true}) {
      auto value = values_on(n, 1, 5);
      auto out = ds::ReductionToOneDevice{}.reduce(mean ? ds::ReduceOp::MEAN : ds::ReduceOp::SUM, value, first(n));
      BOOST_TEST_REQUIRE(out.size() == static_cast<std::size_t>(n));
      for (int d = 0; d < n; ++d) {
        BOOST_TEST(out[static_cast<std::size_t>(d)].device_index() == d);
        BOOST_TEST(out[static_cast<std::size_t>(d)].to_vector() == expected_sum(n, 1, 5, mean),
                   boost::test_tools::per_element());
      }
    }
  BOOST_TEST(
      log.count("Reduce to /job:localhost/replica:0/task:0/device:CPU:0 then broadcast to "
                "('/job:localhost/replica:0/task:0/device:CPU:0', '/job:localhost/replica:0/task:0/device:CPU:1').") ==
      2u);
  auto to_cpu3 = ds::ReductionToOneDevice{.reduce_to_device = "/cpu:3"}.reduce(ds::ReduceOp::SUM, values_on(2, 0, 2),
                                                                               std::vector<std::string>{"/cpu:1"});
  BOOST_TEST(to_cpu3.size() == 1u);
  BOOST_TEST(to_cpu3[0].device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(log.count("Reduce to /job:localhost/replica:0/task:0/device:CPU:3 then broadcast to "
                       "('/job:localhost/replica:0/task:0/device:CPU:1',).") == 1u);  // a 1-tuple
}

BOOST_AUTO_TEST_CASE(distributed_values_print_as_tensorflow) {
  virtual_cpus(2);
  const auto value = values_on(2, 0, 2);
  std::ostringstream os;
  os << value;
  BOOST_TEST(os.str() ==
             "PerReplica:{\n  0: tf.Tensor([0. 1.], shape=(2,), dtype=float32),\n"
             "  1: tf.Tensor([1. 2.], shape=(2,), dtype=float32)\n}");
  std::ostringstream mirrored;
  mirrored << ds::Mirrored<dt::Tensor<std::int32_t>>{{dt::scalar<std::int32_t>(3)}};
  BOOST_TEST(mirrored.str() == "Mirrored:{\n  0: tf.Tensor(3, shape=(), dtype=int32)\n}");
}

BOOST_AUTO_TEST_CASE(reduction_to_one_device_shortcut_and_errors) {
  virtual_cpus(2);
  auto single = values_on(1, 0, 3);
  auto same = ds::ReductionToOneDevice{}.reduce(ds::ReduceOp::SUM, single, devices_at({0}));
  BOOST_TEST(same[0].storage() == single[0].storage());  // returned unchanged
  DEVTENSOR_CHECK_THROW_WITH((void)ds::ReductionToOneDevice{}.reduce(ds::ReduceOp::SUM, single, devices_at({})),
                             dt::InvalidArgumentError, "destinations can not be empty");
  ds::PerReplica<dt::Tensor<float>> ragged{{dt::constant<float>({1}), dt::constant<float>({1, 2})}};
  DEVTENSOR_CHECK_THROW_WITH((void)ds::ReductionToOneDevice{}.reduce(ds::ReduceOp::SUM, ragged, first(2)),
                             dt::InvalidArgumentError, "must have equal shapes");
  auto b = ds::ReductionToOneDevice{}.broadcast(dt::constant<float>({7}), std::vector<std::string>{"/cpu:1", "/cpu:0"});
  BOOST_TEST(b[0].device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(b[1].to_vector() == std::vector<float>({7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(hierarchical_copy_includes_every_device_for_every_count) {
  virtual_cpus(5);
  dt::logging::set_verbosity(dt::LogSeverity::info);
  for (int n = 1; n <= 5; ++n)
    for (std::int64_t packs : {0, 1, 2, 3})
      for (bool mean : {false, true}) {
        BOOST_TEST_CONTEXT("devices " << n << ", num_packs " << packs << (mean ? ", MEAN" : ", SUM")) {
          // Three values of different sizes (7 elements in all: packs split 7 unevenly).
          std::vector<ds::PerReplica<dt::Tensor<float>>> batch{values_on(n, 0, 3), values_on(n, 1, 1),
                                                               values_on(n, 2, 3)};
          auto out = ds::HierarchicalCopyAllReduce{.num_packs = packs}.batch_reduce(
              mean ? ds::ReduceOp::MEAN : ds::ReduceOp::SUM, batch, first(n));
          BOOST_TEST_REQUIRE(out.size() == 3u);
          const std::int64_t sizes[] = {3, 1, 3};
          for (int k = 0; k < 3; ++k)
            for (int d = 0; d < n; ++d) {
              const auto& t = out[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
              BOOST_TEST(t.device_index() == d);
              BOOST_TEST(t.shape() == dt::Shape({sizes[k]}));
              BOOST_TEST(t.to_vector() == expected_sum(n, k, sizes[k], mean), boost::test_tools::per_element());
            }
        }
      }
  BOOST_TEST(log.count("batch_all_reduce: 3 all-reduces with algorithm = hierarchical_copy, num_packs = 0") >= 1u);
}

BOOST_AUTO_TEST_CASE(collective_all_reduce_rings_over_every_device_count) {
  virtual_cpus(5);
  dt::logging::set_verbosity(dt::LogSeverity::info);
  for (int n = 1; n <= 5; ++n)
    for (std::int64_t bytes_per_pack : {0, 8, 1000})
      for (bool mean : {false, true}) {
        BOOST_TEST_CONTEXT("devices " << n << ", bytes_per_pack " << bytes_per_pack << (mean ? ", MEAN" : ", SUM")) {
          // Sizes 3, 1, 3 and a 2^18-float value (1 MiB: each device's share on its own thread).
          std::vector<ds::PerReplica<dt::Tensor<float>>> batch{
              values_on(n, 0, 3), values_on(n, 1, 1), values_on(n, 2, 3), values_on(n, 3, std::int64_t{1} << 18)};
          const ds::CollectiveAllReduce collective{ds::CommunicationOptions{bytes_per_pack}};
          auto out = collective.batch_reduce(mean ? ds::ReduceOp::MEAN : ds::ReduceOp::SUM, batch, first(n));
          BOOST_TEST_REQUIRE(out.size() == 4u);
          const std::int64_t sizes[] = {3, 1, 3, std::int64_t{1} << 18};
          for (int k = 0; k < 4; ++k)
            for (int d = 0; d < n; ++d) {
              const auto& t = out[static_cast<std::size_t>(k)][static_cast<std::size_t>(d)];
              BOOST_TEST(t.device_index() == d);
              BOOST_TEST(t.shape() == dt::Shape({sizes[k]}));
              BOOST_TEST(t.to_vector() == expected_sum(n, k, sizes[k], mean), boost::test_tools::per_element());
            }
        }
      }
  // The log shows the first 10 collectives: one device needs none (TensorFlow's shortcut), so these
  // are the two-device ones. The list is reversed, then packed: 8-byte packs hold the 2^18 value,
  // then value 2 (12 bytes), then values 1 and 0 (4 bytes is not over 8, so value 0 joins).
  BOOST_TEST(log.count("num_devices = 1") == 0u);
  BOOST_TEST(
      log.count("Collective all_reduce tensors: 4 all_reduces, num_devices = 2, group_size = 2, implementation = "
                "CommunicationImplementation.RING, num_packs = 1") >= 1u);
  BOOST_TEST(
      log.count("Collective all_reduce tensors: 4 all_reduces, num_devices = 2, group_size = 2, implementation = "
                "CommunicationImplementation.RING, num_packs = 3") >= 1u);
}

BOOST_AUTO_TEST_CASE(collective_all_reduce_destinations_int32_and_simulated_gpus) {
  virtual_cpus(3);
  const ds::CollectiveAllReduce collective;
  BOOST_TEST(ds::CollectiveAllReduce::name == "CollectiveAllReduce");
  // Other destinations: the components on them, else a copy of the primary.
  const auto elsewhere = collective.reduce(ds::ReduceOp::SUM, values_on(2, 0, 4), devices_at({2, 1}));
  BOOST_TEST_REQUIRE(elsewhere.size() == 2u);
  BOOST_TEST(elsewhere[0].device_index() == 2);
  BOOST_TEST(elsewhere[1].device_index() == 1);
  BOOST_TEST(elsewhere[0].to_vector() == expected_sum(2, 0, 4, false), boost::test_tools::per_element());
  // int32 goes through ReductionToOneDevice, as in TensorFlow.
  dt::logging::set_verbosity(dt::LogSeverity::info);
  ds::PerReplica<dt::Tensor<std::int32_t>> ints;
  for (int d = 0; d < 2; ++d) {
    dt::DeviceScope scope("/cpu:" + std::to_string(d));
    ints.values.push_back(dt::constant<std::int32_t>({d + 1, 10}));
  }
  const auto int_sum = collective.reduce(ds::ReduceOp::SUM, ints, devices_at({0, 1}));
  BOOST_TEST(int_sum[1].to_vector() == (std::vector<std::int32_t>{3, 20}), boost::test_tools::per_element());
  BOOST_TEST(log.count("Reduce to /job:localhost/replica:0/task:0/device:CPU:0 then broadcast to") == 1u);
  DEVTENSOR_CHECK_THROW_WITH((void)collective.reduce(ds::ReduceOp::SUM, values_on(2, 0, 4), devices_at({})),
                             dt::InvalidArgumentError, "destinations can not be empty");
  // Simulated GPUs: host memory, so the parallel ring; each GPU gets its own copy of the sum.
  dt::testing::reset_context();
  dt::config::set_simulated_gpus(3, std::int64_t{1} << 30);
  ds::MirroredStrategy strategy;
  const auto big = strategy.run([] {
    return dt::fill<float>({std::int64_t{1} << 19},
                           static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group));
  });
  const auto sum = strategy.reduce_to(ds::ReduceOp::SUM, big);
  for (std::size_t r = 0; r < 3; ++r) {
    BOOST_TEST(sum[r].device() == "/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(r));
    BOOST_TEST(sum[r].to_vector()[12345] == 3.0f);
  }
  BOOST_TEST(sum[0].data() != sum[1].data());
}

BOOST_AUTO_TEST_CASE(packing_puts_the_remainder_in_the_last_pack) {
  virtual_cpus(1);
  auto packs = ds::cdo_detail::pack(std::vector{dt::test::iota(3), dt::test::iota(4)}, 3);
  BOOST_TEST_REQUIRE(packs.size() == 3u);
  BOOST_TEST(packs[0].num_elements() == 2);
  BOOST_TEST(packs[1].num_elements() == 2);
  BOOST_TEST(packs[2].num_elements() == 3);
  auto back = ds::cdo_detail::unpack(packs, {dt::Shape({3}), dt::Shape({2, 2})});
  BOOST_TEST(back[1].shape() == dt::Shape({2, 2}));
  BOOST_TEST(back[1].to_vector() == dt::test::iota(4).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(all_reduce_falls_back_when_destinations_differ) {
  virtual_cpus(3);
  dt::logging::set_verbosity(dt::LogSeverity::info);
  auto value = values_on(2, 0, 2);
  auto out = ds::HierarchicalCopyAllReduce{}.reduce(ds::ReduceOp::SUM, value, devices_at({2}));
  BOOST_TEST(out.size() == 1u);
  BOOST_TEST(out[0].device_index() == 2);
  BOOST_TEST(out[0].to_vector() == expected_sum(2, 0, 2, false), boost::test_tools::per_element());
  BOOST_TEST(log.count("Reduce to /job:localhost/replica:0/task:0/device:CPU:2") == 1u);
}

BOOST_AUTO_TEST_CASE(num_packs_must_not_be_negative_and_nccl_needs_its_engine) {
  virtual_cpus(2);
  DEVTENSOR_CHECK_THROW_WITH((void)ds::HierarchicalCopyAllReduce{.num_packs = -1}.batch_reduce(
                                 ds::ReduceOp::SUM, std::vector{values_on(2, 0, 1)}, first(2)),
                             dt::InvalidArgumentError, "HierarchicalCopy requires num_packs >= 0, but -1 is specified");
  DEVTENSOR_CHECK_THROW_WITH((ds::MirroredStrategy({"/cpu:0"}, ds::NcclAllReduce{.num_packs = -2})),
                             dt::InvalidArgumentError, "NCCL all-reduce requires num_packs >= 0, but -2 is specified");
  BOOST_TEST(!ds::NcclAllReduce::available());
  DEVTENSOR_CHECK_THROW_WITH(
      (void)ds::NcclAllReduce{}.batch_reduce(ds::ReduceOp::SUM, std::vector{values_on(2, 0, 1)}, first(2)),
      dt::UnimplementedError, "Nccl kernel is not found");
}

BOOST_AUTO_TEST_CASE(the_all_reduce_family_shares_reduce_and_broadcast) {
  virtual_cpus(2);
  // A value already on its one destination comes back as is, for every member (no engine runs,
  // so NcclAllReduce answers too).
  const auto alone = values_on(1, 0, 3);
  const auto copy = ds::HierarchicalCopyAllReduce{}.reduce(ds::ReduceOp::SUM, alone, first(1));
  const auto nccl = ds::NcclAllReduce{}.reduce(ds::ReduceOp::MEAN, alone, std::vector<std::string>{"/cpu:0"});
  BOOST_TEST(copy[0].id() == alone.values[0].id());
  BOOST_TEST(nccl[0].id() == alone.values[0].id());
  // Destinations by name, for reduce and broadcast.
  const auto by_name = ds::HierarchicalCopyAllReduce{}.reduce(ds::ReduceOp::SUM, values_on(2, 1, 4),
                                                              std::vector<std::string>{"/cpu:0", "/cpu:1"});
  BOOST_TEST(by_name[1].to_vector() == expected_sum(2, 1, 4, false), boost::test_tools::per_element());
  const auto spread =
      ds::NcclAllReduce{}.broadcast(dt::constant<float>({1, 2}), std::vector<std::string>{"/cpu:1", "/cpu:0"});
  BOOST_TEST_REQUIRE(spread.size() == 2u);
  BOOST_TEST(spread[0].device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(spread[1].to_vector() == (std::vector<float>{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(ds::HierarchicalCopyAllReduce::name == "HierarchicalCopyAllReduce");
  BOOST_TEST(ds::NcclAllReduce::name == "NcclAllReduce");
}

BOOST_AUTO_TEST_CASE(the_automatic_choice_follows_tensorflow) {
  dt::config::set_simulated_gpus(1);
  auto gpu = dt::config::list_physical_devices("GPU")[0];
  dt::config::set_logical_device_configuration(gpu, {{.memory_limit_mb = 256}, {.memory_limit_mb = 256}});
  ds::MirroredStrategy virtual_gpus;
  BOOST_TEST(virtual_gpus.num_replicas_in_sync() == 2);
  // More logical than physical GPUs → CollectiveAllReduce with RING.
  BOOST_TEST(virtual_gpus.cross_device_ops().chosen_name() == "CollectiveAllReduce");
  BOOST_TEST((virtual_gpus.cross_device_ops().collective_options()->implementation() ==
              ds::CommunicationImplementation::RING));
  const auto summed = virtual_gpus.reduce_to(ds::ReduceOp::SUM, virtual_gpus.run([] {
    return dt::scalar<float>(static_cast<float>(ds::get_replica_context()->replica_id_in_sync_group + 1));
  }));
  BOOST_TEST(summed[1].item() == 3.0f);
  BOOST_TEST(summed[1].device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  // A choice made by the user is used as given.
  ds::MirroredStrategy chosen({}, ds::HierarchicalCopyAllReduce{.num_packs = 2});
  BOOST_TEST(chosen.cross_device_ops().num_packs == 2);
}

BOOST_AUTO_TEST_CASE(logical_cpus_share_host_tensors_simulated_gpus_copy) {
  virtual_cpus(2);
  std::vector<float> expected{1, 2, 3};
  ds::Mirrored<dt::Tensor<float>> spread;
  const void* buffer = nullptr;
  {
    dt::DeviceScope scope("/cpu:0");
    const auto original = dt::constant<float>(expected);
    buffer = original.data();
    spread = ds::ReductionToOneDevice{}.broadcast(original, std::vector<std::string>{"/cpu:1", "/cpu:0"});
  }  // the original handle is gone: the alias keeps the buffer alive (ASan checks)
  BOOST_TEST(spread[0].device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(spread[0].data() == buffer);  // one address space: shared, not copied
  BOOST_TEST(spread[0].to_vector() == expected, boost::test_tools::per_element());
  // An alias of an alias points at the owner.
  const auto again = ds::cdo_detail::copy_to(spread[0], dt::Context::global().devices()[0]);
  BOOST_TEST(again.storage()->shared_from == spread[0].storage()->shared_from);
  BOOST_TEST(again.to_vector() == expected, boost::test_tools::per_element());

  dt::testing::reset_context();
  dt::config::set_simulated_gpus(2);
  dt::DeviceScope scope("/gpu:0");
  const auto on_gpu0 = dt::constant<float>(expected);
  const auto copied = ds::ReductionToOneDevice{}.broadcast(on_gpu0, std::vector<std::string>{"/gpu:1"});
  BOOST_TEST(copied[0].device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  BOOST_TEST(copied[0].data() != on_gpu0.data());  // simulated GPUs behave like GPUs: a copy
  BOOST_TEST(copied[0].to_vector() == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(group_by_size_packs_in_order_and_errs_on_the_large_side) {
  virtual_cpus(1);
  // 16, 32, 4 and 400 bytes.
  const std::vector values{dt::test::iota(4), dt::test::iota(8), dt::test::iota(1), dt::test::iota(100)};
  auto ids = [](const std::vector<std::vector<dt::Tensor<float>>>& packs) {
    std::vector<std::vector<std::uint64_t>> out;
    for (const auto& pack : packs) {
      out.emplace_back();
      for (const auto& t : pack) out.back().push_back(t.id());
    }
    return out;
  };
  const auto id = [&](std::size_t i) { return values[i].id(); };
  using Ids = std::vector<std::vector<std::uint64_t>>;
  BOOST_TEST((ids(ds::group_by_size(values, 0)) == Ids{{id(0), id(1), id(2), id(3)}}));
  // A pack of exactly 16 bytes does not exceed 16: the next value still joins it.
  BOOST_TEST((ids(ds::group_by_size(values, 16)) == Ids{{id(0), id(1)}, {id(2), id(3)}}));
  BOOST_TEST((ids(ds::group_by_size(values, 15)) == Ids{{id(0)}, {id(1)}, {id(2), id(3)}}));
  BOOST_TEST((ids(ds::group_by_size(values, 1 << 20)) == Ids{{id(0), id(1), id(2), id(3)}}));
  BOOST_TEST(ds::group_by_size(std::vector<dt::Tensor<float>>{}, 16).empty());
  BOOST_TEST(ds::group_by_size(std::vector<dt::Tensor<float>>{}, 0).size() == 1u);
  DEVTENSOR_CHECK_THROW_WITH((void)ds::group_by_size(values, -1), dt::InvalidArgumentError,
                             "bytes_per_pack must be non-negative");
  DEVTENSOR_CHECK_THROW_WITH((void)ds::group_by_size(std::vector<dt::Tensor<float>>(1), 8), dt::InvalidArgumentError,
                             "undefined tensor");
}

BOOST_AUTO_TEST_CASE(communication_options_validate_parse_and_merge) {
  using Impl = ds::CommunicationImplementation;
  const ds::CommunicationOptions defaults;
  BOOST_TEST(defaults.bytes_per_pack() == 0);
  BOOST_TEST(!defaults.timeout_seconds());
  BOOST_TEST((defaults.implementation() == Impl::AUTO));
  DEVTENSOR_CHECK_THROW_WITH(ds::CommunicationOptions(-4), dt::InvalidArgumentError,
                             "bytes_per_pack must be non-negative");
  BOOST_TEST((ds::CommunicationOptions(0, std::nullopt, "nccl").implementation() == Impl::NCCL));
  BOOST_TEST((ds::CommunicationOptions(0, std::nullopt, "Ring").implementation() == Impl::RING));
  DEVTENSOR_CHECK_THROW_WITH(ds::CommunicationOptions(0, std::nullopt, "tpu"), dt::InvalidArgumentError,
                             "'tpu' is not a valid CommunicationImplementation");
  const ds::CommunicationOptions set(100, 5.0, Impl::RING);
  BOOST_TEST((set.merge(defaults) == set));  // defaults override nothing
  BOOST_TEST((defaults.merge(set) == set));  // every non-default field overrides
  const auto merged = set.merge(ds::CommunicationOptions(0, std::nullopt, Impl::NCCL));
  BOOST_TEST(merged.bytes_per_pack() == 100);
  BOOST_TEST(merged.timeout_seconds().value_or(0) == 5.0);
  BOOST_TEST((merged.implementation() == Impl::NCCL));
  BOOST_TEST(ds::to_string(Impl::RING) == "RING");
}

BOOST_AUTO_TEST_SUITE_END()
