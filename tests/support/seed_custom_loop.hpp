#pragma once
// Seed 001's custom training loop exactly as its TensorFlow program writes it, and TensorFlow
// 2.21's numbers for it (tests/reference/seed_custom_loop.py printed them): Sequential([Dense(1)])
// with the kernel 0.5 and a zero bias, BinaryCrossentropy(from_logits, NONE) averaged over the
// global batch of 10, `from_tensors(([1.], [1.])).repeat(1000).batch(10)`, and a step that
// calls apply_gradients *inside* strategy.run (the replicas' gradients meet in merge_call). The
// same model through Keras's fit (traced) has figures of its own.
#include <cmath>
#include <cstddef>
#include <optional>
#include <tuple>
#include <vector>

#include "devtensor/devtensor.hpp"

namespace devtensor::test {

enum class SeedOptimizer { sgd, adam };

/// What TensorFlow printed for one configuration.
struct SeedLoopFigures {
  double loss0, loss1, loss2, loss99, kernel, bias;
};
/// The custom loop's figures by optimizer and replicas (2 and 3 print the same numbers; 4 differs
/// in the 8th digit of the first losses, TensorFlow's own sum order).
inline SeedLoopFigures tensorflow_custom_loop(SeedOptimizer optimizer, int replicas) {
  if (optimizer == SeedOptimizer::sgd)
    return replicas == 4 ? SeedLoopFigures{0.4740769565, 0.4712329805, 0.4684155285, 0.2855520844, 0.8060636520, 0.3060639501}
                         : SeedLoopFigures{0.4740769863, 0.4712329507, 0.4684155583, 0.2855520844, 0.8060636520, 0.3060639501};
  return replicas == 4 ? SeedLoopFigures{0.4740769565, 0.4733223617, 0.4725687802, 0.4052395821, 0.5978618860, 0.0978617519}
                       : SeedLoopFigures{0.4740769863, 0.4733223915, 0.4725687504, 0.4052395821, 0.5978618860, 0.0978617519};
}
/// Keras fit (traced) over 1000 ones, batch 10, 2 epochs, no shuffling: the epochs' losses and the
/// weights after them (the same with 1 and 2 replicas).
struct SeedFitFigures {
  double epoch0, epoch1, kernel, bias;
};
inline SeedFitFigures tensorflow_fit(SeedOptimizer optimizer) {
  return optimizer == SeedOptimizer::sgd ? SeedFitFigures{0.3668525219, 0.2356100231, 1.0157186985, 0.5157192349}
                                         : SeedFitFigures{0.4386382997, 0.3752134144, 0.6898397803, 0.1898393929};
}

inline nn::Optimizer seed_optimizer(SeedOptimizer o) {
  return o == SeedOptimizer::sgd ? nn::Optimizer(nn::optimizers::SGD{}) : nn::Optimizer(nn::optimizers::Adam{});
}

struct SeedCustomLoopResult {
  std::vector<float> losses;  // every step's (100)
  float kernel = 0, bias = 0;
  int traces = 0;
  std::size_t parts = 0;  // the traced step's parts that run at once (ConcreteFunction::parts)
};

/// The loop under `strategy` (its scope makes the model), traced by dt::function or eager.
template <class Strategy>
SeedCustomLoopResult run_seed_custom_loop(Strategy& strategy, SeedOptimizer which, bool traced) {
  namespace ds = devtensor::distribute;
  constexpr std::int64_t global_batch = 10;
  const nn::Optimizer optimizer = seed_optimizer(which);
  std::optional<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    model.emplace(std::vector<nn::Layer>{
        nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Constant{0.5}})});
  }
  const auto variables = model->trainable_variables();
  const nn::losses::BinaryCrossentropy loss_object{.from_logits = true, .reduction = nn::Reduction::NONE};
  const auto train_step = [&](const std::tuple<Tensor<float>, Tensor<float>>& inputs) {
    const auto& [x, y] = inputs;
    GradientTape tape;
    auto loss = nn::compute_average_loss(loss_object(y, (*model)(x)), global_batch);
    optimizer.apply_gradients(tape.gradient(loss, variables), variables);
    return loss;
  };
  const auto distributed_train_step = [&](const ds::PerReplica<std::tuple<Tensor<float>, Tensor<float>>>& inputs) {
    return strategy.reduce(ds::ReduceOp::SUM, strategy.run(train_step, inputs), std::nullopt);
  };
  auto step = function(distributed_train_step, {.name = "distributed_train_step"});
  const auto data = data::Dataset<float, float>::from_tensors(constant<float>({1.0f}, {1}), constant<float>({1.0f}, {1}))
                        .repeat(1000)
                        .batch(global_batch);
  SeedCustomLoopResult result;
  for (const auto& batch : strategy.experimental_distribute_dataset(data))
    result.losses.push_back((traced ? step(batch) : distributed_train_step(batch)).item());
  result.kernel = variables[0].to_vector().at(0);
  result.bias = variables[1].to_vector().at(0);
  result.traces = step.experimental_get_tracing_count();
  if (traced)
    for (const auto& batch : strategy.experimental_distribute_dataset(data)) {
      result.parts = step.get_concrete_function(batch)->parts();
      break;
    }
  return result;
}

/// Whether `got` is within 1e-6 of TensorFlow's figures, with a message naming what differs.
inline boost::test_tools::predicate_result matches(const SeedCustomLoopResult& got, const SeedLoopFigures& want) {
  boost::test_tools::predicate_result result(true);
  const auto check = [&](const char* what, double value, double expected) {
    if (std::abs(value - expected) <= 1e-6) return;
    result = false;
    result.message() << what << " " << value << " != TensorFlow's " << expected << "; ";
  };
  if (got.losses.size() != 100) {
    result = false;
    result.message() << got.losses.size() << " steps, not 100";
    return result;
  }
  check("loss[0]", got.losses[0], want.loss0);
  check("loss[1]", got.losses[1], want.loss1);
  check("loss[2]", got.losses[2], want.loss2);
  check("loss[99]", got.losses[99], want.loss99);
  check("kernel", got.kernel, want.kernel);
  check("bias", got.bias, want.bias);
  return result;
}

}  // namespace devtensor::test
