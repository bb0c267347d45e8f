// The Context: discovery, logical devices, initialisation, device_lib.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "devtensor/device/configuration.hpp"
#include "devtensor/device/device_lib.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;
using devtensor::Context;
using devtensor::kGiB;
using devtensor::kMiB;

namespace {
std::vector<std::string> names(const std::vector<cfg::LogicalDevice>& devices) {
  std::vector<std::string> out;
  for (const auto& d : devices) out.push_back(d.name);
  return out;
}
std::vector<std::string> names(const std::vector<cfg::PhysicalDevice>& devices) {
  std::vector<std::string> out;
  for (const auto& d : devices) out.push_back(d.name);
  return out;
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(context, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(cpu_only_machine) {
  const auto physical = cfg::list_physical_devices();
  BOOST_TEST_REQUIRE(physical.size() == 1u);  // this build registers no real GPU platform
  BOOST_TEST(physical[0].name == "/physical_device:CPU:0");
  BOOST_TEST(physical[0].device_type == "CPU");
  BOOST_TEST(cfg::list_physical_devices("GPU").empty());
  BOOST_TEST(!Context::global().initialized());  // listing physical devices does not initialise

  const auto logical = cfg::list_logical_devices();
  BOOST_TEST(Context::global().initialized());
  BOOST_TEST(names(logical) == std::vector<std::string>{"/device:CPU:0"}, boost::test_tools::per_element());
  BOOST_TEST(logical[0].device_type == "CPU");
  BOOST_TEST(cfg::list_logical_devices("GPU").empty());
}

BOOST_AUTO_TEST_CASE(simulated_gpus_are_physical_and_logical_gpus) {
  cfg::set_simulated_gpus(2, 4 * kGiB);
  BOOST_TEST(
      names(cfg::list_physical_devices()) ==
          (std::vector<std::string>{"/physical_device:CPU:0", "/physical_device:GPU:0", "/physical_device:GPU:1"}),
      boost::test_tools::per_element());
  BOOST_TEST(names(cfg::list_logical_devices()) ==
                 (std::vector<std::string>{"/device:CPU:0", "/device:GPU:0", "/device:GPU:1"}),
             boost::test_tools::per_element());
  const auto& logical = Context::global().devices();
  BOOST_TEST(logical[1].full_name == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(logical[2].spec.to_string() == "/job:localhost/replica:0/task:0/device:GPU:1");
}

BOOST_AUTO_TEST_CASE(virtual_cpus) {
  auto cpu = cfg::list_physical_devices("CPU")[0];
  cfg::set_logical_device_configuration(cpu, {{}, {}, {}});
  BOOST_TEST(names(cfg::list_logical_devices("CPU")) ==
                 (std::vector<std::string>{"/device:CPU:0", "/device:CPU:1", "/device:CPU:2"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(virtual_gpus_numbered_across_physical_gpus) {
  // TensorFlow's rule: GPU 0 split in two plus GPU 1 unsplit gives GPU:0, GPU:1 on 0 and GPU:2 on 1.
  cfg::set_simulated_gpus(2, 8 * kGiB);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 1024}, {.memory_limit_mb = 512.9}});
  const auto& logical = Context::global().devices();
  BOOST_TEST_REQUIRE(logical.size() == 4u);
  BOOST_TEST(logical[1].device.name == "/device:GPU:0");
  BOOST_TEST(logical[1].memory_limit == 1024 * kMiB);
  BOOST_TEST(logical[2].device.name == "/device:GPU:1");
  BOOST_TEST(logical[2].memory_limit == 512 * kMiB);  // MiB truncated
  BOOST_TEST(logical[3].device.name == "/device:GPU:2");
  BOOST_TEST(logical[1].physical_index == logical[2].physical_index);
  BOOST_TEST(logical[3].physical_index != logical[1].physical_index);
  // An unsplit GPU takes available memory minus the reserve (8 GiB, cc 9.0 -> 1800 MiB).
  BOOST_TEST(logical[3].memory_limit == 8 * kGiB - 1800 * kMiB);
}

BOOST_AUTO_TEST_CASE(hidden_devices_disappear) {
  cfg::set_simulated_gpus(3);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_visible_devices({gpus[2], gpus[0]}, "GPU");
  BOOST_TEST(names(cfg::get_visible_devices("GPU")) ==
                 (std::vector<std::string>{"/physical_device:GPU:2", "/physical_device:GPU:0"}),
             boost::test_tools::per_element());
  const auto& logical = Context::global().devices();
  BOOST_TEST_REQUIRE(logical.size() == 3u);
  // Logical GPUs follow physical order (TensorFlow's Python API), skipping hidden ones.
  BOOST_TEST(logical[1].physical_index == 1);
  BOOST_TEST(logical[2].physical_index == 3);
  BOOST_TEST(names(cfg::list_logical_devices("GPU")) == (std::vector<std::string>{"/device:GPU:0", "/device:GPU:1"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(hiding_every_gpu_is_allowed) {
  cfg::set_simulated_gpus(2);
  cfg::set_visible_devices(std::vector<cfg::PhysicalDevice>{}, "GPU");
  BOOST_TEST(cfg::list_logical_devices("GPU").empty());
  BOOST_TEST(cfg::list_logical_devices("CPU").size() == 1u);
}

BOOST_AUTO_TEST_CASE(device_lib_lists_attributes) {
  cfg::set_simulated_gpus(1, 16 * kGiB);
  const auto local = devtensor::device_lib::list_local_devices();
  BOOST_TEST_REQUIRE(local.size() == 2u);
  BOOST_TEST(local[0].name == "/device:CPU:0");
  BOOST_TEST(local[0].device_type == "CPU");
  BOOST_TEST(local[0].memory_limit == 268435456u);  // TensorFlow's CPU figure
  BOOST_TEST(local[0].physical_device_desc == "");
  BOOST_TEST(local[1].name == "/device:GPU:0");
  BOOST_TEST(local[1].device_type == "GPU");
  BOOST_TEST(local[1].full_name == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(local[1].memory_limit == 16 * kGiB - 1800 * kMiB);
  BOOST_TEST(local[1].physical_device_desc ==
             "device: 0, name: devtensor simulated GPU, pci bus id: simulated:0, compute capability: 9.0");
  BOOST_TEST(devtensor::test::contains(Context::global().initialization_trigger(), "device_lib::list_local_devices()"));
}

BOOST_AUTO_TEST_CASE(device_creation_log_lines) {
  cfg::set_simulated_gpus(2, 4 * kGiB);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[1], {{.memory_limit_mb = 100}});
  (void)cfg::list_logical_devices();
  BOOST_TEST(log.count("Created device ") == 2u);
  BOOST_TEST(log.count("Created device /job:localhost/replica:0/task:0/device:GPU:0 with 2296 MB "
                       "memory:  -> device: 0, name: devtensor simulated GPU, pci bus id: "
                       "simulated:0, compute capability: 9.0") == 1u);
  BOOST_TEST(log.count("Created device /job:localhost/replica:0/task:0/device:GPU:1 with 100 MB "
                       "memory:  -> device: 1,") == 1u);
}

BOOST_AUTO_TEST_CASE(gpus_this_program_cannot_use_are_reported_once) {
  // This test program has no GPU platform (no CUDA component); a fake driver probe reports GPUs.
  BOOST_REQUIRE(Context::global().gpu_platform() == nullptr);
  Context::global().set_gpu_driver_probe_for_testing([]() noexcept { return 2; });
  BOOST_TEST(cfg::list_physical_devices("GPU").empty());
  (void)cfg::list_logical_devices();
  BOOST_TEST(log.count("The NVIDIA driver reports 2 GPUs, but this program was built without devtensor's CUDA "
                       "component, so it cannot use them. Link devtensor::cuda in CMake") == 1u);
  const auto entries = log.entries();
  const auto warning = std::find_if(entries.begin(), entries.end(),
                                    [](const auto& e) { return devtensor::test::contains(e.second, "NVIDIA driver"); });
  BOOST_REQUIRE(warning != entries.end());
  BOOST_TEST((warning->first == devtensor::LogSeverity::warning));
  BOOST_TEST(devtensor::test::contains(warning->second, "Skipping registering GPU devices..."));
}

BOOST_AUTO_TEST_CASE(one_gpu_and_no_gpus_from_the_driver_probe) {
  Context::global().set_gpu_driver_probe_for_testing([]() noexcept { return 1; });
  (void)cfg::list_physical_devices();
  BOOST_TEST(log.count("The NVIDIA driver reports 1 GPU, but") == 1u);
  devtensor::testing::reset_context();
  log.clear();
  Context::global().set_gpu_driver_probe_for_testing([]() noexcept { return 0; });
  (void)cfg::list_physical_devices();
  BOOST_TEST(log.count("NVIDIA driver") == 0u);
}

BOOST_AUTO_TEST_CASE(the_real_driver_probe_reads_proc) {
  // Without the nvidia kernel module there is no /proc/driver/nvidia/gpus: no GPUs, no error.
  const int n = devtensor::detail::count_nvidia_driver_gpus();
  if (::access("/proc/driver/nvidia/gpus", F_OK) != 0)
    BOOST_TEST(n == 0);
  else
    BOOST_TEST(n >= 0);
}

BOOST_AUTO_TEST_CASE(initialisation_records_the_trigger_and_location) {
  (void)cfg::list_logical_devices();
  const auto trigger = Context::global().initialization_trigger();
  BOOST_TEST(devtensor::test::contains(trigger, "list_logical_devices()"));
  BOOST_TEST(devtensor::test::contains(trigger, "context_test.cpp:"));
}

BOOST_AUTO_TEST_CASE(initialisation_happens_once_under_concurrency) {
  cfg::set_simulated_gpus(2);
  std::vector<std::thread> threads;
  std::vector<std::size_t> counts(8);
  for (std::size_t i = 0; i < counts.size(); ++i)
    threads.emplace_back([&, i] { counts[i] = cfg::list_logical_devices().size(); });
  for (auto& t : threads) t.join();
  for (auto c : counts) BOOST_TEST(c == 3u);
  BOOST_TEST(log.count("Created device ") == 2u);  // logged once, not once per thread
}

BOOST_AUTO_TEST_CASE(failed_initialisation_leaves_configuration_open) {
  cfg::set_simulated_gpus(2);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), devtensor::InvalidArgumentError,
                             "Memory growth cannot differ between GPU devices");
  BOOST_TEST(!Context::global().initialized());
  cfg::experimental::set_memory_growth(gpus[1], true);  // fixable, still uninitialised
  BOOST_TEST(cfg::list_logical_devices("GPU").size() == 2u);
  BOOST_TEST(Context::global().devices()[1].allow_growth);
}

BOOST_AUTO_TEST_CASE(reset_gives_a_fresh_context) {
  cfg::set_simulated_gpus(1);
  (void)cfg::list_logical_devices();
  cfg::set_soft_device_placement(false);
  devtensor::testing::reset_context();
  BOOST_TEST(!Context::global().initialized());
  BOOST_TEST(cfg::get_soft_device_placement());
  BOOST_TEST(cfg::list_physical_devices("GPU").empty());
}

BOOST_AUTO_TEST_SUITE_END()
