// Sequential compile / fit / evaluate / predict: training works, history, progress output in
// every mode, and misuse.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

#include "regex.hpp"  // std::regex, past a false GCC 12 warning under ASan

#include "devtensor/devtensor.hpp"
#include "devtensor_test.hpp"
#include "fake_gpu_kernels.hpp"
#include "fake_gpu_platform.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;
using Dataset = dt::data::Dataset<float, float>;

namespace {
struct FitFixture : dt::test::FreshContext {
  FitFixture() { nn::clear_session(); }
};
Dataset seeds_dataset() {
  return Dataset::from_tensors(dt::constant<float>({1}), dt::constant<float>({1})).repeat(100).batch(10);
}
nn::Sequential seeds_model(std::uint64_t seed = 1) {
  nn::Sequential model(
      {nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::GlorotUniform{.seed = seed}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.2});
  return model;
}
/// y = 2x - 1 on 64 points.
std::pair<dt::Tensor<float>, dt::Tensor<float>> line_data() {
  std::vector<float> x, y;
  for (int i = 0; i < 64; ++i) {
    x.push_back(static_cast<float>(i) / 32.0f - 1.0f);
    y.push_back(2 * x.back() - 1);
  }
  return {dt::constant<float>(x, {64, 1}), dt::constant<float>(y, {64, 1})};
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(fit, FitFixture)

BOOST_AUTO_TEST_CASE(the_seeds_model_learns) {
  auto model = seeds_model();
  auto history = model.fit(seeds_dataset(), {.epochs = 2, .verbose = 0});
  BOOST_TEST(history.loss.size() == 2u);
  BOOST_TEST(history.epoch == std::vector<int>({0, 1}), boost::test_tools::per_element());
  BOOST_TEST(history.loss[1] < history.loss[0]);
  const double eval = model.evaluate(seeds_dataset(), {.verbose = 0});
  BOOST_TEST(eval <= history.loss[1] + 1e-6);
  BOOST_TEST(model.predict(dt::constant<float>({1}, {1, 1})).item() == 1.0f, boost::test_tools::tolerance(1e-3f));
}

BOOST_AUTO_TEST_CASE(an_epochs_loss_is_the_size_weighted_mean_of_its_batches) {
  // Fit with a batch of 3 and a batch of 1 at lr tiny enough that the loss barely changes: the
  // epoch loss must equal evaluate's weighted mean, not the plain mean of the two batch losses.
  nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Constant{.value = 1}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 1e-9});
  auto x = dt::constant<float>({0, 0, 0, 0}, {4, 1});
  auto y = dt::constant<float>({1, 1, 1, 3}, {4, 1});
  auto history = model.fit(x, y, {.batch_size = 3, .verbose = 0, .shuffle = false});
  BOOST_TEST(history.loss[0] == (1.0 + 1 + 1 + 9) / 4, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(model.evaluate(x, y, {.batch_size = 3, .verbose = 0}) == 3.0, boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(fit_on_tensors_with_a_seed_is_reproducible) {
  auto [x, y] = line_data();
  auto a = seeds_model(3);
  auto b = seeds_model(3);
  auto ha = a.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .seed = 11});
  auto hb = b.fit(x, y, {.epochs = 3, .batch_size = 8, .verbose = 0, .seed = 11});
  BOOST_TEST(ha.loss == hb.loss, boost::test_tools::per_element());
  BOOST_TEST(ha.loss.back() < ha.loss.front());
  const auto w = a.trainable_variables()[0].to_vector();
  BOOST_TEST(w[0] > 1.0f);                              // heading for 2
  auto predictions = a.predict(x, {.batch_size = 10});  // 7 batches, concatenated
  BOOST_TEST(predictions.shape() == dt::Shape({64, 1}));
  BOOST_TEST(predictions.to_vector() == a(x).to_vector(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(progress_on_a_terminal_redraws_one_line) {
  std::ostringstream out;
  nn::ProgressBar bar(4, 1, &out, true, /*interval_seconds=*/0.0);
  for (int step = 1; step <= 4; ++step) bar.update(step, 0.5);
  bar.finish(4, 0.25);
  const std::string text = out.str();
  BOOST_TEST(std::regex_match(text, std::regex(R"(\r1/4 \[======>\.{23}\] - ETA: 0s - loss: 0\.5000)"
                                               R"(\r2/4 \[==============>\.{15}\] - ETA: 0s - loss: 0\.5000)"
                                               R"(\r3/4 \[={21}>\.{8}\] - ETA: 0s - loss: 0\.5000)"
                                               R"(\r4/4 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: 0\.2500 *\n)")),
             "output was: " << text);  // the last step is drawn once, by finish()
}

BOOST_AUTO_TEST_CASE(progress_redraws_at_most_every_interval) {
  std::ostringstream out;
  nn::ProgressBar bar(1000, 1, &out, true);  // Keras's 50 ms: a fast epoch draws step 1 and the end
  for (int step = 1; step <= 1000; ++step) bar.update(step, 1.0);
  bar.finish(1000, 1.0);
  const std::string text = out.str();
  const auto redraws = std::count(text.begin(), text.end(), '\r');
  BOOST_TEST(redraws >= 2);
  BOOST_TEST(redraws < 1000);  // 1000 updates in far less than 50 s
  BOOST_TEST(text.starts_with("\r   1/1000 ["));
}

namespace {
// Runs `body` with the process's stdout on a pseudo-terminal and returns what the terminal got.
template <class Body>
std::string on_a_terminal(Body body) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  BOOST_REQUIRE(master >= 0);
  BOOST_REQUIRE(::grantpt(master) == 0 && ::unlockpt(master) == 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  BOOST_REQUIRE(slave >= 0);
  termios mode{};
  ::tcgetattr(slave, &mode);
  mode.c_oflag &= ~static_cast<tcflag_t>(OPOST);  // bytes as written: no "\n" -> "\r\n"
  ::tcsetattr(slave, TCSANOW, &mode);
  std::string received;
  std::thread reader([&] {  // drains the terminal so that a long output cannot block the writer
    char buffer[4096];
    for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;)
      received.append(buffer, static_cast<std::size_t>(n));
  });
  std::cout.flush();
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(slave, STDOUT_FILENO);
  body();
  std::cout.flush();
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ::close(slave);  // the reader sees EOF (EIO) once the last slave descriptor is gone
  reader.join();
  ::close(master);
  return received;
}
}  // namespace

BOOST_AUTO_TEST_CASE(progress_through_a_pseudo_terminal) {
  auto model = seeds_model();
  const std::string text = on_a_terminal([&] { (void)model.fit(seeds_dataset(), {.epochs = 2}); });
  // Detected as a terminal: redrawn in place, and each epoch's final line written exactly once.
  BOOST_TEST(text.starts_with("Epoch 1/2\n\r 1/10 [==>...........................] - ETA: "), "output was: " << text);
  std::size_t finals = 0;
  for (auto at = text.find("10/10 ["); at != std::string::npos; at = text.find("10/10 [", at + 1)) ++finals;
  BOOST_TEST(finals == 2u, "output was: " << text);
  BOOST_TEST(std::regex_search(
                 text, std::regex(R"(\r10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+ *\nEpoch 2/2\n\r 1/10)")),
             "output was: " << text);
  BOOST_TEST(std::regex_search(text, std::regex(R"(\r10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+ *\n$)")),
             "output was: " << text);
}

BOOST_AUTO_TEST_CASE(progress_elsewhere_prints_one_line_per_epoch) {
  auto model = seeds_model();
  std::ostringstream out;
  (void)model.fit(seeds_dataset(), {.epochs = 2, .out = &out, .interactive = false});
  const std::string text = out.str();
  BOOST_TEST(text.find('\r') == std::string::npos);
  BOOST_TEST(std::regex_match(text, std::regex(R"(Epoch 1/2\n10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+\n)"
                                               R"(Epoch 2/2\n10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+\n)")),
             "output was: " << text);
  std::ostringstream two;
  (void)model.fit(seeds_dataset(), {.epochs = 1, .verbose = 2, .out = &two});
  // Keras 3 prints "Epoch i/n" only for more than one epoch.
  BOOST_TEST(std::regex_match(two.str(), std::regex(R"(10/10 - \d+s - \d+(us|ms|s)/step - loss: \S+\n)")),
             "output was: " << two.str());
  // The count as wide as the target, the logs by name (Keras 3: " 3/12 - 0s - 14ms/step - loss: ...").
  std::ostringstream aligned;
  nn::ProgressBar(12, 2, &aligned).finish(3, nn::Logs{{"mae", 1e-4}, {"loss", 0.5}});
  BOOST_TEST(std::regex_match(aligned.str(),
                              std::regex(R"( 3/12 - \d+s - \d+(us|ms|s)/step - loss: 0\.5000 - mae: 1\.0000e-04\n)")),
             "output was: " << aligned.str());
  std::ostringstream silent;
  (void)model.fit(seeds_dataset(), {.epochs = 1, .verbose = 0, .out = &silent});
  BOOST_TEST(silent.str().empty());
  std::ostringstream eval;
  (void)model.evaluate(seeds_dataset(), {.out = &eval, .interactive = false});
  BOOST_TEST(std::regex_match(eval.str(), std::regex(R"(10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+\n)")),
             "output was: " << eval.str());
}

BOOST_AUTO_TEST_CASE(steps_per_epoch_over_an_infinite_dataset) {
  auto model = seeds_model();
  auto forever = Dataset::from_tensors(dt::constant<float>({1}), dt::constant<float>({1})).repeat().batch(4);
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(forever, {.verbose = 0}), dt::InvalidArgumentError,
                             "please specify a `steps_per_epoch` value");
  auto history = model.fit(forever, {.epochs = 3, .verbose = 0, .steps_per_epoch = 5});
  BOOST_TEST(history.loss.size() == 3u);
  DEVTENSOR_CHECK_THROW_WITH((void)model.evaluate(forever, {.verbose = 0}), dt::InvalidArgumentError,
                             "repeats forever");
  // A finite dataset that runs out stops training with Keras's warning.
  auto short_history = model.fit(seeds_dataset(), {.epochs = 3, .verbose = 0, .steps_per_epoch = 6});
  BOOST_TEST(short_history.loss.size() == 2u);  // 6 steps, then 4, then out of data
  BOOST_TEST(log.count("Your input ran out of data; interrupting training") >= 1u);
}

BOOST_AUTO_TEST_CASE(misuse_is_reported) {
  nn::Sequential model({nn::Dense(1, {.input_dim = 1})});
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(seeds_dataset()), dt::FailedPreconditionError,
                             "You must call `compile()` before using the model.");
  DEVTENSOR_CHECK_THROW_WITH((void)model.evaluate(seeds_dataset()), dt::FailedPreconditionError, "compile()");
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(dt::zeros<float>(dt::Shape({10, 1})), dt::zeros<float>(dt::Shape({9, 1})), {.verbose = 0}),
      dt::InvalidArgumentError, "Data cardinality is ambiguous:\n  x sizes: 10\n  y sizes: 9");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(dt::zeros<float>(dt::Shape({10, 3})), dt::zeros<float>(dt::Shape({10, 1})), {.verbose = 0}),
      dt::InvalidArgumentError,
      "expected axis -1 of input shape to have value 1, but received input with shape (10, 3)");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(dt::zeros<float>(dt::Shape({10, 1})), dt::zeros<float>(dt::Shape({10, 2})), {.verbose = 0}),
      dt::InvalidArgumentError, "incompatible shapes");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(seeds_dataset(), {.epochs = -1}), dt::InvalidArgumentError,
                             "epochs must be >= 0");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)model.fit(dt::zeros<float>(dt::Shape({4, 1})), dt::zeros<float>(dt::Shape({4, 1})), {.batch_size = 0}),
      dt::InvalidArgumentError, "batch_size must be >= 1");
  DEVTENSOR_CHECK_THROW_WITH((void)model.predict(dt::scalar<float>(1)), dt::InvalidArgumentError, "rank >= 1");
  // An unbuilt model has no variables for the optimizer.
  nn::Sequential lazy({nn::Dense(1)});
  DEVTENSOR_CHECK_THROW_WITH(nn::optimizers::SGD{}.apply_gradients({}, lazy.trainable_variables()),
                             dt::InvalidArgumentError, "a model has none until it is built");
}

