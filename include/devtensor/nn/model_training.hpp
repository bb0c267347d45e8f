#pragma once
/// @file model_training.hpp
/// @brief Model's compile, fit, evaluate, predict and train steps: local, or split across a
/// strategy's replicas, traced into graphs unless the model runs eagerly (model.hpp declares them).
///
/// A step takes a batch of one tensor per input and one per output. Traced steps take them flat:
/// inputs then targets, replica after replica under a strategy.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/autodiff/gradient_tape.hpp"
#include "devtensor/config.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/distributed_dataset.hpp"
#include "devtensor/nn/loss_scale_optimizer.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/training_loop.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

namespace model_detail {
/// The tensors of a batch in a traced step's order: inputs, then targets.
inline std::vector<Tensor<float>> flatten(const data_adapter::Batch& batch) {
  std::vector<Tensor<float>> flat(batch.xs);
  flat.insert(flat.end(), batch.ys.begin(), batch.ys.end());
  return flat;
}
/// The batch at `flat[begin, ...)` of `inputs` inputs and `targets` targets.
inline data_adapter::Batch unflatten(const std::vector<Tensor<float>>& flat, std::size_t begin, std::size_t inputs,
                                     std::size_t targets) {
  const auto at = [&](std::size_t i) { return flat.begin() + static_cast<std::ptrdiff_t>(begin + i); };
  return {{at(0), at(inputs)}, {at(inputs), at(inputs + targets)}};
}
/// The replicas' batches in a traced step's order: replica after replica, each flattened.
inline std::vector<Tensor<float>> flatten(const std::vector<data_adapter::Batch>& replicas) {
  std::vector<Tensor<float>> flat;
  for (const auto& replica : replicas)
    for (auto& t : flatten(replica)) flat.push_back(std::move(t));
  return flat;
}
/// The replicas' batches of `inputs` inputs and `targets` targets each, from `flat`.
inline std::vector<data_adapter::Batch> unflatten_replicas(const std::vector<Tensor<float>>& flat, std::size_t inputs,
                                                           std::size_t targets) {
  std::vector<data_adapter::Batch> replicas;
  for (std::size_t begin = 0; begin < flat.size(); begin += inputs + targets)
    replicas.push_back(unflatten(flat, begin, inputs, targets));
  return replicas;
}
}  // namespace model_detail

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION void Model::compile(std::vector<Loss> losses, Optimizer optimizer, CompileOptions options) {
  // A model whose variables exist already must have created them in the strategy's scope: plain
  // variables would train on one device while the strategy splits the batch (Keras's check).
  // Checked before anything changes, so a refused compile leaves the model as it was.
  const auto* scope = distribute::current_distribution_scope();
  const distribute::StrategyInterface* strategy = scope ? scope->strategy.get() : strategy_.get();
  if (strategy && built())
    for (const auto& v : variables()) {
      const auto* distributed = distribute::as_distributed(v);
      if (!distributed || &distributed->strategy() != strategy)
        throw InvalidArgumentError(
            "Variable (" + v.name() + ", shape " + v.shape().to_python() +
            ") was not created in the distribution strategy scope of (" + strategy->description() +
            "). It is most likely due to not all layers or the model or optimizer being created outside the "
            "distribution strategy scope. Try to make sure your code looks similar to the following.\n"
            "{\n  const auto scope = strategy.scope();\n  auto model = create_model();\n  model.compile(...);\n}");
    }
  // Keras 3's compile wraps a mixed_float16 model's optimizer in a LossScaleOptimizer.
  const bool wrap =
      options.auto_scale_loss && policy_.compute_dtype() == DType::DT_HALF && !optimizer.scales_the_loss();
  if (wrap) optimizer = optimizers::LossScaleOptimizer{.inner_optimizer = std::move(optimizer)};
  std::vector<std::string> output_names;
  if (graph_)
    for (const auto& output : graph_->outputs()) output_names.push_back(output.node()->layer->name());
  CompiledLoss compiled_loss(std::move(losses), options, std::move(output_names));
  capture_strategy();
  if (optimizer.scales_the_loss()) {
    // The loss scale's variable now, before any step is traced (Keras's LossScaleOptimizer.build):
    // under a strategy mirrored over the replicas, each reading its own copy in strategy.run.
    const auto in_scope = strategy_ && !scope ? strategy_->enter_scope() : nullptr;
    optimizer.build_loss_scale();
  }
  compiled_loss_ = std::move(compiled_loss);
  optimizer_ = std::move(optimizer);
  optimizer_wrapped_ = wrap;
  run_eagerly_ = options.run_eagerly;
  cuda_graph_ = options.cuda_graph;
  traced_ = {};  // Keras makes its train_function again
}

