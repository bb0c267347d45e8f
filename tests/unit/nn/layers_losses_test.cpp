// Dense, Sequential's structure, losses and SGD against hand-computed values; their errors.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <future>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;

namespace {
struct LayersFixture : dt::test::FreshContext {
  LayersFixture() { nn::clear_session(); }
};
nn::Initializer constant_init(std::vector<float> values) {
  return [values](const dt::Shape& shape) { return dt::constant<float>(values, shape); };
}
void check_values(const dt::Tensor<float>& t, const std::vector<float>& want, float tol = 1e-5f) {
  const auto got = t.to_vector();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(layers_and_losses, LayersFixture)

BOOST_AUTO_TEST_CASE(dense_computes_activation_of_x_w_plus_b) {
  nn::Dense layer(2, {.activation = nn::Activation::relu,
                      .kernel_initializer = constant_init({1, -1, 2, 1}),
                      .bias_initializer = constant_init({0.5f, -4})});
  BOOST_TEST(!layer.built());
  auto y = layer(dt::constant<float>({1, 2, -1, 0}, {2, 2}));  // builds for 2 input features
  BOOST_TEST(layer.built());
  // x·W = [[5, 1], [-1, 1]]; + b = [[5.5, -3], [-0.5, -3]]; relu
  check_values(y, {5.5f, 0, 0, 0});
  BOOST_TEST(layer.kernel().name() == "dense/kernel:0");
  BOOST_TEST(layer.bias().name() == "dense/bias:0");
  BOOST_TEST(layer.trainable_variables().size() == 2u);
  DEVTENSOR_CHECK_THROW_WITH(
      layer(dt::constant<float>({1, 2, 3}, {1, 3})), dt::InvalidArgumentError,
      "Input 0 of layer \"dense\" is incompatible with the layer: expected axis -1 of input shape "
      "to have value 2, but received input with shape (1, 3)");
}

BOOST_AUTO_TEST_CASE(dense_names_options_and_errors) {
  nn::Dense a(1, {.input_dim = 3});
  nn::Dense b(4, {.input_dim = 2, .use_bias = false});
  nn::Dense named(1, {.name = "head"});
  BOOST_TEST(a.name() == "dense");
  BOOST_TEST(b.name() == "dense_1");
  BOOST_TEST(named.name() == "head");
  BOOST_TEST(a.built());
  BOOST_TEST(a.kernel().shape() == dt::Shape({3, 1}));
  BOOST_TEST(!b.bias().defined());
  BOOST_TEST(b.trainable_variables().size() == 1u);
  nn::clear_session();
  BOOST_TEST(nn::Dense(1).name() == "dense");
  DEVTENSOR_CHECK_THROW_WITH(nn::Dense(0), dt::InvalidArgumentError, "expected a positive integer. Received: units=0");
  DEVTENSOR_CHECK_THROW_WITH(nn::Dense(1, {.input_dim = 0}), dt::InvalidArgumentError, "input_dim must be positive");
  DEVTENSOR_CHECK_THROW_WITH(
      nn::Dense(2, {.input_dim = 2, .kernel_initializer = [](const dt::Shape&) { return dt::constant<float>({1}); }}),
      dt::InvalidArgumentError, "the kernel initializer returned shape [1], expected [2,2]");
  nn::Dense rank3(2);
  DEVTENSOR_CHECK_THROW_WITH(rank3(dt::zeros<float>(dt::Shape({2, 2, 2}))), dt::InvalidArgumentError,
                             "expected ndim=2, found ndim=3");
}

BOOST_AUTO_TEST_CASE(glorot_uniform_is_bounded_and_seeded) {
  nn::initializers::GlorotUniform init{.seed = 7};
  const auto w = init(dt::Shape({20, 10})).to_vector();
  const float limit = std::sqrt(6.0f / 30.0f);
  for (float v : w) BOOST_TEST(std::abs(v) <= limit);
  BOOST_TEST(init(dt::Shape({20, 10})).to_vector() == w, boost::test_tools::per_element());
  BOOST_TEST(nn::initializers::GlorotUniform{.seed = 8}(dt::Shape({20, 10})).to_vector() != w);
  check_values(nn::initializers::Constant{.value = 3}(dt::Shape({2})), {3, 3});
  check_values(nn::initializers::Ones{}(dt::Shape({1})), {1});
}

BOOST_AUTO_TEST_CASE(sequential_builds_names_and_summarises) {
  nn::Sequential model({nn::Dense(4, {.input_dim = 3, .activation = nn::Activation::tanh}), nn::Dense(1)});
  BOOST_TEST(model.name() == "sequential");
  BOOST_TEST(model.built());  // the input shape is known, so every layer built at once
  BOOST_TEST(model.trainable_variables().size() == 4u);
  BOOST_TEST(model.trainable_variables()[0].name() == "dense/kernel:0");
  BOOST_TEST(model.trainable_variables()[3].name() == "dense_1/bias:0");
  BOOST_TEST(model.count_params() == 3 * 4 + 4 + 4 + 1);
  std::ostringstream out;
  model.summary(out);
  const std::string text = out.str();
  BOOST_TEST(dt::test::contains(text, "Model: \"sequential\""));
  // Keras 3's table (tests/unit/nn/functional_test.cpp compares whole summaries).
  BOOST_TEST(dt::test::contains(text, "\u2502 dense (Dense)        "));
  BOOST_TEST(dt::test::contains(text, "\u2502 dense_1 (Dense)      "));
  BOOST_TEST(dt::test::contains(text, " Total params: 21 (84.00 B)"));
  BOOST_TEST(dt::test::contains(text, " Trainable params: 21 (84.00 B)"));
  BOOST_TEST(model(dt::zeros<float>(dt::Shape({5, 3}))).shape() == dt::Shape({5, 1}));

  nn::Sequential lazy({nn::Dense(2)});
  BOOST_TEST(lazy.name() == "sequential_1");
  BOOST_TEST(!lazy.built());
  BOOST_TEST(lazy.trainable_variables().empty());
  DEVTENSOR_CHECK_THROW_WITH(lazy.summary(out), dt::FailedPreconditionError, "This model has not yet been built");
  (void)lazy(dt::zeros<float>(dt::Shape({1, 6})));
  BOOST_TEST(lazy.built());
  BOOST_TEST(lazy.trainable_variables()[0].shape() == dt::Shape({6, 2}));
  nn::Sequential empty;
  DEVTENSOR_CHECK_THROW_WITH(empty(dt::zeros<float>(dt::Shape({1, 1}))), dt::InvalidArgumentError, "has no layers");
}

BOOST_AUTO_TEST_CASE(mean_squared_error_and_its_reductions) {
  auto y_true = dt::constant<float>({0, 1, 1, 1}, {2, 2});
  auto y_pred = dt::constant<float>({1, 1, 1, 0}, {2, 2});
  check_values(nn::losses::MeanSquaredError{}(y_true, y_pred), {0.5f});
  check_values(nn::losses::MeanSquaredError{.reduction = nn::Reduction::SUM}(y_true, y_pred), {1.0f});
  check_values(nn::losses::MeanSquaredError{.reduction = nn::Reduction::NONE}(y_true, y_pred), {0.5f, 0.5f});
  check_values(nn::losses::MeanSquaredError{.reduction = nn::Reduction::SUM_OVER_BATCH_SIZE}(y_true, y_pred), {0.5f});
  // Labels without the trailing axis of size 1 get it.
  check_values(nn::losses::MeanSquaredError{}(dt::constant<float>({1, 3}), dt::constant<float>({2, 1}, {2, 1})),
               {2.5f});
  DEVTENSOR_CHECK_THROW_WITH((void)nn::losses::MeanSquaredError{}(dt::constant<float>({1, 2}, {1, 2}), y_pred),
                             dt::InvalidArgumentError, "incompatible shapes [1,2] and [2,2]");
  // The same in double precision.
  BOOST_TEST(nn::losses::MeanSquaredError{}(dt::constant<double>({0, 1}), dt::constant<double>({2, 1})).item() == 2.0);
}

BOOST_AUTO_TEST_CASE(binary_crossentropy_with_and_without_logits) {
  auto z = dt::constant<float>({1, 0}, {1, 2});
  // logits 0 and 2: log 2 and 2 + log(1 + e^-2), averaged over the last axis.
  const float logit_loss = (std::log(2.0f) + 2.0f + std::log1p(std::exp(-2.0f))) / 2;
  check_values(nn::losses::BinaryCrossentropy{.from_logits = true}(z, dt::constant<float>({0, 2}, {1, 2})),
               {logit_loss});
  // probabilities 0.5 and 0.8: -log 0.5 and -log 0.2.
  check_values(nn::losses::BinaryCrossentropy{}(z, dt::constant<float>({0.5f, 0.8f}, {1, 2})),
               {(std::log(2.0f) + std::log(5.0f)) / 2}, 1e-5f);
  // Probabilities of 0 and 1 are clipped: finite.
  BOOST_TEST(std::isfinite(nn::losses::BinaryCrossentropy{}(z, dt::constant<float>({0, 1}, {1, 2})).item()));
  // Large logits stay finite and match the probability form where both are accurate.
  auto big = dt::constant<float>({80, -80}, {1, 2});
  check_values(nn::losses::BinaryCrossentropy{.from_logits = true}(z, big), {0.0f});
  auto logits = dt::constant<float>({0.3f, -1.2f}, {1, 2});
  check_values(nn::losses::BinaryCrossentropy{.from_logits = true}(z, logits),
               {nn::losses::BinaryCrossentropy{}(z, dt::sigmoid(logits)).item()}, 1e-5f);
  check_values(nn::losses::BinaryCrossentropy{.from_logits = true, .reduction = nn::Reduction::NONE}(
                   dt::constant<float>({1, 0}, {2, 1}), dt::constant<float>({0, 2}, {2, 1})),
               {std::log(2.0f), 2.0f + std::log1p(std::exp(-2.0f))});
  // Label smoothing 0.2 turns labels 1/0 into 0.9/0.1.
  check_values(nn::losses::BinaryCrossentropy{.from_logits = true, .label_smoothing = 0.2}(
                   z, dt::constant<float>({0, 0}, {1, 2})),
               {std::log(2.0f)});
  DEVTENSOR_CHECK_THROW_WITH((void)nn::losses::BinaryCrossentropy{.label_smoothing = 2}(z, z), dt::InvalidArgumentError,
                             "label_smoothing must be in [0, 1]");
}

BOOST_AUTO_TEST_CASE(sgd_plain_momentum_and_nesterov) {
  auto grad = std::vector{dt::constant<float>({0.5f})};
  dt::Variable<float> w(dt::constant<float>({1}));
  nn::optimizers::SGD plain{.learning_rate = 0.1};
  plain.apply_gradients(grad, {w});
  check_values(w.value(), {0.95f});
  BOOST_TEST(plain.iterations() == 1);

  dt::Variable<float> m(dt::constant<float>({1}));
  nn::optimizers::SGD momentum{.learning_rate = 0.1, .momentum = 0.9};
  momentum.apply_gradients(grad, {m});
  check_values(m.value(), {0.95f});  // v = -0.05
  momentum.apply_gradients(grad, {m});
  check_values(m.value(), {0.855f});  // v = 0.9 * -0.05 - 0.05 = -0.095

  dt::Variable<float> n(dt::constant<float>({1}));
  nn::optimizers::SGD nesterov{.learning_rate = 0.1, .momentum = 0.9, .nesterov = true};
  nesterov.apply_gradients(grad, {n});
  check_values(n.value(), {0.905f});  // w += 0.9 * -0.05 - 0.05
}

BOOST_AUTO_TEST_CASE(sgd_errors_and_missing_gradients) {
  nn::optimizers::SGD sgd{.learning_rate = 0.1};
  DEVTENSOR_CHECK_THROW_WITH(sgd.apply_gradients({}, {}), dt::InvalidArgumentError, "no variables to update");
  dt::Variable<float> a(dt::constant<float>({1}), {.name = "a"});
  dt::Variable<float> b(dt::constant<float>({1, 2}), {.name = "b"});
  DEVTENSOR_CHECK_THROW_WITH(sgd.apply_gradients({dt::Tensor<float>(), dt::Tensor<float>()}, {a, b}),
                             dt::InvalidArgumentError, "No gradients provided for any variable: (['a:0', 'b:0'],)");
  DEVTENSOR_CHECK_THROW_WITH(sgd.apply_gradients({dt::constant<float>({1})}, {a, b}), dt::InvalidArgumentError,
                             "1 gradients for 2 variables");
  DEVTENSOR_CHECK_THROW_WITH(sgd.apply_gradients({dt::constant<float>({1, 2})}, {a}), dt::InvalidArgumentError,
                             "the gradient for a:0 has shape [2] but the variable has shape [1]");
  sgd.apply_gradients({dt::constant<float>({1}), dt::Tensor<float>()}, {a, b});
  check_values(a.value(), {0.9f});
  check_values(b.value(), {1, 2});
  BOOST_TEST(log.count("Gradients do not exist for variables ['b:0'] when minimizing the loss") == 1u);
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::SGD{.momentum = 1.5}), dt::InvalidArgumentError,
                             "`momentum` must be between [0, 1]");
  DEVTENSOR_CHECK_THROW_WITH(nn::Optimizer(nn::optimizers::SGD{.learning_rate = 0}), dt::InvalidArgumentError,
                             "learning_rate must be positive");
}

