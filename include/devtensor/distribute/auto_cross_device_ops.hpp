#pragma once
/// @file auto_cross_device_ops.hpp
/// @brief AutoCrossDeviceOps: the cross-device ops MirroredStrategy picks when given none,
/// chosen from its replicas' devices as TensorFlow 2.21 chooses.

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "devtensor/distribute/collective_all_reduce.hpp"
#include "devtensor/distribute/cross_device_utils.hpp"
#include "devtensor/distribute/reduction_to_one_device.hpp"

namespace devtensor {
namespace distribute {

/// TensorFlow 2.21's default (MirroredExtended._make_collective_ops_with_fallbacks),
/// decided when the strategy is built: CPUs mixed with GPUs → ReductionToOneDevice; all CPUs, or
/// more logical than physical GPUs → CollectiveAllReduce(RING); physical GPUs →
/// CollectiveAllReduce(AUTO), which is NCCL when this program has the kernel.
class AutoCrossDeviceOps {
 public:
  static constexpr std::string_view name = "auto";
  AutoCrossDeviceOps() = default;

  /// Chooses for a strategy's `replicas`, which are some of `devices`.
  void prepare(const Destinations& replicas, const DeviceSet& devices) {
    std::size_t gpus = 0;
    for (const Device* d : replicas.devices()) gpus += d->is_gpu ? 1u : 0u;
    if (gpus > 0 && gpus < replicas.size()) {
      chosen_ = ReductionToOneDevice{};
      return;
    }
    if (gpus == 0) {
      chosen_ = CollectiveAllReduce(CommunicationOptions(0, std::nullopt, CommunicationImplementation::RING));
      runs_ = CommunicationImplementation::RING;
      return;
    }
    std::size_t logical_gpus = 0;
    for (const auto& d : devices) logical_gpus += d.is_gpu ? 1u : 0u;
    const auto implementation =
        logical_gpus > devices.physical_gpus() ? CommunicationImplementation::RING : CommunicationImplementation::AUTO;
    chosen_ = CollectiveAllReduce(CommunicationOptions(0, std::nullopt, implementation));
    runs_ = std::get<CollectiveAllReduce>(chosen_).implementation_for(replicas);
  }
  [[nodiscard]] std::string_view chosen_name() const {
    return std::visit([](const auto& ops) { return std::decay_t<decltype(ops)>::name; }, chosen_);
  }
  /// The choice as a line can say it: "CollectiveAllReduce (NCCL)" or "(RING)" (AUTO resolved
  /// for the replicas' devices), or "ReductionToOneDevice".
  [[nodiscard]] std::string chosen_description() const {
    std::string out(chosen_name());
    if (std::holds_alternative<CollectiveAllReduce>(chosen_)) out += " (" + std::string(to_string(runs_)) + ")";
    return out;
  }
  /// The collective's options when the choice is CollectiveAllReduce.
  [[nodiscard]] std::optional<CommunicationOptions> collective_options() const {
    if (const auto* c = std::get_if<CollectiveAllReduce>(&chosen_)) return c->options();
    return std::nullopt;
  }
  template <Numeric T>
  std::vector<Mirrored<Tensor<T>>> batch_reduce(ReduceOp op, const std::vector<PerReplica<Tensor<T>>>& values,
                                                const Destinations& destinations) const {
    return std::visit([&](const auto& ops) { return ops.batch_reduce(op, values, destinations); }, chosen_);
  }
  template <Numeric T>
  Mirrored<Tensor<T>> reduce(ReduceOp op, const PerReplica<Tensor<T>>& value, const Destinations& destinations) const {
    return std::visit([&](const auto& ops) { return ops.reduce(op, value, destinations); }, chosen_);
  }
  template <Element T>
  Mirrored<Tensor<T>> broadcast(const Tensor<T>& value, const Destinations& destinations) const {
    return ReductionToOneDevice{}.broadcast(value, destinations);
  }

 private:
  std::variant<ReductionToOneDevice, CollectiveAllReduce> chosen_;
  CommunicationImplementation runs_ = CommunicationImplementation::RING;  // the collective's, AUTO resolved
};

}  // namespace distribute
}  // namespace devtensor
