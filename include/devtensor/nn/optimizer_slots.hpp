#pragma once
/// @file optimizer_slots.hpp
/// @brief An optimizer's state (nn/optimizers.hpp): its step count and the slots (velocity,
/// moments) beside each component of every variable it updates, in Keras's order for saving
/// and restoring, and how a CUDA-graph capture of a step keeps the count going (on the host, and
/// on the GPUs where Adam computes its step size).

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/nn/schedules.hpp"
#include "devtensor/ops/capture.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor::nn::optimizer_detail {

/// An optimizer's state: the step count and K slots per component of every variable it updated,
/// by the variable's handle id. Guarded by `mutex` (apply_gradients holds it for a whole step).
template <std::size_t K>
struct SlotTable {
  std::mutex mutex;
  std::int64_t iterations = 0;
  std::unordered_map<std::uint64_t, std::vector<std::array<Tensor<float>, K>>> slots;
  std::uint64_t restores = 0;  // import_slots calls: each gives the slots new buffers
  /// Adam on a GPU: the step count kept in that GPU's memory and the step size computed from it
  /// (step_size_on). `count` is what `steps` holds once the work queued so far has run.
  struct StepOnDevice {
    Tensor<std::int64_t> steps;
    Tensor<float> size;
    std::int64_t count = 0;
  };
  std::unordered_map<const Device*, StepOnDevice> on_device;

  /// Variable v's slots for its component c (zeros on the component's device the first time).
  std::array<Tensor<float>, K>& of(const Variable<float>& v, std::size_t c, const Tensor<float>& component,
                                   std::size_t used = K) {
    auto& per_component = slots[v.handle_id()];
    if (per_component.size() < v.num_components()) per_component.resize(v.num_components());
    auto& mine = per_component[c];
    for (std::size_t k = 0; k < used; ++k)
      if (!mine[k].defined())
        mine[k] = kernels::filled_on<float>(component.device_info(), component.shape(), 0.0f, "ZerosLike");
    return mine;
  }
};

/// Which slots Keras saves, in its order: for each group, every variable's slots of that group
/// in turn (Adam: m and v interleaved per variable, then AMSGrad's v_hat per variable).
using SlotGroups = std::vector<std::vector<std::size_t>>;

/// The slots of `vars` in Keras's order (component 0's: a mirrored variable's are all equal);
/// zeros for a variable the optimizer has not updated yet, as Keras builds them.
template <std::size_t K>
std::vector<Tensor<float>> export_slots(SlotTable<K>& table, const std::vector<Variable<float>>& vars,
                                        const SlotGroups& groups) {
  std::lock_guard lock(table.mutex);
  std::vector<Tensor<float>> out;
  for (const auto& group : groups)
    for (const auto& v : vars)
      for (const std::size_t k : group) {
        const auto it = table.slots.find(v.handle_id());
        const bool has = it != table.slots.end() && !it->second.empty() && it->second[0][k].defined();
        out.push_back(has ? it->second[0][k]
                          : kernels::filled_on<float>(v.component(0).device_info(), v.shape(), 0.0f, "ZerosLike"));
      }
  return out;
}

/// Sets the step count and the slots of `vars` (Keras's order) on every component's device.
template <std::size_t K>
void import_slots(SlotTable<K>& table, const std::vector<Variable<float>>& vars, const SlotGroups& groups,
                  std::int64_t iterations, const std::vector<Tensor<float>>& slots) {
  std::size_t count = 0;
  for (const auto& group : groups) count += group.size() * vars.size();
  if (slots.size() != count)
    throw InvalidArgumentError("the optimizer keeps " + std::to_string(count) + " slot variables for these " +
                               std::to_string(vars.size()) + " variables, but " + std::to_string(slots.size()) +
                               " were given");
  std::lock_guard lock(table.mutex);
  std::size_t i = 0;
  for (const auto& group : groups)
    for (const auto& v : vars)
      for (const std::size_t k : group) {
        if (slots[i].shape() != v.shape())
          throw InvalidArgumentError("slot " + std::to_string(i) + " has shape " + slots[i].shape().to_string() +
                                     ", but variable " + v.name() + " has shape " + v.shape().to_string());
        for (std::size_t c = 0; c < v.num_components(); ++c) {
          auto& mine = table.of(v, c, v.component(c), k + 1);  // on the component's device
          // A buffer of its own (updates write slots in place), through the host.
          mine[k] = to_device(constant<float>(slots[i].to_vector(), v.shape()), *mine[k].storage()->device, "Identity");
        }
        ++i;
      }
  table.iterations = iterations;
  ++table.restores;
  for (auto& [device, on] : table.on_device) {  // through the host, before any capture sees them
    copy_bytes(on.steps.mutable_data(), *device, &iterations, host_buffer_device(), sizeof iterations);
    on.count = iterations;
  }
}