BOOST_AUTO_TEST_CASE(trains_on_simulated_gpus_where_the_variables_live) {
  dt::config::set_simulated_gpus(1);
  auto model = seeds_model();
  BOOST_TEST(model.trainable_variables()[0].device() == "/job:localhost/replica:0/task:0/device:GPU:0");
  auto history = model.fit(seeds_dataset(), {.epochs = 2, .verbose = 0});
  BOOST_TEST(history.loss[1] < history.loss[0]);
  BOOST_TEST(dt::config::experimental::get_memory_info("GPU:0").peak > 0u);
}

// fit, evaluate and predict trace their steps by default (Keras's run_eagerly=False): the graph
// runs the same kernels, fused, so every number equals the eager run's bit for bit.
namespace {
struct Trained {
  std::vector<double> losses;
  std::vector<std::vector<float>> weights;
  double evaluated = 0;
  std::vector<float> predicted;
};
Trained train_mlp(bool run_eagerly) {
  nn::Sequential model({nn::Dense(8, {.input_dim = 1,
                                      .activation = nn::Activation::relu,
                                      .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}}),
                        nn::Dense(1, {.kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{.learning_rate = 0.05},
                {.run_eagerly = run_eagerly});
  auto [x, y] = line_data();
  Trained out;
  // Batches of 10 and a last one of 4: two traces of the train step.
  out.losses = model.fit(x, y, {.epochs = 3, .batch_size = 10, .verbose = 0, .seed = 5}).loss;
  for (const auto& v : model.trainable_variables()) out.weights.push_back(v.to_vector());
  out.evaluated = model.evaluate(x, y, {.batch_size = 10, .verbose = 0});
  out.predicted = model.predict(x, {.batch_size = 10}).to_vector();
  return out;
}
/// The distinct traced functions named `name` that the placement log shows being called.
std::set<std::string> functions_called(const std::vector<std::string>& lines, const std::string& name) {
  std::set<std::string> out;
  for (const auto& l : lines)
    if (const auto at = l.find("Executing op __inference_" + name + "_"); at != std::string::npos)
      out.insert(l.substr(at, l.find(' ', at + 13) - at));
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(traced_steps_give_the_eager_steps_bits) {
  const auto eager = train_mlp(true);
  const auto traced = train_mlp(false);
  BOOST_TEST(traced.losses == eager.losses, boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(traced.weights.size() == 4u);
  for (std::size_t i = 0; i < traced.weights.size(); ++i)
    BOOST_TEST(traced.weights[i] == eager.weights[i], boost::test_tools::per_element());
  BOOST_TEST(traced.evaluated == eager.evaluated);
  BOOST_TEST(traced.predicted == eager.predicted, boost::test_tools::per_element());
  BOOST_TEST(traced.losses.back() < traced.losses.front());
}

BOOST_AUTO_TEST_CASE(steps_are_traced_once_per_batch_shape_unless_run_eagerly) {
  auto model = seeds_model();
  BOOST_TEST(!model.run_eagerly());
  auto [x, y] = line_data();
  dt::debugging::set_log_device_placement(true);
  (void)model.fit(x, y, {.epochs = 2, .batch_size = 10, .verbose = 0});  // 6 batches of 10, one of 4
  (void)model.evaluate(x, y, {.batch_size = 32, .verbose = 0});
  (void)model.predict(x, {.batch_size = 64});
  auto lines = log.lines();
  BOOST_TEST(functions_called(lines, "train_function").size() == 2u);
  BOOST_TEST(functions_called(lines, "test_function").size() == 1u);
  BOOST_TEST(functions_called(lines, "predict_function").size() == 1u);
  BOOST_TEST(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
               return l.find("Executing op __inference_train_function_") != std::string::npos;
             }) == 14);
  // train_on_batch runs the step fit runs; train_step runs op by op, as Keras's.
  log.clear();
  const double loss = model.train_on_batch(x, y);
  BOOST_TEST(functions_called(log.lines(), "train_function").size() == 1u);
  log.clear();
  BOOST_TEST(model.train_step(x, y).first < loss);
  BOOST_TEST(functions_called(log.lines(), "train_function").empty());
  // Eagerly: no traced function, each op on its own.
  model.set_run_eagerly(true);
  log.clear();
  (void)model.fit(x, y, {.epochs = 1, .batch_size = 32, .verbose = 0});
  lines = log.lines();
  BOOST_TEST(functions_called(lines, "train_function").empty());
  BOOST_TEST(std::any_of(lines.begin(), lines.end(),
                         [](const std::string& l) { return l.starts_with("Executing op MatMul"); }));
  // compile() starts again, with its own run_eagerly.
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});
  BOOST_TEST(!model.run_eagerly());
}

// CompileOptions::cuda_graph on a GPU (the fake platform, graph/cuda_graph.hpp): fit's and
// evaluate's steps are captured once per batch shape and replayed, with the traced steps' bits.
BOOST_AUTO_TEST_CASE(cuda_graph_steps_give_the_traced_steps_bits) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  const auto train = [](bool cuda_graph) {
    nn::clear_session();
    dt::DeviceScope gpu("/GPU:0");
    nn::Sequential model({nn::Dense(8, {.input_dim = 1,
                                        .activation = nn::Activation::relu,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}}),
                          nn::Dense(1, {.kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}})});
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.9},
                  {.cuda_graph = cuda_graph});
    auto [x, y] = line_data();
    // 6 batches of 10, one of 4, shuffled alike
    const auto history = model.fit(x, y, {.epochs = 3, .batch_size = 10, .verbose = 0, .seed = 11});
    const double evaluated = model.evaluate(x, y, {.batch_size = 32, .verbose = 0}).loss;
    return std::pair{history.loss, evaluated};
  };
  const auto traced = train(false);
  const auto& recorder = dt::test::fake_gpu_recorder();
  BOOST_TEST(recorder.captures == 0);
  const auto replayed = train(true);
  BOOST_TEST(replayed.first == traced.first, boost::test_tools::per_element());
  BOOST_TEST(replayed.second == traced.second);
  BOOST_TEST(replayed.first.back() < replayed.first.front());
  // Captures: train_function for batches of 10 twice and of 4 once, test_function for 32. The
  // op-by-op warm-up of the batch of 4 (end of epoch 1) updates the variables copy-on-write, into
  // new buffers, so the graph of 10 would write the old ones (ops/capture.hpp): it is captured
  // again at epoch 2's first batch. Launches: the 18 steps of 10 less warm-up and two captures,
  // the 3 of 4 less warm-up and capture; evaluate's 2 calls capture.
  BOOST_TEST(recorder.captures == 4);
  BOOST_TEST(recorder.launches == 16);
  BOOST_TEST(platform.log.count("CUDA graph") == 0);
}

