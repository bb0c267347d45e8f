// Walkthrough 15: the custom training loop of walkthrough 10 with its step traced, as TensorFlow's
// guides write it with @tf.function: the GradientTape, the loss and the optimizer's update become
// one graph, traced once per batch shape (32, and 8 for the last batch of 200) and replayed for
// every other batch. The traced loop's losses equal the eager loop's bit for bit.
//
//   @tf.function                                       auto train_step = dt::function(
//   def train_step(x, y):                                  [&](const dt::Tensor<float>& x,
//     with tf.GradientTape() as tape:                          const dt::Tensor<float>& y) {...},
//       loss = loss_fn(y, model(x))                        {.name = "train_step", .arg_names = {"x", "y"}});
//     grads = tape.gradient(loss, model.trainable_variables)
//     optimizer.apply_gradients(zip(grads, model.trainable_variables))
//     return loss
#include <devtensor/devtensor.hpp>

#include <cstdio>
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
  if (traced) std::printf("train_step traced %d times for %zu steps\n", train_step.experimental_get_tracing_count(), losses.size());
  return losses;
}
}  // namespace

int main() {
  const auto eager = train(false);
  const auto traced = train(true);
  const bool same = eager == traced;
  std::printf("traced losses %s the eager ones\n", same ? "equal" : "DIFFER FROM");
  return same && traced.back() < traced.front() ? 0 : 1;
}
