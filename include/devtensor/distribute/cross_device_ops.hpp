#pragma once
/// @file cross_device_ops.hpp
/// @brief Cross-device reductions — ReductionToOneDevice, HierarchicalCopyAllReduce,
/// NcclAllReduce, CollectiveAllReduce and the automatic choice between them — and the
/// CrossDeviceOps concept a MirroredStrategy is generic over.
///
/// Each is usable alone: `reduce(op, per_replica, destinations)`, `batch_reduce(op, values,
/// destinations)`, `broadcast(tensor, destinations)`, where destinations are Devices or device
/// names in any spelling (Destinations).

#include <concepts>
#include <string_view>
#include <vector>

#include "devtensor/distribute/all_reduce_family.hpp"
#include "devtensor/distribute/auto_cross_device_ops.hpp"
#include "devtensor/distribute/collective_all_reduce.hpp"
#include "devtensor/distribute/cross_device_utils.hpp"
#include "devtensor/distribute/hierarchical_copy_all_reduce.hpp"
#include "devtensor/distribute/nccl_all_reduce.hpp"
#include "devtensor/distribute/reduction_to_one_device.hpp"

namespace devtensor {
namespace distribute {

/// What a strategy needs of its cross-device ops (TensorFlow's CrossDeviceOps interface): a name,
/// `prepare` once for the strategy's replicas (choose an algorithm, check options), and the three
/// operations onto Destinations.
template <class Ops>
concept CrossDeviceOps = requires(Ops& ops, const Ops& cops, ReduceOp op, const Destinations& destinations,
                                  const DeviceSet& devices, const PerReplica<Tensor<float>>& value,
                                  const std::vector<PerReplica<Tensor<float>>>& values, const Tensor<float>& tensor) {
  { Ops::name } -> std::convertible_to<std::string_view>;
  ops.prepare(destinations, devices);
  { cops.reduce(op, value, destinations) } -> std::same_as<Mirrored<Tensor<float>>>;
  { cops.batch_reduce(op, values, destinations) } -> std::same_as<std::vector<Mirrored<Tensor<float>>>>;
  { cops.broadcast(tensor, destinations) } -> std::same_as<Mirrored<Tensor<float>>>;
};

static_assert(CrossDeviceOps<ReductionToOneDevice>);
static_assert(CrossDeviceOps<HierarchicalCopyAllReduce>);
static_assert(CrossDeviceOps<NcclAllReduce>);
static_assert(CrossDeviceOps<CollectiveAllReduce>);
static_assert(CrossDeviceOps<AutoCrossDeviceOps>);

}  // namespace distribute
}  // namespace devtensor