BOOST_AUTO_TEST_CASE(a_copy_of_a_model_traces_its_own_steps) {
  // The traced steps call the model they belong to: a copy must not call the original (gone here;
  // ASan would see the use after free).
  auto [x, y] = line_data();
  std::optional<nn::Sequential> original(seeds_model());
  (void)original->fit(x, y, {.batch_size = 16, .verbose = 0});
  nn::Sequential copy = *original;
  original.reset();
  const auto history = copy.fit(x, y, {.epochs = 2, .batch_size = 16, .verbose = 0});
  BOOST_TEST(history.loss[1] < history.loss[0]);
}

// Note [The tape keeps the copies it read] (ops/run_op.hpp): an op on a GPU copies a host input
// once, and its gradient reads that copy. On the fake platform, which records every copy.
BOOST_AUTO_TEST_CASE(a_host_batch_is_copied_to_the_gpu_once_per_step) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  const auto& recorder = dt::test::fake_gpu_recorder();
  const auto uploads_of = [&](std::size_t from, std::size_t bytes) {
    return std::count_if(
        recorder.copies.begin() + static_cast<std::ptrdiff_t>(from), recorder.copies.end(),
        [&](const dt::test::FakeGpuCopy& c) { return c.src_ordinal < 0 && c.dst_ordinal >= 0 && c.bytes == bytes; });
  };
  dt::Tensor<float> x, y;
  {
    dt::DeviceScope host("/cpu:0");
    x = dt::random_normal<float>({64, 5}, {.seed = 11});
    y = dt::random_normal<float>({64, 1}, {.seed = 12});
  }
  constexpr std::size_t kBatchBytes = 8 * 5 * sizeof(float);

  // The tape: the gradients with respect to the host input and to the weights, as on the host.
  dt::Tensor<float> xs;
  {
    dt::DeviceScope host("/cpu:0");
    xs = dt::slice(x, {0, 0}, {8, 5});
  }
  const auto gradients = [&](const char* device) {
    dt::DeviceScope scope(device);
    dt::Variable<float> w(dt::random_normal<float>({5, 3}, {.seed = 13}));
    dt::GradientTape tape({.persistent = true});
    tape.watch(xs);
    const auto loss = dt::reduce_sum(dt::square(dt::matmul(xs, w.value())));
    const auto dx = tape.gradient(loss, xs);
    return std::pair{dx.to_vector(), tape.gradient(loss, w).to_vector()};
  };
  const auto on_host = gradients("/cpu:0");
  std::size_t before = recorder.copies.size();
  const auto on_gpu = gradients("/GPU:0");
  BOOST_TEST(uploads_of(before, kBatchBytes) == 1);
  BOOST_TEST(on_gpu.first == on_host.first, boost::test_tools::per_element());
  BOOST_TEST(on_gpu.second == on_host.second, boost::test_tools::per_element());

  // fit over host batches, op by op and traced: one upload of each batch per step. The traced
  // step's seed stays on the host (Model::host_step_seed) unless a random layer reads it.
  const auto fit = [&](bool eagerly, bool dropout) {
    nn::clear_session();
    dt::DeviceScope gpu("/GPU:0");
    std::vector<nn::Layer> layers{nn::Dense(4, {.input_dim = 5,
                                                .activation = nn::Activation::relu,
                                                .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}})};
    if (dropout) layers.push_back(nn::Dropout(0.5, {.seed = 5}));
    layers.push_back(nn::Dense(1, {.kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}}));
    nn::Sequential model(std::move(layers));
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.01});
    model.set_run_eagerly(eagerly);
    return model.fit(Dataset::from_tensor_slices(x, y).batch(8), {.epochs = 2, .verbose = 0}).loss;
  };
  std::vector<double> without_dropout;
  for (const bool eagerly : {true, false}) {
    BOOST_TEST_CONTEXT("run_eagerly " << eagerly) {
      before = recorder.copies.size();
      without_dropout = fit(eagerly, false);
      BOOST_TEST(uploads_of(before, kBatchBytes) == 16);
      BOOST_TEST(uploads_of(before, sizeof(std::int64_t)) == (eagerly ? 16 : 0));
    }
  }
  // With a random layer the traced step reads the host seed: the same draws as op by op.
  const auto traced = fit(false, true);
  BOOST_TEST(traced == fit(true, true), boost::test_tools::per_element());
  BOOST_TEST(traced != without_dropout);
}

BOOST_AUTO_TEST_SUITE_END()

// Keras 3's callbacks (nn/callback.hpp, nn/callbacks.hpp) against Keras 3.15's histories, weights
// and messages (tests/reference/callbacks.py): y = 2x + 1 on 8 points, batches of 4, no
// shuffling, a Dense(1) from zeros and SGD.
BOOST_FIXTURE_TEST_SUITE(callbacks, FitFixture)

