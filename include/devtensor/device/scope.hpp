#pragma once
/// @file scope.hpp
/// @brief DeviceScope: TensorFlow's eager `with tf.device(...)` as an RAII guard.
///
/// Each thread has its own stack of requested device specs. The outermost scope merges its spec into
/// the context's first device (/job:localhost/replica:0/task:0/device:CPU:0) and nested scopes
/// merge into the enclosing one, always with override semantics (the inner field wins, never an
/// error). Ops read the top of the stack as their requested device.
///
/// Note [Omitted default constructor and moves]
/// As with c10's DeviceGuard: a default-constructed scope would have no meaning, and a moved scope
/// would leave the stack entry owned by an object whose lifetime no longer matches the C++ scope
/// it guards. So a DeviceScope can only be created with a device and destroyed where it was
/// created. It is [[nodiscard]]: `DeviceScope("/gpu:0");` on its own would end at the semicolon.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"
#include "devtensor/device/spec.hpp"
#include "devtensor/device/tags.hpp"

namespace devtensor {

class DeviceScope;

/// What a thread's DeviceScopes request, as another thread starts with it (ThreadStateGuard):
/// the merged spec ops see, and the one graph nodes see.
struct DeviceRequest {
  DeviceSpec spec;
  DeviceSpec graph_spec;
};

namespace detail {

/// One thread's scope stack. `generation` changes on every push and pop, so the placer can cache
/// decisions per (generation, op) without comparing specs.
struct ScopeStack {
  struct Entry {
    const DeviceScope* owner;
    DeviceSpec spec;        // the merged spec in effect while this entry is on top
    DeviceSpec graph_spec;  // the same merged from the empty spec: a graph node's request
  };
  std::vector<Entry> entries;
  std::uint64_t generation = 0;
};

DEVTENSOR_EXPORT inline ScopeStack& scope_stack() noexcept {
  thread_local ScopeStack stack;
  return stack;
}

}  // namespace detail

/// RAII device scope: DeviceScope s("/gpu:1"); DeviceScope s(devtensor::gpu, 1);
/// DeviceScope s(devtensor::cpu); DeviceScope s(std::nullopt) starts again from an empty spec.
class [[nodiscard]] DeviceScope {
 public:
  /// Full or local form ("/job:localhost/device:GPU:0", "/gpu:0", "GPU:0"). As TensorFlow's
  /// tf.device, the type tokens `cpu` and `gpu` mean CPU and GPU ("/device:gpu:1" is GPU:1);
  /// other spellings keep their case ("/device:Gpu:1" names no device).
  /// @throws InvalidArgumentError "Malformed device specification '<spec>'".
  [[nodiscard]] explicit DeviceScope(std::string_view spec) : DeviceScope(parse(spec)) {}
  [[nodiscard]] explicit DeviceScope(const char* spec) : DeviceScope(std::string_view(spec)) {}
  [[nodiscard]] explicit DeviceScope(const std::string& spec) : DeviceScope(std::string_view(spec)) {}

  [[nodiscard]] explicit DeviceScope(const DeviceSpec& spec);

  /// A device type and id from a compile-time tag: DeviceScope(devtensor::gpu, 1) is "/device:GPU:1".
  /// @throws InvalidArgumentError for a negative id.
  template <DeviceTag Tag>
  [[nodiscard]] DeviceScope(Tag, int id)
      : DeviceScope(DeviceSpec().with_type(std::string(device_type_name<Tag>)).with_id(id)) {}

  /// A device type from a compile-time tag; the id comes from the enclosing scope (TF's
  /// "/device:GPU:*" merged by override).
  template <DeviceTag Tag>
  [[nodiscard]] explicit DeviceScope(Tag) : DeviceScope(DeviceSpec().with_type(std::string(device_type_name<Tag>))) {}

  /// TensorFlow's tf.device(None): a scope whose requested spec is empty.
  [[nodiscard]] explicit DeviceScope(std::nullopt_t) { push(DeviceSpec(), DeviceSpec()); }

  /// Another thread's request put in effect here, as it is (ThreadStateGuard: a thread that runs
  /// work for another starts in that thread's scopes).
  [[nodiscard]] explicit DeviceScope(const DeviceRequest& request) { push(request.spec, request.graph_spec); }