// Convolutional layers (nn/conv_layers.hpp): Keras 3.15's summary, names, errors; training from
// the same weights as TensorFlow 2.21 (tests/reference/conv_training.py), eagerly and mirrored.
BOOST_AUTO_TEST_CASE(conv_layers_summarise_name_and_refuse_as_keras) {
  nn::Sequential model({nn::Conv2D(4, 3, {.padding = "same", .input_shape = nn::PartialShape{8, 8, 1}}),
                        nn::AveragePooling2D(2), nn::Conv2D(6, {2, 1}, {.strides = 2}), nn::GlobalMaxPooling2D(),
                        nn::Dense(3)});
  std::ostringstream out;
  model.summary(out);
  BOOST_TEST(out.str() == std::string(R"(Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                 │ (None, 8, 8, 4)        │            40 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ average_pooling2d               │ (None, 4, 4, 4)        │             0 │
│ (AveragePooling2D)              │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ conv2d_1 (Conv2D)               │ (None, 2, 2, 6)        │            54 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ global_max_pooling2d            │ (None, 6)              │             0 │
│ (GlobalMaxPooling2D)            │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 3)              │            21 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 115 (460.00 B)
 Trainable params: 115 (460.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  // The layers compute what the ops do: relu(conv2d + bias), the pools, the global reductions.
  nn::Conv2D conv(2, 3,
                  {.strides = {1, 2},
                   .padding = "same",
                   .activation = nn::Activation::relu,
                   .bias_initializer = constant_init({0.5f, -0.25f})});
  const auto x = dt::random_normal<float>({2, 5, 6, 3}, {.seed = 7});
  const auto y = conv(x);
  BOOST_TEST(conv.kernel().shape() == dt::Shape({3, 3, 3, 2}));
  BOOST_TEST(conv.kernel().name() == "conv2d_2/kernel:0");
  check_values(
      y, dt::relu(dt::bias_add(dt::conv2d(x, conv.kernel().value(), {1, 2}, "SAME"), conv.bias().value())).to_vector());
  // Glorot over the receptive field: limit sqrt(6 / (3·3·3 + 3·3·2)) = 0.365.
  const auto k = conv.kernel().value().to_vector();
  BOOST_TEST(*std::max_element(k.begin(), k.end(), [](float a, float b) { return std::abs(a) < std::abs(b); }) <=
             0.3652f);
  const auto chw = dt::transpose(x, {0, 3, 1, 2});
  nn::Conv2D first(2, 3, {.data_format = "channels_first"});
  BOOST_TEST(first(chw).shape() == dt::Shape({2, 2, 3, 4}));
  check_values(nn::MaxPooling2D(2, {.strides = 1, .padding = "same"})(x), dt::max_pool2d(x, 2, 1, "SAME").to_vector());
  check_values(nn::AveragePooling2D({2, 3})(x), dt::avg_pool2d(x, {2, 3}, {2, 3}, "VALID").to_vector());
  check_values(nn::GlobalAveragePooling2D()(x), dt::reduce_mean(x, std::vector<std::int64_t>{1, 2}).to_vector());
  BOOST_TEST(nn::GlobalMaxPooling2D({.keepdims = true})(x).shape() == dt::Shape({2, 1, 1, 3}));
  // Keras's texts.
  DEVTENSOR_CHECK_THROW_WITH(
      nn::Conv2D(0, 3), dt::InvalidArgumentError,
      "Invalid value for argument `filters`. Expected a strictly positive value. Received filters=0.");
  DEVTENSOR_CHECK_THROW_WITH(
      nn::Conv2D(2, 0), dt::InvalidArgumentError,
      "The `kernel_size` argument must be a tuple of 2 integers. Received kernel_size=0, including "
      "values {0} that do not satisfy `value > 0`");
  DEVTENSOR_CHECK_THROW_WITH(
      nn::Conv2D(2, {1, 2, 3}), dt::InvalidArgumentError,
      "The `kernel_size` argument must be a tuple of 2 integers. Received kernel_size=(1, 2, 3)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Conv2D(2, 3, {.padding = "full"}), dt::InvalidArgumentError,
                             "The `padding` argument must be a list/tuple or one of {'same', 'valid'}. Received: full");
  DEVTENSOR_CHECK_THROW_WITH(nn::MaxPooling2D(2, {.data_format = "NHWC"}), dt::InvalidArgumentError,
                             "The `data_format` argument must be one of {'channels_first', 'channels_last'}");
  DEVTENSOR_CHECK_THROW_WITH(
      nn::Conv2D(2, 3)(dt::zeros<float>({2, 5})), dt::InvalidArgumentError,
      "is incompatible with the layer: expected min_ndim=4, found ndim=2. Full shape received: (2, 5)");
  DEVTENSOR_CHECK_THROW_WITH(conv(dt::zeros<float>({1, 5, 5, 4})), dt::InvalidArgumentError,
                             "Input 0 of layer \"conv2d_2\" is incompatible with the layer: expected axis -1 of input "
                             "shape to have value 3, but received input with shape (1, 5, 5, 4)");
  DEVTENSOR_CHECK_THROW_WITH(nn::GlobalAveragePooling2D()(dt::zeros<float>({2, 5, 3})), dt::InvalidArgumentError,
                             "expected ndim=4, found ndim=3. Full shape received: (2, 5, 3)");
}

// Reshape, ZeroPadding2D, Rescaling (nn/reshaping_layers.hpp): Keras 3's summary and prediction
// from the same weights (tests/reference/reshaping_layers.py), eagerly and traced; Keras's texts.
BOOST_AUTO_TEST_CASE(reshaping_layers_predict_as_keras_and_refuse_as_keras) {
  nn::Sequential model(
      {nn::Rescaling(1.0 / 16, {.offset = -0.5, .input_shape = nn::PartialShape{8, 8, 1}, .name = "scale"}),
       nn::ZeroPadding2D({{1, 0}, {0, 2}}, {.name = "pad"}), nn::Conv2D(2, 3, {.name = "conv"}),
       nn::Reshape({-1}, {.name = "flat"}), nn::Reshape({7, 16}, {.name = "rows"})},
      "reshaping");
  std::ostringstream out;
  model.summary(out);
  BOOST_TEST(out.str() == std::string(R"(Model: "reshaping"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ scale (Rescaling)               │ (None, 8, 8, 1)        │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ pad (ZeroPadding2D)             │ (None, 9, 10, 1)       │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ conv (Conv2D)                   │ (None, 7, 8, 2)        │            20 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flat (Reshape)                  │ (None, 112)            │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ rows (Reshape)                  │ (None, 7, 16)          │             0 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 20 (80.00 B)
 Trainable params: 20 (80.00 B)
 Non-trainable params: 0 (0.00 B)
)"));
  for (auto& v : model.trainable_variables()) {
    std::vector<float> values(static_cast<std::size_t>(v.shape().num_elements()));
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = v.shape().rank() > 1
                      ? static_cast<float>(static_cast<double>(static_cast<int>((i * 7) % 19) - 9) / 45.0)
                      : static_cast<float>(0.01 * static_cast<double>(i % 3));
    v.assign(dt::constant<float>(values, v.shape()));
  }
  std::vector<float> pixels(128);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>(i % 17);
  const auto x = dt::constant<float>(pixels, {2, 8, 8, 1});
  for (const auto& y : {model.predict(x), model(x)}) {  // traced, then eager
    BOOST_TEST(y.shape() == dt::Shape({2, 7, 16}));
    const auto v = y.to_vector();
    double sum = 0, weighted = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      sum += v[i];
      weighted += v[i] * static_cast<double>(i % 7 + 1);
    }
    BOOST_TEST(std::abs(sum - 1.43527777) <= 1e-5, sum);
    BOOST_TEST(std::abs(weighted - 1.72166656) <= 1e-5, weighted);
  }
  // Training through them, traced and eager: Keras's losses (SGD 0.1, MSE towards y / 2).
  const auto target = dt::mul(model.predict(x), dt::scalar<float>(0.5f));
  const std::vector<double> keras{0.00202170643, 0.00196205825, 0.00190637505};
  std::vector<std::vector<float>> initial;
  for (const auto& v : model.trainable_variables()) initial.push_back(v.value().to_vector());
  for (const bool eager : {false, true}) {
    auto variables = model.trainable_variables();
    for (std::size_t i = 0; i < variables.size(); ++i)
      variables[i].assign(dt::constant<float>(initial[i], variables[i].shape()));
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.1}, {.run_eagerly = eager});
    const auto history = model.fit(x, target, {.epochs = 3, .batch_size = 2, .verbose = 0, .shuffle = false});
    for (std::size_t e = 0; e < 3; ++e)
      BOOST_TEST(std::abs(history.loss[e] - keras[e]) <= 1e-5 * keras[e],
                 (eager ? "eager" : "traced") << " epoch " << e << ": " << std::setprecision(9) << history.loss[e]);
  }
  // The layers compute what the ops do.
  check_values(nn::ZeroPadding2D(1, {.data_format = "channels_first"})(x),
               dt::pad(x, {{0, 0}, {0, 0}, {1, 1}, {1, 1}}).to_vector());
  BOOST_TEST(nn::ZeroPadding2D({2, 1})(x).shape() == dt::Shape({2, 12, 10, 1}));
  check_values(nn::Rescaling(0.5)(x), dt::mul(x, dt::scalar<float>(0.5f)).to_vector());
  BOOST_TEST(nn::Reshape({4, -1})(x).shape() == dt::Shape({2, 4, 16}));
  // Keras's texts.
  DEVTENSOR_CHECK_THROW_WITH(nn::Reshape({5, 3})(dt::zeros<float>({2, 3, 4})), dt::InvalidArgumentError,
                             "The total size of the tensor must be unchanged. Received: input_shape=(3, 4), "
                             "target_shape=(5, 3)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Reshape({-1, 5})(dt::zeros<float>({2, 3, 4})), dt::InvalidArgumentError,
                             "the input size cannot by divided by the specified dimensions in target_shape. Received: "
                             "input_shape=(3, 4), target_shape=(-1, 5)");
  DEVTENSOR_CHECK_THROW_WITH(nn::Reshape({-1, -1}), dt::InvalidArgumentError,
                             "There must be at most one unknown dimension (-1) in `target_shape`. Received: "
                             "target_shape=(-1, -1).");
  DEVTENSOR_CHECK_THROW_WITH(nn::Reshape({-2, 12}), dt::InvalidArgumentError,
                             "Each dimension in `target_shape` must be a non-negative integer, or `-1` for a single "
                             "unknown dimension. Received: target_shape=(-2, 12).");
  DEVTENSOR_CHECK_THROW_WITH(nn::ZeroPadding2D({1, 2, 3}), dt::InvalidArgumentError,
                             "`padding` should have two elements. Received: padding=(1, 2, 3).");
  DEVTENSOR_CHECK_THROW_WITH(nn::ZeroPadding2D({1, -2}), dt::InvalidArgumentError,
                             "The `2nd entry of padding` argument must be a tuple of 2 integers. Received 2nd entry of "
                             "padding=-2, including values {-2} that do not satisfy `value >= 0`");
  DEVTENSOR_CHECK_THROW_WITH(nn::ZeroPadding2D({{1, -2}, {3, 1}}), dt::InvalidArgumentError,
                             "The `1st entry of padding` argument must be a tuple of 2 integers. Received 1st entry of "
                             "padding=(1, -2), including values {-2} that do not satisfy `value >= 0`");
  DEVTENSOR_CHECK_THROW_WITH(nn::ZeroPadding2D(-1), dt::InvalidArgumentError,
                             "Received padding=-1, including values {-1}");
  DEVTENSOR_CHECK_THROW_WITH(nn::ZeroPadding2D(1)(dt::zeros<float>({2, 3, 4})), dt::InvalidArgumentError,
                             "expected ndim=4, found ndim=3. Full shape received: (2, 3, 4)");
}

