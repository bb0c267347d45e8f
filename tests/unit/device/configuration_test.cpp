// Configuration ordering: every setter before and after initialisation, with the
// same value, and with bad arguments.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/device/configuration.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;
using devtensor::FailedPreconditionError;
using devtensor::InvalidArgumentError;
using devtensor::kGiB;

namespace {
const cfg::PhysicalDevice kBogus{"/physical_device:GPU:9", "GPU"};
constexpr const char* kInitialisedBy = "devtensor was initialized by list_logical_devices()";
}  // namespace

BOOST_FIXTURE_TEST_SUITE(configuration, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(set_visible_devices_rules) {
  cfg::set_simulated_gpus(2);
  auto cpus = cfg::list_physical_devices("CPU");
  auto gpus = cfg::list_physical_devices("GPU");
  // Bad arguments.
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({kBogus}, "GPU"), InvalidArgumentError,
                             "Unrecognized device: PhysicalDevice(name='/physical_device:GPU:9', "
                             "device_type='GPU')");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({cpus[0]}, "GPU"), InvalidArgumentError,
                             "Unrecognized device: PhysicalDevice(name='/physical_device:CPU:0'");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({gpus[0], gpus[0]}, "GPU"), InvalidArgumentError,
                             "visible_device_list contained a duplicate entry");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({gpus[0]}), InvalidArgumentError, "Cannot hide the CPU");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices(std::vector<cfg::PhysicalDevice>{}, "CPU"), InvalidArgumentError,
                             "Cannot hide the CPU");
  BOOST_TEST(cfg::get_visible_devices().size() == 3u);  // nothing changed

  // Before initialisation: applied.
  cfg::set_visible_devices({gpus[1]}, "GPU");
  BOOST_TEST(cfg::get_visible_devices("GPU") == std::vector<cfg::PhysicalDevice>{gpus[1]});
  BOOST_TEST(cfg::get_visible_devices("CPU") == cpus);
  // The whole list at once ("" type).
  cfg::set_visible_devices({cpus[0], gpus[0]});
  BOOST_TEST(cfg::get_visible_devices("GPU") == std::vector<cfg::PhysicalDevice>{gpus[0]});

  (void)cfg::list_logical_devices();
  // Same value: silently accepted. Different value: FailedPreconditionError with the trigger.
  cfg::set_visible_devices({gpus[0]}, "GPU");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({gpus[1]}, "GPU"), FailedPreconditionError,
                             "Visible devices cannot be modified after being initialized");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({gpus[1]}, "GPU"), FailedPreconditionError, kInitialisedBy);
  // Argument errors come first, even after initialisation.
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_visible_devices({kBogus}, "GPU"), InvalidArgumentError, "Unrecognized device");
}

BOOST_AUTO_TEST_CASE(set_logical_device_configuration_rules) {
  cfg::set_simulated_gpus(1);
  auto cpu = cfg::list_physical_devices("CPU")[0];
  auto gpu = cfg::list_physical_devices("GPU")[0];
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(kBogus, {}), InvalidArgumentError,
                             "Unrecognized device");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(cpu, {{.memory_limit_mb = 10}}),
                             InvalidArgumentError,
                             "Setting memory limit on CPU virtual devices is currently not supported");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(cpu, {{.experimental_priority = 0}}),
                             InvalidArgumentError,
                             "Setting experimental_priority on CPU virtual  devices is currently not supported");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(cpu, {{.experimental_device_ordinal = 0}}),
                             InvalidArgumentError,
                             "Setting experimental_device_ordinal on CPU virtual  devices is currently not supported");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(gpu, {{}}), InvalidArgumentError,
                             "Setting memory limit is required for GPU virtual devices");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(gpu, {{.memory_limit_mb = -1}}),
                             InvalidArgumentError, "memory_limit_mb must be a finite number of MiB >= 0");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration({"/physical_device:TPU:0", "TPU"}, {}),
                             InvalidArgumentError, "Unrecognized device");
  BOOST_TEST(!cfg::get_logical_device_configuration(gpu).has_value());

  const std::vector<cfg::LogicalDeviceConfiguration> two = {{.memory_limit_mb = 100}, {.memory_limit_mb = 200}};
  cfg::set_logical_device_configuration(gpu, two);
  BOOST_TEST((*cfg::get_logical_device_configuration(gpu) == two));
  cfg::set_logical_device_configuration(cpu, {{}, {}});

  (void)cfg::list_logical_devices();
  cfg::set_logical_device_configuration(gpu, two);  // same value
  cfg::set_logical_device_configuration(cpu, {{}, {}});
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(gpu, {{.memory_limit_mb = 100}}),
                             FailedPreconditionError, "Virtual devices cannot be modified after being initialized");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_logical_device_configuration(cpu, {{}}), FailedPreconditionError, kInitialisedBy);
}

