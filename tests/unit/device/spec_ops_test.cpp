// DeviceSpec matching, merging, canonicalisation and ordering.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "devtensor/device/spec.hpp"
#include "devtensor_test.hpp"

using devtensor::DeviceSpec;
using devtensor::InvalidArgumentError;

namespace {
DeviceSpec p(const char* s) { return DeviceSpec::parse(s); }

struct MergeCase {
  const char* target;
  const char* other;
  const char* strict;  // nullptr: strict merge fails with `phrase`
  const char* soft;    // nullptr: soft merge fails with `phrase`
  const char* phrase;
};

const std::vector<MergeCase> kMergeTable = {
    {"", "", "", "", nullptr},
    {"/job:a", "", "/job:a", "/job:a", nullptr},
    {"", "/job:a/replica:1/task:2/device:GPU:3", "/job:a/replica:1/task:2/device:GPU:3",
     "/job:a/replica:1/task:2/device:GPU:3", nullptr},
    {"/job:a", "/task:1", "/job:a/task:1", "/job:a/task:1", nullptr},
    {"/gpu:*", "/device:GPU:2", "/device:GPU:2", "/device:GPU:2", nullptr},  // legacy normalised
    {"/device:GPU:2", "/gpu:*", "/device:GPU:2", "/device:GPU:2", nullptr},
    {"/job:a", "/job:a", "/job:a", "/job:a", nullptr},
    // Conflicts on job, replica, task fail in both modes.
    {"/job:a", "/job:b", nullptr, nullptr, "Cannot merge devices with incompatible jobs: '/job:a' and '/job:b'"},
    {"/replica:0", "/replica:1", nullptr, nullptr,
     "Cannot merge devices with incompatible replicas: '/replica:0' and '/replica:1'"},
    {"/task:0", "/task:1", nullptr, nullptr, "Cannot merge devices with incompatible tasks: '/task:0' and '/task:1'"},
    // Type conflict: soft placement clears type and id.
    {"/device:CPU:0", "/device:GPU:1", nullptr, "",
     "Cannot merge devices with incompatible types: '/device:CPU:0' and '/device:GPU:1'"},
    {"/job:a/device:CPU:0", "/job:a/task:3/device:GPU:1", nullptr, "/job:a/task:3",
     "Cannot merge devices with incompatible types: '/job:a/task:3/device:CPU:0' and "
     "'/job:a/task:3/device:GPU:1'"},
    // Type case is compared exactly.
    {"/device:gpu:0", "/device:GPU:0", nullptr, "", "Cannot merge devices with incompatible types"},
    // Id conflict: soft placement clears only the id.
    {"/device:GPU:0", "/device:GPU:1", nullptr, "/device:GPU:*",
     "Cannot merge devices with incompatible ids: '/device:GPU:0' and '/device:GPU:1'"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(spec_ops)

BOOST_AUTO_TEST_CASE(merged_table) {
  for (const auto& c : kMergeTable) {
    BOOST_TEST_CONTEXT("merge '" << c.target << "' with '" << c.other << "'") {
      if (c.strict) {
        BOOST_TEST(p(c.target).merged(p(c.other)).to_string() == c.strict);
      } else {
        DEVTENSOR_CHECK_THROW_WITH((void)p(c.target).merged(p(c.other)), InvalidArgumentError, c.phrase);
      }
      if (c.soft) {
        BOOST_TEST(p(c.target).merged(p(c.other), true).to_string() == c.soft);
      } else {
        DEVTENSOR_CHECK_THROW_WITH((void)p(c.target).merged(p(c.other), true), InvalidArgumentError, c.phrase);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(soft_merge_clears_type_and_id_fields) {
  const auto m = p("/device:CPU:0").merged(p("/device:GPU:1"), true);
  BOOST_TEST(!m.type().has_value());
  BOOST_TEST(!m.id().has_value());
  const auto id_only = p("/device:GPU:0").merged(p("/device:GPU:1"), true);
  BOOST_TEST(*id_only.type() == "GPU");
  BOOST_TEST(!id_only.id().has_value());
}

BOOST_AUTO_TEST_CASE(overridden_by) {
  // TensorFlow's DeviceSpec merge example.
  BOOST_TEST(p("/job:w/device:CPU:0").overridden_by(p("/device:GPU:1")).to_string() == "/job:w/device:GPU:1");
  // Every conflict goes to the other side, never an error.
  BOOST_TEST(
      p("/job:a/replica:0/task:0/device:CPU:0").overridden_by(p("/job:b/replica:1/task:2/device:GPU:3")).to_string() ==
      "/job:b/replica:1/task:2/device:GPU:3");
  // Unset fields on the other side keep ours (a type without id keeps our id).
  BOOST_TEST(p("/job:localhost/replica:0/task:0/device:CPU:0").overridden_by(p("/device:GPU:*")).to_string() ==
             "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(p("/job:a").overridden_by(p("")).to_string() == "/job:a");
}

BOOST_AUTO_TEST_CASE(filled_from) {
  BOOST_TEST(p("/device:GPU:1").filled_from(p("/job:a/replica:0/task:0/device:CPU:0")).to_string() ==
             "/job:a/replica:0/task:0/device:GPU:1");
  BOOST_TEST(p("/job:b").filled_from(p("/job:a/task:3")).to_string() == "/job:b/task:3");
  BOOST_TEST(p("").filled_from(p("")).to_string() == "");
}

BOOST_AUTO_TEST_CASE(is_specification_of) {
  const auto full = p("/job:a/replica:0/task:1/device:GPU:2");
  BOOST_TEST(p("").is_specification_of(full));
  BOOST_TEST(p("/job:a").is_specification_of(full));
  BOOST_TEST(p("/device:GPU:*").is_specification_of(full));
  BOOST_TEST(p("/gpu:2").is_specification_of(full));
  BOOST_TEST(!p("/gpu:1").is_specification_of(full));
  BOOST_TEST(!p("/job:b").is_specification_of(full));
  BOOST_TEST(!p("/device:gpu:2").is_specification_of(full));  // case-sensitive
  // A field set in `less` must also be set in `more`.
  BOOST_TEST(!p("/task:1").is_specification_of(p("/job:a")));
  BOOST_TEST(full.is_specification_of(full));
  BOOST_TEST(p("/gpu:2").matches(full));
  BOOST_TEST(!p("/cpu:0").matches(full));
}

BOOST_AUTO_TEST_CASE(is_compatible_with) {
  BOOST_TEST(p("/job:a").is_compatible_with(p("/task:1")));  // disjoint fields
  BOOST_TEST(p("/gpu:*").is_compatible_with(p("/gpu:3")));
  BOOST_TEST(!p("/gpu:1").is_compatible_with(p("/gpu:3")));
  BOOST_TEST(!p("/job:a").is_compatible_with(p("/job:b")));
  BOOST_TEST(p("").is_compatible_with(p("/job:b/cpu:0")));
  BOOST_TEST(!p("/cpu:0").is_compatible_with(p("/gpu:0")));
}

BOOST_AUTO_TEST_CASE(same_address_space_and_fully_specified) {
  const auto a = p("/job:a/replica:0/task:1/device:GPU:2");
  const auto b = p("/job:a/replica:0/task:1/device:CPU:0");
  BOOST_TEST(a.is_same_address_space(b));
  BOOST_TEST(!a.is_same_address_space(p("/job:a/replica:0/task:2/device:CPU:0")));
  BOOST_TEST(!p("/job:a/replica:0").is_same_address_space(p("/job:a/replica:0")));  // task unset
  BOOST_TEST(a.is_fully_specified());
  BOOST_TEST(!p("/job:a/replica:0/task:1/device:GPU:*").is_fully_specified());
  BOOST_TEST(!p("/replica:0/task:1/device:GPU:0").is_fully_specified());
}

BOOST_AUTO_TEST_CASE(canonicalize_against_basename) {
  const char* base = "/job:w/replica:0/task:1/device:CPU:0";
  BOOST_TEST(DeviceSpec::canonicalize("/gpu:1", base) == "/job:w/replica:0/task:1/device:GPU:1");
  BOOST_TEST(DeviceSpec::canonicalize("GPU:2", base) == "/job:w/replica:0/task:1/device:GPU:2");
  BOOST_TEST(DeviceSpec::canonicalize("/job:x/gpu:1", base) == "/job:x/replica:0/task:1/device:GPU:1");
  BOOST_TEST(DeviceSpec::canonicalize("", base) == base);
  BOOST_TEST(DeviceSpec::canonicalize("/device:GPU:*", base) == "/job:w/replica:0/task:1/device:GPU:0");
  DEVTENSOR_CHECK_THROW_WITH(DeviceSpec::canonicalize("/gpu:0", "/job:w/device:CPU:0"), InvalidArgumentError,
                             "Basename: /job:w/device:CPU:0 should be fully specified.");
  DEVTENSOR_CHECK_THROW_WITH(DeviceSpec::canonicalize("/gpu:0", "not a name"), InvalidArgumentError,
                             "Could not parse basename: not a name into a device specification.");
  DEVTENSOR_CHECK_THROW_WITH(DeviceSpec::canonicalize("/gpu:x", base), InvalidArgumentError,
                             "Could not parse /gpu:x into a device specification.");
}

BOOST_AUTO_TEST_CASE(compare_full_names) {
  using devtensor::DeviceSpec;
  std::vector<std::string> names = {
      "/job:b/replica:0/task:0/device:CPU:0",
      "/job:a/replica:0/task:0/device:GPU:1",
      "/job:a/replica:0/task:0/device:GPU:0",
      "/job:a/replica:0/task:0/device:CPU:0",
      "/job:a/replica:1/task:0/device:CPU:0",
      "/job:a/replica:0/task:1/device:CPU:0",
      "garbage",
      "/job:a/replica:0/task:0/device:CPU:*",
      "/replica:0/task:0/device:CPU:0",
      "another garbage",
  };
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return DeviceSpec::compare_full_names(std::string_view(a), std::string_view(b));
  });
  const std::vector<std::string> expected = {
      "another garbage",
      "garbage",                               // unparsable first, by text
      "/replica:0/task:0/device:CPU:0",        // missing job sorts first
      "/job:a/replica:0/task:0/device:CPU:*",  // missing id before set ids
      "/job:a/replica:0/task:0/device:CPU:0",
      "/job:a/replica:0/task:0/device:GPU:0",
      "/job:a/replica:0/task:0/device:GPU:1",
      "/job:a/replica:0/task:1/device:CPU:0",
      "/job:a/replica:1/task:0/device:CPU:0",
      "/job:b/replica:0/task:0/device:CPU:0",
  };
  BOOST_TEST(names == expected, boost::test_tools::per_element());
  // Equal names compare false both ways.
  BOOST_TEST(!DeviceSpec::compare_full_names(std::string_view("/gpu:0"), std::string_view("/GPU:0")));
  BOOST_TEST(!DeviceSpec::compare_full_names(std::string_view("/GPU:0"), std::string_view("/gpu:0")));
}

BOOST_AUTO_TEST_CASE(device_util_canonicalize) {
  namespace du = devtensor::device_util;
  BOOST_TEST(du::canonicalize("/gpu:1") == "/job:localhost/replica:0/task:0/device:GPU:1");
  BOOST_TEST(du::canonicalize("GPU:0") == "/job:localhost/replica:0/task:0/device:GPU:0");
  BOOST_TEST(du::canonicalize("/cpu:0") == "/job:localhost/replica:0/task:0/device:CPU:0");
  // A set job is kept; replica and task still default to 0.
  BOOST_TEST(du::canonicalize("/job:worker/gpu:0") == "/job:worker/replica:0/task:0/device:GPU:0");
  BOOST_TEST(du::canonicalize("/job:worker/task:3") == "/job:worker/replica:0/task:3/device:CPU:0");
  // The default fills what the name leaves unset.
  BOOST_TEST(du::canonicalize("/device:GPU:1", "/job:w/task:2") == "/job:w/replica:0/task:2/device:GPU:1");
  BOOST_CHECK_THROW((void)du::canonicalize("/gpu:x"), InvalidArgumentError);
}

BOOST_AUTO_TEST_CASE(value_semantics) {
  auto a = p("/job:a/gpu:0");
  auto b = a;
  BOOST_TEST((a == b));
  b = b.with_id(1);
  BOOST_TEST(!(a == b));
  BOOST_TEST(a.to_string() == "/job:a/device:GPU:0");
}

BOOST_AUTO_TEST_SUITE_END()
