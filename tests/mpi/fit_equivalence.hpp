#pragma once
// The check every multi-worker fit test makes: the same seeded two-layer model, trained under a
// strategy and alone on this process's CPU over the same data, reaches the same losses and weights;
// under the strategy, fit's traced step gives the eager step's numbers bit for bit.
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "devtensor/devtensor.hpp"

namespace devtensor::test {

struct FitCase {
  int rows = 24;
  int batch = 8;  // global batch
  int epochs = 3;
  int features = 2;  // up to 4: a, b, a·b, 1 − a of each row
  int hidden = 4;
  nn::Activation activation = nn::Activation::relu;
  std::function<nn::Optimizer()> optimizer;  // one per model: optimizers share state between copies
  double loss_tolerance = 1e-4;
  float weight_tolerance = 1e-5f;
  /// The same layers written with Keras's functional API (Input, layer calls, Model) instead of
  /// as a Sequential.
  bool functional = false;
  /// CompileOptions::cuda_graph for every model (on CPUs and across processes: op by op).
  bool cuda_graph = false;
};

/// Trains both models and checks them; returns the distributed model's trainable variables (for
/// checks of where they live).
template <class Strategy>
std::vector<Variable<float>> check_fit_matches_one_process(Strategy& strategy, const FitCase& c) {
  auto build = [&]() -> std::unique_ptr<nn::Model> {
    const nn::DenseOptions hidden{.activation = c.activation,
                                  .kernel_initializer = nn::initializers::GlorotUniform{.seed = 5}};
    const nn::DenseOptions out{.kernel_initializer = nn::initializers::GlorotUniform{.seed = 6}};
    if (c.functional) {
      const auto inputs = nn::Input({c.features});
      auto model = std::make_unique<nn::Model>(inputs, nn::Dense(1, out)(nn::Dense(c.hidden, hidden)(inputs)));
      model->compile(nn::losses::MeanSquaredError{}, c.optimizer(), {.cuda_graph = c.cuda_graph});
      return model;
    }
    auto first = hidden;
    first.input_dim = c.features;
    auto model =
        std::make_unique<nn::Sequential>(std::vector<nn::Layer>{nn::Dense(c.hidden, first), nn::Dense(1, out)});
    model->compile(nn::losses::MeanSquaredError{}, c.optimizer(), {.cuda_graph = c.cuda_graph});
    return model;
  };
  nn::clear_session();
  std::unique_ptr<nn::Model> single, distributed, distributed_eagerly;
  {
    DeviceScope cpu("/cpu:0");
    single = build();
  }
  {
    auto guard = strategy.scope();
    distributed = build();
    distributed_eagerly = build();
    distributed_eagerly->set_run_eagerly(true);
  }
  std::vector<float> xs, ys;
  for (int i = 0; i < c.rows; ++i) {
    const float a = static_cast<float>(i % 7) / 7.0f, b = static_cast<float>(i % 5) / 5.0f;
    const float row[] = {a, b, a * b, 1 - a};
    xs.insert(xs.end(), row, row + c.features);
    ys.push_back(a - 2 * b + 0.5f);
  }
  auto data = data::Dataset<float, float>::from_tensor_slices(constant<float>(xs, {c.rows, c.features}),
                                                              constant<float>(ys, {c.rows, 1}))
                  .batch(c.batch);
  const auto h1 = [&] {
    DeviceScope cpu("/cpu:0");
    return single->fit(data, {.epochs = c.epochs, .verbose = 0});
  }();
  const auto h2 = distributed->fit(data, {.epochs = c.epochs, .verbose = 0});
  const auto h3 = distributed_eagerly->fit(data, {.epochs = c.epochs, .verbose = 0});
  BOOST_TEST(h2.loss == h3.loss, boost::test_tools::per_element());
  for (std::size_t e = 0; e < static_cast<std::size_t>(c.epochs); ++e)
    BOOST_TEST(h2.loss[e] == h1.loss[e], boost::test_tools::tolerance(c.loss_tolerance));
  const auto want = single->trainable_variables();
  const auto got = distributed->trainable_variables();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto w = want[i].to_vector();
    const auto g = got[i].to_vector();
    for (std::size_t j = 0; j < w.size(); ++j)
      BOOST_TEST(g[j] == w[j], boost::test_tools::tolerance(c.weight_tolerance));
    BOOST_TEST(distributed_eagerly->trainable_variables()[i].to_vector() == g, boost::test_tools::per_element());
  }
  return got;
}

}  // namespace devtensor::test
