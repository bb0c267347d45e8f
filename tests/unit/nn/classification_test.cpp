// Classification: softmax and log-softmax, the categorical cross-entropies, a softmax Dense layer
// trained by fit, accuracy metrics, losses and optimizers by Keras's names, and the error for
// empty data. Expected numbers are TensorFlow 2.21 / Keras 3.15's: tests/reference/classification.py
// prints them. Accuracy across replicas: tests/unit/distribute/training_test.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"

#include "regex.hpp"  // std::regex, past a false GCC 12 warning under ASan

namespace dt = devtensor;
namespace nn = dt::nn;

namespace {
struct FreshKerasSession : dt::test::FreshContext {
  FreshKerasSession() { nn::clear_session(); }
};
template <class T>
void check_relative(const dt::Tensor<T>& t, const std::vector<double>& want, double tol) {
  const auto got = t.to_vector();
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}
}  // namespace

// Made per test: a tensor lives on a device of the context that made it, and every test starts
// with a fresh context.
struct ClassificationFixture : FreshKerasSession {
  const dt::Tensor<float> one_hot = dt::constant<float>({0, 1, 0, 0, 0, 1}, {2, 3});
  const dt::Tensor<float> probabilities = dt::constant<float>({0.05f, 0.95f, 0, 0.1f, 0.8f, 0.1f}, {2, 3});
  const dt::Tensor<float> logits = dt::constant<float>({2.0f, -1.0f, 0.5f, 0.3f, 0.2f, 4.0f}, {2, 3});
  const dt::Tensor<float> class_indices = dt::constant<float>({1, 2}, {2});
};

BOOST_FIXTURE_TEST_SUITE(classification, ClassificationFixture)

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax_match_tensorflow) {
  const auto x = dt::constant<float>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  // tf.nn.softmax: rows shifted by their maximum, so 1000 does not overflow.
  check_relative(dt::softmax(x), {0.090030566, 0.24472848, 0.6652409, 0.090030566, 0.24472848, 0.6652409}, 1e-6);
  check_relative(dt::log_softmax(x), {-2.407606, -1.4076059, -0.40760595, -2.407606, -1.4076059, -0.40760595}, 1e-6);
  check_relative(dt::softmax(x, 0), {0, 0, 0, 1, 1, 1}, 0);
  check_relative(dt::softmax(x, -2), {0, 0, 0, 1, 1, 1}, 0);
  // Every row sums to 1; double as well as float.
  const auto d = dt::constant<double>({0.1, -0.3, 2.0, 0.5, 7.0, -7.0}, {3, 2});
  check_relative(dt::reduce_sum(dt::softmax(d), -1), {1, 1, 1}, 1e-15);
  check_relative(dt::exp(dt::log_softmax(d)), dt::softmax(d).to_vector(), 1e-15);
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
  BOOST_TEST(CategoricalCrossentropy{}(one_hot, probabilities).item() == 1.1769392f,
             boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(CategoricalCrossentropy{.label_smoothing = 0.1}(one_hot, probabilities).item() == 1.4591359f,
             boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(CategoricalCrossentropy{.from_logits = true}(one_hot, logits).item() == 1.6436652f,
             boost::test_tools::tolerance(1e-6f));
  const CategoricalCrossentropy smoothed{.from_logits = true, .label_smoothing = 0.2};
  BOOST_TEST(smoothed(one_hot, logits).item() == 1.7436652f, boost::test_tools::tolerance(1e-6f));
  check_relative(CategoricalCrossentropy{.reduction = nn::Reduction::NONE}(one_hot, probabilities),
                 {0.051293306, 2.3025851}, 1e-6);
  // Probabilities that do not sum to 1 are scaled first: doubling them changes nothing.
  BOOST_TEST(CategoricalCrossentropy{}(one_hot, dt::mul(probabilities, dt::scalar<float>(2))).item() ==
                 CategoricalCrossentropy{}(one_hot, probabilities).item(),
             boost::test_tools::tolerance(1e-6f));
  // From logits the gradient is (softmax − y) / batch.
  dt::Variable<double> v(dt::cast<double>(logits));
  dt::GradientTape tape;
  const auto loss = CategoricalCrossentropy{.from_logits = true}(dt::cast<double>(one_hot), v.value());
  const auto grad = tape.gradient(loss, std::vector{v})[0];
  check_relative(grad,
                 dt::div(dt::sub(dt::softmax(v.value()), dt::cast<double>(one_hot)), dt::scalar<double>(2)).to_vector(),
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
  check_relative(grads[0], std::vector<double>(dense.begin(), dense.end()), 1e-7);
}

BOOST_AUTO_TEST_CASE(sparse_labels_outside_the_classes) {
  using nn::losses::SparseCategoricalCrossentropy;
  // Eagerly on the CPU: TensorFlow's CPU kernel's error.
  DEVTENSOR_CHECK_THROW_WITH(
      (void)SparseCategoricalCrossentropy{.from_logits = true}(dt::constant<float>({1, 5}, {2}), logits),
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
                         dt::constant<float>({1, 0}, {2}), logits)
                         .to_vector();
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
    nn::Sequential model({nn::Dense(8, {.input_dim = 1,
                                        .activation = nn::Activation::tanh,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}}),
                          nn::Dense(3, {.activation = nn::Activation::softmax,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 5}})});
    model.compile("sparse_categorical_crossentropy", nn::optimizers::Adam{.learning_rate = 0.05},
                  {.run_eagerly = eager});
    losses.push_back(model.fit(x, y, {.epochs = 30, .batch_size = 16, .verbose = 0, .seed = 2}).loss);
    const auto p = model.predict(x);
    predictions.push_back(p.to_vector());
    check_relative(dt::reduce_sum(p, -1), std::vector<double>(48, 1.0), 1e-6);  // rows of probabilities
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
    nn::Sequential model(
        {nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}})});
    if (by_name)
      model.compile("mse", "sgd");
    else
      model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});  // Keras's defaults: lr 0.01
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

