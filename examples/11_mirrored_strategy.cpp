// Walkthrough 11: data parallelism with MirroredStrategy. The seeds' model, written as they write
// it (Keras's functional API: Input, Dense(1), Model), is built inside the strategy's scope, so
// its variables are mirrored on every replica device; fit() splits each
// global batch across the replicas, runs them concurrently, sums their gradients with the chosen
// cross-device ops and updates every replica alike. On two virtual CPUs here, or on whatever
// GPUs exist (simulated ones with DEVTENSOR_SIMULATED_GPUS=2; real ones with NCCL when built as
// 11_mirrored_strategy_nccl, which links the devtensor::nccl component).
#include <devtensor/distribute.hpp>
#include <devtensor/keras.hpp>

#include <iostream>

namespace dt = devtensor;
namespace ds = dt::distribute;

int main() {
  if (dt::config::list_physical_devices("GPU").empty())  // no GPUs: two logical CPUs instead
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  ds::MirroredStrategy strategy;  // every GPU, else every CPU; the cross-device ops TensorFlow would pick
  std::cout << "replicas: " << strategy.num_replicas_in_sync()
            << ", cross-device ops: " << strategy.cross_device_ops().chosen_description() << "\n";

  std::optional<dt::nn::Model> model;
  {
    auto guard = strategy.scope();  // variables created here are mirrored
    auto inputs = dt::nn::Input({1});
    auto predictions = dt::nn::Dense(1)(inputs);
    model.emplace(inputs, predictions);
    model->compile("mse", dt::nn::optimizers::SGD{.learning_rate = 0.2});
  }
  model->summary();
  auto x = dt::constant<float>({1});
  auto y = dt::constant<float>({1});
  auto ds_ = dt::data::Dataset<float, float>::from_tensors(x, y).repeat(100).batch(10);
  auto history = model->fit(ds_, {.epochs = 2});
  const double loss = model->evaluate(ds_);

  const auto kernel = model->trainable_variables()[0];
  for (const auto& component : strategy.experimental_local_results(kernel))
    std::cout << "kernel on " << component.device() << ": " << component.item() << "\n";
  bool identical = true;  // every replica's kernel equals replica 0's (one replica on a 1-GPU machine)
  for (std::size_t i = 1; i < kernel.num_components(); ++i)
    identical = identical && kernel.component(i).to_vector() == kernel.component(0).to_vector();
  std::cout << "loss per epoch: " << history.loss[0] << ", " << history.loss[1] << "; evaluate: " << loss
            << (identical ? "; replicas identical\n" : "; replicas DIFFER\n");
  return identical && history.loss[1] < history.loss[0] ? 0 : 1;
}
