#pragma once
/// @file all_reduce_family.hpp
/// @brief AllReduceOps<Engine>: TensorFlow's AllReduceCrossDeviceOps — values packed, each pack
/// all-reduced across the devices by an engine, and unpacked. HierarchicalCopyAllReduce and
/// NcclAllReduce are its members (hierarchical_copy_all_reduce.hpp, nccl_all_reduce.hpp).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/distribute/cross_device_utils.hpp"
#include "devtensor/distribute/reduction_to_one_device.hpp"

namespace devtensor {
namespace distribute {

namespace cdo_detail {

struct BatchAllReduceLines;  // log_first_10's site

/// The all-reduce family's batch_reduce with `all_reduce(parts, pack_index)` as the
/// algorithm; falls back to ReductionToOneDevice when destinations differ from the values' devices.
template <Numeric T, class AllReduce>
std::vector<Mirrored<Tensor<T>>> batch_all_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                  const Destinations& destinations, std::int64_t num_packs,
                                                  std::string_view algorithm, AllReduce all_reduce) {
  require_destinations(destinations);
  if (values.empty()) return {};
  for (const auto& v : values) require_components(v);
  if (auto same = batch_already_reduced(values, destinations)) return std::move(*same);
  bool matches = true;
  for (const auto& v : values) matches = matches && devices_of(v) == destinations;
  if (!matches) return ReductionToOneDevice{}.batch_reduce(op, values, destinations);
  const std::size_t n = destinations.size();
  std::vector<Shape> shapes;
  for (const auto& v : values) shapes.push_back(v.values[0].shape());
  // Per device: its tensors of every batch item, packed.
  std::vector<std::vector<Tensor<T>>> per_device(n);
  for (std::size_t d = 0; d < n; ++d) {
    std::vector<Tensor<T>> mine;
    for (const auto& v : values) mine.push_back(v.values[d]);
    if (num_packs > 0) {
      DeviceScope scope(destinations[d].spec);
      per_device[d] = pack(mine, num_packs);
    } else {
      per_device[d] = mine;
    }
    // A program without GPU bodies for concat/split packs on the CPU: the engine gets every
    // pack on its own device all the same.
    for (auto& p : per_device[d]) p = copy_to(p, destinations[d]);
  }
  const std::size_t groups = per_device[0].size();
  log_first_10<BatchAllReduceLines>([&] {
    return "batch_all_reduce: " + std::to_string(groups) + " all-reduces with algorithm = " + std::string(algorithm) +
           ", num_packs = " + std::to_string(num_packs);
  });
  for (std::size_t g = 0; g < groups; ++g) {
    std::vector<Tensor<T>> parts;
    for (std::size_t d = 0; d < n; ++d) parts.push_back(per_device[d][g]);
    auto reduced = all_reduce(parts, g);
    for (std::size_t d = 0; d < n; ++d) per_device[d][g] = std::move(reduced[d]);
  }
  std::vector<Mirrored<Tensor<T>>> out(values.size());
  for (std::size_t d = 0; d < n; ++d) {
    DeviceScope scope(destinations[d].spec);
    auto mine = num_packs > 0 ? unpack(per_device[d], shapes) : per_device[d];
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (op == ReduceOp::MEAN) mine[i] = divide(mine[i], static_cast<std::int64_t>(n));
      out[i].values.push_back(copy_to(mine[i], destinations[d]));  // the result lives on its device
    }
  }
  return out;
}

/// reduce() of the ops whose algorithm is batch_reduce: a batch of one, except that a single value
/// already on its one destination is returned as is.
template <class Ops, Numeric T>
Mirrored<Tensor<T>> reduce_as_batch_of_one(const Ops& ops, ReduceOp op, const PerReplica<Tensor<T>>& value,
                                           const Destinations& destinations) {
  require_components(value);
  if (already_reduced(value, destinations)) return {{value.values[0]}};
  return ops.batch_reduce(op, std::vector{value}, destinations).front();
}

}  // namespace cdo_detail

/// The all-reduce family: batch_reduce packs the values, all-reduces each pack with
/// `Engine::all_reduce(parts, pack_index)` and unpacks; reduce is a batch of one (a value already
/// on its one destination is returned as is); broadcast copies, as ReductionToOneDevice does.
/// `Engine` names the family member and says whether this build can run it.
template <class Engine>
struct AllReduceOps {
  std::int64_t num_packs = 1;
  static constexpr std::string_view name = Engine::name;

  /// @throws InvalidArgumentError for a negative num_packs.
  void validate() const {
    if (num_packs < 0)
      throw InvalidArgumentError(std::string(Engine::validation_name) + " requires num_packs >= 0, but " +
                                 std::to_string(num_packs) + " is specified");
  }
  /// A strategy checks the options once, when it is built.
  void prepare(const Destinations&, const DeviceSet&) const { validate(); }
  /// Whether this program can run the engine (NCCL: a TU built with the devtensor::nccl component).
  [[nodiscard]] static bool available() noexcept { return Engine::available(); }

  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const Destinations& destinations) const {
    validate();
    return cdo_detail::batch_all_reduce(
        op, values, destinations, num_packs, Engine::pack_prefix,
        [](const std::vector<Tensor<T>>& parts, std::size_t index) { return Engine::all_reduce(parts, index); });
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const Destinations& destinations) const {
    return cdo_detail::reduce_as_batch_of_one(*this, op, value, destinations);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const Destinations& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }
};

}  // namespace distribute
}  // namespace devtensor