/// The learning rate of the step under way (after `table->iterations` updates), under the table's
/// lock. A CUDA graph's kernels keep the rate they were captured with: a capture is captured again
/// once a callback changed the number, and fails (the step runs op by op, ops/capture.hpp) for a
/// schedule, whose rate changes every step.
template <std::size_t K>
double rate_of_step(const LearningRate& rate, const std::shared_ptr<SlotTable<K>>& table) {
  const double value = rate.at(table->iterations);
  if (auto* capture = graph::Capture::current()) {
    if (rate.is_schedule())
      throw UnimplementedError(
          "a learning-rate schedule gives every step its own rate, which the kernels of a "
          "captured CUDA graph would not read again");
    capture->still_valid.push_back([rate, value] { return rate.at(0) == value; });
  }
  return value;
}

/// One step more, under the table's lock. While a CUDA graph captures the step (ops/capture.hpp),
/// each replay counts one too, and a restore between calls (new slot buffers) has the graph
/// captured again.
template <std::size_t K>
void advance(const std::shared_ptr<SlotTable<K>>& table) {
  ++table->iterations;
  if (auto* capture = graph::Capture::current()) {
    capture->each_replay.push_back([table] {
      std::lock_guard lock(table->mutex);
      ++table->iterations;
    });
    capture->still_valid.push_back([table, restores = table->restores] {
      std::lock_guard lock(table->mutex);
      return table->restores == restores;
    });
    capture->undo.push_back([table] {
      std::lock_guard lock(table->mutex);
      --table->iterations;
    });
  }
}

/// Where on `device` (a GPU) the size of the step under way is, for Adam's update kernels there
/// (ops::AdamUpdate::alpha_at): the count kept on the device advances by one and the size is
/// computed from it (ops::AdamStepSize), so that a CUDA graph replaying the step computes each
/// step's own. A count behind the table's (the device's first step, or steps it had no part in) is
/// set through the host first, which a capture cannot record. Once per device and step, under the
/// table's lock, before advance().
/// @throws UnimplementedError under a capture when the device's count is behind (the capture fails
///         and the function runs op by op, ops/capture.hpp).
template <std::size_t K>
const float* step_size_on(const std::shared_ptr<SlotTable<K>>& table, const Device& device, double learning_rate,
                          double beta_1, double beta_2) {
  auto* capture = graph::Capture::current();
  auto& on = table->on_device[&device];
  if (!on.steps.defined() || on.count != table->iterations) {
    if (capture)
      throw UnimplementedError("Adam's step count on " + device.full_name +
                               " is behind the optimizer's (its first "
                               "step there, or steps without it since), and setting it is host work a CUDA graph "
                               "would not repeat");
    if (!on.steps.defined()) {
      on.steps = Tensor<std::int64_t>::empty(Shape{1}, device, "AdamSteps");
      on.size = Tensor<float>::empty(Shape{1}, device, "AdamStepSize");
    }
    copy_bytes(on.steps.mutable_data(), device, &table->iterations, host_buffer_device(), sizeof table->iterations);
    on.count = table->iterations;
  }
  kernels::run_update<ops::AdamStepSize, float>(
      device,
      ops::AdamStepSizeUpdate<float>{on.steps.mutable_data(), on.size.mutable_data(), learning_rate, beta_1, beta_2},
      1);
  ++on.count;
  if (capture) {  // each replay advances the device's count: the host's record of it follows
    const Device* where = &device;
    capture->each_replay.push_back([table, where] {
      std::lock_guard lock(table->mutex);
      ++table->on_device[where].count;
    });
    capture->still_valid.push_back([table, where, steps = on.steps.storage()] {
      std::lock_guard lock(table->mutex);
      const auto& now = table->on_device[where];
      return now.steps.storage() == steps && now.count == table->iterations;
    });
    capture->undo.push_back([table, where] {
      std::lock_guard lock(table->mutex);
      --table->on_device[where].count;
    });
  }
  return on.size.data();
}

}  // namespace devtensor::nn::optimizer_detail
