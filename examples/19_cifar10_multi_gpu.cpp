// Walkthrough 19: TensorFlow's CIFAR-10 multi-GPU tutorial (cifar10_multi_gpu_train.py), in
// TensorFlow 1's style as the seeds point to it: one graph, one tower per GPU under a name scope
// (tower_0, tower_1, ...), the variables on /cpu:0 shared by every tower, each tower's gradients
// averaged on the CPU and applied once, a Session with allow_soft_placement "as some of the ops do
// not have GPU implementations", and the tutorial's log line.
//
//   conv1 5x5x3x64 -> relu -> max_pool 3x3/2 SAME -> lrn(4, 1.0, 0.001/9, 0.75)
//   conv2 5x5x64x64 -> relu -> lrn -> max_pool -> local3 384 -> local4 192 -> softmax_linear 10
//   loss: cross entropy + 0.004 * (l2_loss(local3) + l2_loss(local4))
//
// Data: CIFAR-10's binary batches when given (`19_cifar10_multi_gpu data_batch_1.bin [steps]
// [batch]`); otherwise a file in that format made from the shipped digits (each 8x8 digit drawn
// 4x larger in a colour of its class), written and read back through the same reader.
// Towers: two GPUs with DEVTENSOR_SIMULATED_GPUS=2 (or real ones); without GPUs the towers' ops
// fall back to the CPU under soft placement, as TensorFlow's would.
#include <devtensor/graph.hpp>

#include "cifar10.hpp"
#include "digits.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace dt = devtensor;
namespace v1 = devtensor::compat::v1;

namespace {

/// The tutorial's initialisers: a truncated normal (redrawn beyond two standard deviations).
std::vector<float> truncated_normal(std::int64_t n, double stddev, std::mt19937& random) {
  std::normal_distribution<double> normal(0.0, stddev);
  std::vector<float> out;
  while (static_cast<std::int64_t>(out.size()) < n)
    if (const double v = normal(random); std::abs(v) <= 2 * stddev) out.push_back(static_cast<float>(v));
  return out;
}

/// The model's variables, made once on /cpu:0 (the tutorial's _variable_on_cpu).
struct Variables {
  std::vector<v1::Variable<float>> all;
  std::vector<float> weight_decay;  // per variable: the L2 factor of the loss (0: none)