namespace {
namespace cb = nn::callbacks;
std::pair<dt::Tensor<float>, dt::Tensor<float>> eight_points() {
  std::vector<float> x, y;
  for (int i = 0; i < 8; ++i) {
    x.push_back(static_cast<float>(-1.0 + 2.0 * i / 7.0));
    y.push_back(2 * x.back() + 1);
  }
  return {dt::constant<float>(x, {8, 1}), dt::constant<float>(y, {8, 1})};
}
/// The reference's validation data: x = 0.3, -0.6.
nn::ValidationData two_points() {
  return {dt::constant<float>({0.3f, -0.6f}, {2, 1}), dt::constant<float>({2 * 0.3f + 1, 2 * -0.6f + 1}, {2, 1})};
}
nn::Sequential zeros_model(double learning_rate = 0.05) {
  nn::clear_session();
  nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = learning_rate});
  return model;
}
std::vector<double> weights_of(const nn::Model& model) {
  std::vector<double> out;
  for (const auto& v : model.variables())
    for (const float f : v.to_vector()) out.push_back(f);
  return out;
}
void check_near(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 1e-5) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    BOOST_TEST(std::abs(got[i] - want[i]) <= tolerance * (1 + std::abs(want[i])),
               "element " << i << ": " << got[i] << " vs " << want[i]);
}
/// fit with the reference's settings, its messages in `out`.
nn::History fit_with(nn::Sequential& model, std::ostringstream& out, std::vector<nn::Callback> callbacks, int epochs,
                     nn::ValidationData validation = {}) {
  auto [x, y] = eight_points();
  return model.fit(x, y,
                   {.epochs = epochs,
                    .batch_size = 4,
                    .verbose = 0,
                    .shuffle = false,
                    .out = &out,
                    .validation_data = std::move(validation),
                    .callbacks = std::move(callbacks)});
}
const std::vector<double> kLossesSgd005{
    2.704125165939331,   2.078704833984375,   1.6199984550476074, 1.278014898300171,   1.0189510583877563,
    0.8197245597839355,  0.664389967918396,   0.5417863726615906, 0.44398602843284607, 0.3652684688568115,
    0.30143681168556213, 0.24936066567897797, 0.2066669911146164, 0.17152920365333557, 0.14252161979675293,
    0.11851780861616135, 0.09861811250448227, 0.08209754526615143};

/// Records the hooks it sees, by name.
struct Recorder {
  std::shared_ptr<std::vector<std::string>> calls = std::make_shared<std::vector<std::string>>();
  nn::Model* model = nullptr;
  int stop_at_batch = -1;
  void set_model(nn::Model& m) { model = &m; }
  void set_params(const nn::CallbackParams& p) {
    calls->push_back("params " + std::to_string(p.epochs) + " " + std::to_string(p.steps));
  }
  void on_train_begin(const nn::Logs&) { calls->push_back("train_begin"); }
  void on_train_end(const nn::Logs& logs) { calls->push_back("train_end " + std::to_string(logs.size())); }
  void on_epoch_begin(int epoch, const nn::Logs&) { calls->push_back("epoch_begin " + std::to_string(epoch)); }
  void on_epoch_end(int epoch, nn::Logs& logs) {
    calls->push_back("epoch_end " + std::to_string(epoch) + " " + nn::log_names(logs));
    nn::set_log_value(logs, "mine", epoch);  // later callbacks (History) see it
  }
  void on_train_batch_begin(std::int64_t batch, const nn::Logs&) {
    calls->push_back("batch_begin " + std::to_string(batch));
  }
  void on_train_batch_end(std::int64_t batch, const nn::Logs& logs) {
    calls->push_back("batch_end " + std::to_string(batch) + " " + nn::log_names(logs));
    if (batch == stop_at_batch) model->set_stop_training(true);
  }
  void on_test_begin(const nn::Logs&) { calls->push_back("test_begin"); }
  void on_test_batch_end(std::int64_t batch, const nn::Logs&) {
    calls->push_back("test_batch_end " + std::to_string(batch));
  }
  void on_test_end(const nn::Logs& logs) { calls->push_back("test_end " + nn::log_names(logs)); }
  void on_predict_begin(const nn::Logs&) { calls->push_back("predict_begin"); }
  void on_predict_batch_begin(std::int64_t batch, const nn::Logs&) {
    calls->push_back("predict_batch_begin " + std::to_string(batch));
  }
  void on_predict_end(const nn::Logs&) { calls->push_back("predict_end"); }
};
}  // namespace

