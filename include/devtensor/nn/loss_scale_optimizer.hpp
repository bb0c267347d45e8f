#pragma once
/// @file loss_scale_optimizer.hpp
/// @brief Keras 3's LossScaleOptimizer (dynamic loss scaling) around any optimizer
/// (nn/optimizers.hpp), and its step as an op (ops::LossScaledApply) for traced functions.

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/nn/optimizer_apply.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/elementwise.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/run_op.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

namespace optimizers {

/// Keras 3's LossScaleOptimizer (dynamic loss scaling), for custom training loops: multiply the
/// loss by `scale_loss` before differentiating, pass the scaled gradients to `apply_gradients`.
/// When every gradient is finite they are divided by the scale and the inner optimizer applies
/// them; after `dynamic_growth_steps` such steps in a row the scale doubles. A gradient with an
/// inf or NaN skips the step (the inner optimizer's iterations do not advance), halves the scale
/// and restarts the count. The scale is a float32 that starts at `initial_scale` (2^15); copies
/// share it. Keras 3 has no fixed loss scale (`dynamic=False` is refused, as there).
/// compile() takes it (and wraps a mixed_float16 model's optimizer in one, as Keras): fit's traced
/// step then computes the scaled gradients, and the update runs after it, op by op. Under a
/// distribution strategy each replica scales its share of the loss, and the update checks the
/// all-reduced gradients, the same on every replica and process: all skip a step or none.
/// apply_gradients runs outside strategy.run, now or in a traced function (dt::function): there
/// it is one node (ops::LossScaledApply) that checks, skips or updates at every call, as Keras's
/// tf.cond does, after the step's reads of the variables and the scale. The finite check reads
/// one number back to the host (devtensor's graphs have no conditional), so a step with that
/// node runs op by op on GPUs, not as a replayed CUDA graph (fit keeps the update outside its
/// traced step for that). scale_loss may be traced: it reads the scale from a variable (Keras's
/// dynamic_scale), made by its first call.
/// Under ParameterServerStrategy, build() in the strategy's scope (on every task, as the model's
/// variables) puts the scale and the count of finite steps (Keras's step_counter) on a ps task:
/// every worker's scheduled steps read and update those two, as TensorFlow's, not a copy of its own.
struct LossScaleOptimizer {
  Optimizer inner_optimizer;
  double initial_scale = 32768.0;
  std::int64_t dynamic_growth_steps = 2000;
  bool dynamic = true;
  struct State {
    std::mutex mutex;
    bool built = false;  // the scale starts at initial_scale with the first apply_gradients
    float scale = 0;
    std::int64_t step_counter = 0;
    Variable<float> scale_variable;  // `scale`, for traced reads: made by the first scale_loss
    // On a parameter server (scale_variable there): the count every worker updates, and then
    // the variables, not `scale` and `step_counter`, are the state.
    Variable<std::int64_t> counter_variable;
  };
  /// Shared by copies: the scale and the finite steps since it last changed.
  std::shared_ptr<State> state = std::make_shared<State>();
  static constexpr std::string_view name = "LossScaleOptimizer";
  static constexpr bool scales_the_loss = true;

  /// @throws InvalidArgumentError for `dynamic = false`, a scale that is not a positive finite
  /// float32, or growth steps below 1.
  void validate() const;
  /// loss · the current scale (float32).
  [[nodiscard]] Tensor<float> scale_loss(const Tensor<float>& loss) const;
  /// Makes the scale's variable (Keras's dynamic_scale) in the current variable scope unless it
  /// exists: compile() makes it in the strategy's scope; scale_loss makes it when it has to. On a
  /// parameter server, the step counter's variable beside it.
  void build() const;
  /// One step with the scaled gradients `grads` of `vars` (above): now, or a node of the traced
  /// function being built.
  /// @throws UnimplementedError inside strategy.run; InvalidArgumentError for variables on
  /// parameter servers when the scale is not there (build() outside the scope).
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const;
  /// The current scale (Keras's optimizer.dynamic_scale).
  [[nodiscard]] double dynamic_scale() const;
  /// Sets the scale and the finite steps since it last changed (a saved model's, loaded).
  /// @throws InvalidArgumentError for a scale that is not a positive finite float32 or a negative
  /// count (nothing changes then).
  void restore_scale(double scale, std::int64_t step_counter) const;
  /// Finite steps since the scale last changed.
  [[nodiscard]] std::int64_t step_counter() const;
  /// The inner optimizer's updates (skipped steps do not count), as Keras's.
  [[nodiscard]] std::int64_t iterations() const { return inner_optimizer.iterations(); }
};

}  // namespace optimizers