namespace {
/// The first 256 digits as [256, 8, 8, 1] images and their labels.
std::pair<dt::Tensor<float>, dt::Tensor<float>> first_digits() {
  std::ifstream in(DEVTENSOR_DIGITS_CSV);
  BOOST_TEST_REQUIRE(static_cast<bool>(in), "cannot open " << DEVTENSOR_DIGITS_CSV);
  std::vector<float> pixels, labels;
  std::string line;
  while (labels.size() < 256 && std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field;
    for (int column = 0; std::getline(fields, field, ','); ++column)
      (column < 64 ? pixels : labels).push_back(column < 64 ? std::stof(field) / 16.0f : std::stof(field));
  }
  return {dt::constant<float>(pixels, {256, 8, 8, 1}), dt::constant<float>(labels, {256})};
}
/// conv_training.py's starting weights: value i of a variable, row-major, ((i * 7) % 19 - 9) / 45
/// for kernels, 0.01 * (i % 3) for biases; variables whose name holds `skip` keep theirs.
void assign_ramps(nn::Sequential& model, std::string_view skip = {}) {
  for (auto& v : model.trainable_variables()) {
    if (!skip.empty() && v.name().find(skip) != std::string::npos) continue;
    std::vector<float> values(static_cast<std::size_t>(v.shape().num_elements()));
    for (std::size_t i = 0; i < values.size(); ++i)
      values[i] = v.shape().rank() > 1
                      ? static_cast<float>(static_cast<double>(static_cast<int>((i * 7) % 19) - 9) / 45.0)
                      : static_cast<float>(0.01 * static_cast<double>(i % 3));
    v.assign(dt::constant<float>(values, v.shape()));
  }
}
/// conv_training.py's model and weights.
nn::Sequential conv_classifier(bool run_eagerly = false) {
  nn::Sequential model(
      {nn::Conv2D(4, 3, {.activation = nn::Activation::relu, .input_shape = nn::PartialShape{8, 8, 1}}),
       nn::MaxPooling2D(), nn::Flatten(), nn::Dense(10)});
  assign_ramps(model);
  model.compile(nn::losses::SparseCategoricalCrossentropy{.from_logits = true},
                nn::optimizers::SGD{.learning_rate = 0.1}, {.run_eagerly = run_eagerly});
  return model;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_conv_classifier_trains_as_tensorflows_eagerly_traced_and_mirrored) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  // conv_training.py (TensorFlow's own kernels: oneDNN's MaxPoolGrad breaks ties otherwise).
  const std::vector<double> tensorflow{2.30485129, 2.28184938, 2.26246858};
  const double tensorflow_evaluate = 2.24774384;
  const auto [x, y] = first_digits();
  const auto check = [&](const nn::History& history, double evaluate, const char* how) {
    BOOST_TEST_CONTEXT(how) {
      BOOST_TEST_REQUIRE(history.loss.size() == 3u);
      // 1e-6 where OpenBLAS runs its Haswell sgemm kernels; its SkylakeX ones, and its generic
      // Prescott ones (on a CPU it does not know), add in other orders: 1.5e-5 away after 3 epochs
      for (std::size_t e = 0; e < 3; ++e)
        BOOST_TEST(std::abs(history.loss[e] - tensorflow[e]) <= 3e-5 * tensorflow[e],
                   "epoch " << e << ": " << std::setprecision(9) << history.loss[e] << " vs " << tensorflow[e]);
      BOOST_TEST(std::abs(evaluate - tensorflow_evaluate) <= 3e-5 * tensorflow_evaluate,
                 "evaluate: " << std::setprecision(9) << evaluate);
    }
  };
  for (const bool traced : {false, true}) {
    auto model = conv_classifier(!traced);
    const auto history = model.fit(x, y, {.epochs = 3, .batch_size = 32, .verbose = 0, .shuffle = false});
    check(history, model.evaluate(x, y, {.batch_size = 32, .verbose = 0}).loss, traced ? "traced" : "eager");
  }
  dt::distribute::MirroredStrategy strategy(std::vector<std::string>{"/cpu:0", "/cpu:1"});
  std::optional<nn::Sequential> mirrored;
  {
    auto scope = strategy.scope();
    mirrored.emplace(conv_classifier());
  }
  const auto history = mirrored->fit(x, y, {.epochs = 3, .batch_size = 32, .verbose = 0, .shuffle = false});
  check(history, mirrored->evaluate(x, y, {.batch_size = 32, .verbose = 0}).loss, "mirrored on 2 CPUs");
}

