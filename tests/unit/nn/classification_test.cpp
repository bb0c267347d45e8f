// Classification: softmax and log-softmax, the categorical cross-entropies, a softmax Dense layer
// trained by fit, losses and optimizers by Keras's names, and the error for empty data. Expected
// numbers are TensorFlow 2.21 / Keras 3.15's (printed by a TF run; the values are in the comments).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;

namespace {
struct NnFixture : dt::test::FreshContext {
  NnFixture() { nn::clear_session(); }
};
template <class T>
void check_values(const dt::Tensor<T>& t, const std::vector<double>& want, double tol) {
  const auto got = t.to_vector();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}
}  // namespace

// Made per test: a tensor lives on a device of the context that made it, and every test starts
// with a fresh context.
struct ClassificationFixture : NnFixture {
  const dt::Tensor<float> one_hot = dt::constant<float>({0, 1, 0, 0, 0, 1}, {2, 3});
  const dt::Tensor<float> probabilities = dt::constant<float>({0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {2, 3});
  const dt::Tensor<float> logits = dt::constant<float>({2.0f, -1.0f, 0.5f, 0.3f, 0.2f, 4.0f}, {2, 3});
  const dt::Tensor<float> class_indices = dt::constant<float>({1, 2}, {2});
};

BOOST_FIXTURE_TEST_SUITE(classification, ClassificationFixture)

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_match_tensorflow) {
  const auto x = dt::constant<float>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  // tf.nn.softmax: rows shifted by their maximum, so 1000 does not overflow.
  check_values(dt::softmax(x), {0.090030566, 0.24472848, 0.6652409, 0.090030566, 0.24472848, 0.6652409}, 1e-6);
  check_values(dt::log_softmax(x), {-2.407606, -1.4076059, -0.40760595, -2.407606, -1.4076059, -0.40760595}, 1e-6);
  check_values(dt::softmax(x, 0), {0, 0, 0, 1, 1, 1}, 0);
  check_values(dt::softmax(x, -2), {0, 0, 0, 1, 1, 1}, 0);
  // Every row sums to 1; double as well as float.
  const auto d = dt::constant<double>({0.1, -0.3, 2.0, 0.5, 7.0, -7.0}, {3, 2});
  check_values(dt::reduce_sum(dt::softmax(d), -1), {1, 1, 1}, 1e-15);
  check_values(dt::exp(dt::log_softmax(d)), dt::softmax(d).to_vector(), 1e-15);
  // A row of -inf, or with a NaN, is NaN; empty tensors stay empty.
  const float inf = std::numeric_limits<float>::infinity();
  const auto edge = dt::softmax(dt::constant<float>({-inf, -inf, std::nanf(""), 1.0f}, {2, 2})).to_vector();
  for (float v : edge) BOOST_TEST(std::isnan(v));
  BOOST_TEST(dt::softmax(dt::zeros<float>(dt::Shape{0, 3})).shape() == dt::Shape({0, 3}));
  BOOST_TEST(dt::log_softmax(dt::zeros<float>(dt::Shape{2, 0})).shape() == dt::Shape({2, 0}));
}

BOOST_AUTO_TEST_CASE(softmax_errors) {
  DEVTENSOR_CHECK_THROW_WITH((void)dt::softmax(dt::scalar<float>(1)), dt::InvalidArgumentError,
                             "logits must have >= 1 dimension, got [] [Op:Softmax]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::log_softmax(dt::scalar<double>(1)), dt::InvalidArgumentError,
                             "logits must have >= 1 dimension, got [] [Op:LogSoftmax]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::softmax(logits, 2), dt::InvalidArgumentError,
                             "axis 2 is out of range for a tensor of rank 2 [Op:Softmax]");
  DEVTENSOR_CHECK_THROW_WITH((void)dt::log_softmax(logits, -3), dt::InvalidArgumentError, "axis -3 is out of range");
}