namespace {
/// Four examples of one feature, as the reference script trains them (no shuffling, batch 2).
struct TinyClassification {
  dt::Tensor<float> x = dt::constant<float>({0, 1, 2, 3}, {4, 1});
  dt::Tensor<float> classes = dt::constant<float>({0, 1, 2, 1}, {4});
  dt::Tensor<float> one_hot = dt::constant<float>({1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0}, {4, 3});
  dt::Tensor<float> binary = dt::constant<float>({0, 1, 1, 0}, {4, 1});
};
nn::Sequential zero_softmax_model() {
  return nn::Sequential({nn::Dense(
      3, {.input_dim = 1, .activation = nn::Activation::softmax, .kernel_initializer = nn::initializers::Zeros{}})});
}
}  // namespace

BOOST_AUTO_TEST_CASE(accuracy_in_fit_and_evaluate_matches_keras) {
  const TinyClassification data;
  const nn::FitOptions two_epochs{.epochs = 2, .batch_size = 2, .verbose = 0, .shuffle = false};
  for (bool eager : {false, true}) {
    BOOST_TEST_CONTEXT("run_eagerly " << eager) {
      // Keras: fit history {accuracy: [0.5, 0.5], loss: [1.0973762, 1.0868309]}, evaluate
      // {accuracy: 0.5, loss: 1.0779145}, for sparse labels and for one-hot labels alike.
      for (bool sparse : {true, false}) {
        nn::clear_session();
        auto model = zero_softmax_model();
        model.compile(sparse ? "sparse_categorical_crossentropy" : "categorical_crossentropy", "sgd",
                      {.metrics = {"accuracy"}, .run_eagerly = eager});
        const auto& y = sparse ? data.classes : data.one_hot;
        const auto history = model.fit(data.x, y, two_epochs);
        BOOST_TEST(history.loss[0] == 1.0973762, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(history.loss[1] == 1.0868309, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(history.metrics.at("accuracy") == std::vector<double>({0.5, 0.5}), boost::test_tools::per_element());
        const nn::Evaluation evaluation = model.evaluate(data.x, y, {.verbose = 0});
        BOOST_TEST(evaluation.loss == 1.0779145, boost::test_tools::tolerance(1e-6));
        BOOST_TEST(evaluation.metrics.at("accuracy") == 0.5);
        const double loss = model.evaluate(data.x, y, {.verbose = 0});  // converts to the loss
        BOOST_TEST(loss == evaluation.loss);
      }
      // One sigmoid output: "accuracy" is binary accuracy. Keras: {accuracy: [0.75, 0.75],
      // loss: [1.0461209, 1.0378387]}.
      nn::clear_session();
      nn::Sequential model({nn::Dense(
          1, {.input_dim = 1, .activation = nn::Activation::sigmoid, .kernel_initializer = nn::initializers::Ones{}})});
      model.compile("binary_crossentropy", "sgd", {.metrics = {"accuracy"}, .run_eagerly = eager});
      const auto history = model.fit(data.x, data.binary, two_epochs);
      BOOST_TEST(history.loss[0] == 1.0461209, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(history.loss[1] == 1.0378387, boost::test_tools::tolerance(1e-6));
      BOOST_TEST(history.metrics.at("accuracy") == std::vector<double>({0.75, 0.75}), boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(metrics_are_printed_in_the_order_of_their_names) {
  const TinyClassification data;
  auto model = zero_softmax_model();
  model.compile("sparse_categorical_crossentropy", "sgd", {.metrics = {"sparse_categorical_accuracy", "acc"}});
  std::ostringstream out;
  const auto history = model.fit(data.x, data.classes, {.batch_size = 2, .verbose = 2, .shuffle = false, .out = &out});
  BOOST_TEST(
      std::regex_search(
          out.str(),
          std::regex(
              R"(2/2 - \d+s - \d+(us|ms|s)/step - acc: 0\.5000 - loss: 1\.0974 - sparse_categorical_accuracy: 0\.5000\n)")),
      "output was: " << out.str());
  BOOST_TEST(history.metrics.size() == 2u);
  std::ostringstream evaluated;
  const nn::Evaluation e = model.evaluate(data.x, data.classes, {.verbose = 0});
  evaluated << e;
  BOOST_TEST(
      std::regex_match(evaluated.str(), std::regex(R"(loss: 1\.0\d+ - acc: 0\.5 - sparse_categorical_accuracy: 0\.5)")),
      "printed: " << evaluated.str());
}

BOOST_AUTO_TEST_CASE(accuracy_metrics_on_fixed_inputs) {
  // Keras: categorical accuracy of one_hot vs probabilities 0.5, sparse accuracy of [1, 0] 0.5,
  // binary accuracy of [1, 0, 1] vs [0.7, 0.6, 0.2] 0.33333334.
  const auto mean_of = [](const nn::Metric& metric, const dt::Tensor<float>& t, const dt::Tensor<float>& p) {
    return dt::reduce_mean(nn::metric_matches(metric, t, p)).item();
  };
  BOOST_TEST(mean_of(nn::metric_by_name("categorical_accuracy"), one_hot, probabilities) == 0.5f);
  BOOST_TEST(mean_of(nn::metric_by_name("SparseCategoricalAccuracy"), dt::constant<float>({1, 0}, {2}),
                     probabilities) == 0.5f);
  BOOST_TEST(mean_of(nn::metric_by_name("binary_accuracy"), dt::constant<float>({1, 0, 1}, {3, 1}),
                     dt::constant<float>({0.7f, 0.6f, 0.2f}, {3, 1})) == 1.0f / 3.0f);
  // Ties pick the first class, as argmax does: a row of equal scores predicts class 0.
  const auto ties = dt::constant<float>({0.25f, 0.25f, 0.25f, 0.25f, 0.1f, 0.4f, 0.4f, 0.1f}, {2, 4});
  check_relative(
      nn::metric_matches(nn::metric_by_name("sparse_categorical_accuracy"), dt::constant<float>({0, 2}, {2}), ties),
      {1, 0}, 0);
  // "accuracy" by the shapes, as Keras picks it.
  using Kind = nn::Metric::Kind;
  BOOST_TEST((nn::resolve_accuracy(dt::Shape({8, 1}), dt::Shape({8, 1})) == Kind::binary_accuracy));
  BOOST_TEST((nn::resolve_accuracy(dt::Shape({8}), dt::Shape({8, 3})) == Kind::sparse_categorical_accuracy));
  BOOST_TEST((nn::resolve_accuracy(dt::Shape({8, 1}), dt::Shape({8, 3})) == Kind::sparse_categorical_accuracy));
  BOOST_TEST((nn::resolve_accuracy(dt::Shape({8, 3}), dt::Shape({8, 3})) == Kind::categorical_accuracy));
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::metric_matches(nn::metric_by_name("categorical_accuracy"), class_indices, probabilities),
      dt::InvalidArgumentError, "metric categorical_accuracy: labels of shape [2] and predictions of shape [2,3]");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::metric_by_name("f1_score"), dt::InvalidArgumentError,
                             "Could not interpret metric identifier: f1_score");
}

BOOST_AUTO_TEST_CASE(error_metrics_on_fixed_inputs) {
  // Keras 3.15: MeanAbsoluteError 0.4375 and MeanSquaredError 0.265625 on these; 0.75 for labels
  // without the predictions' last axis of 1.
  const auto mean_of = [](const char* metric, const dt::Tensor<float>& t, const dt::Tensor<float>& p) {
    return dt::reduce_mean(nn::metric_matches(nn::metric_by_name(metric), t, p)).item();
  };
  const auto t = dt::constant<float>({0, 1, 1, 1}, {2, 2});
  const auto p = dt::constant<float>({0.5f, 0.25f, 1.5f, 1}, {2, 2});
  BOOST_TEST(mean_of("mae", t, p) == 0.4375f);
  BOOST_TEST(mean_of("MeanSquaredError", t, p) == 0.265625f);
  BOOST_TEST(mean_of("mean_absolute_error", dt::constant<float>({1, 2}, {2}), dt::constant<float>({1.5f, 1}, {2, 1})) ==
             0.75f);
  BOOST_TEST(nn::metric_by_name("mae").name == "mae");
  BOOST_TEST(nn::metric_by_name("MeanAbsoluteError").name == "mean_absolute_error");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::metric_matches(nn::metric_by_name("mse"), dt::constant<float>({1, 2, 3}, {3}), p),
      dt::InvalidArgumentError, "metric mse: labels of shape [3] and predictions of shape [2,2]");
}

BOOST_AUTO_TEST_CASE(a_refused_metric_leaves_the_model_as_it_was) {
  auto model = zero_softmax_model();
  DEVTENSOR_CHECK_THROW_WITH(model.compile("mse", "sgd", {.metrics = {"accuracy", "auc"}}), dt::InvalidArgumentError,
                             "Could not interpret metric identifier: auc");
  BOOST_TEST(!model.compiled());
}

BOOST_AUTO_TEST_CASE(validation_split_and_validation_data_match_keras) {
  // Keras: x = 0, 0.1, ..., 0.9, y = x > 0.45, Dense(1, sigmoid, ones), SGD, batch 4, no shuffling,
  // validation_split 0.25 (the first 7 train, the last 3 validate) or the same split given as
  // validation_data: loss [0.7022116, 0.7007943], accuracy 3/7, val_loss [0.3734133, 0.3750094],
  // val_accuracy 1.
  std::vector<float> xs, ys;
  for (int i = 0; i < 10; ++i) {
    xs.push_back(static_cast<float>(i) / 10.0f);
    ys.push_back(xs.back() > 0.45f ? 1.0f : 0.0f);
  }
  const auto x = dt::constant<float>(xs, {10, 1});
  const auto y = dt::constant<float>(ys, {10, 1});
  const auto rows = [](const dt::Tensor<float>& t, std::int64_t begin, std::int64_t count) {
    return dt::slice(t, {begin, 0}, {count, -1});
  };
  const auto model = [] {
    nn::clear_session();
    nn::Sequential m({nn::Dense(
        1, {.input_dim = 1, .activation = nn::Activation::sigmoid, .kernel_initializer = nn::initializers::Ones{}})});
    m.compile("binary_crossentropy", "sgd", {.metrics = {"accuracy"}});
    return m;
  };
  const nn::FitOptions options{.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false};
  std::vector<nn::History> histories;
  std::ostringstream out;
  {
    auto split = options;
    split.validation_split = 0.25;
    split.verbose = 2;
    split.out = &out;
    histories.push_back(model().fit(x, y, split));
  }
  {
    auto given = options;
    given.validation_data = {rows(x, 7, 3), rows(y, 7, 3)};
    histories.push_back(model().fit(rows(x, 0, 7), rows(y, 0, 7), given));
  }
  {
    auto dataset = options;
    dataset.validation_data = nn::Sequential::Dataset::from_tensor_slices(rows(x, 7, 3), rows(y, 7, 3)).batch(2);
    histories.push_back(
        model().fit(nn::Sequential::Dataset::from_tensor_slices(rows(x, 0, 7), rows(y, 0, 7)).batch(4), dataset));
  }
  for (const auto& h : histories) {
    BOOST_TEST(h.loss[0] == 0.7022116, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(h.loss[1] == 0.7007943, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(h.metrics.at("accuracy")[1] == 3.0 / 7.0, boost::test_tools::tolerance(1e-6));  // float batch means
    BOOST_TEST(h.metrics.at("val_loss")[0] == 0.3734133, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(h.metrics.at("val_loss")[1] == 0.3750094, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(h.metrics.at("val_accuracy") == std::vector<double>({1.0, 1.0}), boost::test_tools::per_element());
  }
  BOOST_TEST(
      std::regex_search(
          out.str(),
          std::regex(
              R"(2/2 - \d+s - \d+(us|ms|s)/step - accuracy: 0\.4286 - loss: 0\.7022 - val_accuracy: 1\.0000 - val_loss: 0\.3734\n)")),
      "output was: " << out.str());
}

BOOST_AUTO_TEST_CASE(validation_errors) {
  auto model = zero_softmax_model();
  model.compile("sparse_categorical_crossentropy", "sgd");
  const TinyClassification data;
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(data.x, data.classes, {.verbose = 0, .validation_split = 1.0}),
                             dt::InvalidArgumentError, "validation_split must be in [0, 1), got 1");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(data.x, data.classes, {.verbose = 0, .validation_split = -0.1}),
                             dt::InvalidArgumentError, "validation_split must be in [0, 1)");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(data.x, data.classes, {.verbose = 0, .validation_split = 0.9}), dt::InvalidArgumentError,
      "Training data contains 4 samples, which is not sufficient to split it into a validation and "
      "training set as specified by `validation_split=0.9");
  const auto batches = nn::Sequential::Dataset::from_tensor_slices(data.x, data.classes).batch(2);
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(batches, {.verbose = 0, .validation_split = 0.5}),
                             dt::InvalidArgumentError, "Argument `validation_split` is only supported for tensors");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(data.x, data.classes,
                      {.verbose = 0, .validation_data = {data.x, dt::zeros<float>(dt::Shape{3})}}),
      dt::InvalidArgumentError, "Data cardinality is ambiguous");
}

BOOST_AUTO_TEST_SUITE_END()