// BatchNormalization against TensorFlow 2.21 (tests/reference/batch_norm.py).
namespace {
std::vector<float> floats(std::initializer_list<double> values) { return {values.begin(), values.end()}; }
/// batch_norm.py's model: conv_training.py's with a BatchNormalization before the relu (and
/// average pooling: the normalised blank windows tie, and a max-pool's gradient would follow a
/// last-bit difference).
nn::Sequential batch_normalized_classifier(bool run_eagerly = false) {
  nn::Sequential model({nn::Conv2D(4, 3, {.input_shape = nn::PartialShape{8, 8, 1}}), nn::BatchNormalization(),
                        nn::ActivationLayer(nn::Activation::relu), nn::AveragePooling2D(), nn::Flatten(),
                        nn::Dense(10)});
  assign_ramps(model, "batch_normalization");  // gamma, beta: Keras's initial values
  model.compile(nn::losses::SparseCategoricalCrossentropy{.from_logits = true},
                nn::optimizers::SGD{.learning_rate = 0.1}, {.run_eagerly = run_eagerly});
  return model;
}
}  // namespace

BOOST_AUTO_TEST_CASE(batch_normalization_normalises_and_differentiates_as_tensorflow) {
  nn::BatchNormalization layer({.momentum = 0.9});
  std::vector<float> values(12), weights(12);
  for (std::size_t i = 0; i < 12; ++i) {
    values[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
    weights[i] = static_cast<float>(i % 4) - 1.5f;
  }
  const auto x = dt::constant<float>(values, {4, 3});
  (void)layer(x);  // builds (inference: the moving statistics are unchanged)
  layer.gamma().assign(dt::constant<float>({1.5f, 0.5f, 2.0f}, {3}));
  layer.beta().assign(dt::constant<float>({0.1f, -0.2f, 0.3f}, {3}));
  BOOST_TEST(layer.moving_mean().to_vector() == std::vector<float>(3, 0.0f), boost::test_tools::per_element());
  BOOST_TEST(!layer.moving_mean().trainable());
  BOOST_TEST(layer.gamma().trainable());
  BOOST_TEST(layer.trainable_variables().size() == 2u);
  dt::GradientTape tape;
  tape.watch(x);
  const auto out = layer(x, true);
  const auto loss = dt::reduce_sum(dt::mul(out, dt::constant<float>(weights, {4, 3})));
  const auto grads =
      tape.gradient(loss, std::vector<dt::Tensor<float>>{x, layer.gamma().value(), layer.beta().value()});
  check_values(out, floats({-1.46498573, -0.299872249, 2.92468095, 0.461150646, 0.499105722, -0.749872386, 2.38728714,
                            -0.899105787, 1.34987235, -0.983451724, -0.100127757, -2.32468104}));
  check_values(grads[0], floats({-1.35703945, -0.558876514, 2.3155632, 2.53562808, -0.0827541351, -1.55614877,
                                 -1.27625036, 0.0827541351, -2.64334083, 0.0976616144, 0.558876514, 1.88392639}));
  check_values(layer.moving_mean().value(), floats({-0.0437499993, 0.0125000002, 0}));
  check_values(layer.moving_variance().value(), floats({0.960546851, 0.939062476, 0.990624964}));
  check_values(layer(x), floats({-1.74519968, -0.206446171, 2.81053519, -0.215500459, 0.309247315, -0.704214036,
                                 1.31419873, -0.5932163, 1.304214, -1.36277485, -0.0775227994, -2.21053529}));
}

BOOST_AUTO_TEST_CASE(batch_normalization_gradients_reach_gamma_and_beta) {
  // The same figures as the test above through the layer's variables (a tape watches them).
  nn::BatchNormalization layer({.momentum = 0.9});
  std::vector<float> values(12), weights(12);
  for (std::size_t i = 0; i < 12; ++i) {
    values[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
    weights[i] = static_cast<float>(i % 4) - 1.5f;
  }
  const auto x = dt::constant<float>(values, {4, 3});
  (void)layer(x);
  layer.gamma().assign(dt::constant<float>({1.5f, 0.5f, 2.0f}, {3}));
  layer.beta().assign(dt::constant<float>({0.1f, -0.2f, 0.3f}, {3}));
  dt::GradientTape tape;
  const auto loss = dt::reduce_sum(dt::mul(layer(x, true), dt::constant<float>(weights, {4, 3})));
  const auto grads = tape.gradient(loss, layer.trainable_variables());
  BOOST_TEST_REQUIRE(grads.size() == 2u);
  check_values(grads[0], floats({3.049716, -3.99488974, -1.8372767}));
  check_values(grads[1], floats({0, 0, 0}));
}

BOOST_AUTO_TEST_CASE(batch_normalization_checks_its_axis_and_input) {
  nn::BatchNormalization layer({.axis = 3});
  DEVTENSOR_CHECK_THROW_WITH((void)layer(dt::zeros<float>({2, 3})), dt::InvalidArgumentError,
                             "Axis 3 is out of bounds for input shape (2, 3). Received: axis=3");
  nn::BatchNormalization built;
  (void)built(dt::zeros<float>({2, 3}));
  DEVTENSOR_CHECK_THROW_WITH((void)built(dt::zeros<float>({2, 4})), dt::InvalidArgumentError,
                             "expected ndim=2 and axis -1 of size 3, but received input with shape (2, 4)");
  // Channels first: statistics per axis-1 feature.
  nn::BatchNormalization first({.axis = 1, .epsilon = 0});
  const auto x = dt::constant<float>({1, 1, 10, 10, 3, 3, 30, 30}, {2, 2, 2});
  check_values(first(x, true), floats({-1, -1, -1, -1, 1, 1, 1, 1}));
  check_values(first.moving_mean().value(), floats({0.02, 0.2}));
}

BOOST_AUTO_TEST_CASE(a_batch_normalized_classifier_trains_as_tensorflows_on_one_cpu_and_mirrored) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  struct Reference {
    std::vector<double> losses;
    double evaluate;
    std::vector<float> moving_mean, moving_variance;
  };
  // batch_norm.py: under the strategy each replica normalises its 16 examples by their statistics.
  const Reference one{{2.20309687, 1.9055872, 1.63910866},
                      2.1705246,
                      floats({0.00877169147, 0.00922409166, -0.0306644496, -0.0421735309}),
                      floats({0.788631499, 0.788884521, 0.788958788, 0.790827692})};
  // evaluate splits each batch across the replicas, each with its own moving statistics, as
  // TensorFlow's (2.16885424; 2.16896415 when every batch ran on the first replica).
  const Reference mirrored{{2.20274878, 1.90574419, 1.63993406},
                           2.16885424,
                           floats({0.00837678183, 0.00934047718, -0.030217981, -0.0416800939}),
                           floats({0.788628399, 0.788885355, 0.788905978, 0.790872872})};
  const auto [x, y] = first_digits();
  const auto check = [&](nn::Sequential& model, const Reference& want, const char* how) {
    BOOST_TEST_CONTEXT(how) {
      const auto history = model.fit(x, y, {.epochs = 3, .batch_size = 32, .verbose = 0, .shuffle = false});
      BOOST_TEST_REQUIRE(history.loss.size() == 3u);
      for (std::size_t e = 0; e < 3; ++e)
        BOOST_TEST(std::abs(history.loss[e] - want.losses[e]) <= 2e-6 * want.losses[e],
                   "epoch " << e << ": " << std::setprecision(9) << history.loss[e] << " vs " << want.losses[e]);
      const double evaluate = model.evaluate(x, y, {.batch_size = 32, .verbose = 0}).loss;
      BOOST_TEST(std::abs(evaluate - want.evaluate) <= 2e-6 * want.evaluate,
                 "evaluate: " << std::setprecision(9) << evaluate);
      const auto variables = model.variables();  // conv kernel, bias; gamma, beta, moving mean, variance; dense
      check_values(variables[4].value(), want.moving_mean, 2e-5f);
      check_values(variables[5].value(), want.moving_variance, 2e-5f);
    }
  };
  {
    auto model = batch_normalized_classifier();
    std::ostringstream out;
    model.summary(out);
    BOOST_TEST(out.str().find("│ batch_normalization             │ (None, 6, 6, 4)        │            16 │\n"
                              "│ (BatchNormalization)            │                        │               │") !=
                   std::string::npos,
               out.str());
    BOOST_TEST(out.str().find(" Non-trainable params: 8 (32.00 B)") != std::string::npos, out.str());
    check(model, one, "one CPU, traced");
    auto eager = batch_normalized_classifier(true);
    check(eager, one, "one CPU, eager");
  }
  dt::distribute::MirroredStrategy strategy(std::vector<std::string>{"/cpu:0", "/cpu:1"});
  std::optional<nn::Sequential> model;
  {
    auto scope = strategy.scope();
    model.emplace(batch_normalized_classifier());
  }
  check(*model, mirrored, "mirrored on 2 CPUs, traced");
}

BOOST_AUTO_TEST_SUITE_END()

namespace mixed {
// tests/reference/mixed_precision.py (Keras 3, TensorFlow 2.21): Dense(6, relu) -> Dense(4, tanh)
// -> Dense(3, sigmoid, dtype "float32") on x [8, 5], from fixed weights.
std::vector<float> pattern(int n, int multiplier, int modulus, float shift, float scale) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back((static_cast<float>(i * multiplier % modulus) - shift) / scale);
  return v;
}
dt::Tensor<float> x() { return dt::constant<float>(pattern(40, 37, 23, 11, 7), {8, 5}); }
dt::Tensor<float> y() { return dt::constant<float>(pattern(24, 11, 7, 0, 7), {8, 3}); }
std::vector<dt::Tensor<float>> weights() {
  return {dt::constant<float>(pattern(30, 13, 17, 8, 9), {5, 6}), dt::constant<float>(pattern(6, 1, 99, 2.5f, 10)),
          dt::constant<float>(pattern(24, 7, 11, 5, 6), {6, 4}),  dt::constant<float>(pattern(4, 1, 99, 1.5f, 8)),
          dt::constant<float>(pattern(12, 5, 13, 6, 7), {4, 3}),  dt::constant<float>({0.1f, -0.2f, 0.3f})};
}
/// The model under the global policy `policy` (its last layer float32, as Keras advises).
nn::Sequential model(const std::string& policy) {
  nn::clear_session();
  nn::mixed_precision::set_global_policy(policy);
  nn::Sequential m({nn::Dense(6, {.input_dim = 5, .activation = nn::Activation::relu}),
                    nn::Dense(4, {.activation = nn::Activation::tanh}),
                    nn::Dense(3, {.activation = nn::Activation::sigmoid, .dtype = "float32"})});
  m.set_weights(weights());
  return m;
}
float sum(const dt::Variable<float>& v) { return dt::reduce_sum(v.value(), std::nullopt).item(); }
bool close(double got, double want, double tolerance = 2e-6) {
  return std::abs(got - want) <= tolerance * (1.0 + std::abs(want));
}
/// Per batch: the epoch's running loss, the loss scale and the optimizer's iterations after it.
struct ScaleLog {
  const nn::Model* model;
  std::vector<std::array<double, 3>>* rows;
  void on_train_batch_end(std::int64_t, const nn::Logs& logs) {
    const auto* lso = model->optimizer().target<nn::optimizers::LossScaleOptimizer>();
    const auto loss = std::find_if(logs.begin(), logs.end(), [](const auto& entry) { return entry.first == "loss"; });
    BOOST_TEST_REQUIRE((loss != logs.end()));
    rows->push_back(
        {loss->second, lso ? lso->dynamic_scale() : -1.0, static_cast<double>(model->optimizer().iterations())});
  }
};
void check_rows(const std::vector<std::array<double, 3>>& got, const std::vector<std::array<double, 3>>& keras) {
  BOOST_TEST_REQUIRE(got.size() == keras.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    BOOST_TEST(close(got[b][0], keras[b][0]), "batch " << b << " loss " << got[b][0] << " vs Keras's " << keras[b][0]);
    BOOST_TEST(got[b][1] == keras[b][1], "batch " << b << " scale " << got[b][1] << " vs Keras's " << keras[b][1]);
    BOOST_TEST(got[b][2] == keras[b][2], "batch " << b << " iterations " << got[b][2] << " vs " << keras[b][2]);
  }
}
}  // namespace mixed

