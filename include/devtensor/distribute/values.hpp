#pragma once
/// @file values.hpp
/// @brief Distributed values: PerReplica (one value per replica, possibly different) and Mirrored
/// (one value per replica, all equal), ReduceOp, and TensorFlow's split of a global batch across replicas.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"

namespace devtensor {
namespace distribute {

enum class ReduceOp { SUM, MEAN };

[[nodiscard]] constexpr std::string_view to_string(ReduceOp op) noexcept {
  return op == ReduceOp::SUM ? "ReduceOp.SUM" : "ReduceOp.MEAN";
}

/// "SUM" / "MEAN" in any case. @throws InvalidArgumentError for anything else.
[[nodiscard]] inline ReduceOp parse_reduce_op(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "SUM") return ReduceOp::SUM;
  if (upper == "MEAN") return ReduceOp::MEAN;
  throw InvalidArgumentError("Expected `reduce_op` to be a `tf.distribute.ReduceOp`, not: " + std::string(name));
}

namespace values_detail {
/// TensorFlow's DistributedValues.__str__: "PerReplica:{\n  0: <value>,\n  1: <value>\n}".
template <class Stream, class V>
Stream& write(Stream& os, std::string_view type_name, const std::vector<V>& values) {
  os << std::string(type_name) << ":{\n";
  for (std::size_t i = 0; i < values.size(); ++i)
    os << "  " << std::to_string(i) << ": " << values[i] << (i + 1 < values.size() ? ",\n" : "\n");
  os << "}";
  return os;
}
}  // namespace values_detail

/// One value per replica, in replica (device) order.
template <class V>
struct PerReplica {
  std::vector<V> values;
  [[nodiscard]] std::size_t size() const noexcept { return values.size(); }
  [[nodiscard]] const V& operator[](std::size_t i) const { return values.at(i); }

  /// Prints as TensorFlow's str() of a PerReplica (any stream that prints V).
  template <class Stream>
  friend auto operator<<(Stream& os, const PerReplica& v) -> decltype(os << std::declval<const V&>()) {
    values_detail::write(os, "PerReplica", v.values);
    return os;
  }
};

/// One value per replica, known to be equal on every replica.
template <class V>
struct Mirrored {
  std::vector<V> values;
  [[nodiscard]] std::size_t size() const noexcept { return values.size(); }
  [[nodiscard]] const V& operator[](std::size_t i) const { return values.at(i); }
  /// The primary (replica 0's) value.
  [[nodiscard]] const V& primary() const { return values.at(0); }

  /// Prints as TensorFlow's str() of a Mirrored value.
  template <class Stream>
  friend auto operator<<(Stream& os, const Mirrored& v) -> decltype(os << std::declval<const V&>()) {
    values_detail::write(os, "Mirrored", v.values);
    return os;
  }
};

/// Per-replica batch sizes for a global batch of G over W workers of R replicas each, for worker
/// `worker` (TensorFlow's batch_sizes_for_worker): sums to G, sizes differ by at most one.
[[nodiscard]] std::vector<std::int64_t> batch_sizes_for_worker(std::int64_t global, std::int64_t workers,
                                                               std::int64_t replicas_per_worker, std::int64_t worker);

/// This worker's part of a global batch: where its replicas start and how many examples each
/// takes. Worker k's replicas take entries [kR, kR + R) of worker 0's size list, at the offset
/// of the entries before them, so that every global batch is consumed once, in order (what
/// TensorFlow's distributed datasets guarantee). `global` unknown: the legacy rebatch, ceil(rows / N) per replica.
struct LocalBatch {
  std::int64_t offset = 0;
  std::vector<std::int64_t> sizes;
};
[[nodiscard]] LocalBatch local_batch(std::optional<std::int64_t> global, std::int64_t rows, std::int64_t workers,
                                     std::int64_t replicas_per_worker, std::int64_t worker);

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::vector<std::int64_t> batch_sizes_for_worker(std::int64_t global, std::int64_t workers,
                                                                      std::int64_t replicas_per_worker,
                                                                      std::int64_t worker) {
  const std::int64_t n = workers * replicas_per_worker;
  if (n <= 0 || global < 0) throw InvalidArgumentError("batch_sizes_for_worker needs replicas > 0 and a batch >= 0");
  const std::int64_t base = global / n;
  const std::int64_t r = global - n * base;
  std::vector<std::int64_t> all;
  for (std::int64_t i = 0; i < n; ++i) all.push_back(i < r ? base + 1 : base);
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i)
    out.push_back(all[static_cast<std::size_t>((i + worker * replicas_per_worker) % n)]);
  return out;
}

DEVTENSOR_DEFINITION LocalBatch local_batch(std::optional<std::int64_t> global, std::int64_t rows, std::int64_t workers,
                                            std::int64_t replicas_per_worker, std::int64_t worker) {
  const std::int64_t n = workers * replicas_per_worker;
  std::vector<std::int64_t> all =
      global ? batch_sizes_for_worker(*global, workers, replicas_per_worker, 0)
             : std::vector<std::int64_t>(static_cast<std::size_t>(n), (rows + n - 1) / std::max<std::int64_t>(n, 1));
  LocalBatch out;
  for (std::int64_t i = 0; i < worker * replicas_per_worker; ++i) out.offset += all[static_cast<std::size_t>(i)];
  out.offset = std::min(out.offset, rows);
  for (std::int64_t i = 0; i < replicas_per_worker; ++i)
    out.sizes.push_back(all[static_cast<std::size_t>(worker * replicas_per_worker + i)]);
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace distribute
}  // namespace devtensor
