// Walkthrough 13: multi-worker training, TensorFlow's tutorial program. Each process is one worker
// of the cluster in TF_CONFIG; MultiWorkerMirroredStrategy mirrors the model on every worker, each
// worker trains on its share of every global batch, and gradients are summed across the workers
// through MPI. Launch two workers on this machine (Open MPI; MPMD: each gets its task index):
//
//   mpiexec -n 1 ./13_multi_worker 0 : -n 1 ./13_multi_worker 1
//
// With no index and no TF_CONFIG, `mpiexec -n 4 ./13_multi_worker` makes the launch the cluster;
// run alone, it is a single worker.
#include <devtensor/distribute/multi_worker/multi_worker_mirrored_strategy.hpp>
#include <devtensor/keras.hpp>

#include <cstdlib>
#include <iostream>
#include <string>

namespace dt = devtensor;
namespace ds = dt::distribute;

int main(int argc, char** argv) {
  if (argc > 1) {  // as the tutorial does: the same cluster everywhere, this worker's index
    const std::string tf_config =
        R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": {"type": "worker", "index": )" +
        std::string(argv[1]) + "}}";
    ::setenv("TF_CONFIG", tf_config.c_str(), 1);
  }
  dt::logging::set_verbosity(dt::LogSeverity::info);  // the strategy's start-up lines
  ds::MultiWorkerMirroredStrategy strategy;
  dt::logging::set_verbosity(dt::LogSeverity::warning);

  // y = 2x - 1 on 64 points, in global batches of 16: each of W workers takes 16 / W of each.
  std::vector<float> xs, ys;
  for (int i = 0; i < 64; ++i) {
    const float x = static_cast<float>(i) / 64;
    xs.push_back(x);
    ys.push_back(2 * x - 1);
  }
  auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(xs, {64, 1}),
                                                                  dt::constant<float>(ys, {64, 1}))
                  .batch(16);
  std::optional<dt::nn::Sequential> model;
  {
    auto guard = strategy.scope();  // variables: one copy per worker, initial values from the chief
    model.emplace(std::vector<dt::nn::Layer>{dt::nn::Dense(1, {.input_dim = 1})});
    model->compile(dt::nn::losses::MeanSquaredError{}, dt::nn::optimizers::SGD{.learning_rate = 0.5});
  }
  const auto history = model->fit(data, {.epochs = 30, .verbose = strategy.is_chief() ? 2 : 0});
  const auto kernel = model->trainable_variables()[0].to_vector();
  const auto bias = model->trainable_variables()[1].to_vector();
  std::cout << "worker " << strategy.worker_index() << " of " << strategy.num_workers() << " ("
            << strategy.num_replicas_in_sync() << " replicas in sync): loss " << history.loss.front() << " -> "
            << history.loss.back() << ", kernel " << kernel[0] << ", bias " << bias[0] << "\n";
  return history.loss.back() < 0.01 ? 0 : 1;
}
