#pragma once
/// @file optimizers.hpp
/// @brief SGD (with momentum and Nesterov) and Adam with Keras's update rules, each a fused
/// update per variable per step on the variable's device (ops/training_functors.hpp), and the
/// type-erased Optimizer compile() takes.
///
/// An optimizer's state (iterations, slots) is shared by its copies, so the optimizer passed to
/// compile() and the model's optimizer are one. Slots live beside each component of a variable,
/// on its device, created as zeros on first use (Keras's add_variable_from_reference).
/// apply_gradients in cross-replica context: the gradient (summed across replicas by the caller,
/// as fit does) is brought to each component's device and the same update is applied there, so
/// mirrored components stay equal. Inside strategy.run (TensorFlow's custom training loop), every
/// replica's gradients meet in merge_call, are summed across the replicas (and workers) by the
/// strategy's all-reduce, and the update runs once, each component with the sum on its device.

#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/nn/optimizer_slots.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

namespace optimizer_detail {

/// The (gradient, variable) pairs that have a gradient, after Keras's checks.
inline std::vector<std::pair<Tensor<float>, Variable<float>>> pairs(const std::vector<Tensor<float>>& grads,
                                                                    const std::vector<Variable<float>>& vars) {
  if (vars.empty())
    throw InvalidArgumentError(
        "apply_gradients: no variables to update. Pass the model's trainable_variables() (a model has none "
        "until it is built: give the first layer an input_dim or call the model once).");
  if (grads.size() != vars.size())
    throw InvalidArgumentError("apply_gradients: " + std::to_string(grads.size()) + " gradients for " +
                               std::to_string(vars.size()) + " variables; pass one gradient per variable");
  std::vector<std::pair<Tensor<float>, Variable<float>>> out;
  std::string missing;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].defined()) throw InvalidArgumentError("apply_gradients: variable " + std::to_string(i) + " is empty");
    if (!grads[i].defined()) {
      missing += (missing.empty() ? "'" : ", '") + vars[i].name() + "'";
      continue;
    }
    if (grads[i].shape() != vars[i].shape())
      throw InvalidArgumentError("apply_gradients: the gradient for " + vars[i].name() + " has shape " +
                                 grads[i].shape().to_string() + " but the variable has shape " +
                                 vars[i].shape().to_string());
    out.emplace_back(grads[i], vars[i]);
  }
  if (out.empty())
    throw InvalidArgumentError("No gradients provided for any variable: ([" + missing +
                               "],). Check that the loss depends on the variables and was computed while the "
                               "GradientTape was recording.");
  if (!missing.empty())
    log(LogSource::python_logger, LogSeverity::warning, "Gradients do not exist for variables [" + missing +
                                  "] when minimizing the loss. If you're using `model.compile()`, did you forget "
                                  "to provide a `loss` argument?");
  return out;
}
/// Under a device policy that refuses implicit copies (EXPLICIT, SILENT_FOR_INT32), a gradient
/// that is not on every component's device is refused before any variable is updated, so a
/// failing apply_gradients leaves all of them as they were. @throws InvalidArgumentError
/// ("Tensors on conflicting devices ...").
inline void require_gradients_on_variable_devices(const std::vector<std::pair<Tensor<float>, Variable<float>>>& updates,
                                                  std::string_view op) {
  const auto policy = config::experimental::get_device_policy();
  if (policy == DevicePolicy::SILENT || policy == DevicePolicy::WARN) return;
  for (const auto& [g, v] : updates)
    for (std::size_t c = 0; c < v.num_components(); ++c)
      if (const Device* device = &v.component(c).device_info(); &g.device_info() != device)
        (void)to_device(g, *device, op, 1);  // throws, with the op and both devices named
}

/// Gradient k of an update for component c, on that component's device.
using GradientFor = std::function<Tensor<float>(std::size_t k, std::size_t c, const Device& device)>;
using Updates = std::vector<std::pair<Tensor<float>, Variable<float>>>;