  v1::Variable<float>& add(const std::string& name, const dt::Shape& shape, std::vector<float> values, float wd) {
    all.emplace_back(values, shape, dt::OpOptions{.name = name});
    weight_decay.push_back(wd);
    return all.back();
  }
};

Variables make_variables(std::mt19937& random) {
  Variables v;
  dt::DeviceScope cpu("/cpu:0");
  const auto filled = [](std::int64_t n, float value) {
    return std::vector<float>(static_cast<std::size_t>(n), value);
  };
  v.add("conv1/weights", {5, 5, 3, 64}, truncated_normal(5 * 5 * 3 * 64, 5e-2, random), 0.0f);
  v.add("conv1/biases", {64}, filled(64, 0.0f), 0.0f);
  v.add("conv2/weights", {5, 5, 64, 64}, truncated_normal(5 * 5 * 64 * 64, 5e-2, random), 0.0f);
  v.add("conv2/biases", {64}, filled(64, 0.1f), 0.0f);
  v.add("local3/weights", {6 * 6 * 64, 384}, truncated_normal(6 * 6 * 64 * 384, 0.04, random), 0.004f);
  v.add("local3/biases", {384}, filled(384, 0.1f), 0.0f);
  v.add("local4/weights", {384, 192}, truncated_normal(384 * 192, 0.04, random), 0.004f);
  v.add("local4/biases", {192}, filled(192, 0.1f), 0.0f);
  v.add("softmax_linear/weights", {192, 10}, truncated_normal(192 * 10, 1.0 / 192.0, random), 0.0f);
  v.add("softmax_linear/biases", {10}, filled(10, 0.0f), 0.0f);
  return v;
}

/// cifar10.inference + cifar10.loss on one tower's batch, reading the variables' values `w`.
dt::Tensor<float> tower_loss(const std::vector<dt::Tensor<float>>& w, const Variables& vars,
                             const dt::Tensor<float>& images, const dt::Tensor<std::int32_t>& labels) {
  const dt::LrnOptions lrn{.depth_radius = 4, .bias = 1.0f, .alpha = static_cast<float>(0.001 / 9.0), .beta = 0.75f};
  auto conv1 = dt::relu(dt::bias_add(dt::conv2d(images, w[0], 1, "SAME"), w[1]));
  auto norm1 = dt::lrn(dt::max_pool2d(conv1, 3, 2, "SAME"), lrn);
  auto conv2 = dt::relu(dt::bias_add(dt::conv2d(norm1, w[2], 1, "SAME"), w[3]));
  auto pool2 = dt::max_pool2d(dt::lrn(conv2, lrn), 3, 2, "SAME");
  auto local3 = dt::relu(dt::add(dt::matmul(dt::reshape(pool2, {images.shape()[0], -1}), w[4]), w[5]));
  auto local4 = dt::relu(dt::add(dt::matmul(local3, w[6]), w[7]));
  auto logits = dt::add(dt::matmul(local4, w[8]), w[9]);
  auto loss = dt::reduce_mean(dt::sparse_softmax_cross_entropy_with_logits(labels, logits));
  for (std::size_t i = 0; i < w.size(); ++i)  // the weight decays of local3 and local4
    if (vars.weight_decay[i] > 0)
      loss = dt::add(loss, dt::mul(dt::l2_loss(w[i]), dt::scalar<float>(vars.weight_decay[i])));
  return loss;
}

/// A CIFAR-10-format file of the digits: 8x8 drawn 4x larger, in a colour of the digit's class.
std::string digits_as_cifar10(const std::string& digits_csv) {
  const auto [pixels, digits] = read_digits(digits_csv);
  const auto p = pixels.to_vector();
  const auto d = digits.to_vector();
  cifar10::Records records;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const auto label = static_cast<std::int32_t>(d[i]);
    records.labels.push_back(label);
    const float tint[3] = {1.0f, 0.4f + 0.06f * static_cast<float>(label), 1.0f - 0.08f * static_cast<float>(label)};
    for (int channel = 0; channel < 3; ++channel)
      for (int r = 0; r < 32; ++r)
        for (int c = 0; c < 32; ++c)
          records.images.push_back(static_cast<std::uint8_t>(255.0f * tint[channel] *
                                                             p[i * 64 + static_cast<std::size_t>(r / 4 * 8 + c / 4)]));
  }
  // One file per process: ctest runs the walkthrough's two variants at once.
  const auto path =
      (std::filesystem::temp_directory_path() / ("devtensor_digits_cifar10_" + std::to_string(::getpid()) + ".bin"))
          .string();
  cifar10::write_records(path, records);
  return path;
}