BOOST_AUTO_TEST_CASE(fit_evaluate_and_predict_call_the_hooks_in_keras_order) {
  auto model = zeros_model();
  std::ostringstream out;
  Recorder recorder;
  const auto history = fit_with(model, out, {recorder}, 2, two_points());
  const std::vector<std::string> expected{"params 2 2",
                                          "train_begin",
                                          "epoch_begin 0",
                                          "batch_begin 0",
                                          "batch_end 0 loss",
                                          "batch_begin 1",
                                          "batch_end 1 loss",
                                          "test_begin",
                                          "test_batch_end 0",
                                          "test_end loss",
                                          "epoch_end 0 loss,val_loss",
                                          "epoch_begin 1",
                                          "batch_begin 0",
                                          "batch_end 0 loss",
                                          "batch_begin 1",
                                          "batch_end 1 loss",
                                          "test_begin",
                                          "test_batch_end 0",
                                          "test_end loss",
                                          "epoch_end 1 loss,val_loss",
                                          "train_end 3"};
  BOOST_TEST(*recorder.calls == expected, boost::test_tools::per_element());
  // What a callback adds to the epoch's logs reaches the History after it (Keras adds it last).
  BOOST_TEST(history.metrics.at("mine") == std::vector<double>({0, 1}), boost::test_tools::per_element());
  check_near(history.loss, {kLossesSgd005[0], kLossesSgd005[1]});
  check_near(history.metrics.at("val_loss"), {0.9539218544960022, 0.7173735499382019});
  // evaluate and predict call theirs.
  recorder.calls->clear();
  auto [x, y] = eight_points();
  (void)model.evaluate(x, y, {.batch_size = 4, .verbose = 0, .callbacks = {recorder}});
  BOOST_TEST(*recorder.calls == std::vector<std::string>({"params 1 2", "test_begin", "test_batch_end 0",
                                                          "test_batch_end 1", "test_end loss"}),
             boost::test_tools::per_element());
  recorder.calls->clear();
  (void)model.predict(x, {.batch_size = 5, .callbacks = {std::ref(recorder)}});
  BOOST_TEST(*recorder.calls == std::vector<std::string>({"params 1 2", "predict_begin", "predict_batch_begin 0",
                                                          "predict_batch_begin 1", "predict_end"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_callback_stops_training_and_initial_epoch_resumes) {
  auto model = zeros_model();
  std::ostringstream out;
  Recorder recorder{.stop_at_batch = 0};
  auto history = fit_with(model, out, {recorder}, 5);
  // Stopped after the first batch: the epoch still ends (its logs recorded), then training.
  BOOST_TEST(history.epoch == std::vector<int>({0}), boost::test_tools::per_element());
  BOOST_TEST(model.stop_training());
  BOOST_TEST(std::count(recorder.calls->begin(), recorder.calls->end(), "batch_begin 1") == 0);
  // fit clears the flag; initial_epoch = 3 of 5 runs epochs 3 and 4.
  auto [x, y] = eight_points();
  history = model.fit(x, y, {.epochs = 5, .batch_size = 4, .verbose = 0, .shuffle = false, .initial_epoch = 3});
  BOOST_TEST(history.epoch == std::vector<int>({3, 4}), boost::test_tools::per_element());
  BOOST_TEST(!model.stop_training());
  DEVTENSOR_CHECK_THROW_WITH(model.fit(x, y, {.epochs = 2, .verbose = 0, .initial_epoch = 3}), dt::InvalidArgumentError,
                             "initial_epoch must be in [0, epochs] (2), got 3");
  // A callback's exception leaves fit (what the step or a hook throws is not swallowed).
  nn::callbacks::LambdaCallback failing{
      .on_epoch_end_fn = [](int, nn::Logs&) { throw dt::CancelledError("stop here"); }};
  DEVTENSOR_CHECK_THROW_WITH(model.fit(x, y, {.epochs = 2, .verbose = 0, .callbacks = {failing}}), dt::CancelledError,
                             "stop here");
}

BOOST_AUTO_TEST_CASE(early_stopping_stops_and_restores_as_keras) {
  auto model = zeros_model();
  std::ostringstream out;
  cb::EarlyStopping early{
      .monitor = "loss", .min_delta = 0.05, .patience = 2, .verbose = 1, .restore_best_weights = true};
  const auto history = fit_with(model, out, {early}, 30);
  check_near(history.loss, kLossesSgd005);
  BOOST_TEST(early.stopped_epoch() == 17);
  BOOST_TEST(early.best_epoch() == 15);
  BOOST_TEST(early.wait() == 2);
  BOOST_TEST(*early.best() == 0.11851780861616135, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(out.str() == "Epoch 18: early stopping\nRestoring model weights from the end of the best epoch: 16.\n");
  check_near(weights_of(model), {1.5292549133300781, 0.9802594780921936});
  // start_from_epoch: epochs 0-2 are not monitored, so with min_delta 1 it stops at epoch 4.
  model = zeros_model();
  std::ostringstream late;
  cb::EarlyStopping warm{.monitor = "loss", .min_delta = 1.0, .patience = 0, .verbose = 1, .start_from_epoch = 3};
  BOOST_TEST(fit_with(model, late, {warm}, 30).loss.size() == 5u);
  BOOST_TEST(late.str() == "Epoch 5: early stopping\n");
  check_near(weights_of(model), {0.7233738303184509, 0.6763370037078857});
  // A baseline: waiting restarts only on epochs below it; val_loss falls below 0.5 at epoch 3
  // and keeps falling, so it never stops.
  model = zeros_model();
  std::ostringstream never;
  cb::EarlyStopping baseline{.patience = 1, .verbose = 1, .baseline = 0.5};
  BOOST_TEST(fit_with(model, never, {baseline}, 30, two_points()).loss.size() == 30u);
  BOOST_TEST(baseline.stopped_epoch() == 0);
  BOOST_TEST(baseline.best_epoch() == 29);
  BOOST_TEST(never.str().empty());
  check_near(weights_of(model), {1.8686120510101318, 1.002350091934204});
}

BOOST_AUTO_TEST_CASE(monitored_values_warn_when_missing_and_refuse_unknown_directions) {
  auto model = zeros_model();
  std::ostringstream out;
  BOOST_TEST(fit_with(model, out, {cb::EarlyStopping{.verbose = 1}}, 2).loss.size() == 2u);
  BOOST_TEST(log.count("Early stopping conditioned on metric `val_loss` which is not available. Available metrics are: "
                       "loss") == 2u);
  (void)fit_with(model, out, {cb::ReduceLROnPlateau{}}, 1);
  BOOST_TEST(log.count("Learning rate reduction is conditioned on metric `val_loss` which is not available. Available "
                       "metrics are: loss,learning_rate.") == 1u);
  (void)fit_with(model, out, {cb::EarlyStopping{.mode = "sideways"}}, 1);
  BOOST_TEST(log.count("EarlyStopping mode 'sideways' is unknown, fallback to auto mode.") == 1u);
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {cb::EarlyStopping{.monitor = "auc"}}, 1), dt::InvalidArgumentError,
                             "EarlyStopping callback received monitor=auc, but Keras isn't able to automatically "
                             "determine whether that metric should be maximized or minimized. Pass `mode='max'`");
  // Directions: losses fall, accuracies rise; min_delta counts in the monitored direction.
  nn::callbacks::callbacks_detail::Monitor monitor;
  monitor.decide("EarlyStopping", "val_accuracy", "auto");
  BOOST_TEST(!monitor.less);
  BOOST_TEST(monitor.improves(0.5, 0.4, 0.05));
  BOOST_TEST(!monitor.improves(0.44, 0.4, 0.05));
  monitor.decide("EarlyStopping", "val_cls_loss", "auto");
  BOOST_TEST(monitor.less);
  BOOST_TEST(monitor.improves(0.3, 0.4, 0.05));
  BOOST_TEST(!monitor.improves(0.36, 0.4, 0.05));
  BOOST_TEST(monitor.improves(123.0, std::nullopt, 0.0));
  monitor.decide("EarlyStopping", "auc", "max");
  BOOST_TEST(!monitor.less);
}

BOOST_AUTO_TEST_CASE(reduce_lr_on_plateau_and_the_scheduler_change_the_rate_as_keras) {
  auto model = zeros_model();
  std::ostringstream out;
  cb::ReduceLROnPlateau reduce{
      .monitor = "loss", .factor = 0.5, .patience = 1, .verbose = 1, .min_delta = 0.2, .cooldown = 1, .min_lr = 0.01};
  auto history = fit_with(model, out, {reduce}, 8);
  check_near(history.loss, {2.704125165939331, 2.078704833984375, 1.6199984550476074, 1.278014898300171,
                            1.0189510583877563, 0.8197245597839355, 0.6566849946975708, 0.5944064855575562});
  BOOST_TEST(
      history.metrics.at("learning_rate") ==
          std::vector<double>({0.05000000074505806, 0.05000000074505806, 0.05000000074505806, 0.05000000074505806,
                               0.05000000074505806, 0.05000000074505806, 0.02500000037252903, 0.02500000037252903}),
      boost::test_tools::per_element());
  BOOST_TEST(out.str() ==
             "\nEpoch 6: ReduceLROnPlateau reducing learning rate to 0.02500000037252903.\n"
             "\nEpoch 8: ReduceLROnPlateau reducing learning rate to 0.012500000186264515.\n");
  check_near(weights_of(model), {0.9318117499351501, 0.7928676605224609});
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {cb::ReduceLROnPlateau{.factor = 1.0}}, 1), dt::InvalidArgumentError,
                             "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=1.0");

  model = zeros_model(0.1);
  std::ostringstream scheduled;
  cb::LearningRateScheduler scheduler{.schedule = [](int epoch, double lr) { return epoch < 2 ? lr : lr * 0.5; },
                                      .verbose = 1};
  history = fit_with(model, scheduled, {scheduler}, 4);
  check_near(history.loss, {2.6940524578094482, 1.570854902267456, 0.9524168968200684, 0.7623892426490784});
  BOOST_TEST(history.metrics.at("learning_rate") == std::vector<double>({0.10000000149011612, 0.10000000149011612,
                                                                         0.05000000074505806, 0.02500000037252903}),
             boost::test_tools::per_element());
  BOOST_TEST(scheduled.str() ==
             "\nEpoch 1: LearningRateScheduler setting learning rate to 0.10000000149011612.\n"
             "\nEpoch 2: LearningRateScheduler setting learning rate to 0.10000000149011612.\n"
             "\nEpoch 3: LearningRateScheduler setting learning rate to 0.05000000074505806.\n"
             "\nEpoch 4: LearningRateScheduler setting learning rate to 0.02500000037252903.\n");
  check_near(weights_of(model), {0.7996604442596436, 0.746825098991394});
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {cb::LearningRateScheduler{}}, 1), dt::InvalidArgumentError,
                             "LearningRateScheduler: no schedule given");
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, out, {cb::LearningRateScheduler{.schedule = [](int, double) { return -1.0; }}}, 1),
      dt::InvalidArgumentError, "non-negative number, got -1");
  // An optimizer whose rate is a schedule refuses both (Keras's TypeError).
  model = zeros_model();
  model.compile(nn::losses::MeanSquaredError{},
                nn::optimizers::SGD{.learning_rate = nn::schedules::InverseTimeDecay{
                                        .initial_learning_rate = 0.1, .decay_steps = 1, .decay_rate = 1}});
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {scheduler}, 1), dt::InvalidArgumentError, "is not settable");
}