/// The replica context this thread runs in when it belongs to the strategy the variables were
/// created under, else nullptr (cross-replica context). @throws InvalidArgumentError in a replica
/// context for a variable of no strategy or of another one.
inline const distribute::ReplicaContextState* replica_context_of(const Updates& updates) {
  const auto* ctx = distribute::current_replica_context();
  if (!ctx) return nullptr;
  bool any = false;
  const auto of_this_strategy = [&](const Variable<float>& v) {
    const auto* distributed = distribute::as_distributed(v);
    return distributed && &distributed->strategy() == ctx->strategy;
  };
  for (const auto& [g, v] : updates) any = any || of_this_strategy(v);
  if (!any) return nullptr;  // this strategy's replicas updating variables of their own
  for (const auto& [g, v] : updates)
    if (!of_this_strategy(v))
      throw InvalidArgumentError("apply_gradients inside strategy.run updates mirrored variables of that strategy, but " +
                                 v.name() + " was not created in its scope. Create every variable the optimizer "
                                 "updates under `strategy.scope()`.");
  return ctx;
}

/// What every optimizer's apply_gradients does around its update `step(updates, gradient_for)`:
/// Keras's checks, then in cross-replica context the device policy's check and each gradient
/// copied to the components' devices; in a replica context the merge (see the file comment).
template <class Step>
void apply(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars, std::string_view op,
           Step step) {
  const Updates updates = pairs(grads, vars);
  const distribute::ReplicaContextState* ctx = replica_context_of(updates);
  if (!ctx) {
    require_gradients_on_variable_devices(updates, op);
    step(updates, GradientFor([&](std::size_t k, std::size_t, const Device& device) { return to_device(updates[k].first, device, op, 1); }));
    return;
  }
  auto mine = std::make_shared<std::vector<Tensor<float>>>();
  for (const auto& [g, v] : updates) mine->push_back(g);
  ctx->strategy->merge_call(ctx->local_replica_id, mine, [&](const std::vector<std::shared_ptr<const void>>& all) {
    std::vector<std::vector<Tensor<float>>> per_replica;
    for (const auto& contribution : all) {
      per_replica.push_back(*static_cast<const std::vector<Tensor<float>>*>(contribution.get()));
      if (per_replica.back().size() != updates.size())
        throw InvalidArgumentError("apply_gradients inside strategy.run: replicas passed gradients for different "
                                   "variables; every replica must update the same variables");
    }
    // The context holds a const view of the strategy, which itself is not const (it runs this very
    // call). merge_call's function runs in cross-replica context, as TensorFlow's merge_fn does.
    const auto reduced = const_cast<distribute::StrategyInterface*>(ctx->strategy)->batch_all_reduce_sum(per_replica);
    const distribute::ScopedSet<distribute::ReplicaContextState> cross_replica(distribute::current_replica_context(), nullptr);
    step(updates, GradientFor([&](std::size_t k, std::size_t c, const Device&) { return reduced[c][k]; }));
  });
}

/// The state an update of `updates` by an optimizer with slots `state` writes: every component
/// of every variable, and the optimizer's slots and step count (Note [Automatic control
/// dependencies] in ops/graph.hpp).
inline std::vector<graph::ResourceUse> update_uses(const Updates& updates, const void* state) {
  std::vector<graph::ResourceUse> out{{state, true}};
  for (const auto& [g, v] : updates)
    for (const void* r : v.implementation().resources()) out.push_back({r, true});
  return out;
}

