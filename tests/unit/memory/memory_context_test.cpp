// The allocators the Context builds: one per logical device, from the
// configuration; get_memory_info, reset_memory_stats, release_free_memory and their errors.
#include <boost/test/unit_test.hpp>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;
namespace mem = devtensor::config::experimental;
using devtensor::Context;
using devtensor::kGiB;
using devtensor::kMiB;

namespace {
devtensor::memory::Allocator& gpu_allocator(int i) {
  for (const auto& d : Context::global().devices())
    if (d.device_type == "GPU" && d.index == i) return Context::global().allocator(d);
  throw std::runtime_error("no such GPU");
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(memory_context, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(one_allocator_per_logical_device) {
  cfg::set_simulated_gpus(2, 4 * kGiB);
  auto cpu = cfg::list_physical_devices("CPU")[0];
  cfg::set_logical_device_configuration(cpu, {{}, {}});
  const auto& devices = Context::global().devices();
  BOOST_TEST(Context::global().allocator(devices[0]).name() == "cpu_bfc");
  BOOST_TEST(&Context::global().allocator(devices[0]) == &Context::global().allocator(devices[1]));
  BOOST_TEST(Context::global().allocator(devices[2]).name() == "GPU_0_bfc");
  BOOST_TEST(Context::global().allocator(devices[3]).name() == "GPU_1_bfc");
  BOOST_TEST(gpu_allocator(0).stats().bytes_limit == static_cast<std::int64_t>(4 * kGiB - 1800 * kMiB));
}

BOOST_AUTO_TEST_CASE(preallocate_by_default_growth_on_request) {
  cfg::set_simulated_gpus(1, 4 * kGiB);
  void* p = gpu_allocator(0).allocate(1000);
  auto info = mem::get_memory_info("GPU:0");
  BOOST_TEST(info.current == 1024);
  BOOST_TEST(info.pool == info.limit);  // the first region is the whole limit
  gpu_allocator(0).deallocate(p);

  devtensor::testing::reset_context();
  cfg::set_simulated_gpus(1, 4 * kGiB);
  cfg::experimental::set_memory_growth(cfg::list_physical_devices("GPU")[0], true);
  p = gpu_allocator(0).allocate(1000);
  info = mem::get_memory_info("/device:GPU:0");
  BOOST_TEST(info.pool == static_cast<std::int64_t>(2 * kMiB));
  gpu_allocator(0).deallocate(p);
}

BOOST_AUTO_TEST_CASE(memory_info_reset_and_usage) {
  cfg::set_simulated_gpus(1, 1 * kGiB);
  auto& a = gpu_allocator(0);
  void* x = a.allocate(3 * kMiB);
  void* y = a.allocate(1 * kMiB);
  a.deallocate(x);  // current drops, peak stays
  auto info = mem::get_memory_info("GPU:0");
  BOOST_TEST(info.current == static_cast<std::int64_t>(1 * kMiB));
  BOOST_TEST(info.peak == static_cast<std::int64_t>(4 * kMiB));
  BOOST_TEST(info.peak >= info.current);
  BOOST_TEST(mem::get_memory_usage("GPU:0") == info.current);
  mem::reset_memory_stats("/job:localhost/replica:0/task:0/device:GPU:0");
  info = mem::get_memory_info("GPU:0");
  BOOST_TEST(info.peak == info.current);
  BOOST_TEST(a.stats().num_allocs == 0);
  a.deallocate(y);
}

BOOST_AUTO_TEST_CASE(get_memory_info_initialises_with_its_name) {
  cfg::set_simulated_gpus(1);
  (void)mem::get_memory_info("GPU:0");
  BOOST_TEST(devtensor::test::contains(Context::global().initialization_trigger(), "get_memory_info(\"GPU:0\")"));
}

BOOST_AUTO_TEST_CASE(device_string_errors) {
  cfg::set_simulated_gpus(1);
  const char* parse_phrase =
      "Note a valid device string should at least contain a device type and a device index, like "
      "\"GPU:0\".";
  for (const char* bad : {"GPU", "GPU:x", "/device:GPU:*", "", "gpu 0"})
    DEVTENSOR_CHECK_THROW_WITH((void)mem::get_memory_info(bad), devtensor::InvalidArgumentError, parse_phrase);
  DEVTENSOR_CHECK_THROW_WITH((void)mem::get_memory_info("GPU:0x"), devtensor::InvalidArgumentError,
                             "Failed parsing device name: 'GPU:0x'");
  DEVTENSOR_CHECK_THROW_WITH((void)mem::get_memory_info("GPU:3"), devtensor::NotFoundError,
                             "No matching devices found for 'GPU:3'");
  DEVTENSOR_CHECK_THROW_WITH((void)mem::get_memory_info("/job:worker/device:GPU:0"), devtensor::NotFoundError,
                             "No matching devices found");
  DEVTENSOR_CHECK_THROW_WITH((void)mem::get_memory_info("CPU:0"), devtensor::InvalidArgumentError,
                             "CPU does not support");
  DEVTENSOR_CHECK_THROW_WITH(mem::reset_memory_stats("CPU:0"), devtensor::InvalidArgumentError, "CPU does not support");
  DEVTENSOR_CHECK_THROW_WITH(mem::reset_memory_stats("GPU:1"), devtensor::NotFoundError,
                             "No matching devices found for 'GPU:1'");
}

BOOST_AUTO_TEST_CASE(release_free_memory_returns_regions) {
  cfg::set_simulated_gpus(1, 1 * kGiB);
  cfg::experimental::set_memory_growth(cfg::list_physical_devices("GPU")[0], true);
  auto& a = gpu_allocator(0);
  void* big = a.allocate(100 * kMiB);  // grows to a 128 MiB region after the 2 MiB one
  void* small = a.allocate(1 * kMiB);
  a.deallocate(big);
  const auto before = mem::get_memory_info("GPU:0");
  const std::size_t released = mem::release_free_memory("GPU:0");
  const auto after = mem::get_memory_info("GPU:0");
  BOOST_TEST(released > 0u);
  BOOST_TEST(after.pool == before.pool - static_cast<std::int64_t>(released));
  BOOST_TEST(after.current == before.current);
  BOOST_TEST(after.peak == before.peak);
  BOOST_TEST(after.limit == before.limit);
  a.deallocate(small);
  BOOST_TEST(mem::release_free_memory("GPU:0") > 0u);
  BOOST_TEST(mem::get_memory_info("GPU:0").pool == 0);
  DEVTENSOR_CHECK_THROW_WITH((void)mem::release_free_memory("CPU:0"), devtensor::InvalidArgumentError,
                             "CPU does not support");
}

BOOST_AUTO_TEST_CASE(virtual_devices_share_the_physical_capacity) {
  // Two 600 MiB virtual GPUs on a 1 GiB simulated GPU: the second cannot get its whole limit.
  cfg::set_simulated_gpus(1, 1 * kGiB);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0],
                                        {{.memory_limit_mb = 600}, {.memory_limit_mb = 600}});
  void* a = gpu_allocator(0).allocate(500 * kMiB);
  void* b = gpu_allocator(1).try_allocate(300 * kMiB);  // backpedals to what the device has left
  BOOST_TEST(b != nullptr);
  BOOST_TEST(gpu_allocator(1).stats().pool_bytes <= static_cast<std::int64_t>(424 * kMiB));
  BOOST_TEST(gpu_allocator(1).try_allocate(200 * kMiB) == nullptr);
  gpu_allocator(1).deallocate(b);
  gpu_allocator(0).deallocate(a);
}

BOOST_AUTO_TEST_CASE(oom_error_names_the_limit_source) {
  cfg::set_simulated_gpus(1, 1 * kGiB);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit_mb = 64}});
  DEVTENSOR_CHECK_THROW_WITH(
      (void)gpu_allocator(0).allocate(100 * kMiB, 256, {.retry_on_failure = false, .op_name = "Fill"}),
      devtensor::ResourceExhaustedError, "memory_limit_mb = 64 of the virtual device");
}

