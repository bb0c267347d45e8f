// Walkthrough 10: a custom training loop. Logistic regression on two separable clusters, written
// with the pieces fit() uses: a Dataset, a GradientTape around the forward pass, a loss
// (BinaryCrossentropy on logits), gradients for the trainable variables and an SGD step.
#include <devtensor/layers.hpp>

#include <cstdio>
#include <iostream>

namespace dt = devtensor;

int main() {
  // 200 points: class 1 around (+1, +1), class 0 around (-1, -1).
  constexpr std::size_t n = 200;
  auto noise = dt::random_normal<float>(dt::Shape({n, 2}), {.stddev = 0.5, .seed = 1}).to_vector();
  std::vector<float> features(n * 2), labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float centre = i % 2 ? 1.0f : -1.0f;
    features[2 * i] = centre + noise[2 * i];
    features[2 * i + 1] = centre + noise[2 * i + 1];
    labels[i] = i % 2 ? 1.0f : 0.0f;
  }
  auto x = dt::constant<float>(features, {n, 2});
  auto y = dt::constant<float>(labels, {n, 1});
  auto ds = dt::data::Dataset<float, float>::from_tensor_slices(x, y).shuffle(n, 7).batch(32);

  dt::nn::Dense classifier(1, {.input_dim = 2, .kernel_initializer = dt::nn::initializers::GlorotUniform{.seed = 3}});
  dt::nn::losses::BinaryCrossentropy loss_fn{.from_logits = true};
  dt::nn::optimizers::SGD optimizer{.learning_rate = 0.5};
  const auto variables = classifier.trainable_variables();

  double first = 0, last = 0;
  for (int epoch = 0; epoch < 5; ++epoch) {
    double total = 0;
    int batches = 0;
    for (const auto& [xb, yb] : ds) {
      dt::GradientTape tape;
      auto logits = classifier(xb);
      auto loss = loss_fn(yb, logits);
      optimizer.apply_gradients(tape.gradient(loss, variables), variables);
      total += loss.item();
      ++batches;
    }
    last = total / batches;
    if (epoch == 0) first = last;
    std::printf("epoch %d: mean batch loss %.4f\n", epoch + 1, last);
  }
  // Accuracy: logits > 0 predict class 1.
  auto logits = classifier(x).to_vector();
  std::size_t correct = 0;
  for (std::size_t i = 0; i < n; ++i) correct += (logits[i] > 0) == (labels[i] > 0.5f);
  std::printf("accuracy %.1f%%, kernel [%.3f, %.3f]\n", 100.0 * static_cast<double>(correct) / n,
              classifier.kernel().to_vector()[0], classifier.kernel().to_vector()[1]);
  return last < first && correct > n * 9 / 10 ? 0 : 1;
}
