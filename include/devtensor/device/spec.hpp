#pragma once
/// @file spec.hpp
/// @brief DeviceSpec: TensorFlow device names, parsed, matched, merged and printed.
///
/// A device name has five optional fields (job, replica, task, type, id). An unset field is a
/// wildcard, so one value type serves both as a full device name and as a pattern. The grammar is
/// TensorFlow's C++ one (device_name_utils.cc), stricter than Python's DeviceSpec: job names are
/// validated, replica and task are digits only, empty pieces fail. A DeviceScope upper-cases the
/// type tokens `cpu` and `gpu` as tf.device does; DeviceSpec::parse keeps their case.

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/device_name_parser.hpp"

namespace devtensor {

/// A TensorFlow device name or partial specification.
///
/// Value type; every field is a std::optional (unset means "any"). Parsing, printing, matching,
/// merging and canonicalisation follow TensorFlow's device_name_utils.cc (ParseFullName,
/// ParsedNameToString, IsSpecification/IsCompleteSpecification, MergeDevNames,
/// CanonicalizeDeviceName).
class DeviceSpec {
 public:
  /// The fully unspecified name: every field is a wildcard; prints as "".
  DeviceSpec() = default;

  // --- parsing -------------------------------------------------------------------------------

  /// Parses a full name ("/job:localhost/replica:0/task:0/device:GPU:1", "/gpu:0", "/device:CPU:*").
  /// @throws InvalidArgumentError "Malformed device specification '<spec>'" with the reason.
  static DeviceSpec parse(std::string_view spec);

  /// Like parse(), but returns an empty optional instead of throwing.
  static std::optional<DeviceSpec> try_parse(std::string_view spec) { return parse_full(spec, nullptr); }

  /// TensorFlow's ParseLocalName: exactly "TYPE:N" (case preserved), else an empty optional.
  static std::optional<DeviceSpec> try_parse_local(std::string_view name);

  /// TensorFlow's ParseFullOrLocalName: the full form first, then "TYPE:N". Used for every device
  /// string a user hands devtensor (scopes, strategy device lists, memory-stats queries).
  /// @throws InvalidArgumentError "Malformed device specification '<spec>'".
  static DeviceSpec parse_full_or_local(std::string_view spec);

  static std::optional<DeviceSpec> try_parse_full_or_local(std::string_view spec) {
    if (auto parsed = parse_full(spec, nullptr)) return parsed;
    return try_parse_local(spec);
  }

  // --- fields --------------------------------------------------------------------------------

  [[nodiscard]] const std::optional<std::string>& job() const noexcept { return job_; }
  [[nodiscard]] std::optional<int> replica() const noexcept { return replica_; }
  [[nodiscard]] std::optional<int> task() const noexcept { return task_; }
  [[nodiscard]] const std::optional<std::string>& type() const noexcept { return type_; }
  [[nodiscard]] std::optional<int> id() const noexcept { return id_; }

  /// Copies with one field replaced (std::nullopt unsets it). Values are validated like the parser
  /// validates them. @throws InvalidArgumentError
  [[nodiscard]] DeviceSpec with_job(std::optional<std::string> job) const;
  [[nodiscard]] DeviceSpec with_replica(std::optional<int> replica) const {
    DeviceSpec copy = *this;
    copy.replica_ = check_index(replica, "replica");
    return copy;
  }
  [[nodiscard]] DeviceSpec with_task(std::optional<int> task) const {
    DeviceSpec copy = *this;
    copy.task_ = check_index(task, "task");
    return copy;
  }
  [[nodiscard]] DeviceSpec with_type(std::optional<std::string> type) const;
  [[nodiscard]] DeviceSpec with_id(std::optional<int> id) const {
    DeviceSpec copy = *this;
    copy.id_ = check_index(id, "device id");
    return copy;
  }

  // --- printing ------------------------------------------------------------------------------

  /// Canonical form: "/job:J/replica:R/task:T/device:TYPE:ID", set fields only, '*' for a missing
  /// id, no device part without a type, "" when nothing is set (TensorFlow's ParsedNameToString).
  [[nodiscard]] std::string to_string() const;

