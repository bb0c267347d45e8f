// GPU memory modes against real device memory: logical GPUs with limits, growth, fraction,
// preallocation, OOM, stats. Runs only where a CUDA device exists (skipped elsewhere).
#include <boost/test/unit_test.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace cfg = devtensor::config;

namespace {
std::uint64_t device_free_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  DEVTENSOR_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}
std::uint64_t device_total_bytes() {
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  DEVTENSOR_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return total;
}
constexpr std::int64_t kFloatsPerMiB = (1 << 20) / 4;
}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_memory, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(logical_gpus_have_their_own_limits_and_oom) {
  const auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 256}, {.memory_limit_mb = 256}});
  const auto logical = cfg::list_logical_devices("GPU");
  BOOST_TEST_REQUIRE(logical.size() >= 2u);
  const auto local = dt::device_lib::list_local_devices();
  BOOST_TEST(local[1].memory_limit == 256u << 20);
  dt::DeviceScope gpu0("/gpu:0");
  const auto big = dt::zeros<float>({200 * kFloatsPerMiB});
  BOOST_TEST(cfg::experimental::get_memory_info("GPU:0").current >= 200u << 20);
  DEVTENSOR_CHECK_THROW_WITH(dt::zeros<float>({200 * kFloatsPerMiB}), dt::ResourceExhaustedError,
                             "OOM when allocating tensor with shape[52428800] and type float on "
                             "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc");
  dt::DeviceScope gpu1("/gpu:1");
  const auto other = dt::zeros<float>({200 * kFloatsPerMiB});  // GPU:1's pool is its own
  BOOST_TEST(other.device() == "/job:localhost/replica:0/task:0/device:GPU:1");
  BOOST_TEST(other.at({123}) == 0.0F);
}

BOOST_AUTO_TEST_CASE(preallocation_takes_the_whole_limit_at_once) {
  const auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 1024}});
  (void)cfg::list_logical_devices("GPU");
  const auto before = device_free_bytes();
  dt::DeviceScope gpu("/gpu:0");
  const auto small = dt::ones<float>({16});
  BOOST_TEST(small.at({3}) == 1.0F);
  BOOST_TEST(before - device_free_bytes() >= std::uint64_t{1000} << 20);
}

BOOST_AUTO_TEST_CASE(growth_starts_small_and_grows) {
  const auto gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);
  (void)cfg::list_logical_devices("GPU");
  const auto before = device_free_bytes();
  dt::DeviceScope gpu("/gpu:0");
  const auto small = dt::ones<float>({16});
  BOOST_TEST(small.at({0}) == 1.0F);
  const auto after_small = device_free_bytes();
  BOOST_TEST(before - after_small < std::uint64_t{64} << 20);  // a 2 MiB region, not the device
  const auto large = dt::zeros<float>({512 * kFloatsPerMiB});
  BOOST_TEST(after_small - device_free_bytes() >= std::uint64_t{512} << 20);
  BOOST_TEST(cfg::experimental::get_memory_info("GPU:0").peak >= std::uint64_t{512} << 20);
}

BOOST_AUTO_TEST_CASE(fraction_limits_the_pool) {
  cfg::experimental::set_memory_fraction(0.05);
  const auto local = dt::device_lib::list_local_devices();
  const auto total = device_total_bytes();
  BOOST_TEST(local[1].memory_limit == static_cast<std::uint64_t>(static_cast<double>(total) * 0.05));
  dt::DeviceScope gpu("/gpu:0");
  const auto fits = static_cast<std::int64_t>(static_cast<double>(total) * 0.03) / 4;
  const auto too_big = static_cast<std::int64_t>(static_cast<double>(total) * 0.06) / 4;
  const auto t = dt::zeros<float>({fits});
  BOOST_TEST(t.num_elements() == fits);
  BOOST_CHECK_THROW(dt::zeros<float>({too_big}), dt::ResourceExhaustedError);
}

BOOST_AUTO_TEST_CASE(stats_follow_allocations_and_reset) {
  dt::DeviceScope gpu("/gpu:0");
  {
    const auto t = dt::zeros<float>({64 * kFloatsPerMiB});
    BOOST_TEST(cfg::experimental::get_memory_info("GPU:0").current >= std::uint64_t{64} << 20);
  }
  const auto info = cfg::experimental::get_memory_info("GPU:0");
  BOOST_TEST(info.current < std::uint64_t{64} << 20);
  BOOST_TEST(info.peak >= std::uint64_t{64} << 20);
  cfg::experimental::reset_memory_stats("GPU:0");
  BOOST_TEST(cfg::experimental::get_memory_info("GPU:0").peak < std::uint64_t{64} << 20);
}

BOOST_AUTO_TEST_CASE(each_logical_gpu_has_its_own_stream) {
  const auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 64, .experimental_priority = -1},
                                                  {.memory_limit_mb = 64, .experimental_priority = 0}});
  const auto& devices = dt::Context::global().devices();
  std::vector<void*> streams;
  for (const auto& d : devices)
    if (d.is_gpu && !d.simulated) streams.push_back(d.stream);
  BOOST_TEST_REQUIRE(streams.size() >= 2u);
  BOOST_TEST(streams[0] != nullptr);
  BOOST_TEST(streams[0] != streams[1]);
  int priority = 1;
  DEVTENSOR_CUDA_CHECK(cudaStreamGetPriority(static_cast<cudaStream_t>(streams[0]), &priority));
  BOOST_TEST(priority == -1);
}

BOOST_AUTO_TEST_SUITE_END()
