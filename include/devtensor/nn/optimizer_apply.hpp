#pragma once
/// @file optimizer_apply.hpp
/// @brief What every optimizer's apply_gradients shares (nn/optimizers.hpp): Keras's checks, the
/// update as an op (ops::ResourceApply: run now, or a node of a traced step), and inside
/// strategy.run the replicas' merge and all-reduce before one update of every component.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/nn/optimizer_slots.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/run_op.hpp"
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
    log(LogSource::python_logger, LogSeverity::warning,
        "Gradients do not exist for variables [" + missing +
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
      throw InvalidArgumentError(
          "apply_gradients inside strategy.run updates mirrored variables of that strategy, but " + v.name() +
          " was not created in its scope. Create every variable the optimizer "
          "updates under `strategy.scope()`.");
  return ctx;
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

/// The description of an optimizer's update node of type Op's (ResourceApplyGradientDescent,
/// ResourceApplyKerasMomentum, ResourceApplyAdam): it changes its variables and the optimizer's
/// slots, reads each component's gradient on that component's device, and runs on the caller's
/// thread (its Adam step size and a CUDA graph's capture are the thread's).
template <class Op>
inline constexpr ops::OpInfo apply_info{Op::name, {.stateful = true, .communication = true, .any_thread = false}};

}  // namespace optimizer_detail
}  // namespace nn

namespace ops {

/// An optimizer's update of its variables (TensorFlow's ResourceApply* ops, one node for all
/// the variables of one apply_gradients): `O::update` with the gradients it is given, which are
/// `updates`' gradients brought to each component's device (cross-replica), or, `per_component`,
/// already summed across the replicas and on the components' devices (component c's gradients
/// are inputs c·n .. c·n + n - 1; ReplicaContext's merge). Its node runs the same at every run of
/// the graph, after every earlier use of its variables and slots. Variables of a parameter server
/// are updated there (distribute::RemoteVariableHost).
template <class O>
struct ResourceApply : TensorLevel {
  static constexpr std::string_view name = "ResourceApply";
  static constexpr OpTraits traits = nn::optimizer_detail::apply_info<ApplyGradientDescent>.traits;
  struct Attrs {
    const O& optimizer;
    const nn::optimizer_detail::Updates& updates;
    const OpInfo& info;  // the node's type (ResourceApplyAdam, ...)
    bool per_component = false;
  };

  static void eager(const Attrs& a, const std::vector<Tensor<float>>& gradients) {
    run(a.optimizer, variables_of(a.updates), gradients, a.per_component, a.info.name);
  }

  static void graph(graph::Graph& graph, const Attrs& a, const std::vector<Tensor<float>>& gradients) {
    const std::vector<AnyTensor> inputs(gradients.begin(), gradients.end());
    graph::NodeSpec spec{&a.info, {}};
    spec.device = a.updates.front().second.implementation().device().spec;
    spec.resources = nn::optimizer_detail::update_uses(a.updates, a.optimizer.slots.get());
    spec.run = [optimizer = a.optimizer, variables = variables_of(a.updates), per_component = a.per_component,
                op = a.info.name](const graph::RunContext&, graph::NodeInputs in, std::span<AnyTensor>) {
      std::vector<Tensor<float>> values;
      for (const auto& v : in) values.push_back(v.as<float>());
      run(optimizer, variables, values, per_component, op);
    };
    (void)graph::add_op(graph, std::string(O::name) + "/" + std::string(a.info.name), inputs, std::move(spec));
  }

 private:
  static std::vector<Variable<float>> variables_of(const nn::optimizer_detail::Updates& updates) {
    std::vector<Variable<float>> out;
    for (const auto& [g, v] : updates) out.push_back(v);
    return out;
  }
  static void run(const O& optimizer, const std::vector<Variable<float>>& variables,
                  const std::vector<Tensor<float>>& values, bool per_component, std::string_view op) {
    namespace od = nn::optimizer_detail;
    const std::size_t count = variables.size();
    od::Updates now;
    for (std::size_t k = 0; k < count; ++k) now.emplace_back(values[k], variables[k]);
    if (per_component) {
      optimizer.update(
          now, od::GradientFor([&](std::size_t k, std::size_t c, const Device&) { return values[c * count + k]; }));
      return;
    }
    if (auto* host = distribute::remote_host_of(variables)) [[unlikely]] {  // a parameter server runs the rule
      host->apply_gradients(optimizer.rule(), values, variables);
      // This process's count of updates (its schedule's step; Keras's iterations): the server
      // keeps the slots and its own count, of every worker's updates.
      std::lock_guard lock(optimizer.slots->mutex);
      nn::optimizer_detail::advance(optimizer.slots);
      return;
    }
    od::require_gradients_on_variable_devices(now, op);
    optimizer.update(now, od::GradientFor([&](std::size_t k, std::size_t, const Device& device) {
                       return to_device(now[k].first, device, op, 1);
                     }));
  }
};

}  // namespace ops

namespace nn::optimizer_detail {

/// What every optimizer's apply_gradients does: Keras's checks, then its update (ops::ResourceApply,
/// a node while a graph is built) with the gradients brought to each component's device; inside
/// strategy.run, every replica's gradients meet in merge_call (at trace time when traced), are
/// summed across the replicas (and workers) by the strategy's all-reduce, and one update writes
/// every component with the sum on its device, after every replica's reads of it.
template <class O>
void apply(const O& optimizer, const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars,
           const ops::OpInfo& info) {
  const Updates updates = pairs(grads, vars);
  const distribute::ReplicaContextState* ctx = replica_context_of(updates);
  if (!ctx) {
    std::vector<Tensor<float>> gradients;
    for (const auto& [g, v] : updates) gradients.push_back(g);
    run_op<ops::ResourceApply<O>>({optimizer, updates, info, false}, gradients);
    return;
  }
  auto mine = std::make_shared<std::vector<Tensor<float>>>();
  for (const auto& [g, v] : updates) mine->push_back(g);
  ctx->strategy->merge_call(ctx->local_replica_id, mine, [&](const std::vector<std::shared_ptr<const void>>& all) {
    std::vector<std::vector<Tensor<float>>> per_replica;
    for (const auto& contribution : all) {
      per_replica.push_back(*static_cast<const std::vector<Tensor<float>>*>(contribution.get()));
      if (per_replica.back().size() != updates.size())
        throw InvalidArgumentError(
            "apply_gradients inside strategy.run: replicas passed gradients for different "
            "variables; every replica must update the same variables");
    }
    // The context holds a const view of the strategy, which itself is not const (it runs this very
    // call). merge_call's function runs in cross-replica context, as TensorFlow's merge_fn does.
    const auto reduced = const_cast<distribute::StrategyInterface*>(ctx->strategy)->batch_all_reduce_sum(per_replica);
    const distribute::ScopedSet<distribute::ReplicaContextState> cross_replica(distribute::current_replica_context(),
                                                                               nullptr);
    std::vector<Tensor<float>> gradients;  // component c's, then c + 1's
    for (const auto& row : reduced) gradients.insert(gradients.end(), row.begin(), row.end());
    run_op<ops::ResourceApply<O>>({optimizer, updates, info, true}, gradients);
  });
}

}  // namespace nn::optimizer_detail

}  // namespace devtensor