BOOST_AUTO_TEST_CASE(categorical_crossentropy_matches_keras) {
  using nn::losses::CategoricalCrossentropy;
  BOOST_TEST(CategoricalCrossentropy{}(one_hot, probabilities).item() == 1.1769392f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(CategoricalCrossentropy{.label_smoothing = 0.1}(one_hot, probabilities).item() == 1.4591359f,
             boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(CategoricalCrossentropy{.from_logits = true}(one_hot, logits).item() == 1.6436652f,
             boost::test_tools::tolerance(1e-6f));
  const CategoricalCrossentropy smoothed{.from_logits = true, .label_smoothing = 0.2};
  BOOST_TEST(smoothed(one_hot, logits).item() == 1.7436652f, boost::test_tools::tolerance(1e-6f));
  check_values(CategoricalCrossentropy{.reduction = nn::Reduction::NONE}(one_hot, probabilities), {0.051293306, 2.3025851},
               1e-6);
  // Probabilities that do not sum to 1 are scaled first: doubling them changes nothing.
  BOOST_TEST(CategoricalCrossentropy{}(one_hot, dt::mul(probabilities, dt::scalar<float>(2))).item() ==
                 CategoricalCrossentropy{}(one_hot, probabilities).item(),
             boost::test_tools::tolerance(1e-6f));
  // From logits the gradient is (softmax − y) / batch.
  dt::Variable<double> v(dt::cast<double>(logits));
  dt::GradientTape tape;
  const auto loss = CategoricalCrossentropy{.from_logits = true}(dt::cast<double>(one_hot), v.value());
  const auto grad = tape.gradient(loss, std::vector{v})[0];
  check_values(grad, dt::div(dt::sub(dt::softmax(v.value()), dt::cast<double>(one_hot)), dt::scalar<double>(2)).to_vector(),
               1e-12);
}

BOOST_AUTO_TEST_CASE(categorical_crossentropy_errors) {
  using nn::losses::CategoricalCrossentropy;
  DEVTENSOR_CHECK_THROW_WITH((void)CategoricalCrossentropy{}(class_indices, probabilities), dt::InvalidArgumentError,
                             "target.shape=[2], output.shape=[2,3]");
  DEVTENSOR_CHECK_THROW_WITH((void)CategoricalCrossentropy{.label_smoothing = 1.5}(one_hot, probabilities),
                             dt::InvalidArgumentError, "label_smoothing must be in [0, 1]");
}

BOOST_AUTO_TEST_CASE(sparse_categorical_crossentropy_matches_keras) {
  using nn::losses::SparseCategoricalCrossentropy;
  BOOST_TEST(SparseCategoricalCrossentropy{}(class_indices, probabilities).item() == 1.1769392f,
             boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(SparseCategoricalCrossentropy{}(dt::reshape(class_indices, {2, 1}), probabilities).item() == 1.1769392f,
             boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(SparseCategoricalCrossentropy{.from_logits = true}(class_indices, logits).item() == 1.6436652f,
             boost::test_tools::tolerance(1e-6f));
  // The same as the dense loss on one-hot labels, gradient included.
  dt::Variable<float> v(logits);
  std::vector<dt::Tensor<float>> grads;
  for (bool sparse : {true, false}) {
    dt::GradientTape tape;
    const auto loss = sparse ? SparseCategoricalCrossentropy{.from_logits = true}(class_indices, v.value())
                             : nn::losses::CategoricalCrossentropy{.from_logits = true}(one_hot, v.value());
    grads.push_back(tape.gradient(loss, std::vector{v})[0]);
  }
  const auto dense = grads[1].to_vector();
  check_values(grads[0], std::vector<double>(dense.begin(), dense.end()), 1e-7);
}

BOOST_AUTO_TEST_CASE(sparse_labels_outside_the_classes) {
  using nn::losses::SparseCategoricalCrossentropy;
  // Eagerly on the CPU: TensorFlow's CPU kernel's error.
  DEVTENSOR_CHECK_THROW_WITH((void)SparseCategoricalCrossentropy{.from_logits = true}(dt::constant<float>({1, 5}, {2}), logits),
                             dt::InvalidArgumentError,
                             "Received a label value of 5 which is outside the valid range of [0, 3).  Label values: 1 5");
  DEVTENSOR_CHECK_THROW_WITH((void)SparseCategoricalCrossentropy{}(dt::constant<float>({-1, 0}, {2}), probabilities),
                             dt::InvalidArgumentError, "label value of -1");
  DEVTENSOR_CHECK_THROW_WITH((void)SparseCategoricalCrossentropy{}(dt::constant<float>({0.5f, 0}, {2}), probabilities),
                             dt::InvalidArgumentError, "label value of 0.5");
  // In a traced function the values are unknown while tracing: that example's loss is NaN (as
  // TensorFlow's GPU kernel gives it), the others are right.
  auto per_example = dt::function([](const dt::Tensor<float>& labels, const dt::Tensor<float>& x) {
    return SparseCategoricalCrossentropy{.from_logits = true, .reduction = nn::Reduction::NONE}(labels, x);
  });
  const auto traced = per_example(dt::constant<float>({1, 5}, {2}), logits).to_vector();
  const auto eager = SparseCategoricalCrossentropy{.from_logits = true, .reduction = nn::Reduction::NONE}(
                         dt::constant<float>({1, 0}, {2}), logits).to_vector();
  BOOST_TEST(traced[0] == eager[0]);
  BOOST_TEST(std::isnan(traced[1]));
  // Shapes that do not pair a label with a row of scores.
  DEVTENSOR_CHECK_THROW_WITH((void)SparseCategoricalCrossentropy{}(one_hot, probabilities), dt::InvalidArgumentError,
                             "target.shape=[2,3], output.shape=[2,3]");
  DEVTENSOR_CHECK_THROW_WITH((void)SparseCategoricalCrossentropy{}(dt::constant<float>({1, 2, 0}, {3}), probabilities),
                             dt::InvalidArgumentError, "must have rank `target.ndim + 1`");
}

BOOST_AUTO_TEST_CASE(a_softmax_classifier_trains_traced_and_eager_alike) {
  // Three classes of points on a line: x < -1, -1 <= x < 1, x >= 1.
  std::vector<float> xs, ys;
  for (int i = 0; i < 48; ++i) {
    const float x = -3.0f + 6.0f * static_cast<float>(i) / 47.0f;
    xs.push_back(x);
    ys.push_back(x < -1 ? 0.0f : x < 1 ? 1.0f : 2.0f);
  }
  const auto x = dt::constant<float>(xs, {48, 1});
  const auto y = dt::constant<float>(ys, {48});
  std::vector<std::vector<double>> losses;
  std::vector<std::vector<float>> predictions;
  for (bool eager : {false, true}) {
    nn::clear_session();
    nn::Sequential model({nn::Dense(8, {.input_dim = 1, .activation = nn::Activation::tanh,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}}),
                          nn::Dense(3, {.activation = nn::Activation::softmax,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 5}})});
    model.compile("sparse_categorical_crossentropy", nn::optimizers::Adam{.learning_rate = 0.05},
                  {.run_eagerly = eager});
    losses.push_back(model.fit(x, y, {.epochs = 30, .batch_size = 16, .verbose = 0, .seed = 2}).loss);
    const auto p = model.predict(x);
    predictions.push_back(p.to_vector());
    check_values(dt::reduce_sum(p, -1), std::vector<double>(48, 1.0), 1e-6);  // rows of probabilities
  }
  BOOST_TEST(losses[0] == losses[1], boost::test_tools::per_element());  // traced == eager, bit for bit
  BOOST_TEST(predictions[0] == predictions[1], boost::test_tools::per_element());
  BOOST_TEST(losses[0].back() < 0.5 * losses[0].front());
}

BOOST_AUTO_TEST_CASE(losses_and_optimizers_by_keras_names) {
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f}, {4, 1});
  const auto y = dt::constant<float>({1, -2, 3, 0}, {4, 1});
  std::vector<std::vector<double>> histories;
  for (bool by_name : {true, false}) {
    nn::clear_session();
    nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}})});
    if (by_name) model.compile("mse", "sgd");
    else model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});  // Keras's defaults: lr 0.01
    histories.push_back(model.fit(x, y, {.epochs = 3, .verbose = 0, .shuffle = false}).loss);
  }
  BOOST_TEST(histories[0] == histories[1], boost::test_tools::per_element());
  for (const char* name : {"mse", "MSE", "mean_squared_error", "MeanSquaredError"})
    BOOST_TEST(nn::Loss(name).name() == "mean_squared_error");
  for (const char* name : {"bce", "BCE", "binary_crossentropy", "BinaryCrossentropy"})
    BOOST_TEST(nn::Loss(name).name() == "binary_crossentropy");
  BOOST_TEST(nn::Loss(std::string("CategoricalCrossentropy")).name() == "categorical_crossentropy");
  BOOST_TEST(nn::Loss("SparseCategoricalCrossentropy").name() == "sparse_categorical_crossentropy");
  for (const char* name : {"adam", "Adam", "ADAM"}) BOOST_TEST(nn::Optimizer(name).name() == "Adam");
  BOOST_TEST(nn::Optimizer(std::string("SGD")).name() == "SGD");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::Loss("mean_squared"), dt::InvalidArgumentError,
                             "Could not interpret loss identifier: mean_squared");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::Optimizer("rmsprop"), dt::InvalidArgumentError,
                             "Could not interpret optimizer identifier: rmsprop");
}

