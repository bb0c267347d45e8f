// Walkthrough 9: Keras-style training. The seeds' model: one Dense unit learns to map 1 to 1 with
// mean squared error and SGD, on a dataset of 100 copies of (1, 1) in batches of 10. fit() draws
// Keras's progress bar on a terminal (one line per epoch in logs) and returns the loss history;
// evaluate() reports the loss after training.
#include <devtensor/keras.hpp>

#include <iostream>

namespace dt = devtensor;

int main() {
  auto x = dt::constant<float>({1});
  auto y = dt::constant<float>({1});
  auto ds = dt::data::Dataset<float, float>::from_tensors(x, y).repeat(100).batch(10);

  dt::nn::Sequential model({dt::nn::Dense(1, {.input_dim = 1})});
  model.compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = 0.2});
  model.summary();

  auto history = model.fit(ds, {.epochs = 2});
  const double loss = model.evaluate(ds);
  std::cout << "loss per epoch: " << history.loss[0] << ", " << history.loss[1] << "; evaluate: " << loss << "\n";
  std::cout << "prediction for 1: " << model.predict(dt::constant<float>({1}, {1, 1})).item() << "\n";
  std::cout << "variables on " << model.trainable_variables()[0].device() << "\n";
  const bool learned = history.loss[1] < history.loss[0] && loss <= history.loss[1];
  return learned ? 0 : 1;
}
