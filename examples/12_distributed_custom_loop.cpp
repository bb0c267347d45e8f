// Walkthrough 12: a custom distributed training loop, once with each cross-device op. The global
// batch of 16 is split across the replicas by experimental_distribute_dataset; strategy.run calls
// train_step on every replica at once; each replica scales its loss by the global batch
// (compute_average_loss), so summing gradients and losses across replicas gives global means.
// On three virtual CPUs here, or on whatever GPUs exist (DEVTENSOR_SIMULATED_GPUS=2: two).
#include <devtensor/distribute.hpp>
#include <devtensor/layers.hpp>

#include <cstdio>

namespace dt = devtensor;
namespace ds = dt::distribute;

template <class CrossDeviceOps>
double train(const char* label, CrossDeviceOps ops) {
  ds::MirroredStrategy strategy({}, ops);  // every GPU, else every (virtual) CPU
  std::optional<dt::nn::Dense> layer;
  {
    auto guard = strategy.scope();
    layer.emplace(1, dt::nn::DenseOptions{.input_dim = 2, .kernel_initializer = dt::nn::initializers::Zeros{}});
  }
  const auto variables = layer->trainable_variables();
  // y = 3 a - b + 1 on 64 points.
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
  const std::int64_t global_batch = 16;
  const auto loss_fn = dt::nn::losses::MeanSquaredError{.reduction = dt::nn::Reduction::NONE};

  auto train_step = [&](const std::tuple<dt::Tensor<float>, dt::Tensor<float>>& batch) {
    const auto& [x, y] = batch;
    dt::GradientTape tape;
    auto loss = dt::nn::compute_average_loss(loss_fn(y, (*layer)(x)), global_batch);
    return std::pair{loss, tape.gradient(loss, variables)};
  };
  double last = 0;
  for (int epoch = 0; epoch < 40; ++epoch) {
    double epoch_loss = 0;
    for (const auto& batch : strategy.experimental_distribute_dataset(data)) {
      auto results = strategy.run(train_step, batch);
      ds::PerReplica<dt::Tensor<float>> losses;
      std::vector<ds::PerReplica<dt::Tensor<float>>> grads(variables.size());
      for (const auto& [loss, g] : results.values) {
        losses.values.push_back(loss);
        for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
      }
      const auto summed = strategy.batch_reduce_to(ds::ReduceOp::SUM, grads);
      std::vector<dt::Tensor<float>> update;
      for (const auto& s : summed) update.push_back(s.primary());
      dt::nn::optimizers::SGD{.learning_rate = 0.5}.apply_gradients(update, variables);
      epoch_loss += strategy.reduce(ds::ReduceOp::SUM, losses, std::nullopt).item();
    }
    last = epoch_loss / 4;
  }
  const auto w = layer->kernel().to_vector();
  std::printf("%-26s %d replicas, final loss %.5f, kernel [%.3f, %.3f], bias %.3f\n", label,
              strategy.num_replicas_in_sync(), last, w[0], w[1], layer->bias().value().item());
  return last;
}

int main() {
  // Show the strategy's INFO lines ("Using MirroredStrategy with devices (...)", "Reduce to ... then
  // broadcast to (...)", "batch_all_reduce: ..."), as tf.get_logger().setLevel("INFO") does.
  dt::logging::set_verbosity(dt::LogSeverity::info);
  if (dt::config::list_physical_devices("GPU").empty())  // no GPUs: three logical CPUs instead
    dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}});
  const double a = train("ReductionToOneDevice", ds::ReductionToOneDevice{});
  const double b = train("HierarchicalCopyAllReduce", ds::HierarchicalCopyAllReduce{.num_packs = 1});
  return a < 0.01 && b < 0.01 ? 0 : 1;
}
