#pragma once
/// @file capture.hpp
/// @brief What a CUDA-graph capture in progress asks of host code (graph/cuda_graph.hpp, Note
/// [CUDA-graph replay]): a replay repeats only the recorded device work, at the capture's
/// addresses and with its kernel arguments, and none of the host code that queued it.
///
/// So host code that runs inside a captured function says here, while it is captured:
/// - what it does on the host at every run (an optimizer's step count): `each_replay`, run after
///   every later launch of the graph;
/// - which addresses it gave the device work that may change between calls (a variable's buffer,
///   replaced by assign; an optimizer's slots, replaced by restore): `still_valid`, asked before
///   every launch; one that answers false has the function captured again;
/// - what to undo of its host work if the capture fails before its device work ran (CUDA records
///   without running): `undo`, so that the op-by-op run that follows counts the step once;
/// - and it throws when its device work would differ from run to run in a way neither covers (a
///   kernel argument computed on the host from the step count; Adam computes its step size on the
///   GPU for this reason): the capture fails and the function runs op by op, with one WARNING that
///   says why.

#include <functional>
#include <vector>

#include "devtensor/ops/thread_state.hpp"

namespace devtensor::graph {

class Capture {
 public:
  std::vector<std::function<void()>> each_replay;
  std::vector<std::function<bool()>> still_valid;
  std::vector<std::function<void()>> undo;

  /// The capture in progress on this thread, or nullptr.
  [[nodiscard]] static Capture*& current() noexcept { return this_thread_state().capture; }
};

/// Makes `capture` this thread's capture in progress for its lifetime.
class CaptureScope {
 public:
  explicit CaptureScope(Capture& capture) noexcept : previous_(Capture::current()) { Capture::current() = &capture; }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
  ~CaptureScope() { Capture::current() = previous_; }

 private:
  Capture* previous_;
};

}  // namespace devtensor::graph