namespace optimizer_detail {
/// The loss-scale step itself: the finite check, then the inner optimizer's update and the
/// scale's growth, or the skip; what LossScaleOptimizer::apply_gradients runs now or at every
/// call of a traced function.
void loss_scaled_step(const optimizers::LossScaleOptimizer& optimizer, const Updates& updates);
}  // namespace optimizer_detail
}  // namespace nn

namespace ops {

/// LossScaleOptimizer.apply_gradients as an op (Keras's tf.cond around the inner optimizer's
/// apply): its node takes the scaled gradients and, at every run, after every earlier use of the
/// variables and the scale, checks them on the host and updates or skips (host code: a CUDA graph
/// cannot record it, so a function with it runs op by op on GPUs).
struct LossScaledApply : TensorLevel {
  static constexpr std::string_view name = "LossScaledApply";
  static constexpr OpTraits traits{.stateful = true, .communication = true, .capturable = false, .any_thread = false};
  struct Attrs {
    const nn::optimizers::LossScaleOptimizer& optimizer;
    const nn::optimizer_detail::Updates& updates;
  };

  static void eager(const Attrs& a) { nn::optimizer_detail::loss_scaled_step(a.optimizer, a.updates); }
  static void graph(graph::Graph& graph, const Attrs& a);
};

}  // namespace ops

