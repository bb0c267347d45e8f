#pragma once
/// @file communication.hpp
/// @brief Options for collective communication and the size-based packing of collective
/// all-reduce: CommunicationOptions, CommunicationImplementation, group_by_size.
///
/// The cross-device ops of MirroredStrategy ignore these options, as TensorFlow's do (they pack by
/// `num_packs`); the collective all-reduce between processes packs by `bytes_per_pack` with
/// group_by_size, after reversing the gradient list so that communication can start with the
/// last layers while backpropagation is still running.

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace distribute {

/// Which collective implementation to use: AUTO lets the runtime choose.
enum class CommunicationImplementation { AUTO, RING, NCCL };

[[nodiscard]] constexpr std::string_view to_string(CommunicationImplementation i) noexcept {
  switch (i) {
    case CommunicationImplementation::AUTO: return "AUTO";
    case CommunicationImplementation::RING: return "RING";
    case CommunicationImplementation::NCCL: return "NCCL";
  }
  return "?";
}

/// "auto", "Ring", "NCCL", ...: upper-cased, as TensorFlow does.
/// @throws InvalidArgumentError for other names.
[[nodiscard]] inline CommunicationImplementation parse_communication_implementation(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (auto i :
       {CommunicationImplementation::AUTO, CommunicationImplementation::RING, CommunicationImplementation::NCCL})
    if (upper == to_string(i)) return i;
  throw InvalidArgumentError("'" + std::string(name) +
                             "' is not a valid CommunicationImplementation; use AUTO, RING or NCCL");
}

/// @throws InvalidArgumentError "bytes_per_pack must be non-negative" for a negative size.
inline void require_valid_bytes_per_pack(std::int64_t bytes_per_pack) {
  if (bytes_per_pack < 0)
    throw InvalidArgumentError("bytes_per_pack must be non-negative, but " + std::to_string(bytes_per_pack) +
                               " is specified");
}

/// tf.distribute.experimental.CommunicationOptions: how collectives pack and which implementation
/// they use. Immutable once built, so an invalid set of options cannot exist.
class CommunicationOptions {
 public:
  /// @throws InvalidArgumentError for a negative bytes_per_pack.
  explicit CommunicationOptions(std::int64_t bytes_per_pack = 0, std::optional<double> timeout_seconds = std::nullopt,
                                CommunicationImplementation implementation = CommunicationImplementation::AUTO)
      : bytes_per_pack_(bytes_per_pack), timeout_seconds_(timeout_seconds), implementation_(implementation) {
    require_valid_bytes_per_pack(bytes_per_pack);
  }
  /// The implementation by name (upper-cased). @throws InvalidArgumentError as above.
  CommunicationOptions(std::int64_t bytes_per_pack, std::optional<double> timeout_seconds,
                       std::string_view implementation)
      : CommunicationOptions(bytes_per_pack, timeout_seconds, parse_communication_implementation(implementation)) {}

  /// 0: everything in one pack.
  [[nodiscard]] std::int64_t bytes_per_pack() const noexcept { return bytes_per_pack_; }
  /// None: wait for ever.
  [[nodiscard]] std::optional<double> timeout_seconds() const noexcept { return timeout_seconds_; }
  [[nodiscard]] CommunicationImplementation implementation() const noexcept { return implementation_; }

  /// These options with every non-default field of `other` taking over.
  [[nodiscard]] CommunicationOptions merge(const CommunicationOptions& other) const {
    CommunicationOptions merged = *this;
    if (other.bytes_per_pack_ != 0) merged.bytes_per_pack_ = other.bytes_per_pack_;
    if (other.timeout_seconds_) merged.timeout_seconds_ = other.timeout_seconds_;
    if (other.implementation_ != CommunicationImplementation::AUTO) merged.implementation_ = other.implementation_;
    return merged;
  }

  friend bool operator==(const CommunicationOptions&, const CommunicationOptions&) = default;

 private:
  std::int64_t bytes_per_pack_;
  std::optional<double> timeout_seconds_;
  CommunicationImplementation implementation_;
};

/// Splits `values` into packs for collective all-reduce, in order: each value joins the last pack
/// unless that pack already holds more than `bytes_per_pack` bytes (so packs err on the large
/// side and may exceed the size); 0 puts everything in one pack. Shapes are always known here,
/// so TensorFlow's unknown-shape case (everything in one pack) cannot arise.
/// @throws InvalidArgumentError for a negative bytes_per_pack or an empty Tensor.
template <Element T>
[[nodiscard]] std::vector<std::vector<Tensor<T>>> group_by_size(const std::vector<Tensor<T>>& values,
                                                                std::int64_t bytes_per_pack) {
  require_valid_bytes_per_pack(bytes_per_pack);
  for (const auto& v : values)
    if (!v.defined())
      throw InvalidArgumentError("group_by_size: a value is an undefined tensor (default-constructed or moved from)");
  if (bytes_per_pack == 0) return {values};
  std::vector<std::vector<Tensor<T>>> packs;
  std::int64_t last_pack_bytes = 0;
  for (const auto& v : values) {
    if (packs.empty() || last_pack_bytes > bytes_per_pack) {
      packs.emplace_back();
      last_pack_bytes = 0;
    }
    packs.back().push_back(v);
    last_pack_bytes += v.num_elements() * static_cast<std::int64_t>(sizeof(T));
  }
  return packs;
}

}  // namespace distribute
}  // namespace devtensor
