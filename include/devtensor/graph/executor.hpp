#pragma once
/// @file executor.hpp
/// @brief The executor: runs the part of a placed graph that some fetches need, optimised
/// (graph/optimizer.hpp), node by node in graph order through the nodes' kernels (the registry's
/// bodies, as eager ops, or fused kernels), each buffer reused or freed after its last use and
/// each value read on another device copied there once.
///
/// An Executable is built once per (fetches, feeds) and placement and is immutable, so several
/// threads may run it at once; each run keeps its values to itself. A schedule over several devices
/// runs its devices' parts on several threads at once (Note [Independent parts run at once] in
/// graph/inter_op.hpp).
///
/// Note [Replays reuse small buffers]
/// A run keeps its values in a RunState that the next run of the same executable reuses (one is
/// cached; concurrent runs make their own). Values of at most kKeptBytes stay in their slots after
/// the run, and a node's kernel writes the next run's value into the same buffer when nobody else
/// holds it (graph::reusable): a replay of small ops allocates only its results. A value still
/// shared when the run ends (a result, a variable's value) is let go, so a kept buffer was only
/// ever touched by runs of this executable, which the cache's exchange orders one after another.
/// Larger values follow the memory plan (Note [A replay's memory plan]). Slots of pass-through
/// nodes (Identity) are emptied after each run: they alias their input's buffer.
///
/// Note [A replay's memory plan]
/// Values above kKeptBytes whose static shape is known and that are not results get a buffer of
/// the plan when the executable is built: walking the schedule, a value takes a free buffer of its
/// device and size, and its buffer is free again after its last read, so values whose lifetimes do
/// not overlap share one (the run's peak, not the sum). A run puts the buffer into the value's slot
/// before its node runs, and the node's kernel writes into it (graph::reusable); after the value's
/// last read the buffer goes back to the run's pool when nothing else holds it, and the pool stays
/// with the RunState for the next run. So a replay allocates its results and nothing else, once the
/// first run has filled the pool. A value something else still holds (a variable assigned it, a
/// view of it) is let go instead, and the next run allocates that buffer anew (the kernels' own
/// check, graph::reusable, would refuse it too). A plan holds at most kMaxPlannedBytes between
/// runs; beyond that, values are freed at their last use.
///
/// Note [One copy per value and device]
/// A value read on a device other than its own is copied there (TensorFlow's _Send/_Recv pair).
/// When several nodes on one device read it, the first read makes the copy and the others share
/// it until the last of them has run, as TensorFlow's partitioner gives them one _Recv: a traced
/// train step on a GPU reads its host batch in the forward MatMul and again for the kernel's
/// gradient, which was two uploads of the batch per step. Where an argument lives is known only
/// when the run gets it (on the host or on a GPU), so each (argument or value made on another
/// device, reading device) with more than one read gets a transfer slot when the executable is
/// built, and a run fills it only if a copy is needed. Any other read of a value on another device
/// (a node's only one there; a host-memory output of a node on the reader's own device) copies
/// into the node's scratch, freed as soon as it has run.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/graph/optimizer.hpp"
#include "devtensor/graph/placer.hpp"
#include "devtensor/graph/timeline.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/record.hpp"
#include "devtensor/tensor/any_tensor.hpp"

namespace devtensor::graph {

/// A value given for a node output instead of computing it (a placeholder's feed).
struct FeedValue {
  Edge edge;
  AnyTensor value;
};

class DEVTENSOR_EXPORT Executable {
 public:
  /// The nodes `fetches` need, given that `feeds` are provided: reverse-reachable from the fetches
  /// and targets, stopping at fed outputs.
  /// @throws InvalidArgumentError "You must feed a value for placeholder tensor '<name>' with
  /// dtype <dtype> and shape <shape>" when a needed placeholder is not fed.
  /// With `optimizer`, the graph is rewritten so first (graph/optimizer.hpp), and a run under a
  /// GradientTape runs the graph as it was, so that the tape records its ops.
  Executable(std::vector<std::shared_ptr<const Node>> nodes, Placement placement, std::vector<Edge> fetches,
             std::vector<Edge> feeds, std::vector<std::size_t> targets = {},
             const OptimizerOptions* optimizer = nullptr);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable() { delete cached_.exchange(nullptr); }

