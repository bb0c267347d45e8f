#pragma once
/// @file model_training.hpp
/// @brief Model's fit, evaluate, predict and train steps: local, or split across a strategy's
/// replicas, traced into graphs unless the model runs eagerly (model.hpp declares them).

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
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/training_loop.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION History Model::fit(const Dataset& dataset, FitOptions options) {
  require_compiled();
  if (built()) require_one_input_and_output("fit");
  return training_loop::fit(
      dataset, options, metric_names_, [this](const Tensor<float>& x, const Tensor<float>& y) { return fit_step(x, y); },
      [this](const Dataset& validation) { return evaluate(validation, {.verbose = 0}); });
}

DEVTENSOR_DEFINITION Evaluation Model::evaluate(const Dataset& dataset, EvaluateOptions options) {
  require_compiled();
  if (built()) require_one_input_and_output("evaluate");
  return training_loop::evaluate(dataset, options, metric_names_, [this](const Tensor<float>& x, const Tensor<float>& y) {
    const std::int64_t n = x.rank() > 0 ? x.shape()[0] : 1;
    build_for(x);
    const auto test_step = [this](const std::vector<Tensor<float>>& xy, const Tensor<std::int64_t>&, std::int64_t) {
      const Tensor<float> prediction = forward(xy[0], false);
      std::vector<Tensor<float>> out{(*loss_)(xy[1], prediction)};
      for (auto& m : batch_metrics(xy[1], prediction)) out.push_back(std::move(m));
      return out;
    };
    const auto* traced_step = traced(traced_.test, test_step, "test_function");
    const auto no_seed = scalar<std::int64_t>(0);  // nothing random runs outside training
    auto values = traced_step ? (*traced_step)({x, y}, no_seed, 0) : test_step({x, y}, no_seed, 0);
    return training_loop::StepResult{values[0], n, {values.begin() + 1, values.end()}};
  });
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::batch_metrics(const Tensor<float>& y,
                                                                           const Tensor<float>& prediction) const {
  std::vector<Tensor<float>> out;
  for (const auto& metric : metrics_) out.push_back(reduce_mean(metric_matches(metric, y, prediction)));
  return out;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::predict(const std::vector<Tensor<float>>& xs,
                                                               PredictOptions options) {
  if (options.batch_size < 1) throw InvalidArgumentError("predict: batch_size must be >= 1");
  if (xs.empty()) throw InvalidArgumentError("predict: no inputs given");
  for (const auto& x : xs)
    if (!x.defined() || x.rank() == 0 || x.shape()[0] != xs[0].shape()[0])
      throw InvalidArgumentError("predict: every input must be a tensor of rank >= 1 with the same number of examples "
                                 "(first dimension)");
  const std::int64_t n = xs[0].shape()[0];
  build_for(xs[0]);
  require_built();
  const auto* traced_step = traced(
      traced_.predict,
      [this](const std::vector<Tensor<float>>& in, const Tensor<std::int64_t>&, std::int64_t) { return forward(in, false); },
      "predict_function");
  const auto predict_step = [&](const std::vector<Tensor<float>>& batch) {
    return traced_step ? (*traced_step)(batch, scalar<std::int64_t>(0), 0) : forward(batch, false);
  };
  if (n <= options.batch_size) return predict_step(xs);
  std::vector<std::vector<Tensor<float>>> parts;  // [output][batch]
  for (std::int64_t begin = 0; begin < n; begin += options.batch_size) {
    std::vector<Tensor<float>> batch;
    for (const auto& x : xs) {
      std::vector<std::int64_t> start(x.rank(), 0);
      std::vector<std::int64_t> size(x.rank(), -1);
      start[0] = begin;
      size[0] = std::min(options.batch_size, n - begin);
      batch.push_back(slice(x, start, size));
    }
    auto outputs = predict_step(batch);
    parts.resize(outputs.size());
    for (std::size_t o = 0; o < outputs.size(); ++o) parts[o].push_back(std::move(outputs[o]));
  }
  std::vector<Tensor<float>> out;
  for (const auto& p : parts) out.push_back(concat(p, 0));
  return out;
}

DEVTENSOR_DEFINITION std::pair<double, std::int64_t> Model::train_step(
    const Tensor<float>& x, const Tensor<float>& y) {
  require_compiled();
  build_for(x);
  require_built();
  require_one_input_and_output("train_step");
  const auto step = strategy_ ? distributed_train_step(x, y, false) : local_train_step(x, y, step_seed());
  return {static_cast<double>(step.loss.item()), step.examples};
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::fit_step(const Tensor<float>& x, const Tensor<float>& y) {
  if (strategy_) return distributed_train_step(x, y, true);
  build_for(x);
  const auto* traced_step = traced(
      traced_.train,
      [this](const std::vector<Tensor<float>>& xy, const Tensor<std::int64_t>& seed, std::int64_t) {
        auto step = local_train_step(xy[0], xy[1], seed);
        step.metrics.insert(step.metrics.begin(), std::move(step.loss));
        return std::move(step.metrics);
      },
      "train_function");
  if (!traced_step) return local_train_step(x, y, step_seed());
  auto values = (*traced_step)({x, y}, step_seed(), 0);
  return {values[0], x.rank() > 0 ? x.shape()[0] : 1, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::local_train_step(const Tensor<float>& x, const Tensor<float>& y,
                                                                       const Tensor<std::int64_t>& seed) {
  const StepSeedScope seeded(seed, 0);
  Tensor<float> prediction;
  Tensor<float> loss;
  const auto vars = trainable_variables();
  {
    GradientTape tape;
    prediction = forward(x, true);
    loss = (*loss_)(y, prediction);
    optimizer_->apply_gradients(tape.gradient(loss, vars), vars);
  }
  return {std::move(loss), x.rank() > 0 ? x.shape()[0] : 1, batch_metrics(y, prediction)};
}

DEVTENSOR_DEFINITION training_loop::StepResult Model::distributed_train_step(const Tensor<float>& x,
                                                                                  const Tensor<float>& y,
                                                                                  bool may_trace) {
  if (x.rank() == 0 || y.rank() == 0 || x.shape()[0] != y.shape()[0])
    throw InvalidArgumentError("train_step: x and y need the same number of examples, got " + x.shape().to_string() +
                               " and " + y.shape().to_string());
  const std::int64_t global = x.shape()[0];
  build_for(x);
  // Each replica's share of the batch on its device (this process's share: DATA auto-shard),
  // split before the traced step as Keras distributes its dataset.
  const auto& devices = strategy_->replica_devices();
  const auto batch = strategy_->local_batch(global);
  auto xs = distribute::split_rows(x, batch, devices);
  const auto ys = distribute::split_rows(y, batch, devices);
  const auto replicated = [this](const std::vector<Tensor<float>>& xs_then_ys, const Tensor<std::int64_t>& seed,
                                 std::int64_t examples) {
    const auto half = xs_then_ys.begin() + static_cast<std::ptrdiff_t>(xs_then_ys.size() / 2);
    return replicated_train_step({xs_then_ys.begin(), half}, {half, xs_then_ys.end()}, seed, examples);
  };
  const auto* traced_step = may_trace ? traced(traced_.train, replicated, "train_function") : nullptr;
  std::vector<Tensor<float>> values;
  if (traced_step) {
    xs.insert(xs.end(), ys.begin(), ys.end());
    values = (*traced_step)(xs, step_seed(), global);
  } else {
    values = replicated_train_step(xs, ys, step_seed(), global);
  }
  return {values[0], global, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::replicated_train_step(
    const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys, const Tensor<std::int64_t>& seed,
    std::int64_t global) {
  // strategy.run: each replica's forward and backward pass on its tape.
  const auto vars = trainable_variables();
  // Each replica's random stream: its first row's index in the global batch (unique across workers).
  const auto batch = strategy_->local_batch(global);
  std::vector<int> first_rows{static_cast<int>(batch.offset)};
  for (const auto size : batch.sizes) first_rows.push_back(first_rows.back() + static_cast<int>(size));
  const auto& devices = strategy_->replica_devices();
  std::vector<std::vector<Tensor<float>>> grads(devices.size());
  std::vector<Tensor<float>> losses(devices.size());
  // metrics[m][replica]: the replica's matches summed and divided by the global batch's.
  std::vector<std::vector<Tensor<float>>> metrics(metrics_.size(), std::vector<Tensor<float>>(devices.size()));
  strategy_->run_replicas([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    const StepSeedScope seeded(seed, first_rows[i]);
    GradientTape tape;
    const Tensor<float> prediction = forward(xs[i], true);
    const Tensor<float> per_example = loss_->per_example(ys[i], prediction);
    // Each replica divides by the global batch, so the all-reduced SUM is the global mean.
    const std::int64_t elements_per_example = per_example.shape()[0] > 0 ? per_example.num_elements() / per_example.shape()[0] : 1;
    const Tensor<float> loss = loss_->reduction() == Reduction::SUM
                                   ? reduce_sum(per_example)
                                   : compute_average_loss(per_example, global * elements_per_example);
    grads[i] = tape.gradient(loss, vars, {.unconnected_gradients = UnconnectedGradients::ZERO});
    losses[i] = loss;  // not read: fit reads the sum when it displays it
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
      const auto matches = metric_matches(metrics_[m], ys[i], prediction);
      const std::int64_t per_row = matches.shape()[0] > 0 ? matches.num_elements() / matches.shape()[0] : 1;
      metrics[m][i] = div(reduce_sum(matches), scalar<float>(static_cast<float>(global * per_row)));
    }
  });
  // batch_reduce_to(SUM), then the update in cross-replica context: every component gets it.
  const auto summed = strategy_->batch_all_reduce_sum(grads);
  optimizer_->apply_gradients(summed[0], vars);
  // strategy.reduce(SUM) of the replicas' losses (each already divided by the global batch), on
  // the first replica's device: every process gets the global loss.
  std::vector<Tensor<float>> out{strategy_->reduce_sum_to_first_replica(losses, "the step's loss")};
  for (std::size_t m = 0; m < metrics_.size(); ++m)
    out.push_back(strategy_->reduce_sum_to_first_replica(metrics[m], "the step's " + metric_names_[m]));
  return out;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
