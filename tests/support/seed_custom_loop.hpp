#pragma once
// Seed 001's custom training loop exactly as its TensorFlow program writes it, and TensorFlow
// 2.21's numbers for it (tests/reference/seed_custom_loop.py printed them): Sequential([Dense(1)])
// with the kernel 0.5 and a zero bias, BinaryCrossentropy(from_logits, NONE) averaged over the
// global batch of 10, `from_tensors(([1.], [1.])).repeat(1000).batch(10)`, and a step that
// calls apply_gradients *inside* strategy.run (the replicas' gradients meet in merge_call). The
// same model through Keras's fit (traced) has figures of its own.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
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
    return replicas == 4
               ? SeedLoopFigures{0.4740769565, 0.4712329805, 0.4684155285, 0.2855520844, 0.8060636520, 0.3060639501}
               : SeedLoopFigures{0.4740769863, 0.4712329507, 0.4684155583, 0.2855520844, 0.8060636520, 0.3060639501};
  return replicas == 4
             ? SeedLoopFigures{0.4740769565, 0.4733223617, 0.4725687802, 0.4052395821, 0.5978618860, 0.0978617519}
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
    model.emplace(
        std::vector<nn::Layer>{nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Constant{0.5}})});
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
  const auto data =
      data::Dataset<float, float>::from_tensors(constant<float>({1.0f}, {1}), constant<float>({1.0f}, {1}))
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

/// The same model compiled with BinaryCrossentropy(from_logits) and `which` under `strategy`, fit
/// (traced) over 1000 ones, batch 10, 2 epochs, no shuffling: the epochs' losses and every
/// replica's copy of the kernel and bias.
struct SeedFitResult {
  std::vector<double> losses;
  std::vector<float> kernels, biases;  // per component
};
template <class Strategy>
SeedFitResult run_seed_fit(Strategy& strategy, SeedOptimizer which) {
  nn::clear_session();
  std::optional<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    model.emplace(
        std::vector<nn::Layer>{nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Constant{0.5}})});
    model->compile(nn::losses::BinaryCrossentropy{.from_logits = true}, seed_optimizer(which));
  }
  const auto ones = fill<float>(Shape{1000, 1}, 1.0f);
  SeedFitResult out;
  out.losses = model->fit(ones, ones, {.epochs = 2, .batch_size = 10, .verbose = 0, .shuffle = false}).loss;
  const auto variables = model->trainable_variables();
  for (std::size_t c = 0; c < variables[0].num_components(); ++c) {
    out.kernels.push_back(variables[0].component(c).to_vector().at(0));
    out.biases.push_back(variables[1].component(c).to_vector().at(0));
  }
  return out;
}

/// Collects figures more than 1e-6 from TensorFlow's into one predicate result.
class FigureCheck {
 public:
  void operator()(const char* what, double value, double expected) {
    if (std::abs(value - expected) <= 1e-6) return;
    result_ = false;
    result_.message() << what << " " << value << " != TensorFlow's " << expected << "; ";
  }
  void fail(const std::string& why) {
    result_ = false;
    result_.message() << why;
  }
  [[nodiscard]] boost::test_tools::predicate_result result() const { return result_; }

 private:
  boost::test_tools::predicate_result result_{true};
};

inline boost::test_tools::predicate_result matches(const SeedFitResult& got, const SeedFitFigures& want) {
  FigureCheck check;
  if (got.losses.size() != 2) {
    check.fail(std::to_string(got.losses.size()) + " epochs, not 2");
    return check.result();
  }
  check("epoch 0's loss", got.losses[0], want.epoch0);
  check("epoch 1's loss", got.losses[1], want.epoch1);
  for (float k : got.kernels) check("kernel", k, want.kernel);
  for (float b : got.biases) check("bias", b, want.bias);
  return check.result();
}

/// Whether `got` is within 1e-6 of TensorFlow's figures, with a message naming what differs.
inline boost::test_tools::predicate_result matches(const SeedCustomLoopResult& got, const SeedLoopFigures& want) {
  FigureCheck check;
  if (got.losses.size() != 100) {
    check.fail(std::to_string(got.losses.size()) + " steps, not 100");
    return check.result();
  }
  check("loss[0]", got.losses[0], want.loss0);
  check("loss[1]", got.losses[1], want.loss1);
  check("loss[2]", got.losses[2], want.loss2);
  check("loss[99]", got.losses[99], want.loss99);
  check("kernel", got.kernel, want.kernel);
  check("bias", got.bias, want.bias);
  return check.result();
}

}  // namespace devtensor::test
