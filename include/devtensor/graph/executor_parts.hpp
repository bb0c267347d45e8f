#pragma once
/// @file executor_parts.hpp
/// @brief The Executable's independent parts (Note [Independent parts run at once] in
/// graph/inter_op.hpp): how a schedule is split by device, and a run of the parts on the inter-op
/// team. Definitions only, in the translation units that hold the executor's.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "devtensor/backend/cpu/worker_threads.hpp"
#include "devtensor/config.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/graph/executor.hpp"
#include "devtensor/graph/inter_op.hpp"
#include "devtensor/ops/capture.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/ops/thread_state.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS
namespace devtensor::graph {

namespace executor_detail {

/// A device needs this many steps that may run on any thread to get a part of its own.
inline constexpr std::size_t kMinPartSteps = 8;

/// Waits until `flag` is set: polling first, since the other part is usually running.
inline void await_step(const std::atomic<std::uint32_t>& flag) noexcept {
  if (backend::cpu::spin_until([&] { return flag.load(std::memory_order_acquire) != 0; })) return;
  while (flag.load(std::memory_order_acquire) == 0) flag.wait(0, std::memory_order_acquire);
}

inline void mark_done(std::atomic<std::uint32_t>& flag) noexcept {
  flag.store(1, std::memory_order_release);
  flag.notify_all();
}

/// Whether its device's part may run the node on a worker: its op's any_thread trait, and
/// constants, whose kernel gives the value the node holds.
inline bool runs_anywhere(const Node& node) noexcept {
  return node.traits().any_thread || node.kind == NodeKind::constant;
}

}  // namespace executor_detail

DEVTENSOR_DEFINITION void Executable::plan_parts() {
  const int threads = inter_op_threads();
  if (threads < 2) return;
  // The devices with enough steps that may run anywhere, in order of first use.
  std::vector<const Device*> devices;
  std::vector<std::size_t> counts;
  for (const auto& step : steps_) {
    if (!executor_detail::runs_anywhere(*step.node)) continue;
    const auto at = std::find(devices.begin(), devices.end(), step.device);
    if (at == devices.end()) {
      devices.push_back(step.device);
      counts.push_back(1);
    } else {
      ++counts[static_cast<std::size_t>(at - devices.begin())];
    }
  }
  // Parts are for replicas: devices of one type that each hold enough steps. The steps of any
  // other device (a GPU graph's host steps: shapes, small integers) run in part 0, the caller's.
  std::vector<const Device*> own;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    if (counts[d] < executor_detail::kMinPartSteps) continue;
    std::size_t same_type = 0;
    for (std::size_t e = 0; e < devices.size(); ++e)
      if (counts[e] >= executor_detail::kMinPartSteps && devices[e]->device_type == devices[d]->device_type)
        ++same_type;
    if (same_type >= 2) own.push_back(devices[d]);
  }
  if (own.size() < 2) return;
  const std::size_t parts = std::min(own.size(), static_cast<std::size_t>(threads));
  part_of_.assign(steps_.size(), 0);
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    if (!executor_detail::runs_anywhere(*steps_[s].node)) continue;  // the caller's part
    const auto at = std::find(own.begin(), own.end(), steps_[s].device);
    if (at != own.end()) part_of_[s] = static_cast<std::uint32_t>(static_cast<std::size_t>(at - own.begin()) % parts);
  }
  // Each step's waits: per other part, the latest of its steps this one depends on.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::vector<std::size_t> producer(slots_, none);
  std::vector<std::size_t> step_of_node(nodes_.size(), none);
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    for (std::size_t k = 0; k < steps_[s].node->outputs.size(); ++k) producer[steps_[s].first_slot + k] = s;
    step_of_node[schedule_[s]] = s;
  }
  std::vector<std::optional<std::size_t>> latest(parts);
  awaited_.assign(steps_.size(), false);
  wait_begin_.assign(1, 0);
  for (std::size_t s = 0; s < steps_.size(); ++s) {
    const Node& node = *steps_[s].node;
    const std::uint32_t own_part = part_of_[s];
    std::fill(latest.begin(), latest.end(), std::nullopt);
    const auto after = [&](std::size_t t) {
      if (t == none || part_of_[t] == own_part) return;
      auto& l = latest[part_of_[t]];
      l = std::max(l.value_or(0), t);
    };
    for (std::size_t k = 0; k < node.inputs.size(); ++k)
      if (const Source& src = inputs_[steps_[s].first_input + k]; !src.feed) after(producer[src.index]);
    // Control inputs, and the uses of state before it (Note [Automatic control dependencies]).
    for (auto c : node.control_inputs) after(c < step_of_node.size() ? step_of_node[c] : none);
    for (auto a : node.after) after(a < step_of_node.size() ? step_of_node[a] : none);
    for (const auto& l : latest)
      if (l) {
        waits_.push_back(*l);
        awaited_[*l] = true;
      }
    wait_begin_.push_back(waits_.size());
  }
  parts_.assign(parts, {});
  for (std::size_t s = 0; s < steps_.size(); ++s) parts_[part_of_[s]].push_back(s);
}

DEVTENSOR_DEFINITION bool Executable::run_parts(RunState& state, const std::vector<AnyTensor>& feeds,
                                                ResourceStore* resources) const {
  // A tape records on this thread; a capture keeps this thread's allocations and records this
  // thread's stream work: both need every step here.
  if (autodiff::tapes_active() || KeepAllocations::current() || Capture::current()) return false;
  for (std::size_t s = 0; s < steps_.size(); ++s)
    if (awaited_[s]) state.done[s].store(0, std::memory_order_relaxed);  // published by the team's start
  // The workers act in the caller's context (Note [One thread state]): a distributed variable's
  // read depends on its strategy and replica context.
  const ThreadState caller = ThreadState::snapshot();
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  std::size_t error_step = 0;
  const std::function<void(int)> part = [&](int p) {
    std::optional<ThreadStateGuard> as_caller;
    const auto& steps = parts_[static_cast<std::size_t>(p)];
    Scratch& scratch = state.scratch[static_cast<std::size_t>(p)];
    std::size_t i = 0;
    try {
      if (p != 0) as_caller.emplace(caller);  // part 0 runs on the caller's thread
      for (; i < steps.size(); ++i) {
        const std::size_t s = steps[i];
        for (std::size_t w = wait_begin_[s]; w < wait_begin_[s + 1]; ++w)
          executor_detail::await_step(state.done[waits_[w]]);
        if (failed.load(std::memory_order_acquire)) break;
        run_step<true>(state, scratch, s, feeds, resources, false);
        if (awaited_[s]) executor_detail::mark_done(state.done[s]);
      }
    } catch (...) {
      {
        std::lock_guard lock(error_mutex);
        if (!error || steps[i] < error_step) {
          error = std::current_exception();
          error_step = steps[i];
        }
      }
      failed.store(true, std::memory_order_release);
    }
    for (; i < steps.size(); ++i)  // stopped: nobody may wait for the rest
      if (awaited_[steps[i]]) executor_detail::mark_done(state.done[steps[i]]);
  };
  if (!inter_op_team().try_run(static_cast<int>(parts_.size()), part)) return false;
  if (error) std::rethrow_exception(error);
  return true;
}

}  // namespace devtensor::graph
#endif