BOOST_AUTO_TEST_CASE(the_progress_lines_come_after_the_callbacks_messages_as_keras_prints_them) {
  // Keras's verbose=2 output with LearningRateScheduler(lr * 0.5) and an EarlyStopping that stops
  // at once: the scheduler's line, then "Epoch i/n", the epoch's line with learning_rate.
  auto model = zeros_model();
  std::ostringstream out;
  auto [x, y] = eight_points();
  (void)model.fit(
      x, y,
      {.epochs = 2,
       .batch_size = 4,
       .verbose = 2,
       .shuffle = false,
       .out = &out,
       .callbacks = {cb::LearningRateScheduler{.schedule = [](int, double lr) { return lr * 0.5; }, .verbose = 1},
                     cb::EarlyStopping{.monitor = "loss", .min_delta = 10, .verbose = 1}}});
  const std::string text = out.str();
  BOOST_TEST(
      std::regex_match(
          text, std::regex(R"(\nEpoch 1: LearningRateScheduler setting learning rate to 0\.02500000037252903\.\n)"
                           R"(Epoch 1/2\n2/2 - \d+s - \d+(us|ms|s)/step - learning_rate: 0\.0250 - loss: 2\.7092\n)"
                           R"(\nEpoch 2: LearningRateScheduler setting learning rate to 0\.012500000186264515\.\n)"
                           R"(Epoch 2/2\n2/2 - \d+s - \d+(us|ms|s)/step - learning_rate: 0\.0125 - loss: 2\.3802\n)"
                           R"(Epoch 2: early stopping\n)")),
      "output was: " << text);
  // A ProgbarLogger in the list is used in its place (no second bar).
  std::ostringstream once;
  (void)model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 2, .out = &once, .callbacks = {cb::ProgbarLogger{}}});
  const std::string lines = once.str();
  BOOST_TEST(std::count(lines.begin(), lines.end(), '\n') == 4);
}

BOOST_AUTO_TEST_CASE(csv_logger_writes_keras_files) {
  const auto path =
      (std::filesystem::temp_directory_path() / ("devtensor_csv_" + std::to_string(::getpid()) + ".csv")).string();
  const auto read = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  auto model = zeros_model();
  std::ostringstream out;
  (void)fit_with(model, out, {cb::CSVLogger{.filename = path}}, 2, two_points());
  // Keras's: "epoch", the sorted names; Python's float text (its values are float32 means, ours
  // double means of the same float32 losses: equal to 1e-7); csv's "\r\n".
  const std::string two_epochs = read();
  BOOST_TEST(std::regex_match(two_epochs, std::regex("epoch,loss,val_loss\r\n0,2\\.70412\\d*,0\\.95392\\d*\r\n"
                                                     "1,2\\.07870\\d*,0\\.71737\\d*\r\n")),
             "file was: " << two_epochs);
  // append: no second header; the separator; a first epoch without val_ columns gets them, NA.
  model = zeros_model();
  (void)fit_with(model, out, {cb::CSVLogger{.filename = path, .separator = ";", .append = true}}, 1);
  BOOST_TEST(std::regex_match(read(), std::regex(two_epochs + "0;2\\.70412\\d*;NA\r\n")), "file was: " << read());
  model = zeros_model();
  (void)fit_with(model, out, {cb::CSVLogger{.filename = path}}, 1);
  BOOST_TEST(std::regex_match(read(), std::regex("epoch,loss,val_loss\r\n0,2\\.70412\\d*,NA\r\n")),
             "file was: " << read());
  std::filesystem::remove(path);
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {cb::CSVLogger{.filename = "/nonexistent-dir/x.csv"}}, 1),
                             dt::InvalidArgumentError, "CSVLogger: cannot open /nonexistent-dir/x.csv");
}

BOOST_AUTO_TEST_CASE(terminate_on_nan_stops_at_the_first_invalid_loss) {
  auto model = zeros_model(1e18);
  std::ostringstream out;
  const auto history = fit_with(model, out, {cb::TerminateOnNaN{}}, 3);
  // Keras: [1.7492711725122066e+34, inf], "Batch 0: Invalid loss, terminating training".
  BOOST_TEST_REQUIRE(history.loss.size() == 2u);
  BOOST_TEST(history.loss[0] == 1.7492711725122066e+34, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::isinf(history.loss[1]));
  BOOST_TEST(out.str() == "Batch 0: Invalid loss, terminating training\n");
  model = zeros_model(1e18);
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, out, {cb::TerminateOnNaN{.raise_error = true}}, 3), dt::InvalidArgumentError,
      "NaN or Inf loss encountered at batch 0. Loss value: inf. Terminating training immediately.");
}

BOOST_AUTO_TEST_CASE(model_checkpoint_refuses_paths_before_training) {
  auto model = zeros_model();
  std::ostringstream out;
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, out, {cb::ModelCheckpoint{.filepath = "x.h5", .save_weights_only = true}}, 1),
      dt::InvalidArgumentError,
      "When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must end "
      "in `.weights.h5` (Keras weights format). Received: filepath=x.h5");
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, out, {cb::ModelCheckpoint{.filepath = "x.txt"}}, 1), dt::InvalidArgumentError,
      "The filepath provided must end in `.keras` (Keras model format). Received: filepath=x.txt");
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, out, {cb::ModelCheckpoint{.filepath = "x.keras"}}, 1),
                             dt::UnimplementedError, "whole models (.keras files) are not written yet");
  // This program does not link the hdf5 component.
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, out, {cb::ModelCheckpoint{.filepath = "x.weights.h5", .save_weights_only = true}}, 1),
      dt::UnimplementedError, "need the HDF5 component");
  DEVTENSOR_CHECK_THROW_WITH((cb::ModelCheckpoint{.filepath = "x.weights.h5", .save_freq = "batch"}),
                             dt::InvalidArgumentError,
                             "Unrecognized save_freq: batch. Expected save_freq are 'epoch' or integer values");
  DEVTENSOR_CHECK_THROW_WITH((cb::ModelCheckpoint{.filepath = "x.weights.h5", .save_freq = 0}),
                             dt::InvalidArgumentError, "Unrecognized save_freq: 0");
  BOOST_TEST(model.variables()[0].to_vector() == std::vector<float>({0.0f}), boost::test_tools::per_element());
}

// CUDA graphs keep the rate they were captured with (nn/optimizer_slots.hpp rate_of_step): a
// rate set between calls has the step captured again, a schedule runs it op by op, and both give
// the traced step's numbers. On the fake GPU platform.
BOOST_AUTO_TEST_CASE(cuda_graph_steps_follow_a_changed_rate_and_fall_back_for_a_schedule) {
  dt::test::FakeGpuPlatform platform(1);
  dt::test::FakeGpuKernels kernels;
  auto [x, y] = eight_points();
  const auto train = [&](bool cuda_graph, bool schedule) {
    nn::clear_session();
    dt::DeviceScope gpu("/GPU:0");
    nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
    const nn::LearningRate rate = schedule ? nn::LearningRate(nn::schedules::ExponentialDecay{
                                                 .initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5})
                                           : nn::LearningRate(0.05);
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = rate},
                  {.cuda_graph = cuda_graph});
    auto losses = model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false}).loss;
    if (!schedule) {
      model.optimizer().set_learning_rate(0.5);
      const auto more = model.fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false}).loss;
      losses.insert(losses.end(), more.begin(), more.end());
    }
    return losses;
  };
  const auto& recorder = dt::test::fake_gpu_recorder();
  const auto traced = train(false, false);
  const auto captures_before = recorder.captures;
  BOOST_TEST(train(true, false) == traced, boost::test_tools::per_element());
  BOOST_TEST(recorder.captures - captures_before == 2);  // the first step's capture, then again at 0.5
  BOOST_TEST(platform.log.count("is not replayed as a CUDA graph") == 0u);  // the platform's capture holds the logs
  const auto scheduled = train(false, true);
  check_near(scheduled, {2.6940524578094482, 1.8356554508209229, 1.537296175956726});
  BOOST_TEST(train(true, true) == scheduled, boost::test_tools::per_element());
  BOOST_TEST(platform.log.count(
                 "is not replayed as a CUDA graph: the capture failed: a learning-rate schedule gives every step "
                 "its own rate") == 1u);
}

