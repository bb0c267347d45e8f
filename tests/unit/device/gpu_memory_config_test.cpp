// GPU memory options at initialisation on simulated GPUs: limits, reserve,
// fraction, growth and TF_FORCE_GPU_ALLOW_GROWTH, virtual-device validation, ordinals, priorities.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>

#include "devtensor/device/configuration.hpp"
#include "devtensor/device/memory_limits.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;
using devtensor::Context;
using devtensor::InvalidArgumentError;
using devtensor::kGiB;
using devtensor::kMiB;
using devtensor::test::ScopedEnv;

namespace {
const devtensor::Device& gpu(int i) {
  for (const auto& d : Context::global().devices())
    if (d.device_type == "GPU" && d.index == i) return d;
  BOOST_FAIL("no such logical GPU");
  throw;
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(gpu_memory_config, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(min_system_memory_table) {
  using devtensor::min_system_memory;
  BOOST_TEST(min_system_memory(2 * kGiB - 1, 9) == 225 * kMiB);
  BOOST_TEST(min_system_memory(2 * kGiB, 6) == 500 * kMiB);
  BOOST_TEST(min_system_memory(8 * kGiB, 7) == 1050 * kMiB);
  BOOST_TEST(min_system_memory(8 * kGiB, 8) == 1536 * kMiB);
  BOOST_TEST(min_system_memory(80 * kGiB, 9) == 1800 * kMiB);
  BOOST_TEST(min_system_memory(80 * kGiB, 10) == 1800 * kMiB);
}

// TensorFlow's SingleVirtualDeviceMemoryLimit as a function: one row per rule, with its log lines.
BOOST_AUTO_TEST_CASE(default_gpu_memory_limit_table) {
  using devtensor::detail::default_gpu_memory_limit;
  using devtensor::detail::MemoryLimitInputs;
  struct Row {
    const char* rule;
    MemoryLimitInputs in;
    std::uint64_t bytes;
    const char* source;   // a phrase of the source
    const char* warning;  // a phrase of the one warning line, or nullptr for none
  };
  const std::optional<std::string> none;
  const Row rows[] = {
      {"free minus the Hopper reserve",
       {80 * kGiB, 80 * kGiB, 9, 0.0, 0, none},
       80 * kGiB - 1800 * kMiB,
       "the device's free memory 80.00GiB minus a 1.76GiB reserve",
       nullptr},
      {"below 2 GiB: 225 MiB",
       {1 * kGiB, 1 * kGiB, 9, 0.0, 0, none},
       1 * kGiB - 225 * kMiB,
       "minus a 225.00MiB reserve",
       nullptr},
      {"the reserve never exceeds the free memory",
       {100 * kMiB, 1 * kGiB, 9, 0.0, 0, none},
       100 * kMiB,
       "minus a 0B reserve",
       nullptr},
      {"a fraction of the total, not the free memory",
       {10 * kGiB, 16 * kGiB, 9, 0.5, 0, none},
       8 * kGiB,
       "per_process_gpu_memory_fraction = 0.500000 of 16.00GiB",
       nullptr},
      {"a fraction above 1 oversubscribes",
       {8 * kGiB, 8 * kGiB, 9, 2.0, 0, none},
       16 * kGiB,
       "per_process_gpu_memory_fraction = 2.000000",
       nullptr},
      {"a reserve from the API",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 1024, none},
       15 * kGiB,
       "minus the requested 1.00GiB reserve",
       nullptr},
      {"the API's reserve replaces a fraction",
       {16 * kGiB, 16 * kGiB, 9, 0.25, 1024, none},
       15 * kGiB,
       "minus the requested 1.00GiB reserve",
       nullptr},
      {"an API reserve above the free memory is ignored",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 20000, none},
       16 * kGiB - 1800 * kMiB,
       "minus a 1.76GiB reserve",
       "The requested reserved device memory 20971520000 is larger than the available memory of 17179869184. "
       "The request is ignored."},
      {"the environment's reserve",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 0, std::string("512")},
       16 * kGiB - 512 * kMiB,
       "minus the requested 512.00MiB reserve",
       nullptr},
      {"the environment wins over the API",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 1024, std::string("512")},
       16 * kGiB - 512 * kMiB,
       "minus the requested 512.00MiB reserve",
       nullptr},
      {"an empty variable is unset",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 0, std::string()},
       16 * kGiB - 1800 * kMiB,
       "minus a 1.76GiB reserve",
       nullptr},
      {"a value that is not digits is ignored",
       {16 * kGiB, 16 * kGiB, 9, 0.0, 0, std::string("1e3")},
       16 * kGiB - 1800 * kMiB,
       "minus a 1.76GiB reserve",
       "The requested reserved device memory 1e3 is invalid. The request will be ignored."},
  };
  for (const auto& row : rows) {
    BOOST_TEST_CONTEXT(row.rule) {
      devtensor::detail::DeferredLogs logs;
      const auto limit = default_gpu_memory_limit(row.in, logs);
      BOOST_TEST(limit.bytes == row.bytes);
      BOOST_TEST(devtensor::test::contains(limit.source, row.source), "source: " << limit.source);
      BOOST_TEST(logs.size() == (row.warning ? 1u : 0u));
      if (row.warning && !logs.empty()) {
        BOOST_TEST((logs[0].first == devtensor::LogSeverity::warning));
        BOOST_TEST(logs[0].second == row.warning);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(default_limit_is_available_minus_reserve) {
  cfg::set_simulated_gpus(1, 1 * kGiB);  // below 2 GiB: 225 MiB reserve
  BOOST_TEST(gpu(0).memory_limit == 1024 * kMiB - 225 * kMiB);
  BOOST_TEST(!gpu(0).allow_growth);
  BOOST_TEST(!gpu(0).unified_memory);
}

BOOST_AUTO_TEST_CASE(reserve_not_subtracted_when_not_smaller_than_available) {
  cfg::set_simulated_gpus(1, 100 * kMiB);
  BOOST_TEST(gpu(0).memory_limit == 100 * kMiB);
}

BOOST_AUTO_TEST_CASE(fraction_of_total_memory) {
  cfg::set_simulated_gpus(2, 8 * kGiB);
  cfg::experimental::set_memory_fraction(0.25);
  BOOST_TEST(gpu(0).memory_limit == 2 * kGiB);
  BOOST_TEST(gpu(1).memory_limit == 2 * kGiB);
  BOOST_TEST(!gpu(0).unified_memory);
}

BOOST_AUTO_TEST_CASE(fraction_above_one_is_unified_memory) {
  cfg::set_simulated_gpus(1, 8 * kGiB);
  cfg::experimental::set_memory_fraction(1.5);
  BOOST_TEST(gpu(0).memory_limit == 12 * kGiB);
  BOOST_TEST(gpu(0).unified_memory);
}

BOOST_AUTO_TEST_CASE(use_unified_memory_flag) {
  cfg::set_simulated_gpus(1, 8 * kGiB);
  cfg::experimental::set_use_unified_memory(true);
  BOOST_TEST(gpu(0).unified_memory);
}

BOOST_AUTO_TEST_CASE(system_memory_setting_replaces_fraction) {
  cfg::set_simulated_gpus(1, 8 * kGiB);
  cfg::experimental::set_memory_fraction(0.25);
  cfg::experimental::set_gpu_system_memory_size_in_mb(1024);
  BOOST_TEST(gpu(0).memory_limit == 7 * kGiB);
}

BOOST_AUTO_TEST_CASE(reserve_environment_variable_wins) {
  ScopedEnv env("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "2048");
  cfg::set_simulated_gpus(1, 8 * kGiB);
  cfg::experimental::set_gpu_system_memory_size_in_mb(1024);
  BOOST_TEST(gpu(0).memory_limit == 6 * kGiB);
}

BOOST_AUTO_TEST_CASE(reserve_environment_variable_errors) {
  {
    ScopedEnv env("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "lots");
    cfg::set_simulated_gpus(1, 8 * kGiB);
    BOOST_TEST(gpu(0).memory_limit == 8 * kGiB - 1800 * kMiB);
    BOOST_TEST(log.count("The requested reserved device memory lots is invalid. The request will "
                         "be ignored.") == 1u);
  }
  devtensor::testing::reset_context();
  {
    ScopedEnv env("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "-5");
    cfg::set_simulated_gpus(1, 8 * kGiB);
    BOOST_TEST(gpu(0).memory_limit == 8 * kGiB - 1800 * kMiB);
    BOOST_TEST(log.count("The requested reserved device memory -5 is invalid.") == 1u);
  }
  devtensor::testing::reset_context();
  {
    ScopedEnv env("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "9000");
    cfg::set_simulated_gpus(1, 8 * kGiB);
    BOOST_TEST(gpu(0).memory_limit == 8 * kGiB - 1800 * kMiB);
    BOOST_TEST(log.count("The requested reserved device memory 9437184000 is larger than the "
                         "available memory of 8589934592. The request is ignored.") == 1u);
  }
  devtensor::testing::reset_context();
  {
    ScopedEnv env("TF_DEVICE_MIN_SYS_MEMORY_IN_MB", "");  // empty: not set
    cfg::set_simulated_gpus(1, 8 * kGiB);
    BOOST_TEST(gpu(0).memory_limit == 8 * kGiB - 1800 * kMiB);
  }
}

BOOST_AUTO_TEST_CASE(memory_growth_flag) {
  cfg::set_simulated_gpus(2);
  for (const auto& g : cfg::list_physical_devices("GPU")) cfg::experimental::set_memory_growth(g, true);
  BOOST_TEST(gpu(0).allow_growth);
  BOOST_TEST(gpu(1).allow_growth);
}

BOOST_AUTO_TEST_CASE(growth_must_agree_across_visible_gpus_only) {
  cfg::set_simulated_gpus(2);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);
  cfg::set_visible_devices({gpus[0]}, "GPU");  // the disagreeing GPU is hidden
  BOOST_TEST(gpu(0).allow_growth);
}

BOOST_AUTO_TEST_CASE(force_growth_environment) {
  struct Case {
    const char* value;
    bool configured;
    bool effective;
    const char* phrase;  // nullptr: nothing logged
  };
  const Case cases[] = {
      {"true", false, true,
       "Overriding orig_value setting because the TF_FORCE_GPU_ALLOW_GROWTH environment variable "
       "is set. Original config value was 0."},
      {"false", true, false, "Original config value was 1."},
      {"true", true, true, nullptr},  // no change, no warning
      {"TRUE", false, false,
       "The TF_FORCE_GPU_ALLOW_GROWTH environment variable is set but could not be parsed: "
       "\"TRUE\". Valid values are \"true\" or \"false\". Using original config value of 0."},
      {"1", true, true, "could not be parsed: \"1\". Valid values"},
      {"yes", false, false, "could not be parsed: \"yes\""},
      {"", false, false, "could not be parsed: \"\""},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("TF_FORCE_GPU_ALLOW_GROWTH='" << c.value << "' configured " << c.configured) {
      devtensor::testing::reset_context();
      log.clear();
      ScopedEnv env("TF_FORCE_GPU_ALLOW_GROWTH", c.value);
      cfg::set_simulated_gpus(1);
      cfg::experimental::set_memory_growth(cfg::list_physical_devices("GPU")[0], c.configured);
      BOOST_TEST(gpu(0).allow_growth == c.effective);
      if (c.phrase)
        BOOST_TEST(log.count(c.phrase) == 1u);
      else
        BOOST_TEST(log.count("TF_FORCE_GPU_ALLOW_GROWTH") == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(growth_ignored_with_virtual_devices_unless_forced) {
  cfg::set_simulated_gpus(2);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::experimental::set_memory_growth(gpus[0], true);
  cfg::experimental::set_memory_growth(gpus[1], true);
  // Growth cannot be set on gpus[0] once it has virtual devices, but gpus[1] may keep its flag.
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 256}});
  BOOST_TEST(!gpu(0).allow_growth);
  BOOST_TEST(!gpu(1).allow_growth);

  devtensor::testing::reset_context();
  ScopedEnv env("TF_FORCE_GPU_ALLOW_GROWTH", "true");
  cfg::set_simulated_gpus(1);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit_mb = 256}});
  BOOST_TEST(gpu(0).allow_growth);
}

BOOST_AUTO_TEST_CASE(fraction_with_virtual_devices_is_invalid) {
  cfg::set_simulated_gpus(1);
  cfg::experimental::set_memory_fraction(0.5);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[0], {{.memory_limit_mb = 256}});
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), InvalidArgumentError,
                             "It's invalid to set per_process_gpu_memory_fraction when "
                             "virtual_devices is set.");
}

BOOST_AUTO_TEST_CASE(virtual_gpu_without_config_beside_configured_one_takes_default_limit) {
  cfg::set_simulated_gpus(2, 4 * kGiB);
  cfg::set_logical_device_configuration(cfg::list_physical_devices("GPU")[1],
                                        {{.memory_limit_mb = 10}, {.memory_limit_mb = 20}});
  BOOST_TEST(gpu(0).memory_limit == 4 * kGiB - 1800 * kMiB);
  BOOST_TEST(gpu(1).memory_limit == 10 * kMiB);
  BOOST_TEST(gpu(2).memory_limit == 20 * kMiB);
}

BOOST_AUTO_TEST_CASE(priorities) {
  cfg::set_simulated_gpus(1);
  auto g = cfg::list_physical_devices("GPU")[0];
  cfg::set_logical_device_configuration(
      g, {{.memory_limit_mb = 10, .experimental_priority = -1}, {.memory_limit_mb = 10}});
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), InvalidArgumentError,
                             "priority must be specified for all virtual devices");
  cfg::set_logical_device_configuration(
      g, {{.memory_limit_mb = 10, .experimental_priority = -1}, {.memory_limit_mb = 10, .experimental_priority = -6}});
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), InvalidArgumentError,
                             "Priority -6 is outside the range of supported priorities [-5,0] for "
                             "virtual device 1 on GPU# 0");
  cfg::set_logical_device_configuration(
      g, {{.memory_limit_mb = 10, .experimental_priority = 0}, {.memory_limit_mb = 10, .experimental_priority = -5}});
  BOOST_TEST(*gpu(0).priority == 0);
  BOOST_TEST(*gpu(1).priority == -5);
}