BOOST_AUTO_TEST_CASE(garbage_collection_environment) {
  struct Case {
    const char* value;
    bool logged;
  };
  for (const Case c : {Case{"true", false}, Case{"false", false}, Case{"yes", true}}) {
    devtensor::testing::reset_context();
    log.clear();
    devtensor::test::ScopedEnv env("TF_ENABLE_GPU_GARBAGE_COLLECTION", c.value);
    cfg::set_simulated_gpus(1);
    (void)cfg::list_logical_devices();
    BOOST_TEST((log.count("The TF_ENABLE_GPU_GARBAGE_COLLECTION environment variable is set but "
                          "could not be parsed: \"yes\". Valid values are \"true\" or \"false\". "
                          "Using the default value \"true\".") == 1u) == c.logged);
  }
}

BOOST_AUTO_TEST_CASE(overhead_of_simulated_gpus_is_zero) {
  cfg::set_simulated_gpus(1);
  const auto o = mem::get_memory_overhead("GPU:0");
  BOOST_TEST(o.library_bytes == 0u);
  BOOST_TEST(o.unaccounted_device_bytes == 0u);
}

BOOST_AUTO_TEST_CASE(allocator_of_a_copied_device_info_is_refused) {
  const auto copy = Context::global().devices()[0];
  DEVTENSOR_CHECK_THROW_WITH((void)Context::global().allocator(copy), devtensor::InvalidArgumentError,
                             "is not a logical device of this Context");
}

BOOST_AUTO_TEST_CASE(cpu_allocator_caches_host_memory) {
  auto& cpu = Context::global().allocator(0);
  void* p = cpu.allocate(32 * kMiB);
  cpu.deallocate(p);
  void* q = cpu.allocate(32 * kMiB);  // the same region again: no new page faults
  BOOST_TEST(q == p);
  cpu.deallocate(q);
}

BOOST_AUTO_TEST_SUITE_END()