  /// Values up to this size stay in a run's slots for the next run (Note [Replays reuse small
  /// buffers]).
  static constexpr std::size_t kKeptBytes = 16 * 1024;
  /// The most a memory plan keeps between runs (Note [A replay's memory plan]).
  static constexpr std::size_t kMaxPlannedBytes = std::size_t{256} << 20;

  /// Runs with `feeds` (in the order of the constructor's feeds) and the variables in
  /// `resources`, and returns the fetches' values.
  [[nodiscard]] std::vector<AnyTensor> run(const std::vector<AnyTensor>& feeds,
                                           ResourceStore* resources = nullptr) const {
    if (unoptimized_ && autodiff::tapes_active()) return unoptimized_->run(feeds, resources);
    auto state = acquire();
    RunState& running = *state;  // before the move: arguments are evaluated in no set order
    return run_in(running, std::move(state), feeds, resources);
  }
  /// One node of a traced run: the node, its device, its inputs' producers ("node", "node:1";
  /// a feed's placeholder) and its start and end in microseconds since the Unix epoch.
  struct TracedStep {
    const Node* node;
    const Device* device;
    std::vector<std::string> inputs;
    std::int64_t start_us = 0, end_us = 0;
    std::int64_t thread_id = 0;            // the running thread, numbered from 0 in the order threads first traced
    std::vector<NodeOutput> outputs = {};  // the values it made, with their bytes and allocators
  };
  /// A run that times each node (TensorFlow's FULL_TRACE): the nodes one after another on this
  /// thread, a GPU's stream synchronised after each, so that a node's time includes its kernels.
  [[nodiscard]] std::vector<AnyTensor> run_traced(const std::vector<AnyTensor>& feeds, ResourceStore* resources,
                                                  std::vector<TracedStep>& trace) const {
    if (unoptimized_ && autodiff::tapes_active()) return unoptimized_->run_traced(feeds, resources, trace);
    auto state = acquire();
    RunState& running = *state;
    return run_in(running, std::move(state), feeds, resources, &trace);
  }
  /// A run being captured into a CUDA graph (graph/cuda_graph.hpp): its own state, not the
  /// cached one, and every value let go at its last read whatever its size, so that a variable
  /// read earlier in the step is updated in place, at the address the graph recorded.
  [[nodiscard]] std::vector<AnyTensor> run_capturing(const std::vector<AnyTensor>& feeds) const {
    auto state = fresh_state();
    return run_in(*state, nullptr, feeds, nullptr);
  }
  struct PlacedStep {
    const Node* node;
    const Device* device;
  };
  /// The nodes a run executes, in order, with their devices.
  [[nodiscard]] std::vector<PlacedStep> placed_steps() const {
    std::vector<PlacedStep> out;
    for (const auto& step : steps_) out.push_back({step.node, step.device});
    return out;
  }

  /// The nodes a run executes, in order.
  [[nodiscard]] const std::vector<std::size_t>& schedule() const noexcept { return schedule_; }
  /// The device of each node it was built from, in their order.
  [[nodiscard]] const Placement& placement() const noexcept { return placement_; }
  /// The parts a run gives threads of their own (Note [Independent parts run at once]); 0: none.
  [[nodiscard]] std::size_t parts() const noexcept { return parts_.size(); }
  /// The bytes the memory plan keeps between runs (Note [A replay's memory plan]).
  [[nodiscard]] std::size_t planned_bytes() const noexcept { return planned_bytes_; }
  /// The op types a run executes, in order (fused nodes: `_FusedElementwise`, `_FusedMatMul`).
  [[nodiscard]] std::vector<std::string> scheduled_ops() const {
    std::vector<std::string> out;
    for (const auto& step : steps_) out.emplace_back(step.node->type());
    return out;
  }

 private:
  /// Where a value comes from: a feed (its position) or a node output's slot.
  struct Source {
    bool feed = false;
    int transfer = -1;  // a read's transfer slot, when it shares a copy (Note [One copy per value and device])
    std::size_t index = 0;
  };
  struct Step {
    const Node* node;
    const Device* device;
    std::size_t first_input;  // into inputs_
    std::size_t first_slot;   // the node's outputs: slots first_slot ..
  };

