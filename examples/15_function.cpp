// Walkthrough 15: training steps traced, as TensorFlow's guides write them with @tf.function.
// Part 1: the custom training loop of walkthrough 10: the GradientTape, the loss and the optimizer's
// update become one graph, traced once per batch shape (32, and 8 for the last batch of 200) and
// replayed for every other batch; the traced loop's losses equal the eager loop's bit for bit.
// Part 2: the distributed custom loop (walkthrough 12, the seed's distributed_train_step):
// strategy.run, the gradients' all-reduce, the update of the mirrored variables and
// strategy.reduce traced once for the whole loop.
//
//   @tf.function                                       auto train_step = dt::function(
//   def train_step(x, y):                                  [&](const dt::Tensor<float>& x,
//     with tf.GradientTape() as tape:                          const dt::Tensor<float>& y) {...},
//       loss = loss_fn(y, model(x))                        {.name = "train_step", .arg_names = {"x", "y"}});
//     grads = tape.gradient(loss, model.trainable_variables)
//     optimizer.apply_gradients(zip(grads, model.trainable_variables))
//     return loss
#include <devtensor/distribute.hpp>
#include <devtensor/keras.hpp>

#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace dt = devtensor;

namespace {
/// Five epochs of logistic regression on two clusters; the step traced or not.
std::vector<float> train(bool traced) {
  constexpr std::size_t n = 200;
  auto noise = dt::random_normal<float>(dt::Shape({n, 2}), {.stddev = 0.5, .seed = 1}).to_vector();
  std::vector<float> features(n * 2), labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float centre = i % 2 ? 1.0f : -1.0f;
    features[2 * i] = centre + noise[2 * i];
    features[2 * i + 1] = centre + noise[2 * i + 1];
    labels[i] = i % 2 ? 1.0f : 0.0f;
  }
  auto ds = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(features, {n, 2}),
                                                                dt::constant<float>(labels, {n, 1}))
                .shuffle(n, 7)
                .batch(32);
  dt::nn::Dense classifier(1, {.input_dim = 2, .kernel_initializer = dt::nn::initializers::GlorotUniform{.seed = 3}});
  dt::nn::losses::BinaryCrossentropy loss_fn{.from_logits = true};
  dt::nn::optimizers::SGD optimizer{.learning_rate = 0.5};
  const auto variables = classifier.trainable_variables();

  const auto step = [&](const dt::Tensor<float>& x, const dt::Tensor<float>& y) {
    dt::GradientTape tape;
    auto loss = loss_fn(y, classifier(x));
    optimizer.apply_gradients(tape.gradient(loss, variables), variables);
    return loss;
  };
  auto train_step = dt::function(step, {.name = "train_step", .arg_names = {"x", "y"}});

  std::vector<float> losses;
  for (int epoch = 0; epoch < 5; ++epoch) {
    double total = 0;
    int batches = 0;
    for (const auto& [xb, yb] : ds) {
      const float loss = (traced ? train_step(xb, yb) : step(xb, yb)).item();
      losses.push_back(loss);
      total += loss;
      ++batches;
    }
    std::printf("%s epoch %d: mean batch loss %.4f\n", traced ? "traced" : "eager ", epoch + 1, total / batches);
  }
  if (traced)
    std::printf("train_step traced %d times for %zu steps\n", train_step.experimental_get_tracing_count(),
                losses.size());
  return losses;
}

/// The seed's distributed loop: y = 3a - b + 1, MirroredStrategy over every GPU (else two virtual
/// CPUs), the global batch of 16 split across the replicas. Returns the last epoch's mean loss.
double distributed(bool traced) {
  namespace ds = dt::distribute;
  ds::MirroredStrategy strategy;
  std::optional<dt::nn::Dense> layer;
  {
    auto guard = strategy.scope();
    layer.emplace(1, dt::nn::DenseOptions{.input_dim = 2, .kernel_initializer = dt::nn::initializers::Zeros{}});
  }
  const auto variables = layer->trainable_variables();
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    const float a = static_cast<float>(i % 8) / 8, b = static_cast<float>(i / 8) / 8;
    xs.insert(xs.end(), {a, b});
    ys.push_back(3 * a - b + 1);
  }
  auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(xs, {64, 2}),
                                                                  dt::constant<float>(ys, {64, 1}))
                  .shuffle(64, 1)
                  .batch(16);
  const auto loss_fn = dt::nn::losses::MeanSquaredError{.reduction = dt::nn::Reduction::NONE};
  const dt::nn::optimizers::SGD optimizer{.learning_rate = 0.5};
  const auto train_step = [&](const std::tuple<dt::Tensor<float>, dt::Tensor<float>>& batch) {
    const auto& [x, y] = batch;
    dt::GradientTape tape;
    auto loss = dt::nn::compute_average_loss(loss_fn(y, (*layer)(x)), 16);
    return std::pair{loss, tape.gradient(loss, variables)};
  };
  const auto step = [&](const ds::PerReplica<std::tuple<dt::Tensor<float>, dt::Tensor<float>>>& batch) {
    auto results = strategy.run(train_step, batch);
    ds::PerReplica<dt::Tensor<float>> losses;
    std::vector<ds::PerReplica<dt::Tensor<float>>> grads(variables.size());
    for (const auto& [loss, g] : results.values) {
      losses.values.push_back(loss);
      for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
    }
    std::vector<dt::Tensor<float>> update;
    for (const auto& summed : strategy.batch_reduce_to(ds::ReduceOp::SUM, grads)) update.push_back(summed.primary());
    optimizer.apply_gradients(update, variables);
    return strategy.reduce(ds::ReduceOp::SUM, losses, std::nullopt);
  };
  auto distributed_train_step = dt::function(step, {.name = "distributed_train_step"});
  double last = 0;
  for (int epoch = 0; epoch < 20; ++epoch) {
    double total = 0;
    for (const auto& batch : strategy.experimental_distribute_dataset(data))
      total += (traced ? distributed_train_step(batch) : step(batch)).item();
    last = total / 4;
  }
  std::printf("%s distributed loop, %d replicas: final loss %.6f", traced ? "traced" : "eager ",
              strategy.num_replicas_in_sync(), last);
  if (traced)
    std::printf(", distributed_train_step traced %d time(s)", distributed_train_step.experimental_get_tracing_count());
  std::printf("\n");
  return last;
}
}  // namespace

int main() {
  if (dt::config::list_physical_devices("GPU").empty())  // part 2 without GPUs: two logical CPUs
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  const auto eager = train(false);
  const auto traced = train(true);
  const bool same = eager == traced;
  std::printf("traced losses %s the eager ones\n", same ? "equal" : "DIFFER FROM");
  const double eager_loss = distributed(false);
  const double traced_loss = distributed(true);
  const bool close = std::abs(eager_loss - traced_loss) <= 1e-6;
  return same && close && traced.back() < traced.front() && traced_loss < 0.01 ? 0 : 1;
}