  /// "/job:<job>/replica:<r>/task:<t>/device:<type>:<id>" (TensorFlow's FullName).
  static std::string full_name(std::string_view job, int replica, int task, std::string_view type, int id);

  /// "/job:<j>/replica:<r>/task:<t>/<type in lower case>:<id>" (TensorFlow's LegacyName).
  /// @throws InvalidArgumentError unless the name is fully specified.
  [[nodiscard]] std::string legacy_name() const;

  /// "/device:TYPE:ID" (TensorFlow's LocalName(type, id)).
  static std::string local_name(std::string_view type, int id);

  /// This name without job, replica and task: "/device:TYPE:ID".
  /// @throws InvalidArgumentError when the type or the id is unset.
  [[nodiscard]] std::string local_name() const;

  /// TensorFlow's SplitDeviceName: (task part, "TYPE:ID"), or nothing when the name does not parse
  /// or lacks a type or an id. The task part is the canonical prefix of the set job/replica/task.
  static std::optional<std::pair<std::string, std::string>> split_device_name(std::string_view name);

  /// {canonical name, legacy name} for a fully specified name, else {} (GetNamesForDeviceMappings).
  [[nodiscard]] std::vector<std::string> names_for_device_mappings() const;

  // --- matching ------------------------------------------------------------------------------

  /// Every field set here is set in `more` with the same value (TensorFlow's IsSpecification).
  [[nodiscard]] bool is_specification_of(const DeviceSpec& more) const noexcept {
    return field_specifies(job_, more.job_) && field_specifies(replica_, more.replica_) &&
           field_specifies(task_, more.task_) && field_specifies(type_, more.type_) && field_specifies(id_, more.id_);
  }

  /// Pattern match against a fully specified device name (TensorFlow's IsCompleteSpecification):
  /// every field set here equals the device's.
  [[nodiscard]] bool matches(const DeviceSpec& device) const noexcept { return is_specification_of(device); }

  /// Every field set in both has the same value in both (TensorFlow's AreCompatible).
  [[nodiscard]] bool is_compatible_with(const DeviceSpec& other) const noexcept {
    return fields_compatible(job_, other.job_) && fields_compatible(replica_, other.replica_) &&
           fields_compatible(task_, other.task_) && fields_compatible(type_, other.type_) &&
           fields_compatible(id_, other.id_);
  }

  /// Job, replica and task set in both and equal (TensorFlow's IsSameAddressSpace).
  [[nodiscard]] bool is_same_address_space(const DeviceSpec& other) const noexcept {
    return job_ && replica_ && task_ && job_ == other.job_ && replica_ == other.replica_ && task_ == other.task_;
  }

  [[nodiscard]] bool is_fully_specified() const noexcept { return job_ && replica_ && task_ && type_ && id_; }

  [[nodiscard]] bool is_empty() const noexcept { return !job_ && !replica_ && !task_ && !type_ && !id_; }

  // --- merging -------------------------------------------------------------------------------

  /// TensorFlow's MergeDevNames: `other`'s set fields are taken; a field set to different values on
  /// both sides is an error. With soft placement a type conflict clears type and id, and an id
  /// conflict clears the id; job, replica and task conflicts still fail.
  /// @throws InvalidArgumentError "Cannot merge devices with incompatible <field>s: '<a>' and '<b>'"
  [[nodiscard]] DeviceSpec merged(const DeviceSpec& other, bool allow_soft_placement = false) const {
    DeviceSpec target = *this;
    target.merge_impl(other, allow_soft_placement, /*override_conflicts=*/false);
    return target;
  }

  /// TensorFlow's MergeOverrideDevNames: `other` wins every conflict; never fails. Nested scopes.
  [[nodiscard]] DeviceSpec overridden_by(const DeviceSpec& other) const {
    DeviceSpec target = *this;
    target.merge_impl(other, /*allow_soft_placement=*/true, /*override_conflicts=*/true);
    return target;
  }

  /// TensorFlow's MergeUnsetDevNames: fills only the fields unset here; never fails.
  [[nodiscard]] DeviceSpec filled_from(const DeviceSpec& other) const {
    DeviceSpec target = *this;
    if (!target.job_) target.job_ = other.job_;
    if (!target.replica_) target.replica_ = other.replica_;
    if (!target.task_) target.task_ = other.task_;
    if (!target.type_) target.type_ = other.type_;
    if (!target.id_) target.id_ = other.id_;
    return target;
  }