  std::vector<std::shared_ptr<const Node>> nodes_;
  Placement placement_;
  std::vector<std::size_t> schedule_;
  std::vector<Step> steps_;     // the schedule, resolved
  std::vector<Source> inputs_;  // every step's inputs, consecutive
  std::vector<Source> fetches_;
  std::vector<int> uses_;                 // per slot: how many reads a run makes (inputs and fetches)
  std::vector<int> transfer_uses_;        // per transfer slot: the reads that share its copy
  std::vector<std::size_t> alias_slots_;  // outputs of pass-through nodes: emptied after each run
  std::size_t slots_ = 0;
  std::size_t max_inputs_ = 0;
  std::unique_ptr<const Executable> unoptimized_;  // for runs under a tape; null when nothing was rewritten
  std::vector<int> buffer_of_;                     // per slot: its buffer in the memory plan, -1 for none
  std::size_t buffers_ = 0;
  std::size_t planned_bytes_ = 0;
  // Independent parts (Note [Independent parts run at once]); empty: the schedule is one part.
  std::vector<std::uint32_t> part_of_;           // per step
  std::vector<std::vector<std::size_t>> parts_;  // per part: its steps, in schedule order
  std::vector<std::size_t> wait_begin_;          // per step: its waits are waits_[wait_begin_[s] .. [s + 1])
  std::vector<std::size_t> waits_;               // steps of other parts that must have run first
  std::vector<bool> awaited_;                    // per step: another part waits for it
  void plan_parts();
  void plan_memory();
  void plan_transfers();
  [[nodiscard]] std::uint32_t part_of(std::size_t step) const noexcept { return part_of_.empty() ? 0 : part_of_[step]; }

