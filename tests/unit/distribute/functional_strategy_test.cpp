// The seeds' functional model (Input, Dense(1), Model) under MirroredStrategy: TensorFlow 2.21's
// epoch losses, evaluation, variables and summary (tests/reference/functional.py prints them), and
// a functional model with branches trained across replicas as on one device.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "distribute_test_support.hpp"

namespace dt = devtensor;
namespace ds = dt::distribute;
namespace nn = dt::nn;
using dt::test::virtual_cpus;

namespace {
struct FunctionalStrategyFixture : dt::test::FreshContext {
  FunctionalStrategyFixture() { nn::clear_session(); }
};

/// in -> tanh branch and linear branch, added -> Dense(1); every kernel a constant.
nn::Model branches_model() {
  const auto in = nn::Input({3});
  const auto h = nn::Dense(4, {.activation = nn::Activation::tanh, .kernel_initializer = nn::initializers::Constant{0.1f}})(in);
  const auto s = nn::Dense(4, {.kernel_initializer = nn::initializers::Constant{-0.05f}})(in);
  nn::Model model(in, nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.3f}})(nn::Add()({h, s})));
  model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.1});
  return model;
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(functional_strategy, FunctionalStrategyFixture)

BOOST_AUTO_TEST_CASE(the_seeds_functional_model_gives_tensorflows_losses) {
  const auto names = virtual_cpus(2);
  ds::MirroredStrategy strategy(names);
  std::optional<nn::Model> model;
  {
    // As the seeds write it: inputs, predictions and the model inside strategy.scope().
    auto guard = strategy.scope();
    const auto inputs = nn::Input({1});
    const auto predictions = nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.5f}})(inputs);
    model.emplace(inputs, predictions);
    model->compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.2});
  }
  std::ostringstream summary;
  model->summary(summary, {.line_length = 76});
  BOOST_TEST(summary.str() == std::string(R"(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)        │ (None, 1)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 1)              │             2 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 2 (8.00 B)
 Trainable params: 2 (8.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  const auto ones = dt::ones<float>(dt::Shape({100, 1}));
  const auto history = model->fit(ones, ones, {.epochs = 2, .batch_size = 10, .verbose = 0});
  // TensorFlow 2.21: epoch losses [0.026042, 0.0], evaluate 0.0, kernel 0.75000006, bias 0.24999993.
  BOOST_TEST_REQUIRE(history.loss.size() == 2u);
  BOOST_TEST(history.loss[0] == 0.026042, boost::test_tools::tolerance(1e-6 / 0.026042));
  BOOST_TEST(std::abs(history.loss[1]) <= 1e-6);
  BOOST_TEST(std::abs(model->evaluate(ones, ones, {.verbose = 0}).loss) <= 1e-6);
  const auto kernel = model->trainable_variables()[0];
  const auto bias = model->trainable_variables()[1];
  BOOST_TEST(kernel.value().item() == 0.75f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(bias.value().item() == 0.25f, boost::test_tools::tolerance(1e-6f));
  // Mirrored: one component per replica, equal after training.
  BOOST_TEST_REQUIRE(kernel.num_components() == 2u);
  BOOST_TEST(kernel.component(1).device() == "/job:localhost/replica:0/task:0/device:CPU:1");
  BOOST_TEST(kernel.component(0).to_vector() == kernel.component(1).to_vector(), boost::test_tools::per_element());
  BOOST_TEST(model->name() == "functional");
  BOOST_TEST(model->layers()[0]->name() == "input_layer");
  BOOST_TEST(model->layers()[1]->name() == "dense");
}

BOOST_AUTO_TEST_CASE(a_model_with_branches_trains_across_replicas_as_on_one_device) {
  const auto names = virtual_cpus(3);  // before the first op
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3, 1, 1, -2, 0.5f, 0, 0, 1, -1, 2, 2}, {6, 3});
  const auto y = dt::constant<float>({1, -1, 0.5f, 2, 0, 1}, {6, 1});
  auto one_device = branches_model();
  const auto expected = one_device.fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  ds::MirroredStrategy strategy(names);
  std::optional<nn::Model> replicated;
  {
    auto guard = strategy.scope();
    replicated.emplace(branches_model());
  }
  const auto got = replicated->fit(x, y, {.epochs = 3, .batch_size = 6, .verbose = 0, .shuffle = false});
  BOOST_TEST_REQUIRE(got.loss.size() == expected.loss.size());
  for (std::size_t i = 0; i < got.loss.size(); ++i) BOOST_TEST(got.loss[i] == expected.loss[i], boost::test_tools::tolerance(1e-6));
  BOOST_TEST(replicated->trainable_variables()[0].num_components() == 3u);
  const auto a = replicated->trainable_variables()[4].value().to_vector();
  const auto b = one_device.trainable_variables()[4].value().to_vector();
  for (std::size_t i = 0; i < a.size(); ++i) BOOST_TEST(a[i] == b[i], boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()