BOOST_AUTO_TEST_CASE(numbers_and_paths_print_as_python_does) {
  using nn::callbacks::callbacks_detail::format_path;
  using nn::callbacks::callbacks_detail::python_float;
  BOOST_TEST(python_float(0.02500000037252903) == "0.02500000037252903");
  BOOST_TEST(python_float(0.0001) == "0.0001");
  BOOST_TEST(python_float(0.00001) == "1e-05");
  BOOST_TEST(python_float(1.0) == "1.0");
  BOOST_TEST(python_float(-250.0) == "-250.0");
  BOOST_TEST(python_float(1.7492711725122066e+34) == "1.7492711725122066e+34");
  BOOST_TEST(python_float(1e16) == "1e+16");
  BOOST_TEST(python_float(123456789012345.6) == "123456789012345.6");
  BOOST_TEST(python_float(std::numeric_limits<double>::infinity()) == "inf");
  BOOST_TEST(python_float(std::nan("")) == "nan");
  const nn::Logs logs{{"loss", 2.704125165939331}, {"val_loss", 0.5542570948600769}};
  BOOST_TEST(format_path("ck/e{epoch:02d}-{loss:.3f}.weights.h5", 0, std::nullopt, logs) == "ck/e01-2.704.weights.h5");
  BOOST_TEST(format_path("b{epoch}-{batch}.weights.h5", 1, 0, logs) == "b2-1.weights.h5");
  BOOST_TEST(format_path("{val_loss:.2f}_{val_loss}_{{x}}_{epoch:3d}_{loss:.1%}_{loss:.2e}", 9, std::nullopt, logs) ==
             "0.55_0.5542570948600769_{x}_ 10_270.4%_2.70e+00");
  DEVTENSOR_CHECK_THROW_WITH(
      format_path("e{val_acc:.2f}.weights.h5", 0, std::nullopt, logs), dt::InvalidArgumentError,
      "Failed to format this callback filepath: \"e{val_acc:.2f}.weights.h5\". Reason: 'val_acc'");
  DEVTENSOR_CHECK_THROW_WITH(format_path("e{loss:d}", 0, std::nullopt, logs), dt::InvalidArgumentError,
                             "Unknown format code 'd'");
  DEVTENSOR_CHECK_THROW_WITH(format_path("e{loss", 0, std::nullopt, logs), dt::InvalidArgumentError, "Single '{'");
  DEVTENSOR_CHECK_THROW_WITH(format_path("e{loss:>5}", 0, std::nullopt, logs), dt::InvalidArgumentError,
                             "is not one of [0][width][.precision][d|f|e|g|%]");
}

BOOST_AUTO_TEST_SUITE_END()

// TensorBoard's event files (nn/event_file.hpp) and Keras's TensorBoard callback, against what
// TensorFlow 2.21 and TensorBoard 2.21 write and read (tests/reference/tensorboard_events.py).
BOOST_FIXTURE_TEST_SUITE(tensorboard, FitFixture)

namespace {
namespace fs = std::filesystem;
namespace summary = dt::summary;
const fs::path kReference = DEVTENSOR_TENSORBOARD_DIR;

/// A new folder under the temporary directory, removed at the end.
struct TempFolder {
  fs::path path;
  TempFolder() {
    static int made = 0;
    path = fs::temp_directory_path() / ("devtensor_tb_" + std::to_string(::getpid()) + "_" + std::to_string(made++));
    fs::remove_all(path);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};
/// The one event file in `folder`.
std::string event_file(const fs::path& folder) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().find("tfevents") != std::string::npos) found.push_back(entry.path().string());
  BOOST_TEST_REQUIRE(found.size() == 1u);
  return found[0];
}
/// "<tag> <steps...>" for each summary tag of an event file, sorted (keras_tags.txt's form).
std::vector<std::string> tags_and_steps(const std::string& run, const std::string& path) {
  std::map<std::string, std::string> steps;
  for (const auto& event : summary::read_events(path))
    for (const auto& value : event.values) steps[value.tag] += " " + std::to_string(event.step);
  std::vector<std::string> out;
  for (const auto& [tag, list] : steps) out.push_back(run + " " + tag + list);
  return out;
}
/// What devtensor.tfevents holds: the file TensorBoard read (devtensor_read_by_tensorboard.txt).
void write_fixture_content(summary::FileWriter& writer) {
  writer.scalar("epoch_loss", 0.9, 0);
  writer.scalar("epoch_loss", 0.5, 1);
  writer.scalar("epoch_loss", 0.25, 2);
  const std::vector<double> weights{1, 2, 2, 5};
  writer.histogram("w/histogram", weights, 0, 3);
  writer.graph({{"x", "_Arg", {}, "/job:localhost/replica:0/task:0/device:CPU:0"},
                {"MatMul", "MatMul", {"x", "x"}, "/job:localhost/replica:0/task:0/device:GPU:0"},
                {"Identity", "Identity", {"MatMul", "^x"}, "/job:localhost/replica:0/task:0/device:CPU:0"}});
}
/// An event file's records without their wall times (which differ run to run).
std::vector<std::string> records_without_times(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  for (std::size_t at = 0; at + 12 <= bytes.size();) {
    std::uint64_t length;
    std::memcpy(&length, bytes.data() + at, 8);
    const std::string data = bytes.substr(at + 12, length);
    out.push_back(data.substr(9));  // the wall time is field 1 (fixed64), first: 9 bytes
    at += 12 + length + 4;
  }
  return out;
}
std::vector<std::string> lines_of(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}
std::string python_number(double v) { return nn::callbacks::callbacks_detail::python_float(v); }
}  // namespace

BOOST_AUTO_TEST_CASE(event_files_are_tfrecords_that_tensorboard_reads) {
  // CRC-32C test vectors: RFC 3720's 32 zero bytes; a masked CRC from a TensorBoard writer's tests.
  BOOST_TEST(summary::crc32c(std::string(32, '\0')) == 0x8a9136aaU);
  BOOST_TEST(summary::masked_crc32c(std::string_view("\x1a\x11"
                                                     "CRC test, one two")) == 0x5794d08aU);
  TempFolder dir;
  summary::FileWriter writer((dir.path / "run").string());
  const std::string name = fs::path(writer.path()).filename().string();
  BOOST_TEST(name.rfind("events.out.tfevents.", 0) == 0u);
  BOOST_TEST(name.substr(name.size() - 3) == ".v2");
  write_fixture_content(writer);
  writer.close();
  writer.close();  // harmless
  DEVTENSOR_CHECK_THROW_WITH(writer.scalar("late", 1, 0), dt::FailedPreconditionError, "is closed");
  // Record for record the file TensorBoard 2.21 read, but for the wall times.
  const auto fixture = (kReference / "devtensor.tfevents").string();
  BOOST_TEST(records_without_times(writer.path()) == records_without_times(fixture), boost::test_tools::per_element());
  // What TensorBoard's EventAccumulator read from it, and what ours reads.
  const auto events = summary::read_events(fixture);
  BOOST_TEST_REQUIRE(events.size() == 6u);
  BOOST_TEST(events[0].file_version == "brain.Event:2");
  std::vector<std::string> ours;
  for (const auto& event : events) {
    for (const auto& value : event.values) {
      std::string line = value.tag + " " + value.plugin + " " + std::to_string(event.step);
      for (const double v : value.values) line += " " + python_number(v);
      ours.push_back(line);
    }
    for (const auto& node : event.graph) {
      std::string line = "node " + node.name + " " + node.op + " " + node.device + " ";
      for (std::size_t i = 0; i < node.inputs.size(); ++i) line += (i ? " " : "") + node.inputs[i];
      ours.push_back(line);
    }
  }
  BOOST_TEST(events[1].values.at(0).dtype == 1);  // DT_FLOAT
  BOOST_TEST(events[4].values.at(0).dtype == 2);  // DT_DOUBLE
  BOOST_TEST((events[4].values.at(0).shape == std::vector<std::int64_t>{3, 3}));
  BOOST_TEST(events[5].has_graph);
  BOOST_TEST(ours == lines_of(kReference / "devtensor_read_by_tensorboard.txt"), boost::test_tools::per_element());
  // Damaged files: a flipped byte, a file cut short, no file.
  std::ifstream in(fixture, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto damaged = (dir.path / "damaged").string();
  bytes[60] = static_cast<char>(bytes[60] ^ 0x40);
  std::ofstream(damaged, std::ios::binary) << bytes;
  DEVTENSOR_CHECK_THROW_WITH((void)summary::read_events(damaged), dt::DataLossError, "corrupted record at");
  bytes[60] = static_cast<char>(bytes[60] ^ 0x40);  // whole again, then cut short
  std::ofstream(damaged, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 3);
  DEVTENSOR_CHECK_THROW_WITH((void)summary::read_events(damaged), dt::DataLossError, "truncated record at");
  DEVTENSOR_CHECK_THROW_WITH((void)summary::read_events((dir.path / "none").string()), dt::NotFoundError,
                             "Could not open");
  // Refreshes the fixture (then run tests/reference/tensorboard_events.py on it).
  if (const char* refresh = std::getenv("DEVTENSOR_TENSORBOARD_FIXTURE"))
    fs::copy_file(writer.path(), refresh, fs::copy_options::overwrite_existing);
}

BOOST_AUTO_TEST_CASE(tensorflows_own_event_file_reads) {
  const auto events = summary::read_events((kReference / "tensorflow.tfevents").string());
  BOOST_TEST_REQUIRE(events.size() == 4u);
  BOOST_TEST(events[0].file_version == "brain.Event:2");
  BOOST_TEST_REQUIRE(events[1].values.size() == 1u);
  BOOST_TEST(events[1].step == 3);
  BOOST_TEST(events[1].values[0].tag == "epoch_loss");
  BOOST_TEST(events[1].values[0].plugin == "scalars");
  BOOST_TEST((events[1].values[0].values == std::vector<double>{0.5}));
  // TensorFlow's histogram of 1, 2, 2, 5 in 3 buckets: the rows ours makes.
  const std::vector<double> data{1, 2, 2, 5};
  std::vector<double> rows;
  for (const auto& row : summary::histogram_buckets(data, 3)) rows.insert(rows.end(), row.begin(), row.end());
  BOOST_TEST(events[2].values.at(0).plugin == "histograms");
  BOOST_TEST(events[2].values.at(0).values == rows, boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(events[3].has_graph);
  const auto& nodes = events[3].graph;
  const auto matmul = std::find_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.op == "MatMul"; });
  BOOST_TEST_REQUIRE((matmul != nodes.end()));
  BOOST_TEST((matmul->inputs == std::vector<std::string>{"x", "x"}));
}

