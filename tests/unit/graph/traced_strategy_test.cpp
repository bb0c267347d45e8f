// A distributed train step traced once for the whole loop (seed 001's distributed_train_step, as
// TensorFlow 2.21 traces it): strategy.run, batch_reduce_to, apply_gradients on mirrored variables
// and strategy.reduce inside dt::function give the eager loop's losses and weights.
#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace ds = devtensor::distribute;

namespace {

struct Result {
  std::vector<float> losses;
  std::vector<float> weights;
  int traces = 0;
};

template <class Ops>
Result train(bool traced, Ops ops) {
  ds::MirroredStrategy strategy({}, ops);
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
  auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(xs, {64, 2}), dt::constant<float>(ys, {64, 1}))
                  .shuffle(64, 1)
                  .batch(16);
  const auto loss_fn = dt::nn::losses::MeanSquaredError{.reduction = dt::nn::Reduction::NONE};
  const dt::nn::optimizers::SGD sgd{.learning_rate = 0.5};
  const auto train_step = [&](const std::tuple<dt::Tensor<float>, dt::Tensor<float>>& batch) {
    const auto& [x, y] = batch;
    dt::GradientTape tape;
    auto loss = dt::nn::compute_average_loss(loss_fn(y, (*layer)(x)), 16);
    return std::pair{loss, tape.gradient(loss, variables)};
  };
  const auto distributed_step = [&](const ds::PerReplica<std::tuple<dt::Tensor<float>, dt::Tensor<float>>>& batch) {
    auto results = strategy.run(train_step, batch);
    ds::PerReplica<dt::Tensor<float>> losses;
    std::vector<ds::PerReplica<dt::Tensor<float>>> grads(variables.size());
    for (const auto& [loss, g] : results.values) {
      losses.values.push_back(loss);
      for (std::size_t k = 0; k < g.size(); ++k) grads[k].values.push_back(g[k]);
    }
    std::vector<dt::Tensor<float>> update;
    for (const auto& s : strategy.batch_reduce_to(ds::ReduceOp::SUM, grads)) update.push_back(s.primary());
    sgd.apply_gradients(update, variables);
    return strategy.reduce(ds::ReduceOp::SUM, losses, std::nullopt);
  };
  auto traced_step = dt::function(distributed_step, {.name = "distributed_train_step"});
  Result result;
  for (int epoch = 0; epoch < 5; ++epoch)
    for (const auto& batch : strategy.experimental_distribute_dataset(data))
      result.losses.push_back((traced ? traced_step(batch) : distributed_step(batch)).item());
  result.weights = layer->kernel().to_vector();
  result.weights.push_back(layer->bias().value().item());
  result.traces = traced_step.experimental_get_tracing_count();
  return result;
}

void check_traced_equals_eager(auto ops) {
  const auto eager = train(false, ops);
  const auto traced = train(true, ops);
  BOOST_TEST(traced.traces == 1);  // once for the whole loop
  BOOST_TEST_REQUIRE(traced.losses.size() == eager.losses.size());
  for (std::size_t i = 0; i < eager.losses.size(); ++i) BOOST_TEST(traced.losses[i] == eager.losses[i], boost::test_tools::tolerance(1e-6f));
  for (std::size_t i = 0; i < eager.weights.size(); ++i) BOOST_TEST(traced.weights[i] == eager.weights[i], boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(traced.losses.back() < traced.losses.front());
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(traced_strategy, dt::test::FreshContext)

BOOST_AUTO_TEST_CASE(three_virtual_cpus) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}, {}});
  check_traced_equals_eager(ds::ReductionToOneDevice{});
}

BOOST_AUTO_TEST_CASE(two_simulated_gpus) {
  dt::config::set_simulated_gpus(2, dt::kGiB);
  check_traced_equals_eager(ds::HierarchicalCopyAllReduce{.num_packs = 1});
}

BOOST_AUTO_TEST_SUITE_END()
