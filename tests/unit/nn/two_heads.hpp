// The model of two inputs and two outputs that tests/reference/functional.py trains with
// TensorFlow 2.21 ("two inputs, two outputs"): a (3) and b (2) concatenated into a regression head
// "reg" (Dense(1)) and a softmax classifier "cls" (Dense(3)), kernels of ones; MSE and categorical
// cross-entropy weighted 1 and 0.5, accuracy on cls, SGD(0.1). Its data: 12 examples of formulas.
#pragma once

#include <boost/test/unit_test.hpp>

#include <vector>

#include "devtensor/devtensor.hpp"

namespace devtensor::test {

/// Made in the scope current when called (a strategy's, for a mirrored model).
inline nn::Model two_heads_model(bool run_eagerly = false) {
  const auto a = nn::Input({3}, {.name = "a"});
  const auto b = nn::Input({2}, {.name = "b"});
  const auto h = nn::Concatenate()({a, b});
  const auto ones = nn::initializers::Constant{1.0f};
  const auto reg = nn::Dense(1, {.kernel_initializer = ones, .name = "reg"})(h);
  const auto cls = nn::Dense(3, {.activation = nn::Activation::softmax, .kernel_initializer = ones, .name = "cls"})(h);
  nn::Model model({a, b}, {reg, cls});
  model.compile({nn::Loss("mse"), nn::Loss("categorical_crossentropy")}, nn::optimizers::SGD{.learning_rate = 0.1},
                {.output_metrics = {{}, {"accuracy"}}, .loss_weights = {1.0, 0.5}, .run_eagerly = run_eagerly});
  return model;
}

/// xs = {a [12, 3], b [12, 2]}, ys = {reg targets [12, 1], one-hot classes [12, 3]}.
struct TwoHeadsData {
  std::vector<Tensor<float>> xs, ys;
  TwoHeadsData() {
    std::vector<float> a, b, reg, cls;
    for (int i = 0; i < 12; ++i) {
      for (int j = 0; j < 3; ++j) a.push_back(static_cast<float>((i * 3 + j) % 7 - 3) / 4.0f);
      for (int j = 0; j < 2; ++j) b.push_back(static_cast<float>((i * 2 + j) % 5 - 2) / 3.0f);
      reg.push_back((static_cast<float>(i % 4) - 1.5f) / 2.0f);
      for (int c = 0; c < 3; ++c) cls.push_back(i % 3 == c ? 1.0f : 0.0f);
    }
    xs = {constant<float>(a, {12, 3}), constant<float>(b, {12, 2})};
    ys = {constant<float>(reg, {12, 1}), constant<float>(cls, {12, 3})};
  }
};

/// Each of `got` within `relative` of `want` (TensorFlow's figures).
inline void check_values(const std::vector<double>& got, const std::vector<double>& want, double relative) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == want[i], boost::test_tools::tolerance(relative));
}

}  // namespace devtensor::test