BOOST_AUTO_TEST_CASE(set_memory_growth_rules) {
  cfg::set_simulated_gpus(2);
  auto cpu = cfg::list_physical_devices("CPU")[0];
  auto gpus = cfg::list_physical_devices("GPU");
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_growth(kBogus, true), InvalidArgumentError,
                             "Unrecognized device");
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_growth(cpu, true), InvalidArgumentError,
                             "Cannot set memory growth on non-GPU and non-Pluggable devices");
  cfg::set_logical_device_configuration(gpus[1], {{.memory_limit_mb = 64}});
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_growth(gpus[1], true), InvalidArgumentError,
                             "Cannot set memory growth on device when virtual devices configured");
  BOOST_TEST(!cfg::experimental::get_memory_growth(gpus[0]).has_value());
  cfg::experimental::set_memory_growth(gpus[0], true);
  BOOST_TEST(*cfg::experimental::get_memory_growth(gpus[0]));

  // Visible GPUs must agree on growth; gpus[1] has none, so hide it before initialising.
  cfg::set_visible_devices({gpus[0]}, "GPU");
  (void)cfg::list_logical_devices();
  cfg::experimental::set_memory_growth(gpus[0], true);  // same value
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_growth(gpus[0], false), FailedPreconditionError,
                             "Physical devices cannot be modified after being initialized");
}

BOOST_AUTO_TEST_CASE(set_memory_fraction_rules) {
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_fraction(-0.1), InvalidArgumentError,
                             "per_process_gpu_memory_fraction must be a finite number >= 0");
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_fraction(std::nan("")), InvalidArgumentError,
                             "per_process_gpu_memory_fraction");
  cfg::experimental::set_memory_fraction(0.4);
  BOOST_TEST(devtensor::Context::global().memory_fraction() == 0.4);
  (void)cfg::list_logical_devices();
  cfg::experimental::set_memory_fraction(0.4);  // same value
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_fraction(0.5), FailedPreconditionError,
                             "GPU memory fraction cannot be modified after being initialized");
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_memory_fraction(-1), InvalidArgumentError,
                             "must be a finite number");
}

BOOST_AUTO_TEST_CASE(unified_memory_and_system_memory_rules) {
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_gpu_system_memory_size_in_mb(-5), InvalidArgumentError,
                             "gpu_system_memory_size_in_mb must be >= 0");
  cfg::experimental::set_use_unified_memory(true);
  cfg::experimental::set_gpu_system_memory_size_in_mb(512);
  (void)cfg::list_logical_devices();
  cfg::experimental::set_use_unified_memory(true);
  cfg::experimental::set_gpu_system_memory_size_in_mb(512);
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_use_unified_memory(false), FailedPreconditionError,
                             "cannot be modified after being initialized");
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_gpu_system_memory_size_in_mb(1), FailedPreconditionError,
                             "cannot be modified after being initialized");
}

BOOST_AUTO_TEST_CASE(allocation_retry_timeout_rules) {
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(-1)),
                             InvalidArgumentError, "must be >= 0 ms");
  cfg::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(5));
  (void)cfg::list_logical_devices();
  cfg::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(5));
  DEVTENSOR_CHECK_THROW_WITH(cfg::experimental::set_allocation_retry_timeout(std::chrono::milliseconds(6)),
                             FailedPreconditionError, "cannot be modified after being initialized");
}

