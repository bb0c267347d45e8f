// Devices are values: the DeviceSet the Context builds once, its order and lookups, and the
// Device every tensor, placement and destination holds (its allocator, stream and platform).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "devtensor/device/configuration.hpp"
#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace cfg = devtensor::config;

namespace {
constexpr const char* kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr const char* kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr const char* kGpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
constexpr const char* kGpu1 = "/job:localhost/replica:0/task:0/device:GPU:1";

/// Two logical CPUs and two simulated GPUs.
const dt::DeviceSet& two_cpus_two_gpus() {
  cfg::set_simulated_gpus(2, dt::kGiB);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("CPU")[0], {{}, {}});
  return dt::Context::global().devices();
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(device_set, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(devices_are_in_logical_order_and_tensorflow_preference_order) {
  const auto& devices = two_cpus_two_gpus();
  BOOST_TEST_REQUIRE(devices.size() == 4u);
  const std::vector<std::string> expected{kCpu0, kCpu1, kGpu0, kGpu1};
  for (std::size_t i = 0; i < devices.size(); ++i) {
    BOOST_TEST(devices[i].full_name == expected[i]);
    BOOST_TEST(devices[i].logical_index == static_cast<int>(i));
  }
  BOOST_TEST(devices.host_cpu().full_name == kCpu0);
  std::vector<std::string> preferred;
  for (const dt::Device* d : devices.by_priority()) preferred.push_back(d->full_name);
  BOOST_TEST(preferred == (std::vector<std::string>{kGpu0, kGpu1, kCpu0, kCpu1}), boost::test_tools::per_element());
  BOOST_TEST(devices.physical_gpus() == 2u);
  BOOST_TEST(!devices.has_real_gpus());  // simulated GPUs are not real ones
  BOOST_TEST(devices.names() == std::string(kCpu0) + ", " + kCpu1 + ", " + kGpu0 + ", " + kGpu1);
}

BOOST_AUTO_TEST_CASE(find_by_spec_names_one_device_exactly) {
  const auto& devices = two_cpus_two_gpus();
  BOOST_TEST(devices.find(dt::DeviceSpec::parse("/device:GPU:1")) == &devices[3]);
  BOOST_TEST(devices.find(dt::DeviceSpec::parse(kCpu1)) == &devices[1]);
  // A spec without a type or an id names no device in particular; a missing one names none.
  BOOST_TEST(devices.find(dt::DeviceSpec::parse("/device:GPU:*")) == nullptr);
  BOOST_TEST(devices.find(dt::DeviceSpec::parse("/job:localhost")) == nullptr);
  BOOST_TEST(devices.find(dt::DeviceSpec::parse("/device:GPU:7")) == nullptr);
  BOOST_TEST(devices.find(dt::DeviceSpec::parse("/job:worker/device:GPU:0")) == nullptr);
}

BOOST_AUTO_TEST_CASE(find_by_name_takes_every_spelling_and_says_what_exists) {
  const auto& devices = two_cpus_two_gpus();
  for (const char* name : {"/gpu:1", "/device:GPU:1", "/GPU:1", kGpu1})
    BOOST_TEST(&devices.find(std::string_view(name)) == &devices[3], name);
  DEVTENSOR_CHECK_THROW_WITH((void)devices.find(std::string_view("/cpu:7")), dt::InvalidArgumentError,
                             "'/cpu:7' (/job:localhost/replica:0/task:0/device:CPU:7) is not a logical device. "
                             "Available: " +
                                 devices.names() + ". Name one of these");
  DEVTENSOR_CHECK_THROW_WITH((void)devices.find(std::string_view("not a device")), dt::InvalidArgumentError,
                             "not a device");
}

BOOST_AUTO_TEST_CASE(every_device_carries_its_allocator_and_tensors_hold_the_placed_device) {
  const auto& devices = two_cpus_two_gpus();
  BOOST_TEST(devices[0].allocator.get() == devices[1].allocator.get());  // the CPUs share cpu_bfc
  BOOST_TEST(devices[0].allocator->name() == "cpu_bfc");
  BOOST_TEST(devices[2].allocator->name() == "GPU_0_bfc");
  BOOST_TEST(devices[3].allocator->name() == "GPU_1_bfc");
  BOOST_TEST(devices[2].platform == nullptr);  // a simulated GPU copies with memcpy
  dt::Tensor<float> on_gpu1;
  {
    dt::DeviceScope scope("/gpu:1");
    on_gpu1 = dt::add(dt::constant<float>({1, 2}), dt::constant<float>({3, 4}));
  }
  BOOST_TEST(&on_gpu1.device_info() == &devices[3]);  // the set's own Device, not a copy
  BOOST_TEST(on_gpu1.device_index() == 3);
  BOOST_TEST(on_gpu1.storage()->allocator.get() == devices[3].allocator.get());
  BOOST_TEST(devices[3].allocator->stats().bytes_in_use > 0);
}

BOOST_AUTO_TEST_CASE(destinations_resolve_names_once) {
  const auto& devices = two_cpus_two_gpus();
  const dt::distribute::Destinations by_name(std::vector<std::string>{"/gpu:1", "/cpu:0"});
  BOOST_TEST_REQUIRE(by_name.size() == 2u);
  BOOST_TEST(&by_name[0] == &devices[3]);
  BOOST_TEST(&by_name[1] == &devices[0]);
  BOOST_TEST((by_name == dt::distribute::Destinations{&devices[3], &devices[0]}));
  DEVTENSOR_CHECK_THROW_WITH(dt::distribute::Destinations(std::vector<std::string>{"/gpu:2"}), dt::InvalidArgumentError,
                             "'/gpu:2' (/job:localhost/replica:0/task:0/device:GPU:2) is not a logical device");
}

BOOST_AUTO_TEST_SUITE_END()

// A real GPU (the fake platform) carries the platform that copies to it and its physical bus id.
BOOST_FIXTURE_TEST_CASE(real_gpus_carry_their_platform_and_bus_id, dt::test::FakeGpuPlatform) {
  const auto& devices = dt::Context::global().devices();
  BOOST_TEST_REQUIRE(devices.size() == 2u);
  BOOST_TEST(devices.has_real_gpus());
  BOOST_TEST(devices[1].real_gpu());
  BOOST_TEST(devices[1].platform == &dt::test::fake_gpu_platform);
  BOOST_TEST(devices[1].pci_bus_id == "0000:00:00.0");
  BOOST_TEST(devices[1].stream != nullptr);
  BOOST_TEST(devices[0].platform == nullptr);
  BOOST_TEST(devices[0].pci_bus_id.empty());
}
