#pragma once
/// @file reduction_to_one_device.hpp
/// @brief ReductionToOneDevice: every component copied to one device, added there, and the result
/// copied to every destination (TensorFlow's tf.distribute.ReductionToOneDevice).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/distribute/cross_device_utils.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {
struct ReduceToOneLines;  // log_first_10's site
}  // namespace cdo_detail

/// Copies every component to one device, adds them there (add_n), divides for MEAN, and copies
/// the result to every destination.
struct ReductionToOneDevice {
  /// Where to reduce; default: the first destination.
  std::optional<std::string> reduce_to_device = std::nullopt;
  static constexpr std::string_view name = "ReductionToOneDevice";

  /// Nothing to choose or check for a strategy's replicas.
  void prepare(const Destinations&, const DeviceSet&) const noexcept {}

  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const Destinations& destinations) const {
    cdo_detail::require_destinations(destinations);
    cdo_detail::require_components(value);
    if (cdo_detail::already_reduced(value, destinations)) return {{value.values[0]}};
    // A named Destinations: the Device lives in the DeviceSet, but GCC 13's dangling-reference check
    // warns about a reference obtained through a temporary one.
    const Destinations reduce_to = reduce_to_device ? Destinations(std::vector{*reduce_to_device}) : destinations;
    const Device& target = reduce_to[0];
    cdo_detail::log_first_10<cdo_detail::ReduceToOneLines>([&] {
      return "Reduce to " + target.full_name + " then broadcast to " + cdo_detail::python_tuple(destinations) + ".";
    });
    Tensor<T> total = cdo_detail::sum_on(value.values, target);
    if (op == ReduceOp::MEAN) total = cdo_detail::divide(total, static_cast<std::int64_t>(value.size()));
    return broadcast(total, destinations);
  }
  /// The values one by one (no packing).
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const Destinations& destinations) const {
    std::vector<Mirrored<Tensor<T>>> out;
    for (const auto& v : values) out.push_back(reduce(op, v, destinations));
    return out;
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const Destinations& destinations) const {
    cdo_detail::require_destinations(destinations);
    Mirrored<Tensor<T>> out;
    for (const Device* d : destinations.devices()) out.values.push_back(cdo_detail::copy_to(value, *d));
    return out;
  }
};

}  // namespace distribute
}  // namespace devtensor