// TensorFlow 2.21's tf.config.threading (checked beside it): 0 by default, any int kept (negative
// ones too), RuntimeError "Intra/Inter op parallelism cannot be modified after initialization."
BOOST_AUTO_TEST_CASE(threading_rules) {
  namespace threading = cfg::threading;
  BOOST_TEST(threading::get_intra_op_parallelism_threads() == 0);
  BOOST_TEST(threading::get_inter_op_parallelism_threads() == 0);
  threading::set_intra_op_parallelism_threads(-3);
  threading::set_inter_op_parallelism_threads(-2);
  BOOST_TEST(threading::get_intra_op_parallelism_threads() == -3);
  BOOST_TEST(threading::get_inter_op_parallelism_threads() == -2);
  threading::set_intra_op_parallelism_threads(3);
  threading::set_inter_op_parallelism_threads(2);
  BOOST_TEST(!devtensor::Context::global().initialized());  // the setters do not initialise
  (void)cfg::list_logical_devices();
  threading::set_intra_op_parallelism_threads(3);  // the same value: silently accepted
  threading::set_inter_op_parallelism_threads(2);
  DEVTENSOR_CHECK_THROW_WITH(
      threading::set_intra_op_parallelism_threads(4), FailedPreconditionError,
      "Intra op parallelism cannot be modified after initialization. " + std::string(kInitialisedBy));
  DEVTENSOR_CHECK_THROW_WITH(
      threading::set_inter_op_parallelism_threads(5), FailedPreconditionError,
      "Inter op parallelism cannot be modified after initialization. " + std::string(kInitialisedBy));
  BOOST_TEST(threading::get_intra_op_parallelism_threads() == 3);
  BOOST_TEST(threading::get_inter_op_parallelism_threads() == 2);
}

// The CPU kernels' pool takes its size from the intra-op setting, then DEVTENSOR_CPU_THREADS, then
// the hardware (read when the pool is made, after the Context froze the setting).
BOOST_AUTO_TEST_CASE(the_intra_op_setting_sizes_the_cpu_pool) {
  using devtensor::backend::cpu::ThreadPool;
  devtensor::test::ScopedEnv env{"DEVTENSOR_CPU_THREADS", "3"};
  BOOST_TEST(ThreadPool::configured_threads() == 3u);
  cfg::threading::set_intra_op_parallelism_threads(5);
  BOOST_TEST(ThreadPool::configured_threads() == 5u);
  cfg::threading::set_intra_op_parallelism_threads(-1);  // not positive: the environment decides
  BOOST_TEST(ThreadPool::configured_threads() == 3u);
  devtensor::test::ScopedEnv unset{"DEVTENSOR_CPU_THREADS", std::nullopt};
  BOOST_TEST(ThreadPool::configured_threads() == std::max(1u, std::thread::hardware_concurrency()));
}

BOOST_AUTO_TEST_CASE(soft_placement_and_logging_change_any_time) {
  BOOST_TEST(cfg::get_soft_device_placement());  // TF2 eager default
  BOOST_TEST(!devtensor::debugging::get_log_device_placement());
  cfg::set_soft_device_placement(false);
  devtensor::debugging::set_log_device_placement(true);
  (void)cfg::list_logical_devices();
  BOOST_TEST(!cfg::get_soft_device_placement());
  cfg::set_soft_device_placement(true);
  devtensor::debugging::set_log_device_placement(false);
  BOOST_TEST(cfg::get_soft_device_placement());
  BOOST_TEST(!devtensor::debugging::get_log_device_placement());
}

BOOST_AUTO_TEST_CASE(set_simulated_gpus_rules) {
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_simulated_gpus(-1), InvalidArgumentError, "the count must be >= 0");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_simulated_gpus(1, 0), InvalidArgumentError, "memory > 0 bytes");
  cfg::set_simulated_gpus(2, 2 * kGiB);
  (void)cfg::list_physical_devices();    // discovery fixes the setting
  cfg::set_simulated_gpus(2, 2 * kGiB);  // same value
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_simulated_gpus(3), FailedPreconditionError,
                             "Simulated GPUs cannot be modified after physical devices were discovered");
  DEVTENSOR_CHECK_THROW_WITH(cfg::set_simulated_gpus(3), FailedPreconditionError, "list_physical_devices()");
}

BOOST_AUTO_TEST_CASE(initialisation_error_names_the_trigger_location) {
  auto gpu_free_cpu = cfg::list_physical_devices("CPU")[0];
  (void)cfg::list_logical_devices();
  try {
    cfg::set_logical_device_configuration(gpu_free_cpu, {{}, {}});
    BOOST_FAIL("expected FailedPreconditionError");
  } catch (const FailedPreconditionError& e) {
    BOOST_TEST(devtensor::test::contains(e.what(), "configuration_test.cpp:"));
    BOOST_TEST((e.code() == devtensor::ErrorCode::failed_precondition));
  }
}

BOOST_AUTO_TEST_SUITE_END()
