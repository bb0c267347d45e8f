#pragma once
/// @file registry.hpp
/// @brief The kernel registry (TensorFlow's REGISTER_KERNEL_BUILDER): which kernel
/// bodies this program contains, keyed by (op, device type, element type).
///
/// Note [One registry per program]
/// An op type declares at compile time which device types it supports (ops/traits.hpp). Whether
/// the program contains the body is a run-time question: CUDA bodies are compiled once per
/// program, in src/devtensor_cuda.cu (added to the build by the devtensor::cuda component), and
/// register themselves there during static initialisation; every other translation unit, whatever
/// compiles it, finds them here. A user's own op registers its bodies the same way
/// (DEVTENSOR_REGISTER_KERNEL).
///
/// Lookups cost one load: each (op, device tag, element type) has its own slot, an inline variable
/// that every translation unit shares (vague linkage), constant-initialised to "absent" so that it
/// is valid before any registration runs. The map beside the slots serves listings, duplicate
/// detection and messages; dispatch never searches it.
///
/// Duplicates: the first registration of a key wins. Registering the same body again (the kernel
/// translation unit linked into two shared libraries of one process) is accepted silently; a
/// different body for a key already taken is refused, register_kernel returns false and a warning
/// names both providers. unregister_kernel (tests, plugins) frees the key.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/tags.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor {

/// A kernel's identity, as TensorFlow's KernelDef names it: op, device type, element type.
struct KernelKey {
  std::string op;           // "AddV2"
  std::string device_type;  // "GPU"
  std::string dtype;        // "DT_FLOAT"

  friend auto operator<=>(const KernelKey&, const KernelKey&) = default;
  [[nodiscard]] std::string to_string() const { return op + " on " + device_type + " for " + dtype; }
};

/// Where one kernel's body is kept: a function pointer of the op's body signature, type-erased
/// (a function pointer converts to another function pointer type and back unchanged).
struct KernelSlot {
  std::atomic<void (*)()> body{nullptr};
  mutable std::atomic<bool> missing_reported{false};  // the "no body in this program" line, once
};

/// The slot of (Op, Tag, T). One object per program.
template <class Op, class Tag, class T>
inline constinit KernelSlot kernel_slot{};

/// One entry of the registry's listing.
struct KernelRegistration {
  KernelKey key;
  std::string provider;  // the component or file that registered it
};

namespace detail {
/// Bumped by every change of the registry; placement caches compare it (Note [Placement cache]).
inline constinit std::atomic<std::uint64_t> kernel_registry_generation{0};
}  // namespace detail

/// The process-wide registry.
class DEVTENSOR_EXPORT KernelRegistry {
 public:
  static KernelRegistry& global() {
    static KernelRegistry registry;
    return registry;
  }

  /// Installs `body` in `slot` under `key` (rules in Note [One registry per program]).
  /// @returns false when the key already has another body.
  bool add(KernelKey key, KernelSlot& slot, void (*body)(), std::string provider) {
    std::unique_lock lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      if (it->second.body == body) return true;
      const std::string kept = it->second.provider;
      lock.unlock();
      log(LogSeverity::warning, "Kernel " + key.to_string() + " is registered twice: kept the body from " + kept +
                                    ", ignored the one from " + provider +
                                    ". Unregister the first (unregister_kernel) to replace it.");
      return false;
    }
    entries_.emplace(std::move(key), Entry{std::move(provider), &slot, body});
    slot.body.store(body, std::memory_order_release);
    detail::kernel_registry_generation.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

  /// Removes a registration. @returns false when there was none.
  bool remove(const KernelKey& key) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return false;
    it->second.slot->body.store(nullptr, std::memory_order_release);
    it->second.slot->missing_reported.store(false, std::memory_order_relaxed);
    entries_.erase(it);
    detail::kernel_registry_generation.fetch_add(1, std::memory_order_acq_rel);
    return true;
  }

  /// Who registered the kernel, or nothing when the program does not contain it.
  [[nodiscard]] std::optional<std::string> provider(const KernelKey& key) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second.provider;
  }
  [[nodiscard]] bool contains(const KernelKey& key) const { return provider(key).has_value(); }

  /// Every registration, ordered by op, device type and element type.
  [[nodiscard]] std::vector<KernelRegistration> list() const {
    std::lock_guard lock(mutex_);
    std::vector<KernelRegistration> out;
    out.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) out.push_back({key, entry.provider});
    return out;
  }

 private:
  struct Entry {
    std::string provider;
    KernelSlot* slot;
    void (*body)();
  };
  KernelRegistry() = default;
  mutable std::mutex mutex_;
  std::map<KernelKey, Entry> entries_;
};

namespace kernel_detail {
template <class Op, class T>
concept declares_body = requires {
  typename Op::template body<T>;
};
}  // namespace kernel_detail

/// The function type of Op's kernel body for element type T (`Op::body<T>`).
template <class Op, class T>
requires kernel_detail::declares_body<Op, T>
using kernel_body_t = typename Op::template body<T>;

/// The key of (Op, Tag, T).
template <class Op, DeviceTag Tag, Element T>
KernelKey kernel_key() {
  return {std::string(Op::name), std::string(device_type_name<Tag>), std::string(dtype_enum_name<T>())};
}

/// Registers Op's body for device tag Tag and element type T; `provider` names where it comes
/// from in messages. @returns false when another body already holds the key.
template <class Op, DeviceTag Tag, Element T>
bool register_kernel(kernel_body_t<Op, T>* body, std::string provider) {
  return KernelRegistry::global().add(kernel_key<Op, Tag, T>(), kernel_slot<Op, Tag, T>,
                                      reinterpret_cast<void (*)()>(body), std::move(provider));
}
template <class Op, DeviceTag Tag, Element T>
bool unregister_kernel() {
  return KernelRegistry::global().remove(kernel_key<Op, Tag, T>());
}

/// The registered body of (Op, Tag, T), or nullptr when this program does not contain it.
template <class Op, DeviceTag Tag, Element T>
[[nodiscard]] kernel_body_t<Op, T>* registered_kernel() noexcept {
  return reinterpret_cast<kernel_body_t<Op, T>*>(kernel_slot<Op, Tag, T>.body.load(std::memory_order_acquire));
}

}  // namespace devtensor

#define DEVTENSOR_REGISTRY_CONCAT_IMPL(a, b) a##b
#define DEVTENSOR_REGISTRY_CONCAT(a, b) DEVTENSOR_REGISTRY_CONCAT_IMPL(a, b)

/// Registers a kernel body during static initialisation, in a .cpp (CPU bodies) or a .cu file
/// (CUDA bodies): DEVTENSOR_REGISTER_KERNEL(MyOp, devtensor::gpu_t, float, &my_op_cuda<float>);
/// The file that holds it must be linked as an object, not pulled from a static archive (which
/// drops objects nobody references): CMake object libraries, or sources of the executable.
#define DEVTENSOR_REGISTER_KERNEL(Op, Tag, T, body)                                                         \
  [[maybe_unused]] static const bool DEVTENSOR_REGISTRY_CONCAT(devtensor_kernel_registered_, __COUNTER__) = \
      ::devtensor::register_kernel<Op, Tag, T>(body, __FILE__)
