#pragma once
/// @file thread_state.hpp
/// @brief ThreadState: everything devtensor keeps per thread that decides what the thread's ops
/// do, in one object (PyTorch's ThreadLocalState), and ThreadStateGuard, which carries it across
/// the thread boundaries the library makes.
///
/// Note [One thread state]
/// An op's behaviour depends on per-thread context: the DeviceScope stack (what it requests), the
/// graph being built (whether it runs or becomes a node), InitScope, the active GradientTapes, a
/// CUDA-graph capture in progress, the variable creator and strategy scope, the replica context,
/// a training step's seed, a parameter-server closure's writes. Each layer reads and writes its
/// part of one per-thread object (`this_thread_state()`; the DeviceScope stack stays with the
/// device layer and is represented by its request). Where the library hands work to another
/// thread (the executor's parts, a MirroredStrategy's replicas, a coordinator's dispatcher, a
/// dataset's prefetch, a coordinator's dispatcher), the thread that hands it over takes a snapshot
/// (`ThreadState::snapshot`), and the thread that runs it installs it with a ThreadStateGuard for
/// the work's duration, then gets its own back: a new boundary cannot forget a piece of context,
/// and a piece of context added later reaches every boundary. Tapes and a CUDA-graph capture stay
/// with their thread (a tape records its own thread's ops, as TensorFlow's; a capture records its
/// thread's stream work): a snapshot leaves them out. A replica's thread then sets its own replica
/// context and device.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

class VariableCreator;
namespace distribute {
struct DistributionScope;
struct ReplicaContextState;
namespace ps_detail {
struct ClosureWrites;
}  // namespace ps_detail
}  // namespace distribute
namespace graph {
class Graph;
class Capture;
}  // namespace graph
namespace autodiff {
struct TapeState;
}  // namespace autodiff

/// What random layers (Dropout) draw from during a model's training step: the step's seed (a
/// one-element int64 tensor, a traced step's argument) and the replica's index. The model sets it
/// on each replica's thread for the step; outside a step there is none and a layer counts its own
/// calls.
struct StepSeed {
  const Tensor<std::int64_t>* seed = nullptr;
  int replica = 0;
};

/// A thread's context (Note [One thread state]). Each part belongs to the layer named beside it,
/// which alone reads and writes it.
struct ThreadState {
  // device/scope.hpp: the DeviceScope stack's request, carried to another thread (the stack itself
  // holds the scopes of this thread's frames).
  std::optional<DeviceRequest> device_request;
  // ops/graph.hpp: the graph this thread builds, and InitScope (ops run eagerly even so).
  std::shared_ptr<graph::Graph> graph;
  bool eager_forced = false;
  // ops/graph_nodes.hpp: variables created while building graphs, refused on a retrace.
  int variables_created = 0;
  bool variable_creation_refused = false;
  // ops/record.hpp: the active GradientTapes, innermost last.
  std::vector<autodiff::TapeState*> tapes;
  // ops/capture.hpp: the CUDA-graph capture in progress.
  graph::Capture* capture = nullptr;
  // variables/variable_impl.hpp: what creates this thread's variables (a strategy's scope).
  const VariableCreator* variable_creator = nullptr;
  // distribute/context.hpp: the strategy scope and the replica context.
  const distribute::DistributionScope* distribution_scope = nullptr;
  const distribute::ReplicaContextState* replica_context = nullptr;
  // nn/layer.hpp: a training step's seed.
  StepSeed step_seed;
  // coordinator/ps_state.hpp: the writes of the scheduled function running on this worker.
  distribute::ps_detail::ClosureWrites* closure_writes = nullptr;

  /// This thread's state as another thread should start with it: its device scopes' request in
  /// place of the stack, without tapes and capture, which stay with this thread.
  [[nodiscard]] static ThreadState snapshot();
};

/// This thread's state.
DEVTENSOR_EXPORT inline ThreadState& this_thread_state() noexcept {
  thread_local ThreadState state;
  return state;
}

/// Makes a snapshot (ThreadState::snapshot, taken on the thread that hands work over) this
/// thread's state while it lives, and gives the thread its own state back after. The snapshot's
/// device request becomes the outermost DeviceScope here. Not copyable or movable; destroyed on
/// the thread that made it.
class [[nodiscard]] ThreadStateGuard {
 public:
  // Out of line in compiled mode: a guard is made once per thread hand-over, and its body (every
  // member of ThreadState moved twice) was 6 KB of code in each translation unit that used it.
  explicit ThreadStateGuard(const ThreadState& snapshot);
  ThreadStateGuard(const ThreadStateGuard&) = delete;
  ThreadStateGuard& operator=(const ThreadStateGuard&) = delete;
  ~ThreadStateGuard();

 private:
  ThreadState previous_;
  std::optional<DeviceScope> scope_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION ThreadStateGuard::ThreadStateGuard(const ThreadState& snapshot)
    : previous_(std::move(this_thread_state())) {
  this_thread_state() = snapshot;
  this_thread_state().device_request.reset();
  if (snapshot.device_request) scope_.emplace(*snapshot.device_request);
}

DEVTENSOR_DEFINITION ThreadStateGuard::~ThreadStateGuard() {
  scope_.reset();
  this_thread_state() = std::move(previous_);
}

DEVTENSOR_DEFINITION ThreadState ThreadState::snapshot() {
  const ThreadState& mine = this_thread_state();
  ThreadState out;
  out.device_request = current_device_request();
  out.graph = mine.graph;
  out.eager_forced = mine.eager_forced;
  out.variables_created = mine.variables_created;
  out.variable_creation_refused = mine.variable_creation_refused;
  out.variable_creator = mine.variable_creator;
  out.distribution_scope = mine.distribution_scope;
  out.replica_context = mine.replica_context;
  out.step_seed = mine.step_seed;
  out.closure_writes = mine.closure_writes;
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
