#pragma once
// Seed 001's custom training loop, shared by the tests that trace it: a Dense(1) layer over two
// features learns y = 3a - b + 1 through `distributed_train_step` (strategy.run, batch_reduce_to,
// apply_gradients on the mirrored variables, strategy.reduce), run eagerly or traced once by
// dt::function. Graph tests run it on virtual CPUs and simulated GPUs, the multi-worker tests
// across processes; each checks that the traced loop gives the eager loop's numbers.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/devtensor.hpp"

namespace devtensor::test {

struct SeedLoopOptions {
  std::int64_t examples = 64;
  std::int64_t batch = 16;
  int epochs = 5;
  bool shuffle = true;  // shuffle(examples, seed 1) before batching
};

struct SeedLoopResult {
  std::vector<float> losses;   // every step's
  std::vector<float> weights;  // the kernel's, then the bias
  int traces = 0;
  std::size_t parts = 0;  // the traced step's independent parts (ConcreteFunction::parts)
};

template <class Strategy>
SeedLoopResult run_seed_loop(Strategy& strategy, bool traced, const SeedLoopOptions& o = {}) {
  namespace ds = devtensor::distribute;
  std::optional<nn::Dense> layer;
  {
    auto guard = strategy.scope();
    layer.emplace(1, nn::DenseOptions{.input_dim = 2, .kernel_initializer = nn::initializers::Zeros{}});
  }
  const auto variables = layer->trainable_variables();
  std::vector<float> xs, ys;
  for (std::int64_t i = 0; i < o.examples; ++i) {
    const float a = static_cast<float>(i % 8) / 8, b = static_cast<float>(i / 8) / 8;
    xs.insert(xs.end(), {a, b});
    ys.push_back(3 * a - b + 1);
  }
  auto data = data::Dataset<float, float>::from_tensor_slices(constant<float>(xs, {o.examples, 2}),
                                                              constant<float>(ys, {o.examples, 1}));
  if (o.shuffle) data = data.shuffle(o.examples, 1);
  data = data.batch(o.batch);
  const auto loss_fn = nn::losses::MeanSquaredError{.reduction = nn::Reduction::NONE};
  const nn::optimizers::SGD sgd{.learning_rate = 0.5};
  const auto train_step = [&](const std::tuple<Tensor<float>, Tensor<float>>& batch) {
    const auto& [x, y] = batch;
    GradientTape tape;
    auto loss = nn::compute_average_loss(loss_fn(y, (*layer)(x)), o.batch);
    return std::pair{loss, tape.gradient(loss, variables)};
  };
  const auto distributed_step = [&](const ds::PerReplica<std::tuple<Tensor<float>, Tensor<float>>>& batch) {
    auto results = strategy.run(train_step, batch);
    ds::PerReplica<Tensor<float>> losses;
    std::vector<ds::PerReplica<Tensor<float>>> grads(variables.size());
    for (const auto& [loss, g] : results.values) {
      losses.values.push_back(loss);
      for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
    }
    std::vector<Tensor<float>> update;
    for (const auto& summed : strategy.batch_reduce_to(ds::ReduceOp::SUM, grads)) update.push_back(summed.primary());
    sgd.apply_gradients(update, variables);
    return strategy.reduce(ds::ReduceOp::SUM, losses, std::nullopt);
  };
  auto traced_step = function(distributed_step, {.name = "distributed_train_step"});
  SeedLoopResult result;
  for (int epoch = 0; epoch < o.epochs; ++epoch)
    for (const auto& batch : strategy.experimental_distribute_dataset(data))
      result.losses.push_back((traced ? traced_step(batch) : distributed_step(batch)).item());
  result.weights = layer->kernel().to_vector();
  result.weights.push_back(layer->bias().value().item());
  result.traces = traced_step.experimental_get_tracing_count();
  if (traced)
    for (const auto& batch : strategy.experimental_distribute_dataset(data)) {
      result.parts = traced_step.get_concrete_function(batch)->parts();
      break;
    }
  return result;
}

}  // namespace devtensor::test