BOOST_AUTO_TEST_CASE(device_ordinals_reorder) {
  cfg::set_simulated_gpus(2, 4 * kGiB);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 10, .experimental_device_ordinal = 2},
                                                  {.memory_limit_mb = 11, .experimental_device_ordinal = 0}});
  cfg::set_logical_device_configuration(gpus[1], {{.memory_limit_mb = 12, .experimental_device_ordinal = 1},
                                                  {.memory_limit_mb = 13, .experimental_device_ordinal = 0}});
  // Lower ordinal first; ties keep list order: 11 (o0, gpu0), 13 (o0, gpu1), 12 (o1), 10 (o2).
  BOOST_TEST(gpu(0).memory_limit == 11 * kMiB);
  BOOST_TEST(gpu(1).memory_limit == 13 * kMiB);
  BOOST_TEST(gpu(2).memory_limit == 12 * kMiB);
  BOOST_TEST(gpu(3).memory_limit == 10 * kMiB);
}

BOOST_AUTO_TEST_CASE(device_ordinals_all_or_none) {
  cfg::set_simulated_gpus(2);
  auto gpus = cfg::list_physical_devices("GPU");
  cfg::set_logical_device_configuration(
      gpus[0], {{.memory_limit_mb = 10, .experimental_device_ordinal = 1}, {.memory_limit_mb = 10}});
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), InvalidArgumentError,
                             "device_ordinal must be specified for all virtual devices");
  cfg::set_logical_device_configuration(gpus[0], {{.memory_limit_mb = 10, .experimental_device_ordinal = 1}});
  cfg::set_logical_device_configuration(gpus[1], {{.memory_limit_mb = 10}});
  DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_logical_devices(), InvalidArgumentError,
                             "Device ordinals must be set for all virtual devices or none.");
}

BOOST_AUTO_TEST_SUITE_END()