  /// A node's inputs as its kernel gets them, per part running at once.
  struct Scratch {
    std::vector<const AnyTensor*> inputs;  // the running node's inputs
    std::vector<AnyTensor> copies;         // the running node's inputs copied to its device
  };
  /// One run's values and scratch (Note [Replays reuse small buffers]).
  struct RunState {
    std::vector<AnyTensor> values;                       // per slot
    std::vector<int> left;                               // per slot: reads still to come in this run
    std::vector<Scratch> scratch;                        // per part
    std::vector<AnyTensor> transfers;                    // per transfer slot: a copy several nodes read
    std::vector<int> transfers_left;                     // per transfer slot: reads still to come in this run
    std::vector<std::shared_ptr<TensorStorage>> pool;    // per plan buffer: free between its values
    std::unique_ptr<std::atomic<std::uint32_t>[]> done;  // per step, for runs of parts: it has run
  };
  mutable std::atomic<RunState*> cached_{nullptr};
  [[nodiscard]] std::unique_ptr<RunState> acquire() const;
  [[nodiscard]] std::unique_ptr<RunState> fresh_state() const;
  void release(std::unique_ptr<RunState> state) const noexcept;
  /// Runs in `state`; `owned` (the same state, or null for a capture's) goes back to the cache.
  std::vector<AnyTensor> run_in(RunState& state, std::unique_ptr<RunState> owned, const std::vector<AnyTensor>& feeds,
                                ResourceStore* resources, std::vector<TracedStep>* trace = nullptr) const;
  /// The steps one after another, each timed into `trace` (run_traced).
  void run_timed(RunState& state, const std::vector<AnyTensor>& feeds, ResourceStore* resources,
                 std::vector<TracedStep>& trace) const;
  std::vector<std::string> feed_names_;  // per feed: the fed output, as a traced run names it
  /// Step `index`: its inputs (copied to its device where needed), its kernel, its inputs' reads
  /// counted. `Shared`: other parts run at once, so the counts are changed atomically. Inlined in
  /// both loops: as a call it cost a replay of a 1-element fused op 2 % more instructions.
  template <bool Shared>
  [[gnu::always_inline]] inline void run_step(RunState& state, Scratch& scratch, std::size_t index,
                                              const std::vector<AnyTensor>& feeds, ResourceStore* resources,
                                              bool capturing) const;
  /// The parts on the inter-op team; false, with nothing run, when they must run one after
  /// another (a busy team, or one short of threads; a tape or a capture on this thread). Rethrows
  /// the first error.
  bool run_parts(RunState& state, const std::vector<AnyTensor>& feeds, ResourceStore* resources) const;
};

/// A traced run's steps as TensorFlow's StepStats: grouped by device, in the order they ran.
StepStats step_stats(const std::vector<Executable::TracedStep>& trace);

#if DEVTENSOR_HEADER_DEFINITIONS

DEVTENSOR_DEFINITION StepStats step_stats(const std::vector<Executable::TracedStep>& trace) {
  StepStats stats;
  for (const auto& step : trace) {
    auto device = std::find_if(stats.dev_stats.begin(), stats.dev_stats.end(),
                               [&](const DeviceStepStats& d) { return d.device == step.device->full_name; });
    if (device == stats.dev_stats.end())
      device = stats.dev_stats.insert(stats.dev_stats.end(), {step.device->full_name});
    NodeExecStats node{step.node->name, std::string(step.node->type()), step.start_us, step.end_us - step.start_us,
                       step.inputs};
    for (const auto& output : step.node->outputs) node.output_shapes.push_back(output.shape);
    node.timeline_label = node.node_name + " = " + node.op + "(";
    for (std::size_t i = 0; i < node.inputs.size(); ++i) node.timeline_label += (i ? ", " : "") + node.inputs[i];
    node.timeline_label += ")";
    node.thread_id = step.thread_id;
    node.output = step.outputs;
    device->node_stats.push_back(std::move(node));
  }
  return stats;
}

DEVTENSOR_DEFINITION Executable::Executable(std::vector<std::shared_ptr<const Node>> nodes, Placement placement,
                                            std::vector<Edge> fetches, std::vector<Edge> feeds,
                                            std::vector<std::size_t> targets, const OptimizerOptions* optimizer)
    : nodes_(std::move(nodes)), placement_(std::move(placement)) {
  if (optimizer) {  // the optimised graph, and the plain one for runs under a tape
    auto optimized = optimize(nodes_, placement_, fetches, feeds, targets, *optimizer);
    if (!optimized.empty()) {
      unoptimized_ = std::make_unique<const Executable>(nodes_, placement_, fetches, feeds, targets);
      nodes_ = std::move(optimized);
    }
  }
  const auto feed_of = [&feeds](const Edge& e) -> std::optional<std::size_t> {
    for (std::size_t f = 0; f < feeds.size(); ++f)
      if (feeds[f] == e) return f;
    return std::nullopt;
  };
  for (const auto& f : feeds)
    feed_names_.push_back(f.node < nodes_.size()
                              ? (f.output == 0 ? nodes_[f.node]->name : nodes_[f.node]->output_name(f.output))
                              : std::string("feed"));
  const std::vector<bool> needed = needed_nodes(nodes_, fetches, feeds, std::move(targets));
  std::vector<std::size_t> first_slot(nodes_.size(), 0);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!needed[i]) continue;
    const Node& node = *nodes_[i];
    if (node.kind == NodeKind::placeholder)
      throw InvalidArgumentError("You must feed a value for placeholder tensor '" + node.name + "' with dtype " +
                                 std::string(dtype_string(node.outputs[0].dtype)) + " and shape " +
                                 node.outputs[0].shape.to_string() + "\n\t [[{{node " + node.name + "}}]]");
    schedule_.push_back(i);
    first_slot[i] = slots_;
    slots_ += node.outputs.size();
  }
  uses_.assign(slots_, 0);
  const auto source = [&](const Edge& e) -> Source {
    if (auto f = feed_of(e)) return {.feed = true, .index = *f};
    const std::size_t slot = first_slot[e.node] + e.output;
    ++uses_[slot];
    return {.feed = false, .index = slot};
  };
  for (auto i : schedule_) {
    const Node& node = *nodes_[i];
    steps_.push_back({&node, placement_.at(i), inputs_.size(), first_slot[i]});
    if (node.traits().pass_through)
      for (std::size_t k = 0; k < node.outputs.size(); ++k) alias_slots_.push_back(first_slot[i] + k);
    for (const auto& e : node.inputs) inputs_.push_back(source(e));
    max_inputs_ = std::max(max_inputs_, node.inputs.size());
  }
  for (const auto& f : fetches) fetches_.push_back(source(f));
  plan_parts();
  plan_transfers();
  plan_memory();
}