/// str(datetime.now()), as the tutorial prints it.
std::string now() {
  const auto t = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() % 1000000;
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", std::localtime(&seconds));
  char out[80];
  std::snprintf(out, sizeof(out), "%s.%06lld", text, static_cast<long long>(micros));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : digits_as_cifar10(DEVTENSOR_EXAMPLES_DATA_DIR "/digits.csv");
  const int max_steps = argc > 2 ? std::stoi(argv[2]) : 20;
  const std::int64_t batch_size = argc > 3 ? std::stoll(argv[3]) : 8;  // per tower (the tutorial's: 128)
  const cifar10::Records records = cifar10::read_records(path);
  if (argc <= 1) std::filesystem::remove(path);  // the file made from the digits, read
  std::cout << "Read " << records.size() << " CIFAR-10 records from " << path << "\n";

  const auto gpus = dt::config::list_physical_devices("GPU");
  const int num_gpus = gpus.empty() ? 2 : static_cast<int>(gpus.size());  // no GPU: two towers on the CPU
  std::mt19937 random(2016);
  v1::Graph graph;
  std::vector<dt::Tensor<float>> tower_images;
  std::vector<dt::Tensor<std::int32_t>> tower_labels;
  std::vector<dt::graph::Operation> train_op;
  dt::Tensor<float> loss;
  {
    auto scope = graph.as_default();
    dt::DeviceScope cpu("/cpu:0");
    Variables vars = make_variables(random);
    const float learning_rate = 0.05f;
    std::vector<std::vector<dt::Tensor<float>>> tower_grads;
    for (int i = 0; i < num_gpus; ++i) {
      dt::DeviceScope gpu("/gpu:" + std::to_string(i));
      dt::graph::NameScope tower("tower_" + std::to_string(i));
      tower_images.push_back(v1::placeholder<float>({batch_size, cifar10::kCropped, cifar10::kCropped, 3}));
      tower_labels.push_back(v1::placeholder<std::int32_t>({batch_size}));
      std::vector<dt::Tensor<float>> w;
      for (const auto& v : vars.all) w.push_back(v.read_value());
      // TensorFlow 1's opt.compute_gradients(loss): devtensor records the tower's ops on a tape.
      dt::GradientTape tape;
      for (const auto& t : w) tape.watch(t);
      loss = tower_loss(w, vars, tower_images.back(), tower_labels.back());
      tower_grads.push_back(tape.gradient(loss, w));
    }
    // average_gradients on the CPU, then one apply_gradients (plain SGD) per variable.
    for (std::size_t v = 0; v < vars.all.size(); ++v) {
      std::vector<dt::Tensor<float>> grads;
      for (const auto& g : tower_grads) grads.push_back(g[v]);
      const auto mean = dt::div(dt::add_n(grads), dt::scalar<float>(static_cast<float>(num_gpus)));
      const auto current = vars.all[v].read_value();
      train_op.push_back(vars.all[v].assign(dt::sub(current, dt::mul(mean, dt::scalar<float>(learning_rate)))));
    }
    train_op.push_back(v1::global_variables_initializer());
  }
  const dt::graph::Operation init = train_op.back();
  train_op.pop_back();
  v1::Session sess(graph, {.allow_soft_placement = true});
  sess.run(init);

  double first_loss = 0, last_loss = 0;
  std::int64_t next = 0;
  for (int step = 0; step < max_steps; ++step) {
    std::vector<v1::Feed> feeds;
    for (int i = 0; i < num_gpus; ++i, next += batch_size) {
      feeds.emplace_back(tower_images[static_cast<std::size_t>(i)], cifar10::inputs(records, next, batch_size));
      feeds.emplace_back(tower_labels[static_cast<std::size_t>(i)], cifar10::labels(records, next, batch_size));
    }
    const auto start = std::chrono::steady_clock::now();
    const float loss_value = sess.run({dt::AnyTensor(loss)}, feeds, train_op).front().as<float>().item();
    const double duration = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!std::isfinite(loss_value)) {
      std::cout << "Model diverged with loss = NaN\n";
      return 1;
    }
    if (step == 0) first_loss = loss_value;
    last_loss = loss_value;
    if (step % 5 == 0 || step + 1 == max_steps) {
      const double examples_per_sec = static_cast<double>(batch_size * num_gpus) / duration;
      std::printf("%s: step %d, loss = %.2f (%.1f examples/sec; %.3f sec/batch)\n", now().c_str(), step,
                  static_cast<double>(loss_value), examples_per_sec, duration / num_gpus);
    }
  }
  std::fflush(stdout);
  // The digits are easy: a few steps lower the loss (on real CIFAR-10 this takes longer).
  return argc > 1 || last_loss < first_loss ? 0 : 1;
}
