// libFuzzer target for the device-name parser and the operations on parsed names.
// Input: one or two names separated by '\n'. Properties checked (abort on violation):
// parse and try_parse agree; failures throw InvalidArgumentError with the key phrase; the
// canonical form is a fixed point; strict merges produce a name both sides specify;
// overrides and fills never throw and keep the winning side's fields; nothing leaks.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "devtensor/device/spec.hpp"

using devtensor::DeviceSpec;
using devtensor::InvalidArgumentError;

namespace {

[[noreturn]] void violated(const char* what, std::string_view input) {
  std::fprintf(stderr, "property violated: %s for input '%.*s'\n", what, static_cast<int>(input.size()), input.data());
  std::abort();
}

void check_one(std::string_view input) {
  const auto parsed = DeviceSpec::try_parse(input);
  try {
    const auto p = DeviceSpec::parse(input);
    if (!parsed || !(p == *parsed)) violated("parse succeeded where try_parse failed", input);
  } catch (const InvalidArgumentError& e) {
    if (parsed) violated("parse threw where try_parse succeeded", input);
    if (std::string_view(e.what()).find("Malformed device specification '") == std::string_view::npos)
      violated("error message lacks the key phrase", input);
  }
  if (parsed) {
    const std::string canonical = parsed->to_string();
    const auto again = DeviceSpec::try_parse(canonical);
    if (!again) violated("canonical form does not parse", input);
    if (again->to_string() != canonical) violated("canonical form is not a fixed point", input);
    (void)parsed->names_for_device_mappings();
    (void)DeviceSpec::split_device_name(input);
    try {
      (void)DeviceSpec::canonicalize(input, "/job:localhost/replica:0/task:0/device:CPU:0");
    } catch (const InvalidArgumentError&) {
      violated("canonicalize rejected a parsable name", input);
    }
  }
  (void)DeviceSpec::try_parse_local(input);
  (void)DeviceSpec::try_parse_full_or_local(input);
}

void check_pair(const DeviceSpec& a, const DeviceSpec& b, std::string_view input) {
  try {
    const auto m = a.merged(b);
    if (!a.is_specification_of(m) || !b.is_specification_of(m))
      violated("strict merge does not specify both sides", input);
    if (!a.is_compatible_with(b)) violated("merged incompatible names", input);
  } catch (const InvalidArgumentError& e) {
    if (a.is_compatible_with(b)) violated("strict merge of compatible names failed", input);
    if (std::string_view(e.what()).find("Cannot merge devices with incompatible") == std::string_view::npos)
      violated("merge error lacks the key phrase", input);
  }
  try {
    const auto soft = a.merged(b, true);
    (void)soft.to_string();
  } catch (const InvalidArgumentError&) {
    // only job/replica/task conflicts may fail softly
    if (a.with_type(std::nullopt)
            .with_id(std::nullopt)
            .is_compatible_with(b.with_type(std::nullopt).with_id(std::nullopt)))
      violated("soft merge failed without a job/replica/task conflict", input);
  }
  const auto o = a.overridden_by(b);
  if (!b.is_specification_of(o)) violated("override lost the other side's fields", input);
  const auto f = a.filled_from(b);
  if (!a.is_specification_of(f)) violated("fill lost this side's fields", input);
  (void)DeviceSpec::compare_full_names(a, b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto newline = input.find('\n');
  if (newline == std::string_view::npos) {
    check_one(input);
    return 0;
  }
  const auto first = input.substr(0, newline);
  const auto second = input.substr(newline + 1);
  check_one(first);
  check_one(second);
  const auto a = DeviceSpec::try_parse_full_or_local(first);
  const auto b = DeviceSpec::try_parse_full_or_local(second);
  if (a && b) check_pair(*a, *b, input);
  return 0;
}
