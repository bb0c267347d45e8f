#pragma once
/// @file context.hpp
/// @brief Which distribution context this thread is in: a strategy's scope (variables created
/// here are distributed), a replica context (inside strategy.run), or neither (cross-replica).
///
/// Flavour-independent, so that Variable (shared by every translation-unit flavour) can consult it.
/// Strategies implement StrategyInterface, the part Keras's fit needs.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devtensor/tensor/tensor.hpp"

namespace devtensor::detail {

/// What Sequential::fit needs from a strategy.
class StrategyInterface {
 public:
  virtual ~StrategyInterface() = default;
  [[nodiscard]] virtual int num_replicas() const = 0;
  /// Logical device index of each replica, in replica order.
  [[nodiscard]] virtual const std::vector<int>& replica_devices() const = 0;
  /// Calls fn(replica_id) once per replica, concurrently, in a replica context; rethrows the first
  /// replica's error (in replica order) after every replica finished.
  virtual void run_replicas(const std::function<void(int)>& fn) = 0;
  /// values[r][k]: replica r's k-th tensor (on replica r's device). Returns the element-wise sums,
  /// one copy per replica (result[r][k] on replica r's device).
  [[nodiscard]] virtual std::vector<std::vector<Tensor<float>>> batch_all_reduce_sum(
      const std::vector<std::vector<Tensor<float>>>& values) = 0;
  /// The number of examples replica r gets from a global batch of `global` (SPEC §5.10).
  [[nodiscard]] virtual std::vector<std::int64_t> batch_sizes(std::int64_t global) const = 0;
  [[nodiscard]] virtual std::string description() const = 0;
};

/// A strategy's scope on this thread.
struct DistributionScope {
  std::shared_ptr<StrategyInterface> strategy;
};
inline const DistributionScope*& current_distribution_scope() noexcept {
  thread_local const DistributionScope* scope = nullptr;
  return scope;
}

/// A replica context: set on a strategy's worker thread while it runs replica `replica_id`.
struct ReplicaContextState {
  const StrategyInterface* strategy = nullptr;
  int replica_id = 0;
  int num_replicas = 1;
};
inline const ReplicaContextState*& current_replica_context() noexcept {
  thread_local const ReplicaContextState* context = nullptr;
  return context;
}

}  // namespace devtensor::detail