  DeviceScope() = delete;
  DeviceScope(std::nullptr_t) = delete;
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope(DeviceScope&&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  DeviceScope& operator=(DeviceScope&&) = delete;

  /// Pops this scope. Leaving scopes out of order (possible only through heap-allocated scopes or
  /// a scope destroyed on another thread) is a programming error; a destructor cannot throw, so
  /// devtensor logs TensorFlow's key phrase and aborts.
  ~DeviceScope();

  /// The merged spec this scope puts in effect.
  [[nodiscard]] const DeviceSpec& spec() const noexcept { return spec_; }

 private:
  DeviceSpec spec_;

  /// The spec to merge into: the innermost scope's, or the context's first device.
  static DeviceSpec enclosing();
  /// The same for graph nodes: the innermost scope's graph spec, or the empty spec (a graph's
  /// node requests what its scopes name, as TensorFlow's graph device functions merge).
  static DeviceSpec enclosing_for_graphs();

  /// DeviceSpec::parse_full_or_local (the C++ grammar keeps a type's case), then tf.device's
  /// upper-casing of the tokens `cpu` and `gpu`.
  static DeviceSpec parse(std::string_view spec);

  void push(DeviceSpec merged, DeviceSpec graph_spec);
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION DeviceScope::DeviceScope(const DeviceSpec& spec) {
  push(enclosing().overridden_by(spec), enclosing_for_graphs().overridden_by(spec));
}

DEVTENSOR_DEFINITION DeviceScope::~DeviceScope() {
  auto& stack = detail::scope_stack();
  if (stack.entries.empty() || stack.entries.back().owner != this) {
    log(LogSeverity::error, "Exiting device scope without proper scope nesting: the scope for '" + spec_.to_string() +
                                "' is not the innermost scope of this thread. Destroy DeviceScopes in reverse order "
                                "of creation, on the thread that created them.");
    std::abort();
  }
  stack.entries.pop_back();
  ++stack.generation;
}

DEVTENSOR_DEFINITION DeviceSpec DeviceScope::enclosing() {
  const auto& stack = detail::scope_stack();
  if (!stack.entries.empty()) return stack.entries.back().spec;
  static const DeviceSpec host = DeviceSpec::parse(kHostCpuDeviceName);
  return host;
}

DEVTENSOR_DEFINITION DeviceSpec DeviceScope::enclosing_for_graphs() {
  const auto& stack = detail::scope_stack();
  return stack.entries.empty() ? DeviceSpec() : stack.entries.back().graph_spec;
}

DEVTENSOR_DEFINITION DeviceSpec DeviceScope::parse(std::string_view spec) {
  DeviceSpec parsed = DeviceSpec::parse_full_or_local(spec);
  if (const auto& type = parsed.type(); type && (*type == "cpu" || *type == "gpu"))
    return parsed.with_type(*type == "cpu" ? std::string(cpu_device_type) : std::string(gpu_device_type));
  return parsed;
}

DEVTENSOR_DEFINITION void DeviceScope::push(DeviceSpec merged, DeviceSpec graph_spec) {
  spec_ = merged;
  auto& stack = detail::scope_stack();
  stack.entries.push_back({this, std::move(merged), std::move(graph_spec)});
  ++stack.generation;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// The device this thread requests right now: the innermost DeviceScope's merged spec, or the
/// empty spec (any device) outside every scope. Valid until the next scope opens or closes.
inline const DeviceSpec& current_device_spec() noexcept {
  static const DeviceSpec any;
  const auto& stack = detail::scope_stack();
  return stack.entries.empty() ? any : stack.entries.back().spec;
}

/// What a graph node created now requests: the scopes' specs merged from the empty spec
/// ("/device:GPU:2" under DeviceScope("/gpu:2"); empty outside every scope).
inline const DeviceSpec& current_graph_device_spec() noexcept {
  static const DeviceSpec any;
  const auto& stack = detail::scope_stack();
  return stack.entries.empty() ? any : stack.entries.back().graph_spec;
}

/// Changes whenever a scope opens or closes on this thread: a placement cached with one value
/// holds until it changes.
inline std::uint64_t device_scope_generation() noexcept { return detail::scope_stack().generation; }

/// Number of scopes open on this thread.
inline std::size_t device_scope_depth() noexcept { return detail::scope_stack().entries.size(); }

/// What this thread's scopes request now, for another thread to start with; nothing outside every
/// scope.
inline std::optional<DeviceRequest> current_device_request() {
  const auto& stack = detail::scope_stack();
  if (stack.entries.empty()) return std::nullopt;
  return DeviceRequest{stack.entries.back().spec, stack.entries.back().graph_spec};
}

}  // namespace devtensor