DEVTENSOR_DEFINITION History Model::fit(const data_adapter::Batches& batches, FitOptions options) {
  require_compiled();
  // A layer frozen or thawed since the steps were traced: they are traced again (where Keras
  // asks for compile() again, and trains the old set without it).
  std::vector<std::uint64_t> trainables;
  for (const auto& v : trainable_variables()) trainables.push_back(v.handle_id());
  if (trainables != traced_trainables_) {
    traced_ = {};
    traced_trainables_ = std::move(trainables);
  }
  return training_loop::fit(
      batches, options, compiled_loss_->reported_names(),
      [this](const data_adapter::Batch& batch) { return fit_step(batch); },
      [this](const data_adapter::Batches& validation, const training_loop::CallbackList& callbacks) {
        if (validation.cardinality() == data::INFINITE_CARDINALITY)
          throw InvalidArgumentError("fit: the validation data repeats forever; take() a finite number of batches");
        return training_loop::evaluate(
            validation, compiled_loss_->reported_names(),
            [this](const data_adapter::Batch& batch) { return test_step(batch); }, callbacks);
      },
      this,
      {.stop_requested = [this] { return stop_training_; },
       .reset_stop = [this] { stop_training_ = false; },
       .take_resume_point = [this] { return std::exchange(resume_point_, std::nullopt); }});
}

