// Simulated GPUs: DEVTENSOR_SIMULATED_GPUS parsing, precedence, freezing, properties.
#include <boost/test/unit_test.hpp>

#include "devtensor/device/configuration.hpp"
#include "devtensor_test.hpp"

namespace cfg = devtensor::config;
using devtensor::InvalidArgumentError;
using devtensor::kGiB;
using devtensor::kKiB;
using devtensor::kMiB;
using devtensor::test::ScopedEnv;

BOOST_FIXTURE_TEST_SUITE(simulated, devtensor::test::FreshContext)

BOOST_AUTO_TEST_CASE(environment_value_table) {
  struct Case {
    const char* value;
    int count;
    std::uint64_t bytes;
  };
  const Case valid[] = {
      {"0", 0, 16 * kGiB},       {"2", 2, 16 * kGiB},     {"2x16GiB", 2, 16 * kGiB}, {"1x512MiB", 1, 512 * kMiB},
      {"3x64KiB", 3, 64 * kKiB}, {"4x1GiB", 4, 1 * kGiB}, {"02", 2, 16 * kGiB},
  };
  for (const auto& c : valid) {
    BOOST_TEST_CONTEXT(c.value) {
      const auto parsed = devtensor::parse_simulated_gpus(c.value);
      BOOST_TEST(parsed.count == c.count);
      BOOST_TEST(parsed.memory_bytes == c.bytes);
    }
  }
  for (const char* bad : {"", "x", "-1", "two", "2x", "2x16", "2x16GB", "2x0GiB", "2X16GiB", "2x16gib", "2 x16GiB",
                          "2x16GiB ", "2x-1GiB", "1.5", "2x1.5GiB", "99999999999999"}) {
    BOOST_TEST_CONTEXT("'" << bad << "'") {
      DEVTENSOR_CHECK_THROW_WITH((void)devtensor::parse_simulated_gpus(bad), InvalidArgumentError,
                                 "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed");
    }
  }
}

BOOST_AUTO_TEST_CASE(environment_creates_gpus) {
  ScopedEnv env("DEVTENSOR_SIMULATED_GPUS", "2x1GiB");
  devtensor::testing::reset_context();
  const auto gpus = cfg::list_physical_devices("GPU");
  BOOST_TEST(gpus.size() == 2u);
  const auto& p = devtensor::Context::global().physical_devices()[1];
  BOOST_TEST(p.simulated);
  BOOST_TEST(p.properties.name == "devtensor simulated GPU");
  BOOST_TEST(p.properties.pci_bus_id == "simulated:0");
  BOOST_TEST(p.properties.compute_capability_major == 9);
  BOOST_TEST(p.properties.compute_capability_minor == 0);
  BOOST_TEST(p.properties.total_memory == 1 * kGiB);
  BOOST_TEST(p.properties.free_memory == 1 * kGiB);
}

BOOST_AUTO_TEST_CASE(bad_environment_fails_discovery_and_can_be_fixed) {
  {
    ScopedEnv env("DEVTENSOR_SIMULATED_GPUS", "2x16GB");
    DEVTENSOR_CHECK_THROW_WITH((void)cfg::list_physical_devices(), InvalidArgumentError,
                               "DEVTENSOR_SIMULATED_GPUS is set but could not be parsed: '2x16GB'");
    BOOST_TEST(!devtensor::Context::global().initialized());
  }
  BOOST_TEST(cfg::list_physical_devices().size() == 1u);
}

BOOST_AUTO_TEST_CASE(api_takes_precedence_over_environment) {
  ScopedEnv env("DEVTENSOR_SIMULATED_GPUS", "4");
  cfg::set_simulated_gpus(1, 2 * kGiB);
  BOOST_TEST(cfg::list_physical_devices("GPU").size() == 1u);
}

BOOST_AUTO_TEST_CASE(api_precedence_even_over_a_bad_environment) {
  ScopedEnv env("DEVTENSOR_SIMULATED_GPUS", "garbage");
  cfg::set_simulated_gpus(0);
  BOOST_TEST(cfg::list_physical_devices("GPU").empty());
}

BOOST_AUTO_TEST_CASE(environment_is_fixed_at_discovery) {
  ScopedEnv env("DEVTENSOR_SIMULATED_GPUS", "1");
  BOOST_TEST(cfg::list_physical_devices("GPU").size() == 1u);
  {
    ScopedEnv later("DEVTENSOR_SIMULATED_GPUS", "3");
    BOOST_TEST(cfg::list_physical_devices("GPU").size() == 1u);  // read once
  }
  cfg::set_simulated_gpus(1);  // the discovered value: accepted
  BOOST_CHECK_THROW(cfg::set_simulated_gpus(2), devtensor::FailedPreconditionError);
}

BOOST_AUTO_TEST_SUITE_END()
