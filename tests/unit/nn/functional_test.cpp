// Keras's functional API: Input, layer calls on symbolic tensors, Model with branches, merges, shared
// layers, several inputs and outputs and models inside models; Sequential as a chain of the same
// calls; Keras 3's summary table. Expected texts and messages are TensorFlow 2.21 / Keras 3.15's:
// tests/reference/functional.py prints them. The seeds' functional model under a strategy:
// tests/unit/distribute/training_test.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "two_heads.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;

namespace {
struct FunctionalFixture : dt::test::FreshContext {
  FunctionalFixture() { nn::clear_session(); }
};

std::string summary_of(const nn::Model& model, int line_length) {
  std::ostringstream out;
  model.summary(out, {.line_length = line_length});
  return out.str();
}

std::vector<std::string> layer_names(const nn::Model& model) {
  std::vector<std::string> names;
  for (const auto& layer : model.layers()) names.push_back(layer->name());
  return names;
}

/// x -> hidden (relu) and skip, added, concatenated with x, then Dense(1): tests/reference/functional.py's.
struct Branches {
  nn::Dense hidden{8, {.activation = nn::Activation::relu, .name = "hidden"}};
  nn::Dense skip{8, {.name = "skip"}};
  nn::Dense head{1};
  nn::Model model;
  explicit Branches(const nn::KerasTensor& x)
      : model(x, head(nn::Concatenate()({nn::Add()({hidden(x), skip(x)}), x}))) {}
};

// 5e-6 relative: OpenBLAS's sgemm kernels sum in an order that depends on the CPU it recognises and
// on the buffers' alignment (this suite once missed TensorFlow's 0.0163353086 by 3.6e-6 on an
// AVX-512 machine OpenBLAS 0.3.21 runs as Prescott, and passed on the rerun).
void check_tensors_close(const dt::Tensor<float>& got, const dt::Tensor<float>& want, float tol = 5e-6f) {
  BOOST_TEST_REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector();
  const auto w = want.to_vector();
  for (std::size_t i = 0; i < g.size(); ++i) BOOST_TEST(g[i] == w[i], boost::test_tools::tolerance(tol));
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(functional, FunctionalFixture)

BOOST_AUTO_TEST_CASE(summaries_and_layer_orders_match_keras) {
  const auto x = nn::Input({4}, {.name = "x"});
  Branches branches(x);
  BOOST_TEST(branches.model.name() == "functional");
  BOOST_TEST(
      layer_names(branches.model) == std::vector<std::string>({"x", "hidden", "skip", "add", "concatenate", "dense"}),
      boost::test_tools::per_element());
  BOOST_TEST(summary_of(branches.model, 108) == std::string(R"(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ x (InputLayer)                │ (None, 4)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ hidden (Dense)                │ (None, 8)                 │              40 │ x[0][0]                    │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ skip (Dense)                  │ (None, 8)                 │              40 │ x[0][0]                    │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ add (Add)                     │ (None, 8)                 │               0 │ hidden[0][0], skip[0][0]   │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ concatenate (Concatenate)     │ (None, 12)                │               0 │ add[0][0], x[0][0]         │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense (Dense)                 │ (None, 1)                 │              13 │ concatenate[0][0]          │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 93 (372.00 B)
 Trainable params: 93 (372.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  BOOST_TEST(summary_of(branches.model, 76) == std::string(R"(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ x (InputLayer)      │ (None, 4)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ hidden (Dense)      │ (None, 8)         │         40 │ x[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ skip (Dense)        │ (None, 8)         │         40 │ x[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ add (Add)           │ (None, 8)         │          0 │ hidden[0][0],     │
│                     │                   │            │ skip[0][0]        │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ concatenate         │ (None, 12)        │          0 │ add[0][0],        │
│ (Concatenate)       │                   │            │ x[0][0]           │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense (Dense)       │ (None, 1)         │         13 │ concatenate[0][0] │
└─────────────────────┴───────────────────┴────────────┴───────────────────┘
 Total params: 93 (372.00 B)
 Trainable params: 93 (372.00 B)
 Non-trainable params: 0 (0.00 B)
)"));

  // Two inputs, one layer called on both, two outputs.
  const auto a = nn::Input({3});
  const auto b = nn::Input({3});
  nn::Dense shared(2);
  const auto ya = shared(a);
  const auto yb = shared(b);
  nn::Model two({a, b}, {ya, nn::Add()({ya, yb})});
  BOOST_TEST(layer_names(two) == std::vector<std::string>({"input_layer", "input_layer_1", "dense_1", "add_1"}),
             boost::test_tools::per_element());
  BOOST_TEST(summary_of(two, 108) == std::string(R"(Model: "functional_1"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)      │ (None, 3)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ input_layer_1 (InputLayer)    │ (None, 3)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense_1 (Dense)               │ (None, 2)                 │               8 │ input_layer[0][0],         │
│                               │                           │                 │ input_layer_1[0][0]        │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ add_1 (Add)                   │ (None, 2)                 │               0 │ dense_1[0][0],             │
│                               │                           │                 │ dense_1[1][0]              │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 8 (32.00 B)
 Trainable params: 8 (32.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  BOOST_TEST(two.trainable_variables().size() == 2u);  // the shared layer's, once
  // The same shared layer, one call of it in this model: a chain, without "Connected to".
  BOOST_TEST(summary_of(nn::Model(a, ya), 88) == std::string(R"(Model: "functional_2"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)             │ (None, 3)                   │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense_1 (Dense)                      │ (None, 2)                   │               8 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 8 (32.00 B)
 Trainable params: 8 (32.00 B)
 Non-trainable params: 0 (0.00 B)
)"));

  // A model called inside another is one layer of it.
  const auto inner_in = nn::Input({2});
  nn::Model inner(inner_in, nn::Dense(3)(inner_in), {.name = "inner"});
  const auto outer_in = nn::Input({2});
  nn::Model outer(outer_in, nn::Dense(1)(inner(outer_in)));
  BOOST_TEST(summary_of(outer, 88) == std::string(R"(Model: "functional_3"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ input_layer_3 (InputLayer)           │ (None, 2)                   │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ inner (Functional)                   │ (None, 3)                   │               9 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense_3 (Dense)                      │ (None, 1)                   │               4 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 13 (52.00 B)
 Trainable params: 13 (52.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  BOOST_TEST(outer.count_params() == 13);
}

BOOST_AUTO_TEST_CASE(sequential_and_other_layers_summarise_as_keras) {
  nn::Sequential model({nn::Dense(4, {.input_dim = 3, .activation = nn::Activation::tanh}), nn::Dense(1)});
  BOOST_TEST(summary_of(model, 88) == std::string(R"(Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ dense (Dense)                        │ (None, 4)                   │              16 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense_1 (Dense)                      │ (None, 1)                   │               5 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 21 (84.00 B)
 Trainable params: 21 (84.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  nn::clear_session();
  // A fixed batch, a name too long for its cell, a thousands separator, Flatten and Activation.
  const auto i = nn::Input({2, 3}, {.batch_size = 5});
  const auto d = nn::Dense(1000, {.name = "a_rather_long_layer_name_for_the_column"})(nn::Flatten()(i));
  nn::Model m(i, nn::ActivationLayer(nn::Activation::softmax)(d));
  BOOST_TEST(summary_of(m, 76) == std::string(R"(Model: "functional"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ input_layer (InputLayer)        │ (5, 2, 3)              │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ (5, 6)                 │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ a_rather_long_layer_name_for_t… │ (5, 1000)              │         7,000 │
│ (Dense)                         │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ activation (Activation)         │ (5, 1000)              │             0 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 7,000 (27.34 KB)
 Trainable params: 7,000 (27.34 KB)
 Non-trainable params: 0 (0.00 B)
)"));
  // Keras's default width: 88 (108 with "Connected to") or the terminal's width less 4.
  {
    dt::test::ScopedEnv columns("COLUMNS", "200");
    std::ostringstream out;
    m.summary(out);
    BOOST_TEST(out.str() == summary_of(m, 88));
  }
  {
    dt::test::ScopedEnv columns("COLUMNS", "80");
    std::ostringstream out;
    m.summary(out);
    BOOST_TEST(out.str() == summary_of(m, 76));
  }
  DEVTENSOR_CHECK_THROW_WITH(summary_of(m, 10), dt::InvalidArgumentError,
                             "Insufficient console width to print summary.");
}

BOOST_AUTO_TEST_CASE(a_functional_model_computes_its_graph) {
  const auto x_in = nn::Input({4}, {.name = "x"});
  Branches branches(x_in);
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3}, {2, 4});
  // By hand, with the layers' variables.
  const auto h = dt::relu(dt::matmul(x, branches.hidden.kernel().value()) + branches.hidden.bias().value());
  const auto s = dt::matmul(x, branches.skip.kernel().value()) + branches.skip.bias().value();
  const auto want =
      dt::matmul(dt::concat<float>({h + s, x}, 1), branches.head.kernel().value()) + branches.head.bias().value();
  check_tensors_close(branches.model(x), want);
  check_tensors_close(branches.model.predict(x, {.batch_size = 1}), want);
  BOOST_TEST(branches.model.trainable_variables().size() == 6u);
  BOOST_TEST(branches.model.trainable_variables()[0].name() == "hidden/kernel:0");
  BOOST_TEST(branches.model.trainable_variables()[5].name() == "dense/bias:0");

  // Several inputs and outputs: called and predicted on vectors.
  const auto a = nn::Input({3});
  const auto b = nn::Input({3});
  nn::Dense shared(2);
  nn::Model two({a, b}, {shared(a), nn::Add()({shared(a), shared(b)})});
  const auto xa = dt::constant<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const auto xb = dt::constant<float>({-1, 0, 1, 0, 1, 0}, {2, 3});
  const auto outs = two({xa, xb});
  BOOST_TEST_REQUIRE(outs.size() == 2u);
  check_tensors_close(outs[0], shared(xa));
  check_tensors_close(outs[1], shared(xa) + shared(xb));
  const auto predicted = two.predict({xa, xb}, {.batch_size = 1});
  check_tensors_close(predicted[1], outs[1]);
  DEVTENSOR_CHECK_THROW_WITH(two(xa), dt::InvalidArgumentError, "has 2 inputs and 2 outputs");
  DEVTENSOR_CHECK_THROW_WITH(
      two({xa, dt::ones<float>(dt::Shape({2, 4}))}), dt::InvalidArgumentError,
      "Input 1 with name 'input_layer_1' of layer 'functional_1' is incompatible with the layer: "
      "expected shape=(None, 3), found shape=(2, 4)");
  DEVTENSOR_CHECK_THROW_WITH(two(std::vector{xa}), dt::InvalidArgumentError, "expects 2 input(s), but it received 1");

  // A model inside a model, and a Sequential inside a functional model.
  const auto inner_in = nn::Input({3});
  nn::Dense inner_dense(2);
  nn::Model inner(inner_in, inner_dense(inner_in));
  nn::Sequential tail({nn::Dense(1)});
  const auto outer_in = nn::Input({3});
  nn::Model outer(outer_in, tail(inner(outer_in)));
  check_tensors_close(outer(xa), tail(inner(xa)));
  BOOST_TEST(outer.trainable_variables().size() == 4u);
  BOOST_TEST(layer_names(outer)[2] == tail.name());
}

BOOST_AUTO_TEST_CASE(a_functional_model_trains_as_a_sequential_does) {
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3, 1, 1, -2, 0.5f, 0, 0, 1, -1}, {4, 4});
  const auto y = dt::constant<float>({1, -1, 0.5f, 2}, {4, 1});
  const auto make = [] {
    const auto in = nn::Input({4});
    const auto h =
        nn::Dense(3, {.activation = nn::Activation::tanh, .kernel_initializer = nn::initializers::Constant{0.1f}})(in);
    const auto s = nn::Dense(3, {.kernel_initializer = nn::initializers::Constant{-0.2f}})(in);
    nn::Model model(in, nn::Dense(1, {.kernel_initializer = nn::initializers::Constant{0.3f}})(nn::Add()({h, s})));
    model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.1});
    return model;
  };
  auto traced = make();
  auto eager = make();
  eager.set_run_eagerly(true);
  const auto a = traced.fit(x, y, {.epochs = 5, .batch_size = 2, .verbose = 0, .shuffle = false});
  const auto b = eager.fit(x, y, {.epochs = 5, .batch_size = 2, .verbose = 0, .shuffle = false});
  BOOST_TEST(a.loss.back() < a.loss.front());
  BOOST_TEST(a.loss == b.loss, boost::test_tools::per_element());  // the same kernels: the same bits
  for (std::size_t i = 0; i < traced.variables().size(); ++i)
    BOOST_TEST(traced.variables()[i].value().to_vector() == eager.variables()[i].value().to_vector(),
               boost::test_tools::per_element());
  BOOST_TEST(traced.evaluate(x, y, {.verbose = 0}).loss == eager.evaluate(x, y, {.verbose = 0}).loss);
}

BOOST_AUTO_TEST_CASE(several_inputs_and_outputs_train_as_keras) {
  const dt::test::TwoHeadsData data;
  auto model = dt::test::two_heads_model();
  std::ostringstream progress;
  const auto history =
      model.fit(data.xs, data.ys, {.epochs = 2, .batch_size = 4, .verbose = 2, .shuffle = false, .out = &progress});
  // TensorFlow 2.21 (tests/reference/functional.py, "two inputs, two outputs"): the trained loss is
  // reg_loss + 0.5 · cls_loss; the per-output losses are reported unweighted.
  const auto tol = boost::test_tools::tolerance(2e-6);
  dt::test::check_values(history.loss, {2.4443295, 1.7611834}, 2e-6);
  dt::test::check_values(history.metrics.at("reg_loss"), {1.8923613, 1.2110337}, 2e-6);
  dt::test::check_values(history.metrics.at("cls_loss"), {1.1039366, 1.1002995}, 2e-6);
  dt::test::check_values(history.metrics.at("cls_accuracy"), {0.25, 0.3333333}, 2e-6);
  BOOST_TEST(history.metrics.size() == 3u);
  BOOST_TEST(progress.str().find("cls_accuracy: 0.3333 - cls_loss: 1.1003 - loss: 1.7612 - reg_loss: 1.2110") !=
                 std::string::npos,
             progress.str());
  const auto evaluation = model.evaluate(data.xs, data.ys, {.verbose = 0});
  BOOST_TEST(evaluation.loss == 1.4246711, tol);
  BOOST_TEST(evaluation.metrics.at("reg_loss") == 0.8789642, tol);
  BOOST_TEST(evaluation.metrics.at("cls_loss") == 1.0914136, tol);
  BOOST_TEST(evaluation.metrics.at("cls_accuracy") == 0.6666667, tol);
  const auto two_rows = [](const dt::Tensor<float>& t) { return dt::slice(t, {0, 0}, {2, -1}); };
  const auto predicted = model.predict({two_rows(data.xs[0]), two_rows(data.xs[1])});
  BOOST_TEST_REQUIRE(predicted.size() == 2u);
  check_tensors_close(predicted[0], dt::constant<float>({-1.5345171689987183f, 0.8050618171691895f}, {2, 1}), 2e-6f);
  check_tensors_close(predicted[1],
                      dt::constant<float>({0.33591359853744507f, 0.33160415291786194f, 0.332482248544693f,
                                           0.33572909235954285f, 0.3345111906528473f, 0.32975971698760986f},
                                          {2, 3}),
                      2e-6f);

  // Eagerly, and from a dataset whose components are the inputs, then the targets: the same bits.
  auto eager = dt::test::two_heads_model(/*run_eagerly=*/true);
  const auto batches =
      dt::data::Dataset<float, float, float, float>::from_tensor_slices(data.xs[0], data.xs[1], data.ys[0], data.ys[1])
          .batch(4);
  const auto from_dataset = eager.fit(batches, {.epochs = 2, .verbose = 0});
  BOOST_TEST(from_dataset.loss == history.loss, boost::test_tools::per_element());
  BOOST_TEST(from_dataset.metrics == history.metrics);
  for (std::size_t i = 0; i < model.variables().size(); ++i)
    BOOST_TEST(eager.variables()[i].value().to_vector() == model.variables()[i].value().to_vector(),
               boost::test_tools::per_element());
  BOOST_TEST(eager.evaluate(data.xs, data.ys, {.verbose = 0}).metrics == evaluation.metrics);
  // In batches of 4 rather than one of 12: the same means to float rounding.
  const auto in_batches = eager.evaluate(batches, {.verbose = 0});
  BOOST_TEST(in_batches.loss == evaluation.loss, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(in_batches.metrics.at("cls_accuracy") == evaluation.metrics.at("cls_accuracy"),
             boost::test_tools::tolerance(1e-6));
  const auto [loss, examples] = eager.train_step(data.xs, data.ys);
  BOOST_TEST(examples == 12);
  BOOST_TEST(loss == 1.4246711, boost::test_tools::tolerance(2e-6));  // the loss before the step's update

  // validation_split holds out the last rows of every input and target.
  auto validated = dt::test::two_heads_model();
  const auto split =
      validated.fit(data.xs, data.ys, {.epochs = 1, .batch_size = 4, .verbose = 0, .validation_split = 0.25});
  for (const auto* key : {"val_loss", "val_reg_loss", "val_cls_loss", "val_cls_accuracy"})
    BOOST_TEST(split.metrics.count(key) == 1u, key);
  const auto last_rows = [](const dt::Tensor<float>& t) { return dt::slice(t, {9, 0}, {3, -1}); };
  const auto held_out = validated.evaluate({last_rows(data.xs[0]), last_rows(data.xs[1])},
                                           {last_rows(data.ys[0]), last_rows(data.ys[1])}, {.verbose = 0});
  BOOST_TEST(split.metrics.at("val_loss").front() == held_out.loss);
  BOOST_TEST(split.metrics.at("val_cls_accuracy").front() == held_out.metrics.at("cls_accuracy"));
}

BOOST_AUTO_TEST_CASE(several_outputs_refuse_what_does_not_match_them) {
  const dt::test::TwoHeadsData data;
  auto model = dt::test::two_heads_model();
  const auto sgd = nn::optimizers::SGD{.learning_rate = 0.1};
  DEVTENSOR_CHECK_THROW_WITH(model.compile({nn::Loss("mse"), nn::Loss("mse"), nn::Loss("mse")}, sgd),
                             dt::InvalidArgumentError, "compile: 3 losses for a model of 2 outputs ['reg', 'cls']");
  DEVTENSOR_CHECK_THROW_WITH(model.compile(nn::Loss("mse"), sgd, {.loss_weights = {1.0}}), dt::InvalidArgumentError,
                             "`loss_weights` must match the number of losses, got 2 losses and 1 weights.");
  DEVTENSOR_CHECK_THROW_WITH(
      model.compile(nn::Loss("mse"), sgd, {.metrics = {"accuracy"}}), dt::InvalidArgumentError,
      "Invalid `metrics`. `metrics` should contain metrics objects and either be a dict or a list "
      "matching the output names of the functional model ['reg', 'cls']");
  DEVTENSOR_CHECK_THROW_WITH(model.compile(nn::Loss("mse"), sgd, {.output_metrics = {{"accuracy"}}}),
                             dt::InvalidArgumentError, "1 lists in output_metrics for a model of 2 outputs");
  // A refused compile changes nothing: the model keeps what two_heads_model compiled.
  BOOST_TEST(model.loss().name() == "mean_squared_error");
  BOOST_TEST(model.evaluate(data.xs, data.ys, {.verbose = 0}).metrics.count("cls_accuracy") == 1u);
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit({data.xs[0]}, data.ys, {.verbose = 0}), dt::InvalidArgumentError,
                             "has 2 inputs and 2 outputs, but a batch of 1 input and 2 target tensors came");
  DEVTENSOR_CHECK_THROW_WITH((void)model.train_step(data.xs, {data.ys[0]}), dt::InvalidArgumentError,
                             "but a batch of 2 input and 1 target tensors came");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit({data.xs[0], dt::slice(data.xs[1], {0, 0}, {5, -1})}, data.ys, {.verbose = 0}),
      dt::InvalidArgumentError, "Data cardinality is ambiguous:\n  x sizes: 12, 5\n  y sizes: 12, 12");
  // One loss for every output: each output's loss, summed (Keras applies it to each).
  auto shared = dt::test::two_heads_model();
  shared.compile(nn::Loss("mse"), sgd);
  const auto evaluation = shared.evaluate(data.xs, data.ys, {.verbose = 0});
  BOOST_TEST(evaluation.loss == evaluation.metrics.at("reg_loss") + evaluation.metrics.at("cls_loss"),
             boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(a_trained_models_summary_counts_the_optimizers_variables) {
  // Keras 3.15 (tests/reference/functional.py): once the optimizer has run, its variables (the
  // int64 iteration count, the learning rate, the slots) join the totals.
  struct Case {
    nn::Optimizer optimizer;
    std::string lines;
  };
  const std::vector<Case> cases{
      {nn::optimizers::SGD{.learning_rate = 0.2},
       " Total params: 10 (44.00 B)\n Trainable params: 8 (32.00 B)\n Non-trainable params: 0 (0.00 B)\n"
       " Optimizer params: 2 (12.00 B)\n"},
      {nn::optimizers::SGD{.learning_rate = 0.2, .momentum = 0.9},
       " Total params: 18 (76.00 B)\n Trainable params: 8 (32.00 B)\n Non-trainable params: 0 (0.00 B)\n"
       " Optimizer params: 10 (44.00 B)\n"},
      {nn::optimizers::Adam{.learning_rate = 0.01},
       " Total params: 26 (108.00 B)\n Trainable params: 8 (32.00 B)\n Non-trainable params: 0 (0.00 B)\n"
       " Optimizer params: 18 (76.00 B)\n"}};
  for (const auto& c : cases) {
    const auto in = nn::Input({3});
    nn::Model model(in, nn::Dense(2)(in));
    model.compile(nn::Loss("mse"), c.optimizer);
    const std::string before = summary_of(model, 76);
    BOOST_TEST(before.find("Optimizer params") == std::string::npos);  // not built before its first step
    (void)model.fit(dt::ones<float>(dt::Shape({4, 3})), dt::ones<float>(dt::Shape({4, 2})), {.verbose = 0});
    const std::string after = summary_of(model, 76);
    BOOST_TEST(after.substr(after.find(" Total params")) == c.lines);
  }
}

BOOST_AUTO_TEST_CASE(bad_graphs_and_merges_raise_keras_errors) {
  const auto a = nn::Input({2});
  const auto b = nn::Input({2});
  nn::Dense dense(2);
  const auto ya = dense(a);
  DEVTENSOR_CHECK_THROW_WITH(nn::Add()(ya), dt::InvalidArgumentError,
                             "A merge layer should be called on a list of inputs. Received: input_shape=(None, 2) "
                             "(not a list of shapes)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Add()({ya, nn::Input({4})}), dt::InvalidArgumentError,
                             "Inputs have incompatible shapes. Received shapes (2,) and (4,)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Concatenate()({nn::Input({3, 2}), nn::Input({4, 3})}), dt::InvalidArgumentError,
                             "A `Concatenate` layer requires inputs with matching shapes except for the concatenation "
                             "axis. Received: input_shape=[(None, 3, 2), (None, 4, 3)]");
  DEVTENSOR_CHECK_THROW_WITH(nn::Add()(std::vector{ya}), dt::InvalidArgumentError,
                             "should be called on a list of at least 2 inputs. Received: 1");
  // An output that needs an input the model was not given.
  DEVTENSOR_CHECK_THROW_WITH(nn::Model(a, nn::Add(nn::MergeOptions{.name = "sum"})({ya, dense(b)})),
                             dt::InvalidArgumentError,
                             "Graph disconnected: the output sum[0][0] of model \"functional\" depends on the Input "
                             "\"input_layer_1\"");
  DEVTENSOR_CHECK_THROW_WITH(nn::Model(ya, ya), dt::InvalidArgumentError,
                             "its inputs must be tensors that nn::Input returned");
  DEVTENSOR_CHECK_THROW_WITH(nn::Input({-2}), dt::InvalidArgumentError, "must be >= 0 (or -1: unknown)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Input({2}, {.batch_size = 0}), dt::InvalidArgumentError,
                             "batch_size must be positive");
  // A layer that cannot take the input it is called on.
  DEVTENSOR_CHECK_THROW_WITH(nn::Dense(1)(nn::Input({2, 3})), dt::InvalidArgumentError,
                             "expected ndim=2, found ndim=3");
  // Eager merges check their tensors too.
  DEVTENSOR_CHECK_THROW_WITH(nn::Add()({dt::ones<float>(dt::Shape({1, 2})), dt::ones<float>(dt::Shape({1, 3}))}),
                             dt::InvalidArgumentError,
                             "Inputs have incompatible shapes. Received shapes (2,) and (3,)");
  nn::Sequential empty;
  DEVTENSOR_CHECK_THROW_WITH((void)empty(a), dt::InvalidArgumentError, "has no layers");
  // Weights files need the hdf5 component (tests/unit/nn/weights_test.cpp): this program has not it,
  // so save_weights does not compile here (compile_fail.save_weights_without_hdf5); the bodies
  // behind it still refuse when no file code was included anywhere in the program.
  nn::Model small(a, ya);
  DEVTENSOR_CHECK_THROW_WITH(small.save_weights_now("x.weights.h5"), dt::UnimplementedError,
                             "save_weights needs the HDF5 component: link devtensor::hdf5");
  DEVTENSOR_CHECK_THROW_WITH(small.load_weights_now("x.weights.h5"), dt::UnimplementedError,
                             "include <devtensor/hdf5/weights.hpp>");
  DEVTENSOR_CHECK_THROW_WITH((void)empty.impl(), dt::FailedPreconditionError, "This model has not yet been built");
}

BOOST_AUTO_TEST_CASE(flatten_and_activation_layers) {
  const auto x = dt::constant<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3});
  nn::Flatten flatten;
  BOOST_TEST(flatten.name() == "flatten");
  const auto flat = flatten(x);
  BOOST_TEST(flat.shape() == dt::Shape({2, 6}));
  BOOST_TEST(flat.to_vector() == x.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(nn::Flatten()(dt::constant<float>({1, 2}, {2})).shape() == dt::Shape({2, 1}));
  BOOST_TEST(nn::Flatten()(nn::Input({-1, 3})).shape() == nn::PartialShape({-1, -1}), boost::test_tools::per_element());
  nn::ActivationLayer softmax(nn::Activation::softmax);
  BOOST_TEST(softmax.name() == "activation");
  check_tensors_close(softmax(flat), dt::softmax(flat));
  // Training through Flatten.
  const auto in = nn::Input({2, 3});
  nn::Model m(in, nn::Dense(1)(flatten(in)));
  m.compile(nn::Loss("mse"), nn::Optimizer("sgd"));
  const auto before = m.trainable_variables()[0].value().to_vector();
  (void)m.train_on_batch(x, dt::ones<float>(dt::Shape({2, 1})));
  BOOST_TEST(m.trainable_variables()[0].value().to_vector() != before);
}

BOOST_AUTO_TEST_CASE(dropout_drops_only_while_training) {
  const auto x = dt::ones<float>(dt::Shape({20, 50}));
  nn::Dropout dropout(0.3, {.seed = 3});
  BOOST_TEST(dropout.name() == "dropout");
  BOOST_TEST(dropout(x).to_vector() == x.to_vector(), boost::test_tools::per_element());  // inference: the identity
  const auto first = dropout(x, true).to_vector();
  std::size_t zeros = 0;
  for (const float v : first) {
    BOOST_TEST((v == 0.0f || v == static_cast<float>(1.0 / 0.7)));
    zeros += v == 0.0f;
  }
  BOOST_TEST(std::abs(static_cast<double>(zeros) / 1000 - 0.3) < 0.05);
  // Every call draws anew; the same seed draws the same sequence.
  const auto second = dropout(x, true).to_vector();
  BOOST_TEST(second != first);
  nn::Dropout again(0.3, {.seed = 3});
  BOOST_TEST(again(x, true).to_vector() == first, boost::test_tools::per_element());
  BOOST_TEST(nn::Dropout(0.0)(x, true).to_vector() == x.to_vector(), boost::test_tools::per_element());
  BOOST_TEST(dt::reduce_sum(nn::Dropout(1.0)(x, true)).item() == 0.0f);
  DEVTENSOR_CHECK_THROW_WITH(nn::Dropout(1.5), dt::InvalidArgumentError,
                             "Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                             "Received: rate=1.5");
  DEVTENSOR_CHECK_THROW_WITH(nn::Dropout(-0.1), dt::InvalidArgumentError, "Received: rate=-0.1");
}

BOOST_AUTO_TEST_CASE(dropout_draws_a_new_mask_every_training_step_traced_or_not) {
  // in -> Dropout(0.5) -> Dense(1, kernel of ones, no bias), a tiny learning rate: the loss of the
  // same batch changes from step to step only because the mask does.
  const auto x = dt::ones<float>(dt::Shape({4, 16}));
  const auto y = dt::zeros<float>(dt::Shape({4, 1}));
  const auto make = [] {
    const auto in = nn::Input({16});
    const auto dropped = nn::Dropout(0.5, {.seed = 11})(in);
    nn::Model model(in, nn::Dense(1, {.use_bias = false, .kernel_initializer = nn::initializers::Ones{}})(dropped));
    model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 1e-30});
    return model;
  };
  auto traced = make();
  auto eager = make();
  eager.set_run_eagerly(true);
  const auto a = traced.fit(x, y, {.epochs = 4, .batch_size = 4, .verbose = 0, .shuffle = false});
  const auto b = eager.fit(x, y, {.epochs = 4, .batch_size = 4, .verbose = 0, .shuffle = false});
  BOOST_TEST(a.loss == b.loss, boost::test_tools::per_element());  // the same masks, step by step
  BOOST_TEST(a.loss[0] != a.loss[1]);                              // a new mask every step
  BOOST_TEST(a.loss[1] != a.loss[2]);
  // Without training the layer is the identity: 16 per row.
  const auto predicted = traced.predict(x).to_vector();
  for (const float v : predicted) BOOST_TEST(v == 16.0f);
  BOOST_TEST(traced.evaluate(x, y, {.verbose = 0}).loss == 256.0);
}

BOOST_AUTO_TEST_SUITE_END()
