// Walkthrough 17: asynchronous training with parameter servers, TensorFlow's "Parameter server
// training" guide (custom training loop). One process per task: the chief runs this program and
// schedules training steps; each worker runs them on its own data, as soon as it is free; the ps
// task holds the variables and runs Adam's update for every step a worker sends. No worker waits
// for another. On one machine (Open MPI; rank 0 the chief, then the workers, then the ps tasks):
//
//   mpiexec -n 4 ./17_parameter_server        # chief, 2 workers, 1 ps
//
// With TF_CONFIG set (its "cluster" with chief, worker and ps jobs), that cluster is used; under
// mpiexec its "task" may be left out: each rank knows its place. Without TF_CONFIG the launch is
// the cluster (ParameterServerStrategyOptions::num_ps_from_launch ps tasks, last; default 1).
// README.md's snippet is lines of this file (test docs.readme_snippets).
#include <devtensor/coordinator.hpp>

#include <iostream>
#include <optional>
#include <string>

namespace dt = devtensor;
namespace ds = dt::distribute;
namespace dc = dt::distribute::coordinator;

int main() {
  ds::ParameterServerStrategy strategy;  // TF_CONFIG, else the launch; a ps task serves in here
  dc::ClusterCoordinator coordinator(strategy);

  // The model and its optimizer: the variables live on the ps task.
  std::optional<dt::nn::Dense> layer;
  std::optional<dt::Variable<std::int64_t>> steps_done;
  {
    auto scope = strategy.scope();
    layer.emplace(1, dt::nn::DenseOptions{.input_dim = 2});
    steps_done.emplace(dt::scalar<std::int64_t>(0), dt::VariableOptions{.name = "steps_done", .trainable = false});
  }
  const auto variables = layer->trainable_variables();
  const dt::nn::optimizers::Adam adam{.learning_rate = 0.1};

  // Every worker builds its own dataset (here: y = 3a - b + 1, shuffled with the worker's seed).
  auto per_worker = coordinator.create_per_worker_dataset([&] {
    std::vector<float> xs, ys;
    for (int i = 0; i < 256; ++i) {
      const float a = static_cast<float>(i % 16) / 16, b = static_cast<float>(i / 16) / 16;
      xs.insert(xs.end(), {a, b});
      ys.push_back(3 * a - b + 1);
    }
    return dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(xs, {256, 2}),
                                                               dt::constant<float>(ys, {256, 1}))
        .shuffle(256, static_cast<std::uint64_t>(strategy.task_id()) + 1)
        .batch(32)
        .repeat();
  });
  auto iterator = per_worker.iterator();

  // One training step, run by whichever worker is free: its gradients go to the ps task, where Adam runs.
  auto train_step = coordinator.function([&](dc::PerWorkerIterator<float, float>& it) -> dt::Tensor<float> {
    const auto [x, y] = it.next();  // this worker's data; OutOfRangeError at its end
    dt::GradientTape tape;
    auto loss = dt::nn::losses::MeanSquaredError{}(y, (*layer)(x));
    adam.apply_gradients(tape.gradient(loss, variables), variables);
    steps_done->assign_add(dt::scalar<std::int64_t>(1));
    return loss;
  });

  constexpr int kSteps = 300;
  dc::RemoteValue<dt::Tensor<float>> first, last;
  for (int i = 0; i < kSteps; ++i) {
    auto loss = coordinator.schedule(train_step, iterator);  // returns at once: a RemoteValue
    if (i == 0) first = loss;
    last = loss;
  }
  coordinator.join();  // every step has run on some worker

  // Only the chief gets here: the values come from the ps task.
  const auto kernel = layer->kernel().to_vector();
  const float bias = layer->bias().value().item();
  std::cout << strategy.num_workers() << " workers, " << strategy.num_ps()
            << " ps task(s): " << steps_done->read_value().item() << " steps applied; loss " << first.fetch().item()
            << " -> " << last.fetch().item() << "; y = " << kernel[0] << " a + " << kernel[1] << " b + " << bias
            << " (target 3 a - 1 b + 1)\n";
  return last.fetch().item() < 0.01f && steps_done->read_value().item() == kSteps ? 0 : 1;
}