DEVTENSOR_DEFINITION void Executable::plan_transfers() {
  std::vector<const Device*> made_on(slots_, nullptr);  // each node output's device
  for (const auto& step : steps_)
    for (std::size_t k = 0; k < step.node->outputs.size(); ++k) made_on[step.first_slot + k] = step.device;
  // The reads of each (argument or value made on another device, reading device, reading part).
  std::map<std::tuple<bool, std::size_t, const Device*, std::uint32_t>, std::vector<std::size_t>> reads;  // -> inputs_
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (step.node->traits().communication) continue;  // read where they are, never copied
    for (std::size_t k = 0; k < step.node->inputs.size(); ++k) {
      const Source& s = inputs_[step.first_input + k];
      if (!s.feed && made_on[s.index] == step.device) continue;
      reads[{s.feed, s.index, step.device, part_of(i)}].push_back(step.first_input + k);
    }
  }
  for (const auto& [pair, entries] : reads) {
    if (entries.size() < 2) continue;
    for (auto entry : entries) inputs_[entry].transfer = static_cast<int>(transfer_uses_.size());
    transfer_uses_.push_back(static_cast<int>(entries.size()));
  }
}

DEVTENSOR_DEFINITION void Executable::plan_memory() {
  buffer_of_.assign(slots_, -1);
  std::vector<bool> result(slots_, false);
  for (const auto& f : fetches_)
    if (!f.feed) result[f.index] = true;
  struct Buffer {
    const Device* device;
    std::size_t bytes;
  };
  std::vector<Buffer> buffers;
  // Buffers free at this point of the schedule, with the part whose read freed them: only a step
  // of that part may take one, since another part may run before that read.
  std::vector<std::pair<int, std::uint32_t>> free;
  std::vector<int> left = uses_;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    const Node& node = *step.node;
    const bool plannable =
        node.kind == NodeKind::op && node.run && !node.traits().communication && !node.traits().pass_through;
    for (std::size_t k = 0; plannable && k < node.outputs.size(); ++k) {
      const std::size_t slot = step.first_slot + k;
      const OutputSpec& spec = node.outputs[k];
      if (result[slot] || uses_[slot] == 0 || !spec.shape.is_fully_defined()) continue;
      const auto bytes = static_cast<std::size_t>(spec.shape.num_elements()) * dtype_size(spec.dtype);
      if (bytes <= kKeptBytes) continue;
      const auto fits = std::find_if(free.begin(), free.end(), [&](const std::pair<int, std::uint32_t>& b) {
        return b.second == part_of(i) && buffers[static_cast<std::size_t>(b.first)].device == step.device &&
               buffers[static_cast<std::size_t>(b.first)].bytes == bytes;
      });
      if (fits != free.end()) {
        buffer_of_[slot] = fits->first;
        free.erase(fits);
      } else if (planned_bytes_ + bytes <= kMaxPlannedBytes) {
        buffer_of_[slot] = static_cast<int>(buffers.size());
        buffers.push_back({step.device, bytes});
        planned_bytes_ += bytes;
      }
    }
    // The node's inputs are read now: those read for the last time free their buffers, after
    // the outputs took theirs (a kernel never writes over its inputs).
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Source& s = inputs_[step.first_input + k];
      if (!s.feed && --left[s.index] == 0 && buffer_of_[s.index] >= 0)
        free.emplace_back(buffer_of_[s.index], part_of(i));
    }
  }
  buffers_ = buffers.size();
}