/// apply_gradients while a graph is being built (a traced train step), with Keras's checks at
/// trace time: one stateful node whose kernel runs the optimizer's update `O::update` (its fused
/// kernels, its slots and step count shared with the optimizer) when the graph runs. In
/// cross-replica context its inputs are the gradients, brought to each component's device. Inside
/// strategy.run the replicas' gradients meet in merge_call at trace time, as eagerly: a node sums
/// them across the replicas (the strategy's all-reduce), and one update node writes every
/// component with the sum on its device, after every replica's reads of it.
template <class O>
void add_apply_node(graph::Graph& graph, const O& optimizer, const std::vector<Tensor<float>>& grads,
                    const std::vector<Variable<float>>& vars, std::string_view op) {
  const Updates updates = pairs(grads, vars);
  const distribute::ReplicaContextState* ctx = replica_context_of(updates);
  const auto add_update = [&](std::vector<AnyTensor> inputs, bool per_component) {
    graph::Node node;
    for (const auto& t : inputs) node.inputs.push_back(graph.input_edge(t, op));
    node.name = graph.unique_name(std::string(O::name) + "/" + std::string(op));
    node.op = std::string(op);
    node.stateful = true;
    node.resources = update_uses(updates, optimizer.slots.get());
    node.requested = updates.front().second.implementation().device().spec;
    // Per component, the gradients are where the all-reduce left them, on the components' devices.
    node.inputs_stay = per_component;
    node.capturable = per_component;  // the updates' device work only
    std::vector<Variable<float>> variables;
    for (const auto& [g, v] : updates) variables.push_back(v);
    node.run = [optimizer, variables, per_component, op = std::string(op)](const graph::RunContext&, graph::NodeInputs in,
                                                                          std::span<AnyTensor>) {
      Updates now;
      const std::size_t count = variables.size();
      for (std::size_t k = 0; k < count; ++k) now.emplace_back(in[k].as<float>(), variables[k]);
      if (!per_component) {
        require_gradients_on_variable_devices(now, op);
        optimizer.update(now, GradientFor([&](std::size_t k, std::size_t, const Device& device) {
                           return to_device(now[k].first, device, op, 1);
                         }));
        return;
      }
      optimizer.update(now, GradientFor([&](std::size_t k, std::size_t c, const Device&) { return in[c * count + k].as<float>(); }));
    };
    graph.add(std::move(node));
  };
  if (!ctx) {
    std::vector<AnyTensor> inputs;
    for (const auto& [g, v] : updates) inputs.emplace_back(g);
    add_update(std::move(inputs), false);
    return;
  }
  auto mine = std::make_shared<std::vector<Tensor<float>>>();
  for (const auto& [g, v] : updates) mine->push_back(g);
  ctx->strategy->merge_call(ctx->local_replica_id, mine, [&](const std::vector<std::shared_ptr<const void>>& all) {
    std::vector<std::vector<Tensor<float>>> per_replica;
    for (const auto& contribution : all) {
      per_replica.push_back(*static_cast<const std::vector<Tensor<float>>*>(contribution.get()));
      if (per_replica.back().size() != updates.size())
        throw InvalidArgumentError("apply_gradients inside strategy.run: replicas passed gradients for different "
                                   "variables; every replica must update the same variables");
    }
    const auto reduced = const_cast<distribute::StrategyInterface*>(ctx->strategy)->batch_all_reduce_sum(per_replica);
    const distribute::ScopedSet<distribute::ReplicaContextState> cross_replica(distribute::current_replica_context(), nullptr);
    std::vector<AnyTensor> inputs;  // component c's gradients, then c + 1's
    for (const auto& row : reduced)
      for (const auto& g : row) inputs.emplace_back(g);
    add_update(std::move(inputs), true);
  });
}

}  // namespace optimizer_detail

namespace optimizers {

struct SGD {
  double learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  /// Shared by copies: the step count and the velocities.
  std::shared_ptr<optimizer_detail::SlotTable<1>> slots = std::make_shared<optimizer_detail::SlotTable<1>>();
  static constexpr std::string_view name = "SGD";

  /// @throws InvalidArgumentError for a learning rate <= 0 or a momentum outside [0, 1].
  void validate() const;

  /// One update of every variable with its gradient (ResourceApplyGradientDescent, or
  /// ResourceApplyKerasMomentum with a velocity slot); variables without a gradient are skipped
  /// with Keras's warning. @throws InvalidArgumentError for no variables, no gradients at all,
  /// mismatched counts or shapes (nothing is updated then).
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const;
  /// Internal (apply_gradients, traced steps): one step of every variable of `updates`, component
  /// c of variable k with `gradient(k, c, its device)`, and the step count advanced.
  void update(const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) const;
  [[nodiscard]] std::int64_t iterations() const {
    std::lock_guard lock(slots->mutex);
    return slots->iterations;
  }
  /// The velocities (with momentum) of `vars` in Keras's order; restore sets them and the count.
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const;
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps, const std::vector<Tensor<float>>& values) const;