BOOST_AUTO_TEST_CASE(histogram_buckets_are_tensorboards) {
  BOOST_TEST(summary::histogram_buckets({}, 0).empty());
  const auto empty = summary::histogram_buckets({}, 30);
  BOOST_TEST_REQUIRE(empty.size() == 30u);
  BOOST_TEST(empty[29][2] == 0.0);
  const std::vector<double> same{4, 4, 4};
  const auto single = summary::histogram_buckets(same, 5);
  BOOST_TEST(single[0][0] == 4.0);
  BOOST_TEST(single[0][1] == 4.0);
  BOOST_TEST(single[3][2] == 0.0);
  BOOST_TEST(single[4][2] == 3.0);
  const std::vector<double> with_nan{0, std::nan(""), 1, INFINITY};
  const auto finite = summary::histogram_buckets(with_nan, 2);
  BOOST_TEST(finite[0][2] + finite[1][2] == 2.0);  // the non-finite are left out
  BOOST_TEST(finite[1][1] == 1.0);
}

BOOST_AUTO_TEST_CASE(the_callback_writes_kerass_runs_tags_and_steps_and_the_placed_graph) {
  // tensorboard_events.py's fit: 16 points of 3 features, Dense(4, relu), Dense(1), SGD(0.05),
  // batches of 4, 2 epochs, validation on the first 8, histogram_freq=1, update_freq=2.
  std::vector<float> xs(48), ys(16);
  for (int i = 0; i < 48; ++i) xs[static_cast<std::size_t>(i)] = static_cast<float>(-1.0 + 2.0 * i / 47.0);
  for (std::size_t r = 0; r < 16; ++r) ys[r] = xs[3 * r] + xs[3 * r + 1] + xs[3 * r + 2];
  const auto x = dt::constant<float>(xs, {16, 3}), y = dt::constant<float>(ys, {16, 1});
  const auto run = [&](bool eagerly, const fs::path& log_dir) {
    nn::clear_session();
    nn::Sequential model({nn::Dense(4, {.input_dim = 3, .activation = nn::Activation::relu}), nn::Dense(1)});
    model.compile(nn::Loss("mse"), nn::optimizers::SGD{.learning_rate = 0.05}, {.run_eagerly = eagerly});
    const auto history = model.fit(x, y,
                                   {.epochs = 2,
                                    .batch_size = 4,
                                    .verbose = 0,
                                    .shuffle = false,
                                    .validation_data = {dt::slice(x, {0, 0}, {8, 3}), dt::slice(y, {0, 0}, {8, 1})},
                                    .callbacks = {nn::callbacks::TensorBoard{
                                        .log_dir = log_dir.string(), .histogram_freq = 1, .update_freq = 2}}});
    return history;
  };
  TempFolder dir;
  const auto history = run(false, dir.path);
  const auto train = event_file(dir.path / "train"), validation = event_file(dir.path / "validation");
  // Keras's tags and steps (less its "keras" model-config summary, which needs to_json).
  auto ours = tags_and_steps("train", train);
  const auto more = tags_and_steps("validation", validation);
  ours.insert(ours.end(), more.begin(), more.end());
  std::vector<std::string> keras;
  for (const auto& line : lines_of(kReference / "keras_tags.txt"))
    if (line.rfind("train keras ", 0) != 0 && line.find(" graph ") == std::string::npos) keras.push_back(line);
  BOOST_TEST(ours == keras, boost::test_tools::per_element());
  // The values are fit's.
  std::vector<double> epoch_loss, val_loss;
  bool graph = false;
  for (const auto& event : summary::read_events(train)) {
    for (const auto& value : event.values)
      if (value.tag == "epoch_loss") epoch_loss.push_back(value.values.at(0));
    if (event.has_graph) {
      graph = true;
      BOOST_TEST(event.graph.size() > 10u);
      for (const auto& node : event.graph) BOOST_TEST(node.device == "/job:localhost/replica:0/task:0/device:CPU:0");
      BOOST_TEST(std::any_of(event.graph.begin(), event.graph.end(),
                             [](const auto& n) { return n.op == "MatMul" && n.inputs.size() == 2u; }));
    }
  }
  for (const auto& event : summary::read_events(validation))
    for (const auto& value : event.values)
      if (value.tag == "epoch_loss") val_loss.push_back(value.values.at(0));
  BOOST_TEST(graph);
  BOOST_TEST_REQUIRE(epoch_loss.size() == 2u);
  BOOST_TEST_REQUIRE(val_loss.size() == 2u);
  for (std::size_t e = 0; e < 2; ++e) {
    BOOST_TEST(epoch_loss[e] == static_cast<double>(static_cast<float>(history.loss[e])));
    BOOST_TEST(val_loss[e] == static_cast<double>(static_cast<float>(history.metrics.at("val_loss")[e])));
  }
  // Eagerly there is no traced step, so no graph (as Keras writes none for an eager train_function).
  TempFolder eager_dir;
  (void)run(true, eager_dir.path);
  for (const auto& event : summary::read_events(event_file(eager_dir.path / "train"))) BOOST_TEST(!event.has_graph);
  DEVTENSOR_CHECK_THROW_WITH(nn::callbacks::TensorBoard{.update_freq = "sometimes"}, dt::InvalidArgumentError,
                             "Unrecognized update_freq: sometimes");
  DEVTENSOR_CHECK_THROW_WITH(nn::callbacks::TensorBoard{.update_freq = 0}, dt::InvalidArgumentError, "positive");
}

BOOST_AUTO_TEST_SUITE_END()