DEVTENSOR_DEFINITION std::unique_ptr<Executable::RunState> Executable::acquire() const {
  if (RunState* cached = cached_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<RunState>(cached);
  return fresh_state();
}

DEVTENSOR_DEFINITION std::unique_ptr<Executable::RunState> Executable::fresh_state() const {
  auto state = std::make_unique<RunState>();
  state->values.resize(slots_);
  state->left.resize(slots_);
  state->scratch.resize(std::max<std::size_t>(parts_.size(), 1));
  for (auto& scratch : state->scratch) {
    scratch.inputs.resize(max_inputs_);
    scratch.copies.resize(max_inputs_);
  }
  if (!parts_.empty()) state->done = std::make_unique<std::atomic<std::uint32_t>[]>(steps_.size());
  state->transfers.resize(transfer_uses_.size());
  state->transfers_left.resize(transfer_uses_.size());
  state->pool.resize(buffers_);
  return state;
}

DEVTENSOR_DEFINITION void Executable::release(std::unique_ptr<RunState> state) const noexcept {
  // Keep what the next run may reuse: small values that nothing else holds. A value shared now (a
  // result, a variable's value, a captured tensor) may be read on other threads later, and those
  // reads would not be ordered before the next run's writes (use_count() is a relaxed load); a
  // view would keep the buffer it views alive.
  for (auto& v : state->values)
    if (v.storage && (!exclusively_held(v.storage) || v.storage->bytes > kKeptBytes)) v = AnyTensor();
  for (auto slot : alias_slots_)
    if (state->values[slot].storage) state->values[slot] = AnyTensor();
  for (auto& scratch : state->scratch)
    for (auto& c : scratch.copies)
      if (c.storage) c = AnyTensor();
  delete cached_.exchange(state.release(), std::memory_order_acq_rel);  // a concurrent run's state, if any, goes
}

DEVTENSOR_DEFINITION std::vector<AnyTensor> Executable::run_in(RunState& run_state, std::unique_ptr<RunState> owned,
                                                               const std::vector<AnyTensor>& feeds,
                                                               ResourceStore* resources,
                                                               std::vector<TracedStep>* trace) const {
  RunState* const state = &run_state;
  const bool capturing = !owned;
  auto& values = state->values;
  std::copy(uses_.begin(), uses_.end(), state->left.begin());
  if (!transfer_uses_.empty()) std::copy(transfer_uses_.begin(), transfer_uses_.end(), state->transfers_left.begin());
  try {
    if (trace)
      run_timed(*state, feeds, resources, *trace);
    else if (capturing || parts_.empty() || !run_parts(*state, feeds, resources))
      for (std::size_t i = 0; i < steps_.size(); ++i)
        run_step<false>(*state, state->scratch[0], i, feeds, resources, capturing);
  } catch (...) {
    for (auto& v : values) v = AnyTensor();  // a failed run leaves nothing behind
    for (auto& t : state->transfers) t = AnyTensor();
    for (auto& scratch : state->scratch)
      for (auto& c : scratch.copies) c = AnyTensor();
    if (owned) release(std::move(owned));
    throw;
  }
  std::vector<AnyTensor> out;
  out.reserve(fetches_.size());
  for (const auto& f : fetches_) out.push_back(f.feed ? feeds[f.index] : values[f.index]);
  if (owned) release(std::move(owned));
  return out;
}

DEVTENSOR_DEFINITION void Executable::run_timed(RunState& state, const std::vector<AnyTensor>& feeds,
                                                ResourceStore* resources, std::vector<TracedStep>& trace) const {
  const auto now_us = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  static std::atomic<std::int64_t> threads_seen{0};
  thread_local const std::int64_t thread_id = threads_seen.fetch_add(1);
  std::vector<std::string> producer(slots_);
  for (const Step& step : steps_)
    for (std::size_t k = 0; k < step.node->outputs.size(); ++k)
      producer[step.first_slot + k] = k == 0 ? step.node->name : step.node->name + ":" + std::to_string(k);
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    TracedStep record{step.node, step.device, {}, now_us(), 0, thread_id};
    for (std::size_t k = 0; k < step.node->inputs.size(); ++k) {
      const Source& s = inputs_[step.first_input + k];
      record.inputs.push_back(s.feed ? (s.index < feed_names_.size() ? feed_names_[s.index] : "feed")
                                     : producer[s.index]);
    }
    run_step<false>(state, state.scratch[0], i, feeds, resources, false);
    if (step.device->real_gpu() && step.device->platform) {
      std::string error;
      if (!step.device->platform->synchronize(step.device->platform_ordinal, step.device->stream, &error))
        throw InternalError("Could not synchronise " + step.device->full_name + " after " + step.node->name + ": " +
                            error);
    }
    record.end_us = now_us();
    for (std::size_t k = 0; k < step.node->outputs.size(); ++k) {
      const AnyTensor& value = state.values[step.first_slot + k];
      if (!value.defined() || !value.storage->device) continue;  // a handle, or a value already released
      std::string dtype = "DT_" + std::string(dtype_string(value.dtype));
      for (char& c : dtype) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      record.outputs.push_back({static_cast<std::int32_t>(k), std::move(dtype), value.shape,
                                static_cast<std::int64_t>(value.bytes()), value.storage->device->allocator_name});
    }
    trace.push_back(std::move(record));
  }
}

