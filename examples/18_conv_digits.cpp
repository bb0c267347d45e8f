// Walkthrough 18: a convolutional network under MirroredStrategy — TensorFlow's "Distributed
// training with Keras" tutorial, with the tutorial's model unchanged:
//   Conv2D(32, 3, relu) -> MaxPooling2D -> Flatten -> Dense(64, relu) -> Dense(10),
//   SparseCategoricalCrossentropy(from_logits=True), Adam, accuracy,
// built in the strategy's scope. Its data here is the shipped digits (1797 images of 8x8x1,
// examples/data/digits.csv) in place of MNIST's 28x28x1, which cannot be downloaded: a 3x3
// convolution is as legal on 8x8. The last 20 % are held out; the accuracy on them is reported,
// 12 epochs as the tutorial trains.
// Two replicas: two logical CPUs here, two GPUs with DEVTENSOR_SIMULATED_GPUS=2 (or real ones: the
// convolutions and pools run there through cuDNN when the program links devtensor::cudnn, else
// through devtensor::cuda's patches + cuBLAS bodies).
#include <devtensor/distribute.hpp>
#include <devtensor/keras.hpp>

#include "digits.hpp"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace dt = devtensor;
namespace nn = dt::nn;

int main(int argc, char** argv) {
  if (dt::config::list_physical_devices("GPU").empty())  // no GPUs: two logical CPUs instead (before any op)
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  const auto [pixels, y] = read_digits(argc > 1 ? argv[1] : DEVTENSOR_EXAMPLES_DATA_DIR "/digits.csv");
  const auto x = dt::reshape(pixels, {-1, 8, 8, 1});  // the digits as 8x8x1 images
  dt::distribute::MirroredStrategy strategy;
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";

  std::optional<nn::Sequential> model;
  {
    auto guard = strategy.scope();
    const auto seeded = [](std::uint64_t seed) { return nn::initializers::GlorotUniform{.seed = seed}; };
    model.emplace(
        std::vector<nn::Layer>{nn::Conv2D(32, 3,
                                          {.activation = nn::Activation::relu,
                                           .kernel_initializer = seeded(1),
                                           .input_shape = nn::PartialShape{8, 8, 1}}),
                               nn::MaxPooling2D(), nn::Flatten(),
                               nn::Dense(64, {.activation = nn::Activation::relu, .kernel_initializer = seeded(2)}),
                               nn::Dense(10, {.kernel_initializer = seeded(3)})});
    model->compile(nn::losses::SparseCategoricalCrossentropy{.from_logits = true}, nn::optimizers::Adam{},
                   {.metrics = {"accuracy"}});
  }
  model->summary();

  // The tutorial's pipeline: a global batch of 64 per replica, shuffled every epoch.
  const std::int64_t n = x.shape()[0], train = n * 4 / 5;
  const auto x_train = dt::slice(x, {0, 0, 0, 0}, {train, 8, 8, 1});
  const auto y_train = dt::slice(y, {0}, {train});
  const auto x_test = dt::slice(x, {train, 0, 0, 0}, {n - train, 8, 8, 1});
  const auto y_test = dt::slice(y, {train}, {n - train});
  const std::int64_t global_batch = 64 * strategy.num_replicas_in_sync();
  auto train_dataset =
      dt::data::Dataset<float, float>::from_tensor_slices(x_train, y_train).shuffle(train, 4).batch(global_batch);
  const auto history = model->fit(train_dataset, {.epochs = 12, .verbose = 2});
  const auto evaluation = model->evaluate(x_test, y_test, {.verbose = 0});
  const double accuracy = evaluation.metrics.at("accuracy");
  std::cout << "Eval loss: " << evaluation.loss << ", Eval accuracy: " << accuracy << " (" << n - train
            << " held-out digits)\n";
  // TensorFlow 2.21 on the same program (other initial values): last epoch's loss 0.25, accuracy 0.87.
  return accuracy > 0.85 && history.loss.back() < 0.5 * history.loss.front() ? 0 : 1;
}
