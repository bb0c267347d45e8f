// DeviceSpec parsing and printing: a valid/invalid table of TensorFlow's ParseFullName /
// ParseLocalName and ParsedNameToString.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <vector>

#include "devtensor/device/spec.hpp"
#include "devtensor_test.hpp"

using devtensor::DeviceSpec;
using devtensor::InvalidArgumentError;

namespace {

struct ParseCase {
  const char* input;
  const char* canonical;  // nullptr: the full-name parse must fail
  const char* rule;
};

// Every rule of the full-name grammar and of the canonical string form has at least one row.
const std::vector<ParseCase> kParseTable = {
    // "/" and "" parse with every field unset and print as "".
    {"/", "", "exact '/' is all unset"},
    {"", "", "empty string is all unset"},
    // Components, in canonical order and any other order.
    {"/job:localhost/replica:0/task:0/device:GPU:1", "/job:localhost/replica:0/task:0/device:GPU:1", "full name"},
    {"/device:GPU:1/task:0/replica:0/job:localhost", "/job:localhost/replica:0/task:0/device:GPU:1", "any order"},
    {"/device:GPU/job:w", "/job:w/device:GPU:*", "a type without an id"},
    {"/job:worker", "/job:worker", "job only"},
    {"/replica:3", "/replica:3", "replica only"},
    {"/task:12", "/task:12", "task only"},
    {"/job:a_b9/task:2", "/job:a_b9/task:2", "job name letters digits underscore"},
    {"/job:W", "/job:W", "job name case kept"},
    // Wildcards.
    {"/job:*", "", "job '*' is unset"},
    {"/job:*/replica:*/task:*/device:*", "", "every '*'"},
    {"/device:GPU:*", "/device:GPU:*", "id '*'"},
    {"/device:*:1", "", "type '*' with an id: the id is not printed without a type"},
    {"/replica:*/task:1", "/task:1", "replica '*'"},
    // Type case is preserved after /device:.
    {"/device:gpu:0", "/device:gpu:0", "case preserved after /device:"},
    {"/device:TPU_SYSTEM:0", "/device:TPU_SYSTEM:0", "any type token"},
    {"/device:XLA_GPU2", "/device:XLA_GPU2:*", "type token with digits"},
    // Legacy forms are upper-cased.
    {"/cpu:0", "/device:CPU:0", "legacy /cpu:"},
    {"/CPU:1", "/device:CPU:1", "legacy /CPU:"},
    {"/gpu:0", "/device:GPU:0", "legacy /gpu:"},
    {"/GPU:7", "/device:GPU:7", "legacy /GPU:"},
    {"/gpu:*", "/device:GPU:*", "legacy with '*'"},
    {"/job:localhost/replica:0/task:0/gpu:1", "/job:localhost/replica:0/task:0/device:GPU:1", "legacy after task"},
    // Repeated components overwrite.
    {"/job:a/job:b", "/job:b", "repeated job overwrites"},
    {"/gpu:0/cpu:1", "/device:CPU:1", "repeated type overwrites"},
    {"/device:GPU:1/device:*", "", "later '*' type unsets type and id"},
    {"/device:GPU:1/device:GPU", "/device:GPU:*", "later component without id unsets id"},
    // Numbers: digits only, leading zeros allowed, int32 range.
    {"/replica:007", "/replica:7", "leading zeros"},
    {"/task:2147483647", "/task:2147483647", "INT32_MAX"},
    // ---- failures ----
    {"/task:2147483648", nullptr, "beyond int32"},
    {"/replica:-1", nullptr, "no sign"},
    {"/replica:+1", nullptr, "no plus sign"},
    {"/replica:", nullptr, "missing digits"},
    {"/replica:x", nullptr, "non-numeric replica"},
    {"/task:1a", nullptr, "text after the number"},
    {"/job:1abc", nullptr, "job must start with a letter"},
    {"/job:", nullptr, "empty job"},
    {"/job:foo-bar", nullptr, "job with '-'"},
    {"/job:_x", nullptr, "job starting with '_'"},
    {"/device:", nullptr, "empty type"},
    {"/device:1GPU:0", nullptr, "type must start with a letter"},
    {"/device:GPU:", nullptr, "':' without id"},
    {"/device:GPU:x", nullptr, "non-numeric id"},
    {"/device:GPU:0x", nullptr, "text after the id"},
    {"/device:G-PU:0", nullptr, "bad character in type"},
    {"/gpu:", nullptr, "legacy without id"},
    {"/cpu:", nullptr, "legacy cpu without id"},
    {"/gpu", nullptr, "legacy without colon"},
    {"/Gpu:0", nullptr, "other case variants are unknown components"},
    {"/tpu:0", nullptr, "only four legacy spellings"},
    {"/gpu:0/", nullptr, "trailing slash"},
    {"//gpu:0", nullptr, "doubled slash"},
    {"/job:a//task:0", nullptr, "doubled slash inside"},
    {"gpu:0", nullptr, "no leading slash (a local name, not a full name)"},
    {"GPU:0", nullptr, "local form is not a full name"},
    {"/foo:0", nullptr, "unknown component"},
    {"/job:a/foo", nullptr, "unknown trailing component"},
    {" /cpu:0", nullptr, "leading space"},
    {"/cpu:0 ", nullptr, "trailing space"},
    {"/job:l\xC3\xA9", nullptr, "non-ASCII job"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(spec_parse)

BOOST_AUTO_TEST_CASE(parse_table) {
  for (const auto& c : kParseTable) {
    BOOST_TEST_CONTEXT("input '" << c.input << "' (" << c.rule << ")") {
      const auto parsed = DeviceSpec::try_parse(c.input);
      if (c.canonical) {
        BOOST_TEST_REQUIRE(parsed.has_value());
        BOOST_TEST(parsed->to_string() == c.canonical);
        BOOST_TEST(DeviceSpec::parse(c.input) == *parsed);
        // The canonical form parses back to the same fields (unless a '*' type hid an id).
        const auto again = DeviceSpec::parse(parsed->to_string());
        BOOST_TEST(again.to_string() == parsed->to_string());
      } else {
        BOOST_TEST(!parsed.has_value());
        DEVTENSOR_CHECK_THROW_WITH(DeviceSpec::parse(c.input), InvalidArgumentError,
                                   std::string("Malformed device specification '") + c.input + "'");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fields) {
  const auto s = DeviceSpec::parse("/job:localhost/replica:0/task:1/device:GPU:2");
  BOOST_TEST(*s.job() == "localhost");
  BOOST_TEST(*s.replica() == 0);
  BOOST_TEST(*s.task() == 1);
  BOOST_TEST(*s.type() == "GPU");
  BOOST_TEST(*s.id() == 2);
  BOOST_TEST(s.is_fully_specified());

  const auto partial = DeviceSpec::parse("/device:GPU/job:w");
  BOOST_TEST(*partial.job() == "w");
  BOOST_TEST(!partial.replica().has_value());
  BOOST_TEST(!partial.task().has_value());
  BOOST_TEST(*partial.type() == "GPU");
  BOOST_TEST(!partial.id().has_value());
  BOOST_TEST(!partial.is_fully_specified());

  // '/device:*:1' keeps the id set even though it is not printed.
  const auto hidden = DeviceSpec::parse("/device:*:1");
  BOOST_TEST(!hidden.type().has_value());
  BOOST_TEST(*hidden.id() == 1);
  BOOST_TEST(hidden.to_string() == "");

  BOOST_TEST(DeviceSpec().is_empty());
  BOOST_TEST(DeviceSpec::parse("/").is_empty());
}

BOOST_AUTO_TEST_CASE(error_message_says_what_and_how) {
  try {
    (void)DeviceSpec::parse("/gpu:x");
    BOOST_FAIL("parse should throw");
  } catch (const InvalidArgumentError& e) {
    const std::string m = e.what();
    BOOST_TEST(devtensor::test::contains(m, "Malformed device specification '/gpu:x'"));
    BOOST_TEST(devtensor::test::contains(m, "offset 5"));  // where it went wrong
    BOOST_TEST(devtensor::test::contains(m, "/job:localhost/replica:0/task:0/device:GPU:0"));
    BOOST_TEST((e.code() == devtensor::ErrorCode::invalid_argument));
  }
}

BOOST_AUTO_TEST_CASE(local_names) {
  // ParseLocalName accepts exactly TYPE:N, case preserved.
  auto l = DeviceSpec::try_parse_local("GPU:0");
  BOOST_TEST_REQUIRE(l.has_value());
  BOOST_TEST(l->to_string() == "/device:GPU:0");
  BOOST_TEST(DeviceSpec::try_parse_local("gpu:3")->to_string() == "/device:gpu:3");
  for (const char* bad : {"GPU", "GPU:", "GPU:*", "GPU:x", "GPU:0:1", ":0", "0:0", "/gpu:0", "GPU:-1", "GPU:0/"})
    BOOST_TEST(!DeviceSpec::try_parse_local(bad).has_value(), "local '" << bad << "' must fail");

  // ParseFullOrLocalName: full first, then local.
  BOOST_TEST(DeviceSpec::parse_full_or_local("/gpu:1").to_string() == "/device:GPU:1");
  BOOST_TEST(DeviceSpec::parse_full_or_local("CPU:2").to_string() == "/device:CPU:2");
  BOOST_TEST(!DeviceSpec::try_parse_full_or_local("GPU").has_value());
  DEVTENSOR_CHECK_THROW_WITH(DeviceSpec::parse_full_or_local("GPU:*"), InvalidArgumentError,
                             "Malformed device specification 'GPU:*'");

  // LocalName(type, id) and LocalName(fullname).
  BOOST_TEST(DeviceSpec::local_name("GPU", 1) == "/device:GPU:1");
  BOOST_TEST(DeviceSpec::parse("/job:w/replica:1/task:2/gpu:3").local_name() == "/device:GPU:3");
  BOOST_CHECK_THROW((void)DeviceSpec::parse("/job:w").local_name(), InvalidArgumentError);
  BOOST_CHECK_THROW((void)DeviceSpec::parse("/device:GPU:*").local_name(), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(full_and_legacy_names) {
  BOOST_TEST(DeviceSpec::full_name("w", 0, 1, "GPU", 2) == "/job:w/replica:0/task:1/device:GPU:2");
  const auto s = DeviceSpec::parse("/job:w/replica:0/task:1/device:GPU:2");
  BOOST_TEST(s.legacy_name() == "/job:w/replica:0/task:1/gpu:2");
  BOOST_TEST(DeviceSpec::parse("/job:w/replica:0/task:1/device:XLA_CPU:0").legacy_name() ==
             "/job:w/replica:0/task:1/xla_cpu:0");
  BOOST_CHECK_THROW((void)DeviceSpec::parse("/gpu:0").legacy_name(), InvalidArgumentError);

  // GetNamesForDeviceMappings.
  const auto names = s.names_for_device_mappings();
  BOOST_TEST_REQUIRE(names.size() == 2u);
  BOOST_TEST(names[0] == "/job:w/replica:0/task:1/device:GPU:2");
  BOOST_TEST(names[1] == "/job:w/replica:0/task:1/gpu:2");
  BOOST_TEST(DeviceSpec::parse("/job:w/device:GPU:2").names_for_device_mappings().empty());
}

BOOST_AUTO_TEST_CASE(split_device_name) {
  auto s = DeviceSpec::split_device_name("/job:w/replica:1/task:2/device:GPU:3");
  BOOST_TEST_REQUIRE(s.has_value());
  BOOST_TEST(s->first == "/job:w/replica:1/task:2");
  BOOST_TEST(s->second == "GPU:3");
  auto bare = DeviceSpec::split_device_name("/gpu:0");
  BOOST_TEST_REQUIRE(bare.has_value());
  BOOST_TEST(bare->first == "");
  BOOST_TEST(bare->second == "GPU:0");
  BOOST_TEST(!DeviceSpec::split_device_name("/job:w/device:GPU:*").has_value());  // no id
  BOOST_TEST(!DeviceSpec::split_device_name("/job:w/task:1").has_value());        // no type
  BOOST_TEST(!DeviceSpec::split_device_name("GPU:0").has_value());                // not a full name
}

BOOST_AUTO_TEST_CASE(builders_validate) {
  const auto s = DeviceSpec().with_job("w").with_replica(1).with_task(2).with_type("GPU").with_id(3);
  BOOST_TEST(s.to_string() == "/job:w/replica:1/task:2/device:GPU:3");
  BOOST_TEST(s.with_id(std::nullopt).to_string() == "/job:w/replica:1/task:2/device:GPU:*");
  BOOST_CHECK_THROW((void)DeviceSpec().with_job("1w"), InvalidArgumentError);
  BOOST_CHECK_THROW((void)DeviceSpec().with_type("G/PU"), InvalidArgumentError);
  BOOST_CHECK_THROW((void)DeviceSpec().with_replica(-1), InvalidArgumentError);
  BOOST_CHECK_THROW((void)DeviceSpec().with_task(-2), InvalidArgumentError);
  BOOST_CHECK_THROW((void)DeviceSpec().with_id(-3), InvalidArgumentError);
}

BOOST_AUTO_TEST_SUITE_END()
