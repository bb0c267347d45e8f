#pragma once
/// @file strategy_ops.hpp
/// @brief A strategy's computations across replicas as ops (TensorFlow's collective ops and the
/// strategies' reductions): StrategyReduce (strategy.reduce) and BatchAllReduce (batch_reduce_to,
/// the all-reduce of apply_gradients' merge and of fit's step). They run the strategy's own code
/// (its cross-device ops, its collectives across workers) on their inputs' values where they are
/// (ops::HostFunction): now, or, while a step is traced, as one node that runs it at every run.

#include <string_view>

#include "devtensor/ops/host_function.hpp"
#include "devtensor/ops/op_traits.hpp"

namespace devtensor::ops {

/// What a reduction across replicas is: its inputs live on every replica's device and are read
/// there; the strategy's code reads the caller's scopes, so the caller's thread runs it. Within a
/// process it only queues device work, which a CUDA graph may record; across processes it talks
/// to the other workers at every run, which a graph does not repeat.
struct CrossReplicaTraits {
  static constexpr OpTraits traits{.handles_unknown_dims = true, .communication = true, .any_thread = false};
  static constexpr OpTraits across_processes_traits{
      .handles_unknown_dims = true, .communication = true, .capturable = false, .any_thread = false};
};
struct StrategyReduceKind : CrossReplicaTraits {
  static constexpr std::string_view name = "StrategyReduce";
};
struct BatchAllReduceKind : CrossReplicaTraits {
  static constexpr std::string_view name = "BatchAllReduce";
};
/// strategy.reduce: the replicas' values summed (or averaged) onto one device.
using StrategyReduce = HostFunction<StrategyReduceKind>;
/// batch_reduce_to and the merge's all-reduce: each value summed across the replicas, a copy of
/// the sum on every replica's device.
using BatchAllReduce = HostFunction<BatchAllReduceKind>;

}  // namespace devtensor::ops