DEVTENSOR_DEFINITION bool Model::is_chief() const {
  const auto* scope = distribute::current_distribution_scope();
  const distribute::StrategyInterface* strategy = strategy_ ? strategy_.get() : scope ? scope->strategy.get() : nullptr;
  const auto* workers = strategy ? strategy->worker_group() : nullptr;
  return !workers || workers->worker_index() == 0;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::get_weights() const {
  std::vector<Tensor<float>> out;
  for (const auto& v : variables()) out.push_back(constant<float>(v.to_vector(), v.shape()));
  return out;
}

DEVTENSOR_DEFINITION void Model::set_weights(const std::vector<Tensor<float>>& weights) const {
  const auto vars = variables();
  if (weights.size() != vars.size())
    throw InvalidArgumentError("set_weights: model \"" + name_ + "\" has " + std::to_string(vars.size()) +
                               " variables, but " + std::to_string(weights.size()) + " weights were given");
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (!weights[i].defined() || weights[i].shape() != vars[i].shape())
      throw InvalidArgumentError("set_weights: weight " + std::to_string(i) + " has shape " +
                                 (weights[i].defined() ? weights[i].shape().to_python() : std::string("(undefined)")) +
                                 ", but variable " + vars[i].name() + " has shape " + vars[i].shape().to_python());
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign(weights[i]);
}

DEVTENSOR_DEFINITION History Model::fit(const Dataset& dataset, FitOptions options) {
  return fit(data_adapter::Batches::from_dataset(dataset, input_count()), std::move(options));
}

DEVTENSOR_DEFINITION Evaluation Model::evaluate(const Dataset& dataset, EvaluateOptions options) {
  return evaluate(data_adapter::Batches::from_dataset(dataset, input_count()), std::move(options));
}

DEVTENSOR_DEFINITION Evaluation Model::evaluate(const data_adapter::Batches& batches, EvaluateOptions options) {
  require_compiled();
  return training_loop::evaluate(
      batches, options, compiled_loss_->reported_names(),
      [this](const data_adapter::Batch& batch) { return test_step(batch); }, this);
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::test_step(const data_adapter::Batch& batch) {
  require_matching_batch(batch);
  build_for(batch.xs[0]);
  if (strategy_) return distributed_test_step(batch);
  const std::size_t inputs = batch.xs.size();
  const auto step = [this, inputs](const std::vector<Tensor<float>>& flat, const Tensor<std::int64_t>&, std::int64_t) {
    const auto b = model_detail::unflatten(flat, 0, inputs, flat.size() - inputs);
    return (*compiled_loss_)(b.ys, forward(b.xs, false));
  };
  const auto* traced_step = traced(traced_.test, step, "test_function", cuda_graph_);
  const auto no_seed = scalar<std::int64_t>(0);  // nothing random runs outside training
  const auto flat = model_detail::flatten(batch);
  auto values = traced_step ? (*traced_step)(flat, no_seed, 0) : step(flat, no_seed, 0);
  return training_loop::StepResult{values[0], batch.examples(), {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION void Model::require_matching_batch(const data_adapter::Batch& batch) const {
  if (built() && (batch.xs.size() != graph_->inputs().size() || batch.ys.size() != graph_->outputs().size()))
    throw InvalidArgumentError("Model \"" + name_ + "\" has " + std::to_string(graph_->inputs().size()) +
                               " inputs and " + std::to_string(graph_->outputs().size()) + " outputs, but a batch of " +
                               std::to_string(batch.xs.size()) + " input and " + std::to_string(batch.ys.size()) +
                               " target tensors came; give one tensor per input and one per output (a dataset's "
                               "components: the inputs, then the targets)");
  if (batch.xs.empty() || batch.ys.empty())
    throw InvalidArgumentError("fit/evaluate: a batch needs at least one input and one target tensor");
  for (const auto* part : {&batch.xs, &batch.ys})
    for (const auto& t : *part)
      if (!t.defined() || t.rank() == 0 || t.shape()[0] != batch.xs[0].shape()[0])
        throw InvalidArgumentError(
            "train_step: x and y need the same number of examples, got " +
            (batch.xs[0].defined() ? batch.xs[0].shape().to_string() : std::string("undefined")) + " and " +
            (t.defined() ? t.shape().to_string() : std::string("undefined")));
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::predict(const std::vector<Tensor<float>>& xs,
                                                               PredictOptions options) {
  if (options.batch_size < 1) throw InvalidArgumentError("predict: batch_size must be >= 1");
  if (xs.empty()) throw InvalidArgumentError("predict: no inputs given");
  for (const auto& x : xs)
    if (!x.defined() || x.rank() == 0 || x.shape()[0] != xs[0].shape()[0])
      throw InvalidArgumentError(
          "predict: every input must be a tensor of rank >= 1 with the same number of examples "
          "(first dimension)");
  const std::int64_t n = xs[0].shape()[0];
  build_for(xs[0]);
  require_built();
  // Under a strategy the traced step takes each replica's rows, split before it (as fit's).
  const std::size_t input_count = xs.size();
  const auto per_replica = [input_count](const std::vector<Tensor<float>>& flat) {
    std::vector<std::vector<Tensor<float>>> replicas;
    for (auto at = flat.begin(); at != flat.end(); at += static_cast<std::ptrdiff_t>(input_count))
      replicas.emplace_back(at, at + static_cast<std::ptrdiff_t>(input_count));
    return replicas;
  };
  const auto* traced_step = traced(
      traced_.predict,
      [this, per_replica](const std::vector<Tensor<float>>& in, const Tensor<std::int64_t>&, std::int64_t) {
        return strategy_ ? replicated_predict_step(per_replica(in)) : forward(in, false);
      },
      "predict_function");
  const training_loop::CallbackList callbacks(
      options.callbacks, false, false, this,
      {.epochs = 1, .steps = (n + options.batch_size - 1) / options.batch_size, .verbose = 0});
  std::int64_t step = 0;
  // The hooks named outside the lambda: nvcc (--expt-relaxed-constexpr, header-only mode) takes an
  // implicitly constexpr lambda for host and device code and refuses a host member's address in it.
  const auto batch_begin = &Callback::on_predict_batch_begin;
  const auto batch_end = &Callback::on_predict_batch_end;
  const auto predict_step = [&](const std::vector<Tensor<float>>& batch) {
    callbacks.each(batch_begin, step, Logs{});
    std::vector<Tensor<float>> outputs;
    if (!strategy_)
      outputs = traced_step ? (*traced_step)(batch, scalar<std::int64_t>(0), 0) : forward(batch, false);
    else if (traced_step)
      outputs = (*traced_step)(split_inputs_across_replicas(batch), scalar<std::int64_t>(0), 0);
    else
      outputs = replicated_predict_step(per_replica(split_inputs_across_replicas(batch)));
    callbacks.each(batch_end, step, Logs{});  // Keras passes the outputs; they come at the end
    ++step;
    return outputs;
  };
  callbacks.each(&Callback::on_predict_begin, Logs{});
  std::vector<Tensor<float>> out;
  if (n <= options.batch_size) {
    out = predict_step(xs);
  } else {
    std::vector<std::vector<Tensor<float>>> parts;  // [output][batch]
    for (std::int64_t begin = 0; begin < n; begin += options.batch_size) {
      std::vector<Tensor<float>> batch;
      for (const auto& x : xs)
        batch.push_back(data_adapter::detail::rows(x, begin, std::min(options.batch_size, n - begin)));
      auto outputs = predict_step(batch);
      parts.resize(outputs.size());
      for (std::size_t o = 0; o < outputs.size(); ++o) parts[o].push_back(std::move(outputs[o]));
    }
    for (const auto& p : parts) out.push_back(concat(p, 0));
  }
  callbacks.each(&Callback::on_predict_end, Logs{});
  return out;
}

DEVTENSOR_DEFINITION std::pair<double, std::int64_t> Model::train_step(const std::vector<Tensor<float>>& xs,
                                                                       const std::vector<Tensor<float>>& ys) {
  require_compiled();
  const data_adapter::Batch batch{xs, ys};
  require_matching_batch(batch);
  build_for(xs[0]);
  require_built();
  const auto step = strategy_ ? distributed_train_step(batch, false) : local_train_step(batch, step_seed());
  return {static_cast<double>(step.loss.item()), step.examples};
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::fit_step(const data_adapter::Batch& batch) {
  require_matching_batch(batch);
  if (strategy_) return distributed_train_step(batch, true);
  build_for(batch.xs[0]);
  const std::size_t inputs = batch.xs.size();
  const bool scaled = optimizer_->scales_the_loss();
  const auto* traced_step = traced(
      traced_.train,
      [this, inputs, scaled](const std::vector<Tensor<float>>& flat, const Tensor<std::int64_t>& seed, std::int64_t) {
        const auto part = model_detail::unflatten(flat, 0, inputs, flat.size() - inputs);
        if (scaled) return scaled_gradients_step(part, seed);
        auto step = local_train_step(part, seed);
        step.metrics.insert(step.metrics.begin(), std::move(step.loss));
        return std::move(step.metrics);
      },
      "train_function", cuda_graph_);
  if (!traced_step) return local_train_step(batch, step_seed());
  auto values = (*traced_step)(model_detail::flatten(batch), host_step_seed(), 0);
  if (scaled) apply_scaled_gradients(values, scaled_unconnected_);
  return {values[0], batch.examples(), {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION void Model::apply_scaled_gradients(std::vector<Tensor<float>>& values,
                                                        const std::vector<std::size_t>& unconnected) {
  // Keras's tf.cond in LossScaleOptimizer.apply, on the host, after the step: the scaled gradients
  // are the step's last values (every replica's sum, under a strategy: the replicas agree on the
  // skip as Keras's, whose finite check reads the all-reduced gradients).
  const auto vars = trainable_variables();
  const auto first = values.end() - static_cast<std::ptrdiff_t>(vars.size());
  std::vector<Tensor<float>> grads(first, values.end());
  for (const auto i : unconnected) grads[i] = Tensor<float>();
  values.erase(first, values.end());
  optimizer_->apply_gradients(grads, vars);
}

DEVTENSOR_DEFINITION Tensor<std::int64_t> Model::host_step_seed() const {
  auto seed = Tensor<std::int64_t>::empty(Shape{}, device_set("fit").host_cpu(), "Const");
  *seed.mutable_data() = optimizer_->iterations();
  return seed;
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::local_train_step(const data_adapter::Batch& batch,
                                                                       const Tensor<std::int64_t>& seed) {
  const StepSeedScope seeded(seed, 0);
  std::vector<Tensor<float>> values;
  const auto vars = trainable_variables();
  {
    GradientTape tape;
    values = (*compiled_loss_)(batch.ys, forward(batch.xs, true));
    const Tensor<float> target = optimizer_->scale_loss(values[0]);  // the loss itself but under loss scaling
    optimizer_->apply_gradients(tape.gradient(target, vars), vars);
  }
  return {values[0], batch.examples(), {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::scaled_gradients_step(const data_adapter::Batch& batch,
                                                                             const Tensor<std::int64_t>& seed) {
  const StepSeedScope seeded(seed, 0);
  const auto vars = trainable_variables();
  GradientTape tape;
  auto values = (*compiled_loss_)(batch.ys, forward(batch.xs, true));
  const Tensor<float> scaled = optimizer_->scale_loss(values[0]);
  scaled_unconnected_.clear();  // a traced step's outputs are tensors: zeros stand for "no gradient"
  auto grads = tape.gradient(scaled, vars);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) {
      scaled_unconnected_.push_back(i);
      grads[i] = zeros<float>(vars[i].shape());
    }
    values.push_back(std::move(grads[i]));
  }
  return values;
}

DEVTENSOR_DEFINITION std::vector<data_adapter::Batch> Model::split_across_replicas(
    const data_adapter::Batch& batch) const {
  const auto& devices = strategy_->replica_devices();
  const auto shares = strategy_->local_batch(batch.examples());
  std::vector<data_adapter::Batch> replicas(devices.size());
  for (const auto* part : {&batch.xs, &batch.ys})
    for (const auto& t : *part) {
      auto rows = distribute::split_rows(t, shares, devices);
      for (std::size_t r = 0; r < devices.size(); ++r)
        (part == &batch.xs ? replicas[r].xs : replicas[r].ys).push_back(std::move(rows[r]));
    }
  return replicas;
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::distributed_train_step(const data_adapter::Batch& batch,
                                                                             bool may_trace) {
  const std::int64_t global = batch.examples();
  build_for(batch.xs[0]);
  // Each replica's share of the batch on its device (this process's share: DATA auto-shard),
  // split before the traced step as Keras distributes its dataset.
  const auto replicas = split_across_replicas(batch);
  const std::size_t inputs = batch.xs.size(), targets = batch.ys.size();
  const auto replicated = [this, inputs, targets](const std::vector<Tensor<float>>& flat,
                                                  const Tensor<std::int64_t>& seed, std::int64_t examples) {
    return replicated_train_step(model_detail::unflatten_replicas(flat, inputs, targets), seed, examples);
  };
  const auto* traced_step = may_trace ? traced(traced_.train, replicated, "train_function", cuda_graph_) : nullptr;
  auto values = traced_step ? (*traced_step)(model_detail::flatten(replicas), host_step_seed(), global)
                            : replicated_train_step(replicas, step_seed(), global);
  if (optimizer_->scales_the_loss()) apply_scaled_gradients(values, {});
  return {values[0], global, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::distributed_test_step(const data_adapter::Batch& batch) {
  const std::int64_t global = batch.examples();
  const auto replicas = split_across_replicas(batch);
  const std::size_t inputs = batch.xs.size(), targets = batch.ys.size();
  const auto replicated = [this, inputs, targets](const std::vector<Tensor<float>>& flat, const Tensor<std::int64_t>&,
                                                  std::int64_t examples) {
    return replicated_test_step(model_detail::unflatten_replicas(flat, inputs, targets), examples);
  };
  const auto* traced_step = traced(traced_.test, replicated, "test_function", cuda_graph_);
  const auto values = traced_step ? (*traced_step)(model_detail::flatten(replicas), scalar<std::int64_t>(0), global)
                                  : replicated_test_step(replicas, global);
  return {values[0], global, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::replicated_test_step(
    const std::vector<data_adapter::Batch>& replicas, std::int64_t global) {
  // strategy.run of each replica's forward pass on its rows (its own BatchNormalization
  // statistics, as TensorFlow reads them in a replica context), then the values summed.
  std::vector<std::vector<Tensor<float>>> values(replicas.size());
  strategy_->run_replicas([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    values[i] = compiled_loss_->replica_share(replicas[i].ys, forward(replicas[i].xs, false), global);
  });
  return sum_over_replicas(std::move(values));
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::split_inputs_across_replicas(
    const std::vector<Tensor<float>>& xs) const {
  // Every row of the batch, split across this process's replicas only: predict returns each
  // input's outputs, whichever worker calls it. Replica after replica, as a traced step takes them.
  const auto& devices = strategy_->replica_devices();
  const auto replicas = static_cast<std::int64_t>(devices.size());
  const distribute::LocalBatch shares{0, distribute::batch_sizes_for_worker(xs[0].shape()[0], 1, replicas, 0)};
  std::vector<Tensor<float>> flat(xs.size() * devices.size());
  for (std::size_t i = 0; i < xs.size(); ++i) {
    auto parts = distribute::split_rows(xs[i], shares, devices);
    for (std::size_t r = 0; r < devices.size(); ++r) flat[r * xs.size() + i] = std::move(parts[r]);
  }
  return flat;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::replicated_predict_step(
    const std::vector<std::vector<Tensor<float>>>& replicas) {
  std::vector<std::vector<Tensor<float>>> outputs(replicas.size());  // [replica][output]
  strategy_->run_replicas([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    outputs[i] = forward(replicas[i], false);
  });
  std::vector<Tensor<float>> out;  // each output's rows in replica order: the batch's order
  for (std::size_t o = 0; o < outputs.front().size(); ++o) {
    std::vector<Tensor<float>> parts;
    for (auto& replica : outputs) parts.push_back(std::move(replica[o]));
    out.push_back(concat(parts, 0));
  }
  return out;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::replicated_train_step(
    const std::vector<data_adapter::Batch>& replicas, const Tensor<std::int64_t>& seed, std::int64_t global) {
  // strategy.run: each replica's forward and backward pass on its tape.
  const auto vars = trainable_variables();
  const bool scaled = optimizer_->scales_the_loss();
  // Each replica's random stream: its first row's index in the global batch (unique across workers).
  const auto batch = strategy_->local_batch(global);
  std::vector<int> first_rows{static_cast<int>(batch.offset)};
  for (const auto size : batch.sizes) first_rows.push_back(first_rows.back() + static_cast<int>(size));
  std::vector<std::vector<Tensor<float>>> grads(replicas.size());
  // values[replica]: the replica's loss (divided by the global batch, so the all-reduced SUM is
  // the global mean), then its shares of the reported values.
  std::vector<std::vector<Tensor<float>>> values(replicas.size());
  strategy_->run_replicas([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    const StepSeedScope seeded(seed, first_rows[i]);
    GradientTape tape;
    values[i] = compiled_loss_->replica_share(replicas[i].ys, forward(replicas[i].xs, true), global);
    const Tensor<float> target = scaled ? optimizer_->scale_loss(values[i][0]) : values[i][0];
    grads[i] = tape.gradient(target, vars, {.unconnected_gradients = UnconnectedGradients::ZERO});
  });
  // batch_reduce_to(SUM), then the update in cross-replica context: every component gets it. A
  // loss-scale optimizer's update runs after the step (apply_scaled_gradients): the summed scaled
  // gradients follow the values.
  auto summed = strategy_->batch_all_reduce_sum(grads);
  if (!scaled) optimizer_->apply_gradients(summed[0], vars);
  auto out = sum_over_replicas(std::move(values));
  if (scaled) out.insert(out.end(), summed[0].begin(), summed[0].end());
  return out;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::sum_over_replicas(
    std::vector<std::vector<Tensor<float>>> values) {
  // strategy.reduce(SUM) of each value over the replicas, on the first replica's device: every
  // process gets the global values.
  const auto& names = compiled_loss_->reported_names();
  std::vector<Tensor<float>> out;
  for (std::size_t v = 0; v < values.front().size(); ++v) {
    std::vector<Tensor<float>> per_replica;
    for (auto& replica : values) per_replica.push_back(std::move(replica[v]));
    out.push_back(strategy_->reduce_sum_to_first_replica(
        per_replica, v == 0 ? std::string("the step's loss") : "the step's " + names[v - 1]));
  }
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