namespace nn {
namespace optimizers {

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void LossScaleOptimizer::validate() const {
  if (!dynamic)
    throw InvalidArgumentError(
        "LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set `loss_scale_factor` directly on "
        "the `inner_optimizer`.");
  if (!(initial_scale > 0) || !std::isfinite(static_cast<float>(initial_scale)))
    throw InvalidArgumentError("LossScaleOptimizer: `initial_scale` must be a positive finite float32, got " +
                               std::to_string(initial_scale));
  if (dynamic_growth_steps < 1)
    throw InvalidArgumentError("LossScaleOptimizer: `dynamic_growth_steps` must be at least 1, got " +
                               std::to_string(dynamic_growth_steps));
}

DEVTENSOR_DEFINITION double LossScaleOptimizer::dynamic_scale() const {
  std::lock_guard lock(state->mutex);
  if (state->counter_variable.defined()) return state->scale_variable.read_value().item();
  return state->built ? state->scale : static_cast<float>(initial_scale);
}

DEVTENSOR_DEFINITION std::int64_t LossScaleOptimizer::step_counter() const {
  std::lock_guard lock(state->mutex);
  if (state->counter_variable.defined()) return state->counter_variable.read_value().item();
  return state->step_counter;
}

DEVTENSOR_DEFINITION void LossScaleOptimizer::restore_scale(double scale, std::int64_t step_counter) const {
  if (!(scale > 0) || !std::isfinite(static_cast<float>(scale)) || step_counter < 0)
    throw InvalidArgumentError(
        "LossScaleOptimizer: a saved loss scale must be a positive finite float32 and its step "
        "counter non-negative, got " +
        std::to_string(scale) + " and " + std::to_string(step_counter));
  std::lock_guard lock(state->mutex);
  state->built = true;
  state->scale = static_cast<float>(scale);
  state->step_counter = step_counter;
  if (state->scale_variable.defined()) state->scale_variable.assign(fill<float>(Shape{}, state->scale));
  if (state->counter_variable.defined()) state->counter_variable.assign(scalar<std::int64_t>(step_counter));
}

DEVTENSOR_DEFINITION void LossScaleOptimizer::build() const {
  std::lock_guard lock(state->mutex);
  if (state->scale_variable.defined()) return;
  state->scale_variable =
      Variable<float>(fill<float>(Shape{}, state->built ? state->scale : static_cast<float>(initial_scale)),
                      {.name = "dynamic_scale", .trainable = false});
  if (distribute::is_remote(state->scale_variable))
    state->counter_variable = Variable<std::int64_t>(scalar<std::int64_t>(state->built ? state->step_counter : 0),
                                                     {.name = "step_counter", .trainable = false});
}

DEVTENSOR_DEFINITION Tensor<float> LossScaleOptimizer::scale_loss(const Tensor<float>& loss) const {
  validate();
  build();
  std::lock_guard lock(state->mutex);
  return mul(loss, state->scale_variable.value());
}

DEVTENSOR_DEFINITION void LossScaleOptimizer::apply_gradients(const std::vector<Tensor<float>>& grads,
                                                              const std::vector<Variable<float>>& vars) const {
  validate();
  if (distribute::current_replica_context() != nullptr)
    throw UnimplementedError(
        "LossScaleOptimizer.apply_gradients inside strategy.run: the replicas would check their own gradients "
        "before the all-reduce; apply the summed gradients in cross-replica context");
  // The inner optimizer's checks (and its warning for variables without a gradient), once, before
  // the state changes (when traced: when the function is traced); the inner optimizer then gets
  // the pairs that have a gradient.
  const auto updates = optimizer_detail::pairs(grads, vars);
  if (graph::building() != nullptr) build();  // the node writes the scale's variable, after the step's reads
  {
    std::lock_guard lock(state->mutex);
    if (!state->counter_variable.defined() && distribute::remote_host_of(vars) != nullptr)
      throw InvalidArgumentError(
          "LossScaleOptimizer.apply_gradients: the variables live on parameter servers but the loss scale in this "
          "process, so each worker would scale and skip on its own; call build() inside strategy.scope(), on every "
          "task, after the model's variables");
  }
  run_op<ops::LossScaledApply>({*this, updates});
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace optimizers

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void optimizer_detail::loss_scaled_step(const optimizers::LossScaleOptimizer& optimizer,
                                                             const Updates& updates) {
  auto& state = *optimizer.state;
  std::lock_guard lock(state.mutex);
  const bool shared = state.counter_variable.defined();
  if (shared) {  // this step's view of the values every worker updates
    state.scale = state.scale_variable.read_value().item();
    state.step_counter = state.counter_variable.read_value().item();
  } else if (!state.built) {
    state.scale = static_cast<float>(optimizer.initial_scale);
  }
  state.built = true;
  // g - g is 0 where g is finite, NaN where it is inf or NaN: one sum of them all, one read
  std::vector<Tensor<float>> checks;
  for (const auto& [g, v] : updates) checks.push_back(reduce_sum(sub(g, g), std::nullopt));
  const bool finite = add_n(checks).item() == 0.0f;
  const auto set_scale = [&](float scale) {
    state.scale = scale;
    if (state.scale_variable.defined()) state.scale_variable.assign(fill<float>(Shape{}, scale));
  };
  // Keras's updates of step_counter: reset, or one more (an increment, so that workers' steps add up).
  const auto reset_count = [&] {
    state.step_counter = 0;
    if (shared) state.counter_variable.assign(scalar<std::int64_t>(0));
  };
  if (!finite) {
    reset_count();
    set_scale(state.scale * 0.5f);
    return;
  }
  std::vector<Tensor<float>> unscaled;
  std::vector<Variable<float>> updated;
  const auto scale = fill<float>(Shape{}, state.scale);
  for (const auto& [g, v] : updates) {
    unscaled.push_back(div(g, scale));
    updated.push_back(v);
  }
  optimizer.inner_optimizer.apply_gradients(unscaled, updated);
  if (state.step_counter == optimizer.dynamic_growth_steps - 1) {
    reset_count();
    set_scale(state.scale * 2.0f);
  } else {
    ++state.step_counter;
    if (shared) state.counter_variable.assign_add(scalar<std::int64_t>(1));
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION void ops::LossScaledApply::graph(graph::Graph& graph, const Attrs& a) {
  std::vector<AnyTensor> inputs;
  std::vector<Variable<float>> variables;
  for (const auto& [g, v] : a.updates) {
    inputs.emplace_back(g);
    variables.push_back(v);
  }
  graph::NodeSpec spec{&info_of<LossScaledApply>, {}};
  spec.device = variables.front().implementation().device().spec;
  // Every component of every variable, the inner optimizer's slots (through this optimizer's state:
  // its only way in here), the scale's variable and, on a parameter server, the step counter's.
  auto& state = *a.optimizer.state;
  std::lock_guard lock(state.mutex);
  spec.resources = nn::optimizer_detail::update_uses(a.updates, &state);
  for (const void* r : state.scale_variable.implementation().resources()) spec.resources.push_back({r, true});
  if (state.counter_variable.defined())
    for (const void* r : state.counter_variable.implementation().resources()) spec.resources.push_back({r, true});
  spec.run = [optimizer = a.optimizer, variables](const graph::RunContext&, graph::NodeInputs in,
                                                  std::span<AnyTensor>) {
    const graph::InitScope eagerly;  // its ops run now, also while a graph is current (compat.v1)
    nn::optimizer_detail::Updates now;
    for (std::size_t k = 0; k < variables.size(); ++k) now.emplace_back(in[k].as<float>(), variables[k]);
    nn::optimizer_detail::loss_scaled_step(optimizer, now);
  };
  (void)graph::add_op(graph, nn::optimizers::LossScaleOptimizer::name, inputs, std::move(spec));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor
