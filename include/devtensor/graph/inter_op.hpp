#pragma once
/// @file inter_op.hpp
/// @brief The inter-op team: the threads that run a graph's independent parts at once
/// (TensorFlow's inter-op thread pool), sized by config::threading's inter-op setting.
///
/// Note [Independent parts run at once]
/// An executable whose nodes sit on several devices (a MirroredStrategy's replicas on logical CPUs
/// or GPUs) splits its schedule into parts, one per such device, and a run gives each part a thread
/// of the team: the caller runs part 0, workers the others, each its steps in schedule order. A step
/// waits only for the steps of other parts it depends on: the producers of its inputs, its control
/// inputs, and the earlier uses of the state it uses (Node::after: a variable's read waits for the
/// write before it, a write for every read since; Note [Automatic control dependencies] in
/// ops/graph.hpp). Every wait points to an earlier step of the schedule, so no two parts wait for
/// each other.
/// - Which steps may run on a worker: nodes whose kernel reads no thread's state (Node::any_thread:
///   the registry's ops, fused groups, variable reads, which set their own DeviceScope; constants).
///   Workers act in the caller's strategy scope and replica context. Every
///   other node (a collective, an optimizer's update, a user's eager node, which may read the
///   caller's strategy or scopes) runs in part 0, on the caller's thread, whatever its device.
/// - A device gets a part of its own only with kMinPartSteps such steps, and only beside another
///   device of its type that has as many (replicas): a graph whose second device holds a few
///   host-side nodes, or a GPU graph's host steps, runs as one part, since a hand-over between
///   threads costs more (tens of microseconds on a 2-vCPU VM) than those nodes.
/// - Parts share a run's values: a value's producer publishes it (a release store of its step's
///   flag) before any reader of another part acquires it, and the count of a value's reads left is
///   decremented atomically, so exactly one reader frees it. Copies to another device are made per
///   (value, device, part), and the memory plan reuses a buffer only within the part that freed it.
/// - A run under a GradientTape (the tape records on the caller's thread), a run being captured
///   into a CUDA graph, a team that is busy (a run nested in another's part, or two threads' runs
///   at once) and an inter-op setting of one thread run the schedule one step after another.
/// - Hand-overs spin before they sleep: a worker that finished its part, and a part waiting for
///   another's step, poll for up to backend::cpu::kSpin (50 us) before blocking. Waking a sleeping
///   thread cost 20-25 us on a 2-vCPU VM, about what a traced replica pass of the small MLP leaves
///   between two steps; the spin costs that much CPU time on an otherwise idle core.
/// - A part that fails marks its remaining steps done so that no other part waits forever; the
///   other parts stop at their next wait, and the run rethrows the first error, as one that runs
///   step by step would (which error is first may differ when two parts fail at once).

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <utility>

#include "devtensor/backend/cpu/worker_threads.hpp"
#include "devtensor/config.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/device/context.hpp"

namespace devtensor::graph {

/// Threads that run a graph's parts together with the caller, made as runs need them (a run of
/// n parts needs n - 1 workers), up to kMaxParallelismThreads. One run at a time: a second one
/// (another thread's, or one nested inside a part) is refused and runs one step after another, as
/// does a run the team cannot grow for (a thread that could not be made: one WARNING).
class InterOpTeam {
 public:
  InterOpTeam() = default;

  /// The workers made so far.
  [[nodiscard]] int workers() const noexcept { return threads_.size(); }

  /// Runs part(0) on the calling thread and part(1) .. part(parts - 1) on workers, and returns
  /// true once all have returned; false, with nothing run, when the team is busy or cannot have
  /// parts - 1 workers. `part` must not throw.
  bool try_run(int parts, const std::function<void(int)>& part) noexcept {
    if (parts > kMaxParallelismThreads) return false;
    // A flag, not a mutex: a run nested in part 0 asks on the thread that holds the team.
    if (busy_.exchange(true, std::memory_order_acquire)) return false;
    if (!grow_to(parts - 1)) {
      busy_.store(false, std::memory_order_release);
      return false;
    }
    threads_.start(parts - 1, part, 1);
    part(0);
    threads_.wait();  // every worker's part happened before this
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  std::atomic<bool> busy_{false};
  bool warned_ = false;  // under busy_
  backend::cpu::WorkerThreads threads_{0, {.spin = true}};

  bool grow_to(int workers) noexcept {
    if (workers <= threads_.size()) return true;
    try {
      threads_.grow(workers);
      return true;
    } catch (const std::exception& e) {
      if (std::exchange(warned_, true)) return false;
      try {
        log(LogSeverity::warning, "Could not start inter-op thread " + std::to_string(threads_.size() + 1) + " (" +
                                      e.what() + "): graphs whose parts need more threads run them one after another.");
      } catch (...) {  // no memory for the message: the run goes on without it
      }
      return false;
    }
  }
};

/// How many threads may run one graph's parts at once: config::threading's inter-op setting when
/// positive, one (the caller's) when negative, else one per hardware thread; at most
/// kMaxParallelismThreads.
inline int inter_op_threads() {
  const int configured = Context::global().parallelism_threads(Parallelism::inter_op);
  if (configured > 0) return std::min(configured, kMaxParallelismThreads);
  if (configured < 0) return 1;
  return static_cast<int>(
      std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(kMaxParallelismThreads)));
}

/// The process's team. Never destroyed: runs may end during static destruction.
DEVTENSOR_EXPORT inline InterOpTeam& inter_op_team() {
  static InterOpTeam* const team = new InterOpTeam;
  return *team;
}

}  // namespace devtensor::graph