BOOST_FIXTURE_TEST_SUITE(mixed_precision, LayersFixture)

BOOST_AUTO_TEST_CASE(policies_are_keras_names_and_refuse_others_with_keras_text) {
  namespace mp = nn::mixed_precision;
  BOOST_TEST(mp::global_policy().name() == "float32");
  const mp::DTypePolicy half("mixed_float16"), brain("mixed_bfloat16");
  BOOST_TEST(half.name() == "mixed_float16");
  BOOST_TEST((half.compute_dtype() == dt::DType::DT_HALF));
  BOOST_TEST((half.variable_dtype() == dt::DType::DT_FLOAT));
  BOOST_TEST((brain.compute_dtype() == dt::DType::DT_BFLOAT16));
  BOOST_TEST(!mp::DTypePolicy().is_mixed());
  DEVTENSOR_CHECK_THROW_WITH(mp::set_global_policy("mixed_float32"), dt::InvalidArgumentError,
                             "Cannot convert 'mixed_float32' to a mixed precision DTypePolicy. Valid policies include "
                             "'mixed_float16', 'mixed_bfloat16', and the name of any float dtype such as 'float32'.");
  DEVTENSOR_CHECK_THROW_WITH(mp::set_global_policy("float16"), dt::UnimplementedError,
                             "devtensor's layers keep float32 variables");
  BOOST_TEST(mp::global_policy().name() == "float32");  // a refused name changes nothing
  mp::set_global_policy(brain);
  nn::Dense mixed(2);
  nn::Dense own(2, {.dtype = "float32"});
  nn::Conv2D conv(2, {3, 3});
  nn::DepthwiseConv2D depthwise({3, 3});
  nn::Reshape reshape({4});
  BOOST_TEST(mixed.dtype_policy().name() == "mixed_bfloat16");
  BOOST_TEST(own.dtype_policy().name() == "float32");
  BOOST_TEST((conv.compute_dtype() == dt::DType::DT_BFLOAT16));
  BOOST_TEST((depthwise.compute_dtype() == dt::DType::DT_BFLOAT16));  // every layer takes the global policy
  BOOST_TEST(reshape.dtype_policy().name() == "mixed_bfloat16");
  nn::clear_session();  // as Keras's: the global policy is float32 again
  BOOST_TEST(mp::global_policy().name() == "float32");
  BOOST_TEST(mixed.dtype_policy().name() == "mixed_bfloat16");  // a layer keeps its own
  DEVTENSOR_CHECK_THROW_WITH(nn::Dense(2, {.dtype = "int32"}), dt::InvalidArgumentError, "Cannot convert 'int32'");
}

