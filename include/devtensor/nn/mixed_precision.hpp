#pragma once
/// @file mixed_precision.hpp
/// @brief Keras's dtype policies (keras.mixed_precision): what a layer computes in and what its
/// variables are kept in. "float32" (the default), "mixed_float16" and "mixed_bfloat16": the
/// mixed policies compute in the 16-bit type and keep float32 variables, read as 16-bit casts.
///
/// A layer takes the global policy when it is constructed, or its own (`DenseOptions::dtype`).
/// Note [Mixed precision at layer boundaries]: devtensor's layers exchange float32 tensors; a
/// layer whose policy computes in 16 bits casts its input to that type, computes there and casts
/// its output back to float32. The round trip 16-bit -> float32 -> 16-bit is exact, so a model
/// computes the values Keras computes (every layer's output rounded to the 16-bit type, losses in
/// float32), and its gradients, which cross the same casts. The cost is the float32 copy of each
/// activation between layers (memory traffic a 16-bit activation would halve).

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/tensor/dtype.hpp"

namespace devtensor::nn::mixed_precision {

/// A layer's dtype policy (Keras's DTypePolicy): its name, the dtype its layers compute in, and
/// the dtype their variables are kept in.
class DTypePolicy {
 public:
  /// "float32".
  DTypePolicy() noexcept = default;
  /// "float32", "mixed_float16" or "mixed_bfloat16"; `where`, when given, starts the errors' texts.
  /// @throws InvalidArgumentError for a name Keras does not know (Keras's text);
  ///         UnimplementedError for float64, float16 or bfloat16 (variables other than float32,
  ///         which devtensor's layers do not keep).
  explicit DTypePolicy(std::string_view name, std::string_view where = {}) : compute_(parse(name, where)) {}

  [[nodiscard]] std::string name() const {
    switch (compute_) {
      case DType::DT_HALF: return "mixed_float16";
      case DType::DT_BFLOAT16: return "mixed_bfloat16";
      default: return "float32";
    }
  }
  [[nodiscard]] DType compute_dtype() const noexcept { return compute_; }
  [[nodiscard]] DType variable_dtype() const noexcept { return DType::DT_FLOAT; }
  /// Whether layers under it compute in a 16-bit type.
  [[nodiscard]] bool is_mixed() const noexcept { return compute_ != DType::DT_FLOAT; }
  friend bool operator==(const DTypePolicy&, const DTypePolicy&) = default;

 private:
  DType compute_ = DType::DT_FLOAT;

  static DType parse(std::string_view name, std::string_view where) {
    if (name == "float32") return DType::DT_FLOAT;
    if (name == "mixed_float16") return DType::DT_HALF;
    if (name == "mixed_bfloat16") return DType::DT_BFLOAT16;
    const std::string prefix = where.empty() ? "" : std::string(where) + ": ";
    if (name == "float64" || name == "float16" || name == "bfloat16")
      throw UnimplementedError(prefix + "The dtype policy '" + std::string(name) + "' keeps variables in " +
                               std::string(name) +
                               "; devtensor's layers keep float32 variables. Use 'float32', 'mixed_float16' or "
                               "'mixed_bfloat16'.");
    throw InvalidArgumentError(prefix + "Cannot convert '" + std::string(name) +
                               "' to a mixed precision DTypePolicy. Valid policies include 'mixed_float16', "
                               "'mixed_bfloat16', and the name of any float dtype such as 'float32'.");
  }
};
/// Keras's older name.
using Policy = DTypePolicy;

namespace policy_detail {
/// Keras 3 keeps the global policy per thread (its global state is a threading.local): a thread
/// starts at float32, and setting it in one thread leaves the others'. clear_session resets every
/// thread's, as Keras's replaces the whole state: a thread's policy counts only while no reset
/// came after it (the generation it was set in is the current one).
inline std::atomic<std::uint64_t>& generation() {
  static std::atomic<std::uint64_t> current{0};
  return current;
}
struct ThreadPolicy {
  DTypePolicy policy;
  std::uint64_t generation = 0;
};
inline ThreadPolicy& this_thread() {
  thread_local ThreadPolicy mine;
  return mine;
}
/// Every thread's global policy back to float32 (clear_session).
inline void reset_every_thread() { generation().fetch_add(1); }
}  // namespace policy_detail

/// The policy layers constructed from now on on this thread take
/// (keras.mixed_precision.set_global_policy; Keras's is per thread too). Layers already
/// constructed keep theirs.
inline void set_global_policy(const DTypePolicy& policy) {
  auto& mine = policy_detail::this_thread();
  mine.policy = policy;
  mine.generation = policy_detail::generation().load();
}
/// @throws as DTypePolicy's constructor; the global policy is then unchanged.
inline void set_global_policy(std::string_view name) { set_global_policy(DTypePolicy(name)); }
/// The policy layers constructed now on this thread take ("float32" until set_global_policy on
/// this thread, and after clear_session on any).
[[nodiscard]] inline DTypePolicy global_policy() {
  const auto& mine = policy_detail::this_thread();
  return mine.generation == policy_detail::generation().load() ? mine.policy : DTypePolicy();
}

}  // namespace devtensor::nn::mixed_precision