  // --- canonicalisation and ordering ---------------------------------------------------------

  /// TensorFlow's CanonicalizeDeviceName: parse `name` (full form, else local form with job,
  /// replica and task from `basename`), fill what is still unset from `basename`, print.
  /// @throws InvalidArgumentError when `basename` is not fully specified or either does not parse.
  static std::string canonicalize(std::string_view name, std::string_view basename);

  /// TensorFlow's CompareFullNames on parsed names: a name missing a field sorts before one that
  /// has it; then job, replica, task, type (as strings) and id. Equal names compare false.
  static bool compare_full_names(const DeviceSpec& a, const DeviceSpec& b) noexcept {
    if (auto c = compare_field(a.job_, b.job_); c != 0) return c < 0;
    if (auto c = compare_field(a.replica_, b.replica_); c != 0) return c < 0;
    if (auto c = compare_field(a.task_, b.task_); c != 0) return c < 0;
    if (auto c = compare_field(a.type_, b.type_); c != 0) return c < 0;
    if (auto c = compare_field(a.id_, b.id_); c != 0) return c < 0;
    return false;
  }

  /// The string form of CompareFullNames: unparsable names sort first, among themselves by text.
  static bool compare_full_names(std::string_view a, std::string_view b);

  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;

  /// Streams the canonical form (any ostream; no <ostream> needed to include this header).
  template <class Stream>
  friend auto operator<<(Stream& os, const DeviceSpec& spec) -> decltype(os << std::string()) {
    return os << spec.to_string();
  }

 private:
  std::optional<std::string> job_;
  std::optional<int> replica_;
  std::optional<int> task_;
  std::optional<std::string> type_;
  std::optional<int> id_;

  static InvalidArgumentError malformed(std::string_view spec, const std::string& reason);

  static void check_name(const std::optional<std::string>& value, std::string_view what);

  static std::optional<int> check_index(std::optional<int> value, std::string_view what);

  void require_fully_specified(std::string_view what) const;

  template <class T>
  static bool field_specifies(const std::optional<T>& less, const std::optional<T>& more) {
    return !less || (more && *less == *more);
  }
  template <class T>
  static bool fields_compatible(const std::optional<T>& a, const std::optional<T>& b) {
    return !a || !b || *a == *b;
  }
  template <class T>
  static int compare_field(const std::optional<T>& a, const std::optional<T>& b) noexcept {
    if (a.has_value() != b.has_value()) return a.has_value() ? 1 : -1;
    if (!a || *a == *b) return 0;
    return *a < *b ? -1 : 1;
  }

  /// TensorFlow's ParseFullName. Components come in any order; a repeated component
  /// overwrites; anything unrecognised, including a trailing '/', fails.
  static std::optional<DeviceSpec> parse_full(std::string_view input, std::string* reason);