BOOST_AUTO_TEST_CASE(the_global_policy_is_per_thread_as_keras) {
  // Keras 3 (its global state a threading.local): a new thread starts at float32, its own setting
  // stays its own, and clear_session resets every thread's (Keras replaces the whole state).
  namespace mp = nn::mixed_precision;
  mp::set_global_policy("mixed_bfloat16");
  std::string seen, layer, set_there;
  std::thread([&] {
    seen = mp::global_policy().name();
    layer = nn::Dense(2).dtype_policy().name();
    mp::set_global_policy("mixed_float16");
    set_there = mp::global_policy().name();
  }).join();
  BOOST_TEST(seen == "float32");
  BOOST_TEST(layer == "float32");
  BOOST_TEST(set_there == "mixed_float16");
  BOOST_TEST(mp::global_policy().name() == "mixed_bfloat16");
  std::promise<void> set, cleared;
  std::string after_clear;
  std::thread other([&] {
    mp::set_global_policy("mixed_float16");
    set.set_value();
    cleared.get_future().wait();
    after_clear = mp::global_policy().name();
  });
  set.get_future().wait();
  nn::clear_session();
  cleared.set_value();
  other.join();
  BOOST_TEST(after_clear == "float32");
  BOOST_TEST(mp::global_policy().name() == "float32");
  mp::set_global_policy("mixed_float16");  // a setting after the reset counts again
  BOOST_TEST(mp::global_policy().name() == "mixed_float16");
  nn::clear_session();
}

BOOST_AUTO_TEST_CASE(layers_round_as_keras_layers_under_each_policy) {
  // Keras's first layer's output in the compute dtype: ours is the same values in float32 (Note
  // [Mixed precision at layer boundaries]): each is a 16-bit value, and they differ from float32's.
  for (const std::string policy : {"mixed_float16", "mixed_bfloat16"}) {
    auto m = mixed::model(policy);
    nn::Layer first = m.layers().front();
    const auto out = first(mixed::x());
    const auto in_16 =
        policy == "mixed_float16" ? out.cast<dt::float16>().cast<float>() : out.cast<dt::bfloat16>().cast<float>();
    BOOST_TEST(out.to_vector() == in_16.to_vector(), boost::test_tools::per_element());
    nn::mixed_precision::set_global_policy("float32");
    nn::Dense exact(6, {.input_dim = 5, .activation = nn::Activation::relu});
    exact.kernel().assign(mixed::weights()[0]);
    exact.bias().assign(mixed::weights()[1]);
    BOOST_TEST(out.to_vector() != exact(mixed::x()).to_vector());
  }
}

BOOST_AUTO_TEST_CASE(a_custom_loop_trains_as_keras_under_each_policy) {
  // Per policy and step: the loss, then the sums of the first kernel, the first bias and the last
  // kernel after SGD(0.5)'s step; mixed_float16 through LossScaleOptimizer (2^15, never overflows).
  // The first bias under mixed_bfloat16 within 3e-5: TensorFlow's CPU BiasAddGrad sums bfloat16
  // gradients in bfloat16 (Keras adds the bias with tf.nn.bias_add), devtensor in float32; its
  // AddV2 gradient gives devtensor's numbers (tests/reference/mixed_precision.py).
  struct Step {
    const char* policy;
    std::array<double, 4> values;
  };
  const std::vector<Step> keras = {{"mixed_float16", {0.108594835, -0.893410802, -0.0014231205, -0.281335652}},
                                   {"mixed_float16", {0.106200583, -0.897724628, -0.00272345543, -0.277797282}},
                                   {"mixed_float16", {0.103941955, -0.901836872, -0.00387895107, -0.275160462}},
                                   {"mixed_float16", {0.101762019, -0.905749798, -0.00486147404, -0.273448676}},
                                   {"mixed_float16", {0.0997077525, -0.909464955, -0.00565993786, -0.272750258}},
                                   {"mixed_bfloat16", {0.108552009, -0.893395185, -0.00147628784, -0.281138867}},
                                   {"mixed_bfloat16", {0.106212415, -0.897678137, -0.00283813477, -0.277472466}},
                                   {"mixed_bfloat16", {0.103896581, -0.901800156, -0.00400924683, -0.274746299}},
                                   {"mixed_bfloat16", {0.101711772, -0.90564394, -0.00504684448, -0.273133904}},
                                   {"mixed_bfloat16", {0.0997194275, -0.909314156, -0.00582122803, -0.272567511}},
                                   {"float32", {0.108597733, -0.893410921, -0.001423195, -0.281321317}},
                                   {"float32", {0.106216192, -0.897730827, -0.0027205199, -0.277773201}},
                                   {"float32", {0.103936993, -0.901845336, -0.00387196243, -0.275138736}},
                                   {"float32", {0.101767637, -0.905755639, -0.00485573709, -0.273458958}},
                                   {"float32", {0.0997156873, -0.90947175, -0.00565059483, -0.272745579}}};
  for (std::size_t first = 0; first < keras.size(); first += 5) {
    const std::string policy = keras[first].policy;
    auto m = mixed::model(policy);
    const auto vars = m.trainable_variables();
    const nn::optimizers::SGD sgd{.learning_rate = 0.5};
    const nn::optimizers::LossScaleOptimizer scaled{.inner_optimizer = sgd};
    for (std::size_t step = 0; step < 5; ++step) {
      dt::GradientTape tape;
      const auto loss = dt::reduce_mean(dt::square(dt::sub(m(mixed::x(), true), mixed::y())), std::nullopt);
      if (policy == "mixed_float16") {
        scaled.apply_gradients(tape.gradient(scaled.scale_loss(loss), vars), vars);
      } else {
        sgd.apply_gradients(tape.gradient(loss, vars), vars);
      }
      const auto& want = keras[first + step].values;
      const std::array<double, 4> got{loss.item(), mixed::sum(vars[0]), mixed::sum(vars[1]), mixed::sum(vars[4])};
      for (std::size_t i = 0; i < 4; ++i) {
        const bool bias_sum = policy == "mixed_bfloat16" && i == 2;
        BOOST_TEST((bias_sum ? std::abs(got[i] - want[i]) <= 3e-5 : mixed::close(got[i], want[i])),
                   policy << " step " << step << " value " << i << ": " << got[i] << " vs Keras's " << want[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fit_trains_under_mixed_bfloat16_as_keras) {
  // model.fit(epochs=4, batch_size=4, shuffle=False), SGD(0.5), "mse": traced steps of bfloat16 ops,
  // against Keras's eager fit (its traced one fuses 16-bit MatMul + BiasAdd + activation, rounding
  // once: tests/reference/mixed_precision.py).
  const std::array<double, 4> keras_losses{0.108588822, 0.103986286, 0.0997547358, 0.0959122628};
  auto m = mixed::model("mixed_bfloat16");
  m.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.5});
  const auto history = m.fit(mixed::x(), mixed::y(), {.epochs = 4, .batch_size = 4, .verbose = 0, .shuffle = false});
  const auto& losses = history.loss;
  BOOST_TEST_REQUIRE(losses.size() == 4u);
  for (std::size_t e = 0; e < 4; ++e)
    BOOST_TEST(mixed::close(losses[e], keras_losses[e]),
               "epoch " << e << ": " << losses[e] << " vs " << keras_losses[e]);
  const auto vars = m.trainable_variables();
  BOOST_TEST(mixed::close(mixed::sum(vars[0]), -0.916779757));
  BOOST_TEST(std::abs(mixed::sum(vars[1]) - -0.00501251221) <= 3e-5, mixed::sum(vars[1]));  // BiasAddGrad (above)
  BOOST_TEST(mixed::close(mixed::sum(vars[4]), -0.274210691));
}

BOOST_AUTO_TEST_CASE(compile_wraps_a_mixed_float16_models_optimizer_and_fit_scales_the_loss) {
  // Keras 3 wraps the optimizer in LossScaleOptimizer(2^15, 2000 growth steps): per batch of
  // fit(epochs=3, batch_size=4), the running loss, the scale and the iterations.
  for (const bool eager : {false, true}) {
    auto m = mixed::model("mixed_float16");
    BOOST_TEST(m.dtype_policy().name() == "mixed_float16");
    m.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.5}, {.run_eagerly = eager});
    BOOST_TEST(m.optimizer().name() == "LossScaleOptimizer");
    std::vector<std::array<double, 3>> rows;
    const auto history = m.fit(
        mixed::x(), mixed::y(),
        {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false, .callbacks = {mixed::ScaleLog{&m, &rows}}});
    mixed::check_rows(rows, {{0.13381274, 32768, 1},
                             {0.108672217, 32768, 2},
                             {0.125304356, 32768, 3},
                             {0.103967212, 32768, 4},
                             {0.117615052, 32768, 5},
                             {0.0997160971, 32768, 6}});
    const auto vars = m.trainable_variables();
    BOOST_TEST(mixed::close(mixed::sum(vars[0]), -0.912599444), (eager ? "eager" : "traced"));
    BOOST_TEST(mixed::close(mixed::sum(vars[1]), -0.00664186478));
    BOOST_TEST(mixed::close(mixed::sum(vars[4]), -0.271876335));
  }
  // auto_scale_loss = false keeps the optimizer as given (Keras's compile argument)
  auto plain = mixed::model("mixed_float16");
  plain.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{}, {.auto_scale_loss = false});
  BOOST_TEST(plain.optimizer().name() == "SGD");
}