BOOST_AUTO_TEST_CASE(empty_data_is_an_error) {
  nn::Sequential model({nn::Dense(1, {.input_dim = 1})});
  model.compile("mse", "sgd");
  const auto none = dt::zeros<float>(dt::Shape{0, 1});
  const auto weights_before = model.trainable_variables()[0].value().to_vector();
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(none, none, {.verbose = 0}), dt::InvalidArgumentError,
                             "Expected input data to be non-empty.");
  DEVTENSOR_CHECK_THROW_WITH((void)model.evaluate(none, none, {.verbose = 0}), dt::InvalidArgumentError,
                             "Expected input data to be non-empty.");
  const auto empty = nn::Sequential::Dataset::from_tensors(dt::ones<float>(dt::Shape{1}), dt::ones<float>(dt::Shape{1}))
                         .repeat(0)
                         .batch(4);
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(empty, {.verbose = 0}), dt::InvalidArgumentError,
                             "fit got a dataset without a batch");
  DEVTENSOR_CHECK_THROW_WITH((void)model.evaluate(empty, {.verbose = 0}), dt::InvalidArgumentError,
                             "evaluate got a dataset without a batch");
  BOOST_TEST(model.trainable_variables()[0].value().to_vector() == weights_before, boost::test_tools::per_element());
  BOOST_TEST(model.fit(empty, {.epochs = 0, .verbose = 0}).loss.empty());  // nothing asked, nothing wrong
  BOOST_TEST(model.predict(none).shape() == dt::Shape({0, 1}));            // no examples, no predictions
}

BOOST_AUTO_TEST_SUITE_END()