  /// TensorFlow's MergeDevNamesImpl, field by field in the order job, replica, task, type, id.
  void merge_impl(const DeviceSpec& other, bool allow_soft_placement, bool override_conflicts);
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION DeviceSpec DeviceSpec::parse(std::string_view spec) {
  std::string reason;
  if (auto parsed = parse_full(spec, &reason)) return *std::move(parsed);
  throw malformed(spec, reason);
}

DEVTENSOR_DEFINITION std::optional<DeviceSpec> DeviceSpec::try_parse_local(std::string_view name) {
  detail::DeviceNameParser p(name);
  DeviceSpec spec;
  std::string type;
  int id = 0;
  if (!p.name(type, "device type") || !p.consume(":") || !p.number(id, "device id") || !p.empty()) return std::nullopt;
  spec.type_ = std::move(type);
  spec.id_ = id;
  return spec;
}

DEVTENSOR_DEFINITION DeviceSpec DeviceSpec::parse_full_or_local(std::string_view spec) {
  std::string reason;
  if (auto parsed = parse_full(spec, &reason)) return *std::move(parsed);
  if (auto local = try_parse_local(spec)) return *std::move(local);
  throw malformed(spec, reason);
}

DEVTENSOR_DEFINITION DeviceSpec DeviceSpec::with_job(std::optional<std::string> job) const {
  check_name(job, "job name");
  DeviceSpec copy = *this;
  copy.job_ = std::move(job);
  return copy;
}

DEVTENSOR_DEFINITION DeviceSpec DeviceSpec::with_type(std::optional<std::string> type) const {
  check_name(type, "device type");
  DeviceSpec copy = *this;
  copy.type_ = std::move(type);
  return copy;
}

DEVTENSOR_DEFINITION std::string DeviceSpec::to_string() const {
  std::string out;
  if (job_) out += "/job:" + *job_;
  if (replica_) out += "/replica:" + std::to_string(*replica_);
  if (task_) out += "/task:" + std::to_string(*task_);
  if (type_) out += "/device:" + *type_ + ":" + (id_ ? std::to_string(*id_) : std::string("*"));
  return out;
}

DEVTENSOR_DEFINITION std::string DeviceSpec::full_name(std::string_view job, int replica, int task,
                                                       std::string_view type, int id) {
  return "/job:" + std::string(job) + "/replica:" + std::to_string(replica) + "/task:" + std::to_string(task) +
         "/device:" + std::string(type) + ":" + std::to_string(id);
}

DEVTENSOR_DEFINITION std::string DeviceSpec::legacy_name() const {
  require_fully_specified("legacy_name");
  std::string lower = *type_;
  for (char& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return "/job:" + *job_ + "/replica:" + std::to_string(*replica_) + "/task:" + std::to_string(*task_) + "/" + lower +
         ":" + std::to_string(*id_);
}

DEVTENSOR_DEFINITION std::string DeviceSpec::local_name(std::string_view type, int id) {
  return "/device:" + std::string(type) + ":" + std::to_string(id);
}

DEVTENSOR_DEFINITION std::string DeviceSpec::local_name() const {
  if (!type_ || !id_)
    throw InvalidArgumentError("local_name() needs a device type and id, but '" + to_string() + "' has " +
                               (type_ ? "no id" : "no type"));
  return local_name(*type_, *id_);
}

DEVTENSOR_DEFINITION std::optional<std::pair<std::string, std::string>> DeviceSpec::split_device_name(
    std::string_view name) {
  auto spec = try_parse(name);
  if (!spec || !spec->type_ || !spec->id_) return std::nullopt;
  std::string task_part = spec->with_type(std::nullopt).with_id(std::nullopt).to_string();
  return std::pair{std::move(task_part), *spec->type_ + ":" + std::to_string(*spec->id_)};
}

DEVTENSOR_DEFINITION std::vector<std::string> DeviceSpec::names_for_device_mappings() const {
  if (!is_fully_specified()) return {};
  return {to_string(), legacy_name()};
}

DEVTENSOR_DEFINITION std::string DeviceSpec::canonicalize(std::string_view name, std::string_view basename) {
  auto base = try_parse(basename);
  if (!base)
    throw InvalidArgumentError("Could not parse basename: " + std::string(basename) + " into a device specification.");
  if (!base->is_fully_specified())
    throw InvalidArgumentError("Basename: " + std::string(basename) + " should be fully specified.");
  auto parsed = try_parse(name);
  if (!parsed) parsed = try_parse_local(name);
  if (!parsed) throw InvalidArgumentError("Could not parse " + std::string(name) + " into a device specification.");
  return parsed->filled_from(*base).to_string();
}

DEVTENSOR_DEFINITION bool DeviceSpec::compare_full_names(std::string_view a, std::string_view b) {
  auto pa = try_parse(a);
  auto pb = try_parse(b);
  if (pa.has_value() != pb.has_value()) return !pa.has_value();
  if (!pa) return a < b;
  return compare_full_names(*pa, *pb);
}

DEVTENSOR_DEFINITION InvalidArgumentError DeviceSpec::malformed(std::string_view spec, const std::string& reason) {
  std::string message = "Malformed device specification '" + std::string(spec) + "'";
  if (!reason.empty()) message += ": " + reason;
  message +=
      ". Expected a full name such as '/job:localhost/replica:0/task:0/device:GPU:0', a legacy "
      "name such as '/gpu:0' or '/cpu:0', or a local name such as 'GPU:0'.";
  return InvalidArgumentError(message);
}

DEVTENSOR_DEFINITION void DeviceSpec::check_name(const std::optional<std::string>& value, std::string_view what) {
  if (value && !detail::is_name_token(*value))
    throw InvalidArgumentError("Invalid " + std::string(what) + " '" + *value + "': a " + std::string(what) +
                               " starts with an ASCII letter and continues with letters, digits "
                               "or '_'");
}

DEVTENSOR_DEFINITION std::optional<int> DeviceSpec::check_index(std::optional<int> value, std::string_view what) {
  if (value && *value < 0)
    throw InvalidArgumentError("Invalid " + std::string(what) + " " + std::to_string(*value) + ": it must be >= 0");
  return value;
}

DEVTENSOR_DEFINITION void DeviceSpec::require_fully_specified(std::string_view what) const {
  if (!is_fully_specified())
    throw InvalidArgumentError(std::string(what) + "() needs a fully specified device name, got '" + to_string() + "'");
}

DEVTENSOR_DEFINITION std::optional<DeviceSpec> DeviceSpec::parse_full(std::string_view input, std::string* reason) {
  DeviceSpec spec;
  if (input == "/") return spec;
  detail::DeviceNameParser p(input);
  bool ok = true;
  while (ok && !p.empty()) {
    bool progress = false;
    if (p.consume("/job:")) {
      progress = true;
      ok = p.field(spec.job_, "job name");
    }
    if (ok && p.consume("/replica:")) {
      progress = true;
      ok = p.field(spec.replica_, "replica");
    }
    if (ok && p.consume("/task:")) {
      progress = true;
      ok = p.field(spec.task_, "task");
    }
    if (ok && p.consume("/device:")) {
      progress = true;
      ok = p.field(spec.type_, "device type");
      if (ok) {
        if (p.consume(":"))
          ok = p.field(spec.id_, "device id");
        else
          spec.id_.reset();
      }
    }
    // The four legacy spellings; the type is upper-cased. Any other "/<word>:" is unknown.
    for (std::string_view legacy : {"/cpu:", "/CPU:", "/gpu:", "/GPU:"}) {
      if (ok && p.consume(legacy)) {
        progress = true;
        spec.type_ = (legacy[1] == 'c' || legacy[1] == 'C') ? "CPU" : "GPU";
        ok = p.field(spec.id_, "device id");
      }
    }
    if (ok && !progress)
      ok = p.fail(
          "unknown component (expected /job:, /replica:, /task:, /device:, /cpu:, /CPU:, /gpu: or "
          "/GPU:)");
  }
  if (!ok) {
    if (reason) *reason = p.reason();
    return std::nullopt;
  }
  return spec;
}

DEVTENSOR_DEFINITION void DeviceSpec::merge_impl(const DeviceSpec& other, bool allow_soft_placement,
                                                 bool override_conflicts) {
  const auto conflict = [&](std::string_view fields) {
    return InvalidArgumentError("Cannot merge devices with incompatible " + std::string(fields) + ": '" + to_string() +
                                "' and '" + other.to_string() + "'");
  };
  const auto merge_strict = [&](auto& mine, const auto& theirs, std::string_view fields) {
    if (!theirs) return;
    if (mine && *mine != *theirs && !override_conflicts) throw conflict(fields);
    mine = theirs;
  };
  merge_strict(job_, other.job_, "jobs");
  merge_strict(replica_, other.replica_, "replicas");
  merge_strict(task_, other.task_, "tasks");
  if (other.type_) {
    if (type_ && *type_ != *other.type_ && !override_conflicts) {
      if (!allow_soft_placement) throw conflict("types");
      type_.reset();  // soft placement: a type conflict leaves type and id open
      id_.reset();
      return;
    }
    type_ = other.type_;
  }
  if (other.id_) {
    if (id_ && *id_ != *other.id_ && !override_conflicts) {
      if (!allow_soft_placement) throw conflict("ids");
      id_.reset();
      return;
    }
    id_ = other.id_;
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