template <bool Shared>
inline void Executable::run_step(RunState& state, Scratch& scratch, std::size_t index,
                                 const std::vector<AnyTensor>& feeds, ResourceStore* resources, bool capturing) const {
  // Whether this read of a count was the last one: atomically when parts run at once, as a value
  // read by several parts is freed by whichever reads it last.
  const auto last_read = [](int& count) {
    if constexpr (Shared)
      return std::atomic_ref<int>(count).fetch_sub(1, std::memory_order_acq_rel) == 1;
    else
      return --count == 0;
  };
  auto& values = state.values;
  const Step& step = steps_[index];
  const Node& node = *step.node;
  const Device& device = *step.device;
  const std::size_t n = node.inputs.size();
  for (std::size_t k = 0; k < n; ++k) {
    const Source& s = inputs_[step.first_input + k];
    const AnyTensor* v = s.feed ? &feeds[s.index] : &values[s.index];
    // A value read on another device is copied there, stream-ordered on GPUs, once per run
    // (Note [One copy per value and device]). A variable's handle carries no tensor
    // (undefined): its readers are on its device.
    if (v->defined() && !node.traits().communication && v->storage->device != &device) {
      AnyTensor& copy = s.transfer >= 0 ? state.transfers[static_cast<std::size_t>(s.transfer)] : scratch.copies[k];
      if (!copy.defined()) copy = copy_to(*v, device, "_Recv");
      v = &copy;
    }
    scratch.inputs[k] = v;
  }
  const std::span<AnyTensor> outputs(values.data() + step.first_slot, node.outputs.size());
  for (std::size_t k = 0; k < outputs.size(); ++k)  // the plan's buffers, for the kernel to write into
    if (const int b = buffer_of_[step.first_slot + k]; b >= 0 && state.pool[static_cast<std::size_t>(b)])
      outputs[k] = AnyTensor(next_tensor_id(), node.outputs[k].dtype, node.outputs[k].shape,
                             std::move(state.pool[static_cast<std::size_t>(b)]));
  node.run({device, resources}, NodeInputs(scratch.inputs.data(), n), outputs);
  for (std::size_t k = 0; k < n; ++k) {
    if (scratch.copies[k].storage) scratch.copies[k] = AnyTensor();
    const Source& s = inputs_[step.first_input + k];
    if (s.transfer >= 0 && last_read(state.transfers_left[static_cast<std::size_t>(s.transfer)]) &&
        state.transfers[static_cast<std::size_t>(s.transfer)].storage)
      state.transfers[static_cast<std::size_t>(s.transfer)] = AnyTensor();
    // Its last read returns a planned buffer to the pool when nothing else holds it, and frees
    // another large value; a small one stays for the next run.
    if (!s.feed && last_read(state.left[s.index]) && values[s.index].defined() &&
        (capturing || values[s.index].storage->bytes > kKeptBytes)) {
      auto storage = std::move(values[s.index].storage);
      values[s.index] = AnyTensor();
      if (const int b = buffer_of_[s.index]; b >= 0 && exclusively_held(storage))
        state.pool[static_cast<std::size_t>(b)] = std::move(storage);
    }
  }
  for (std::size_t k = 0; k < outputs.size(); ++k)
    if (uses_[step.first_slot + k] == 0 && outputs[k].defined() && outputs[k].storage->bytes > kKeptBytes)
      outputs[k] = AnyTensor();  // an output nobody reads
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::graph

#if DEVTENSOR_HEADER_DEFINITIONS
#include "devtensor/graph/executor_parts.hpp"  // plan_parts and run_parts
#endif