BOOST_AUTO_TEST_CASE(fit_skips_overflowing_steps_as_keras) {
  // Targets 100x, a linear float32 output, LossScaleOptimizer(SGD(0.001), dynamic_growth_steps=3),
  // fit(epochs=6, batch_size=2): the float16 layers' gradients overflow at 2^15 .. 2^12, the scale
  // halves and the step is skipped (iterations stay); three finite steps double it again.
  nn::clear_session();
  nn::mixed_precision::set_global_policy("mixed_float16");
  nn::Sequential m({nn::Dense(6, {.input_dim = 5, .activation = nn::Activation::relu}),
                    nn::Dense(4, {.activation = nn::Activation::tanh}), nn::Dense(3, {.dtype = "float32"})});
  m.set_weights(mixed::weights());
  m.compile(nn::losses::MeanSquaredError{},
            nn::optimizers::LossScaleOptimizer{.inner_optimizer = nn::optimizers::SGD{.learning_rate = 0.001},
                                               .dynamic_growth_steps = 3});
  std::vector<std::array<double, 3>> rows;
  (void)m.fit(
      mixed::x(), dt::mul(mixed::y(), dt::scalar<float>(100.0f)),
      {.epochs = 6, .batch_size = 2, .verbose = 0, .shuffle = false, .callbacks = {mixed::ScaleLog{&m, &rows}}});
  mixed::check_rows(rows,
                    {{2743.36646, 16384, 0}, {2289.53491, 8192, 0},  {2520.61694, 4096, 0},  {2452.02319, 2048, 0},
                     {2743.36646, 2048, 1},  {2284.89941, 2048, 2},  {2518.24585, 1024, 2},  {2450.81519, 1024, 3},
                     {2724.25073, 1024, 4},  {2267.25024, 2048, 5},  {2504.71216, 1024, 5},  {2437.99268, 1024, 6},
                     {2704.69727, 1024, 7},  {2249.02563, 2048, 8},  {2489.91235, 1024, 8},  {2423.90356, 1024, 9},
                     {2684.28638, 1024, 10}, {2230.07031, 2048, 11}, {2473.42505, 1024, 11}, {2407.9209, 1024, 12},
                     {2663.1189, 1024, 13},  {2210.5166, 2048, 14},  {2454.8291, 1024, 14},  {2389.30371, 512, 14}});
  const auto vars = m.trainable_variables();
  BOOST_TEST(mixed::close(mixed::sum(vars[0]), -0.874036849));
  BOOST_TEST(mixed::close(mixed::sum(vars[1]), 0.104691371));
  BOOST_TEST(mixed::close(mixed::sum(vars[4]), 0.0318218768));
}

namespace mixed_conv {
// tests/reference/mixed_precision_conv.py (Keras 3, TensorFlow 2.21): Conv2D(3, 3, same, relu) ->
// [BatchNormalization] -> AveragePooling2D(2) -> MaxPooling2D(1) -> Flatten -> Dense(2, softmax,
// float32) on x [8, 6, 6, 2], from fixed weights.
dt::Tensor<float> x() { return dt::constant<float>(mixed::pattern(576, 37, 23, 11, 7), {8, 6, 6, 2}); }
dt::Tensor<float> y(float factor = 1) {
  const auto a = mixed::pattern(8, 3, 5, 2, 4);
  std::vector<float> v;
  for (const float e : a) v.insert(v.end(), {e * factor, (1 - e) * factor});
  return dt::constant<float>(v, {8, 2});
}
nn::Sequential model(const std::string& policy, bool batch_norm = true) {
  nn::mixed_precision::set_global_policy(policy);
  std::vector<nn::Layer> layers{
      nn::Conv2D(3, {3, 3}, {.padding = "same", .activation = nn::Activation::relu, .input_shape = {{6, 6, 2}}})};
  if (batch_norm) layers.push_back(nn::BatchNormalization());
  for (nn::Layer layer :
       std::vector<nn::Layer>{nn::AveragePooling2D({2, 2}), nn::MaxPooling2D({1, 1}), nn::Flatten(),
                              nn::Dense(2, {.activation = nn::Activation::softmax, .dtype = "float32"})})
    layers.push_back(layer);
  nn::Sequential m(layers);
  std::vector<dt::Tensor<float>> weights{dt::constant<float>(mixed::pattern(54, 13, 17, 8, 18), {3, 3, 2, 3}),
                                         dt::constant<float>({0.05f, -0.1f, 0.02f})};
  if (batch_norm)
    for (const float v : {1.0f, 0.0f, 0.0f, 1.0f}) weights.push_back(dt::fill<float>(dt::Shape{3}, v));
  weights.push_back(dt::constant<float>(mixed::pattern(54, 7, 11, 5, 20), {27, 2}));
  weights.push_back(dt::constant<float>({0.1f, -0.1f}));
  m.set_weights(weights);
  return m;
}
}  // namespace mixed_conv

BOOST_AUTO_TEST_CASE(convolutional_layers_compute_in_sixteen_bits_and_train_as_keras) {
  // Conv2D, BatchNormalization (float32 inside, its output rounded), the pools and Flatten take
  // the policy: Keras's compute dtypes, predictions, and eager fit(epochs=3, batch_size=4) of
  // SGD(0.1) (mixed_float16: through the LossScaleOptimizer compile makes). Tolerances: 16-bit
  // convolutions sum in another order than TensorFlow's oneDNN kernels (a rounding may flip).
  struct Keras {
    const char* policy;
    double predict_sum, predict_squares;
    std::array<double, 3> losses, weights;
  };
  for (const auto& keras : {Keras{"mixed_bfloat16",
                                  8,
                                  4.17796183,
                                  {0.514923096, 0.447153091, 0.387045264},
                                  {-0.0882190242, 0.0917997137, 0.0499998778}},
                            Keras{"mixed_float16",
                                  8,
                                  4.17723656,
                                  {0.515173793, 0.447441816, 0.386674106},
                                  {-0.088730827, 0.0917645544, 0.050000146}}}) {
    nn::clear_session();
    auto m = mixed_conv::model(keras.policy);
    const std::string want = keras.policy == std::string("mixed_float16") ? "float16" : "bfloat16";
    for (std::size_t i = 0; i + 1 < m.layers().size(); ++i)
      BOOST_TEST(dt::dtype_name(m.layers()[i]->compute_dtype()) == want, keras.policy << " layer " << i);
    BOOST_TEST(dt::dtype_name(m.layers().back()->compute_dtype()) == "float32");
    const auto out = m.predict(mixed_conv::x());
    BOOST_TEST(mixed::close(dt::reduce_sum(out, std::nullopt).item(), keras.predict_sum));
    BOOST_TEST(mixed::close(dt::reduce_sum(dt::square(out), std::nullopt).item(), keras.predict_squares, 1e-4),
               keras.policy << ": " << dt::reduce_sum(dt::square(out), std::nullopt).item());
    m.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.1}, {.run_eagerly = true});
    const auto history =
        m.fit(mixed_conv::x(), mixed_conv::y(), {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
    const auto& losses = history.loss;
    for (std::size_t e = 0; e < 3; ++e)
      BOOST_TEST(mixed::close(losses[e], keras.losses[e], 1e-4),
                 keras.policy << " epoch " << e << ": " << losses[e] << " vs Keras's " << keras.losses[e]);
    const auto vars = m.variables();
    const std::array<double, 3> got{mixed::sum(vars[0]), mixed::sum(vars[4]), mixed::sum(vars[6])};
    for (std::size_t i = 0; i < 3; ++i)
      BOOST_TEST(mixed::close(got[i], keras.weights[i], 1e-4),
                 keras.policy << " weight sum " << i << ": " << got[i] << " vs Keras's " << keras.weights[i]);
    if (keras.policy == std::string("mixed_float16")) {
      BOOST_TEST(m.optimizer().name() == "LossScaleOptimizer");
      BOOST_TEST(m.optimizer().target<nn::optimizers::LossScaleOptimizer>()->dynamic_scale() == 32768.0);
      BOOST_TEST(m.optimizer().iterations() == 6);
    }
  }
}

