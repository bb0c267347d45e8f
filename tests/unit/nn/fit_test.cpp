// Sequential compile / fit / evaluate / predict: training works, history, progress output in
// every mode, and misuse.
#include <boost/test/unit_test.hpp>

#include <algorithm>
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
struct NnFixture : dt::test::FreshContext {
  NnFixture() { nn::clear_session(); }
};
Dataset seeds_dataset() {
  return Dataset::from_tensors(dt::constant<float>({1}), dt::constant<float>({1})).repeat(100).batch(10);
}
nn::Sequential seeds_model(std::uint64_t seed = 1) {
  nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::GlorotUniform{.seed = seed}})});
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

BOOST_FIXTURE_TEST_SUITE(fit, NnFixture)

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
  BOOST_TEST(w[0] > 1.0f);  // heading for 2
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
    for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;) received.append(buffer, static_cast<std::size_t>(n));
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
  BOOST_TEST(std::regex_search(text, std::regex(R"(\r10/10 \[={30}\] - \d+s \d+(us|ms|s)/step - loss: \S+ *\nEpoch 2/2\n\r 1/10)")),
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
  BOOST_TEST(std::regex_match(two.str(), std::regex(R"(Epoch 1/1\n10/10 - \d+s - loss: \S+ - \d+ms/epoch - \d+(us|ms|s)/step\n)")),
             "output was: " << two.str());
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
  DEVTENSOR_CHECK_THROW_WITH((void)model.evaluate(forever, {.verbose = 0}), dt::InvalidArgumentError, "repeats forever");
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
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(dt::zeros<float>(dt::Shape({10, 1})), dt::zeros<float>(dt::Shape({9, 1})), {.verbose = 0}),
                             dt::InvalidArgumentError, "Data cardinality is ambiguous:\n  x sizes: 10\n  y sizes: 9");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(dt::zeros<float>(dt::Shape({10, 3})), dt::zeros<float>(dt::Shape({10, 1})), {.verbose = 0}),
                             dt::InvalidArgumentError, "expected axis -1 of input shape to have value 1, but received input with shape (10, 3)");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(dt::zeros<float>(dt::Shape({10, 1})), dt::zeros<float>(dt::Shape({10, 2})), {.verbose = 0}),
                             dt::InvalidArgumentError, "incompatible shapes");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(seeds_dataset(), {.epochs = -1}), dt::InvalidArgumentError, "epochs must be >= 0");
  DEVTENSOR_CHECK_THROW_WITH((void)model.fit(dt::zeros<float>(dt::Shape({4, 1})), dt::zeros<float>(dt::Shape({4, 1})), {.batch_size = 0}),
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
  nn::Sequential model({nn::Dense(8, {.input_dim = 1, .activation = nn::Activation::relu,
                                      .kernel_initializer = nn::initializers::GlorotUniform{.seed = 3}}),
                        nn::Dense(1, {.kernel_initializer = nn::initializers::GlorotUniform{.seed = 4}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{.learning_rate = 0.05}, {.run_eagerly = run_eagerly});
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
  BOOST_TEST(std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("Executing op MatMul"); }));
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
    nn::Sequential model({nn::Dense(8, {.input_dim = 1, .activation = nn::Activation::relu,
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
    return std::count_if(recorder.copies.begin() + static_cast<std::ptrdiff_t>(from), recorder.copies.end(),
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
    std::vector<nn::Layer> layers{nn::Dense(4, {.input_dim = 5, .activation = nn::Activation::relu,
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