 private:
  [[nodiscard]] optimizer_detail::SlotGroups groups() const { return momentum != 0.0 ? optimizer_detail::SlotGroups{{0}} : optimizer_detail::SlotGroups{}; }
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: the state's export and import are compiled once.
DEVTENSOR_DEFINITION std::vector<Tensor<float>> SGD::slot_values(const std::vector<Variable<float>>& vars) const {
  return optimizer_detail::export_slots(*slots, vars, groups());
}
DEVTENSOR_DEFINITION void SGD::restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
                                       const std::vector<Tensor<float>>& values) const {
  optimizer_detail::import_slots(*slots, vars, groups(), steps, values);
}

DEVTENSOR_DEFINITION void SGD::validate() const {
  if (!(learning_rate > 0))
    throw InvalidArgumentError("SGD: learning_rate must be positive, got " + std::to_string(learning_rate));
  if (!(momentum >= 0 && momentum <= 1))
    throw InvalidArgumentError("`momentum` must be between [0, 1]. Received: momentum=" + std::to_string(momentum) +
                               " (of type <class 'float'>)");
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// Adam (Kingma & Ba) with Keras's defaults and update rule: bias correction folded into the step
/// size, alpha = learning_rate · sqrt(1 − beta_2^t) / (1 − beta_1^t), epsilon added to sqrt(v)
/// (Keras's "epsilon hat"), AMSGrad keeping the running maximum of v.
struct Adam {
  double learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  /// Shared by copies: the step count and the moments (m, v, v_hat).
  std::shared_ptr<optimizer_detail::SlotTable<3>> slots = std::make_shared<optimizer_detail::SlotTable<3>>();
  static constexpr std::string_view name = "Adam";

  /// @throws InvalidArgumentError for a negative or non-finite learning rate, a beta outside
  /// [0, 1), or a negative epsilon.
  void validate() const;

  /// One Adam step of every variable with its gradient (ResourceApplyAdam), rules as SGD's.
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const;
  /// Internal: as SGD::update.
  void update(const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) const;
  [[nodiscard]] std::int64_t iterations() const {
    std::lock_guard lock(slots->mutex);
    return slots->iterations;
  }
  /// The moments of `vars` in Keras's order (m, v per variable; then v_hat); restore sets them.
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const;
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps, const std::vector<Tensor<float>>& values) const;

 private:
  [[nodiscard]] optimizer_detail::SlotGroups groups() const {
    return amsgrad ? optimizer_detail::SlotGroups{{0, 1}, {2}} : optimizer_detail::SlotGroups{{0, 1}};
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::vector<Tensor<float>> Adam::slot_values(const std::vector<Variable<float>>& vars) const {
  return optimizer_detail::export_slots(*slots, vars, groups());
}
DEVTENSOR_DEFINITION void Adam::restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
                                        const std::vector<Tensor<float>>& values) const {
  optimizer_detail::import_slots(*slots, vars, groups(), steps, values);
}

DEVTENSOR_DEFINITION void Adam::validate() const {
  if (!(learning_rate >= 0) || !std::isfinite(learning_rate))
    throw InvalidArgumentError("Adam: `learning_rate` must be a non-negative number. Received: learning_rate=" +
                               std::to_string(learning_rate));
  const auto check_beta = [](const char* what, double beta) {
    if (!(beta >= 0 && beta < 1))
      throw InvalidArgumentError(std::string("Adam: `") + what + "` must be between [0, 1). Received: " + what +
                                 "=" + std::to_string(beta));
  };
  check_beta("beta_1", beta_1);
  check_beta("beta_2", beta_2);
  if (!(epsilon >= 0))
    throw InvalidArgumentError("Adam: `epsilon` must be non-negative. Received: epsilon=" + std::to_string(epsilon));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace optimizers

/// Any optimizer with `apply_gradients(grads, vars)`, `validate()` and a `name`.
class Optimizer {
 public:
  template <class O>
    requires requires(const O& o, const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
      o.apply_gradients(g, v);
      o.validate();
      { O::name } -> std::convertible_to<std::string_view>;
    }
  Optimizer(O optimizer)  // NOLINT: implicit, so compile() takes any optimizer
      : apply_([optimizer](const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
          optimizer.apply_gradients(g, v);
        }),
        iterations_([optimizer]() -> std::int64_t {
          if constexpr (requires { optimizer.iterations(); }) return optimizer.iterations();
          else return 0;
        }),
        slot_values_([optimizer](const std::vector<Variable<float>>& vars) -> std::vector<Tensor<float>> {
          if constexpr (requires { optimizer.slot_values(vars); }) return optimizer.slot_values(vars);
          else return {};
        }),
        restore_([optimizer](const std::vector<Variable<float>>& vars, std::int64_t steps,
                             const std::vector<Tensor<float>>& values) {
          if constexpr (requires { optimizer.restore(vars, steps, values); }) optimizer.restore(vars, steps, values);
          else throw UnimplementedError(std::string(O::name) + " cannot restore a saved state");
        }),
        learning_rate_(static_cast<double>(optimizer.learning_rate)),
        name_(O::name) {
    optimizer.validate();
  }
  /// An optimizer by its Keras identifier, with Keras's defaults: "sgd" (learning rate 0.01),
  /// "adam" (0.001), in any case. @throws InvalidArgumentError for another name.
  Optimizer(const char* identifier) : Optimizer(by_name(identifier)) {}  // NOLINT: compile("mse", "sgd")
  Optimizer(const std::string& identifier) : Optimizer(by_name(identifier)) {}  // NOLINT

  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
    apply_(grads, vars);
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The updates applied so far (Keras's optimizer.iterations; 0 for an optimizer that does not count).
  [[nodiscard]] std::int64_t iterations() const { return iterations_(); }
  [[nodiscard]] double learning_rate() const noexcept { return learning_rate_; }
  /// The optimizer's slots for `vars` in Keras's order (what Keras saves after iterations and the
  /// learning rate); `restore` sets them and the step count (a checkpoint's resumption).
  /// @throws InvalidArgumentError for values of other counts or shapes (nothing changes then).
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const {
    return slot_values_(vars);
  }
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps, const std::vector<Tensor<float>>& values) const {
    restore_(vars, steps, values);
  }

 private:
  static Optimizer by_name(std::string_view identifier);

  std::function<void(const std::vector<Tensor<float>>&, const std::vector<Variable<float>>&)> apply_;
  std::function<std::int64_t()> iterations_;
  std::function<std::vector<Tensor<float>>(const std::vector<Variable<float>>&)> slot_values_;
  std::function<void(const std::vector<Variable<float>>&, std::int64_t, const std::vector<Tensor<float>>&)> restore_;
  double learning_rate_;
  std::string name_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Optimizer Optimizer::by_name(std::string_view id) {
  std::string lower(id);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "sgd") return optimizers::SGD{};
  if (lower == "adam") return optimizers::Adam{};
  throw InvalidArgumentError("Could not interpret optimizer identifier: " + std::string(id) +
                             " (known here: sgd, adam; or pass an optimizer object)");
}

DEVTENSOR_DEFINITION void optimizers::SGD::apply_gradients(
    const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
  validate();
  if (auto* graph = graph::building()) [[unlikely]]
    return optimizer_detail::add_apply_node(*graph, *this, grads, vars,
                                            momentum == 0.0 ? ops::ApplyGradientDescent::name : ops::ApplyKerasMomentum::name);
  if (auto* host = distribute::remote_host_of(vars)) [[unlikely]]  // a parameter server runs the rule (and checks)
    return host->apply_gradients({std::string(name), {learning_rate, momentum, nesterov ? 1.0 : 0.0}}, grads, vars);
  const std::string_view op = momentum == 0.0 ? ops::ApplyGradientDescent::name : ops::ApplyKerasMomentum::name;
  optimizer_detail::apply(grads, vars, op, [&](const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) {
    update(updates, gradient);
  });
}

DEVTENSOR_DEFINITION void optimizers::SGD::update(const optimizer_detail::Updates& updates,
                                                  const optimizer_detail::GradientFor& gradient) const {
  const std::string_view op = momentum == 0.0 ? ops::ApplyGradientDescent::name : ops::ApplyKerasMomentum::name;
  const auto lr = static_cast<float>(learning_rate);
  const auto m = static_cast<float>(momentum);
  std::lock_guard lock(slots->mutex);
  for (std::size_t k = 0; k < updates.size(); ++k) {
    const Variable<float>& v = updates[k].second;
    if (momentum == 0.0) {
      v.apply_update(op, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
        const auto grad = gradient(k, c, var.device_info());
        kernels::run_update<ops::ApplyGradientDescent, float>(
            var.device_info(), ops::GradientDescentUpdate<float>{var.data(), grad.data(), out.mutable_data(), lr},
            var.num_elements());
      });
      continue;
    }
    v.apply_update(op, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
      const auto grad = gradient(k, c, var.device_info());
      auto& [velocity] = slots->of(v, c, var);
      kernels::run_update<ops::ApplyKerasMomentum, float>(
          var.device_info(),
          ops::KerasMomentumUpdate<float>{var.data(), grad.data(), velocity.mutable_data(), out.mutable_data(), lr,
                                          m, nesterov},
          var.num_elements());
    });
  }
  optimizer_detail::advance(slots);
}