namespace mixed_branches {
// tests/reference/mixed_precision_conv.py's `branches`: Rescaling -> ZeroPadding2D ->
// DepthwiseConv2D(3, multiplier 2, relu), added to Conv2D(4, 1) of the rescaled input,
// concatenated with the depthwise output -> MaxPooling2D(2) -> Reshape((9, 8)) -> Flatten ->
// Dense(2, softmax, float32); also the model that ends at the Reshape. (No biases in the
// convolutions, no average pool: TensorFlow's CPU BiasAddGrad and AvgPool add in 16 bits.)
std::pair<nn::Model, nn::Model> models(const std::string& policy) {
  nn::clear_session();
  nn::mixed_precision::set_global_policy(policy);
  const auto in = nn::Input({6, 6, 2});
  const auto rescaled = nn::Rescaling(0.5, {.offset = 0.25})(in);
  const auto depthwise =
      nn::DepthwiseConv2D({3, 3}, {.depth_multiplier = 2, .activation = nn::Activation::relu, .use_bias = false})(
          nn::ZeroPadding2D(1)(rescaled));
  const auto added = nn::Add()({depthwise, nn::Conv2D(4, {1, 1}, {.use_bias = false})(rescaled)});
  const auto pooled = nn::MaxPooling2D({2, 2})(nn::Concatenate()({added, depthwise}));
  const auto reshaped = nn::Reshape({9, 8})(pooled);
  const auto out = nn::Dense(2, {.activation = nn::Activation::softmax, .dtype = "float32"})(nn::Flatten()(reshaped));
  nn::Model model(in, out);
  model.set_weights({dt::constant<float>(mixed::pattern(36, 13, 17, 8, 18), {3, 3, 2, 2}),
                     dt::constant<float>(mixed::pattern(8, 5, 7, 3, 6), {1, 1, 2, 4}),
                     dt::constant<float>(mixed::pattern(144, 7, 11, 5, 20), {72, 2}),
                     dt::constant<float>({0.1f, -0.1f})});
  return {model, nn::Model(in, reshaped)};
}
}  // namespace mixed_branches

BOOST_AUTO_TEST_CASE(every_layer_takes_the_policy_as_keras) {
  // DepthwiseConv2D, Rescaling, ZeroPadding2D, Add, Concatenate and Reshape compute in the 16-bit
  // type as Keras's: the Reshape's output (16-bit values) has Keras's sums (float32's are 2e-4 and
  // 3e-3 off), the predictions and the eager fit's losses and weights are Keras's within 2e-6.
  struct Keras {
    const char* policy;
    double reshape_sum, reshape_squares, predict_squares;
    std::array<double, 3> losses, weights;
  };
  for (const auto& keras : {Keras{"float32",
                                  289.176594,
                                  240.948949,
                                  4.32958698,
                                  {0.391711205, 0.154598266, 0.140320033},
                                  {-0.104248852, -0.460702986, -0.249999955}},
                            Keras{"mixed_bfloat16",
                                  289.495728,
                                  241.584011,
                                  4.32914352,
                                  {0.391204238, 0.154436916, 0.140235305},
                                  {-0.109443486, -0.459631681, -0.24999994}},
                            Keras{"mixed_float16",
                                  289.149547,
                                  240.900544,
                                  4.32943249,
                                  {0.391799033, 0.15470615, 0.140431568},
                                  {-0.107550532, -0.466382623, -0.250000268}}}) {
    BOOST_TEST_CONTEXT(keras.policy) {
      auto [model, inner] = mixed_branches::models(keras.policy);
      const std::string want = keras.policy == std::string("mixed_float16")    ? "float16"
                               : keras.policy == std::string("mixed_bfloat16") ? "bfloat16"
                                                                               : "float32";
      const auto layers = model.layers();
      for (std::size_t i = 1; i + 1 < layers.size(); ++i)  // (the InputLayer's inputs stay float32)
        BOOST_TEST(dt::dtype_name(layers[i]->compute_dtype()) == want, layers[i]->type_name());
      const auto hidden = inner.predict(mixed_conv::x()).cast<double>();
      const double exact = want == "float32" ? 1e-6 : 1e-8;  // (float32's sums in another order)
      BOOST_TEST(mixed::close(dt::reduce_sum(hidden, std::nullopt).item(), keras.reshape_sum, exact));
      BOOST_TEST(mixed::close(dt::reduce_sum(dt::square(hidden), std::nullopt).item(), keras.reshape_squares, exact),
                 dt::reduce_sum(dt::square(hidden), std::nullopt).item());
      const auto out = model.predict(mixed_conv::x());
      BOOST_TEST(mixed::close(dt::reduce_sum(dt::square(out), std::nullopt).item(), keras.predict_squares));
      model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.1}, {.run_eagerly = true});
      const auto history =
          model.fit(mixed_conv::x(), mixed_conv::y(), {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
      for (std::size_t e = 0; e < 3; ++e)
        BOOST_TEST(mixed::close(history.loss[e], keras.losses[e]),
                   "epoch " << e << ": " << history.loss[e] << " vs Keras's " << keras.losses[e]);
      const auto vars = model.variables();
      const std::array<double, 3> got{mixed::sum(vars[0]), mixed::sum(vars[1]), mixed::sum(vars[2])};
      for (std::size_t i = 0; i < 3; ++i)
        BOOST_TEST(mixed::close(got[i], keras.weights[i]),
                   "weight sum " << i << ": " << got[i] << " vs Keras's " << keras.weights[i]);
    }
  }
  nn::mixed_precision::set_global_policy("float32");
}

BOOST_AUTO_TEST_CASE(loss_scaling_under_a_mirrored_strategy_skips_the_steps_keras_skips) {
  // Two replicas on logical CPUs, mixed_float16, targets 100x, LossScaleOptimizer(SGD(0.01),
  // dynamic_growth_steps=2), fit(epochs=5, batch_size=4): each replica scales its share of the
  // loss; the all-reduced gradients overflow at 2^15 and 2^14 (skipped, the scale halved), then
  // the scale doubles after every two finite steps — Keras's sequence, traced and eager.
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  for (const bool eager : {false, true}) {
    nn::clear_session();
    dt::distribute::MirroredStrategy strategy(std::vector<std::string>{"/cpu:0", "/cpu:1"});
    std::optional<nn::Sequential> m;
    {
      auto scope = strategy.scope();
      m.emplace(mixed_conv::model("mixed_float16", false));
      m->compile(nn::losses::MeanSquaredError{},
                 nn::optimizers::LossScaleOptimizer{.inner_optimizer = nn::optimizers::SGD{.learning_rate = 0.01},
                                                    .dynamic_growth_steps = 2},
                 {.run_eagerly = eager});
    }
    std::vector<std::array<double, 3>> rows;
    m->fit(mixed_conv::x(), mixed_conv::y(100),
           {.epochs = 5, .batch_size = 4, .verbose = 0, .shuffle = false, .callbacks = {mixed::ScaleLog{&*m, &rows}}});
    BOOST_TEST_CONTEXT((eager ? "eager" : "traced")) {
      mixed::check_rows(rows, {{6506.27148, 16384, 0},
                               {6820.98047, 8192, 0},
                               {6506.27148, 8192, 1},
                               {6791.44727, 16384, 2},
                               {6463.20312, 16384, 3},
                               {6769.68115, 32768, 4},
                               {6463.13672, 32768, 5},
                               {6769.55127, 65536, 6},
                               {6463.10107, 65536, 7},
                               {6769.479, 131072, 8}});
      const auto vars = m->trainable_variables();
      BOOST_TEST(mixed::close(mixed::sum(vars[0]), -0.129696772, 1e-4), mixed::sum(vars[0]));
      BOOST_TEST(mixed::close(mixed::sum(vars[2]), 0.0499993116, 1e-4), mixed::sum(vars[2]));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