DEVTENSOR_DEFINITION void optimizers::Adam::apply_gradients(
    const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
  validate();
  if (auto* graph = graph::building()) [[unlikely]]
    return optimizer_detail::add_apply_node(*graph, *this, grads, vars, ops::ApplyAdam::name);
  if (auto* host = distribute::remote_host_of(vars)) [[unlikely]]
    return host->apply_gradients({std::string(name), {learning_rate, beta_1, beta_2, epsilon, amsgrad ? 1.0 : 0.0}}, grads, vars);
  optimizer_detail::apply(grads, vars, ops::ApplyAdam::name, [&](const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) {
    update(updates, gradient);
  });
}

DEVTENSOR_DEFINITION void optimizers::Adam::update(const optimizer_detail::Updates& updates,
                                                   const optimizer_detail::GradientFor& gradient) const {
  std::lock_guard lock(slots->mutex);
  const double t = static_cast<double>(slots->iterations + 1);
  const double alpha = learning_rate * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t));
  // GPUs compute the step size themselves, from their own step count: a replayed CUDA graph
  // takes each step with its own (ops/capture.hpp). Once per GPU and step.
  std::vector<std::pair<const Device*, const float*>> step_sizes;
  const auto step_size_at = [&](const Device& device) -> const float* {
    if (device.host_memory()) {
      if (graph::Capture::current())  // not expected: a capture holds GPU work only
        throw UnimplementedError("Adam's step size on " + device.full_name + " is computed on the host");
      return nullptr;
    }
    for (const auto& [where, size] : step_sizes)
      if (where == &device) return size;
    return step_sizes.emplace_back(&device, optimizer_detail::step_size_on(slots, device, learning_rate, beta_1, beta_2))
        .second;
  };
  for (std::size_t k = 0; k < updates.size(); ++k) {
    const Variable<float>& v = updates[k].second;
    v.apply_update(ops::ApplyAdam::name, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
      const auto grad = gradient(k, c, var.device_info());
      const float* alpha_at = step_size_at(var.device_info());
      auto& [m, v_moment, v_hat] = slots->of(v, c, var, amsgrad ? 3 : 2);
      kernels::run_update<ops::ApplyAdam, float>(
          var.device_info(),
          ops::AdamUpdate<float>{var.data(), grad.data(), m.mutable_data(), v_moment.mutable_data(),
                                 amsgrad ? v_hat.mutable_data() : nullptr, out.mutable_data(),
                                 static_cast<float>(alpha), static_cast<float>(1 - beta_1),
                                 static_cast<float>(1 - beta_2), static_cast<float>(epsilon), alpha_at},
          var.num_elements());
    });
  }
  optimizer_detail::advance(slots);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
