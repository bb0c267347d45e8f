// Keras 3 weights files: TensorFlow 2.21's files load and predict TensorFlow's outputs; devtensor's
// files have Keras's layout (names, shapes, values: TensorFlow loads them, checked with
// tests/reference/weights.py); bad files and mismatched models raise typed errors and load
// nothing. The fixtures and the expected predictions come from tests/reference/weights.py.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "devtensor/devtensor.hpp"
#include "devtensor/hdf5/weights.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;
namespace fs = std::filesystem;

namespace {
const fs::path kFixtures = DEVTENSOR_KERAS_WEIGHTS_DIR;

struct WeightsFixture : dt::test::FreshContext {
  fs::path dir = fs::temp_directory_path() / ("devtensor_weights_" + std::to_string(::getpid()));
  WeightsFixture() {
    nn::clear_session();
    fs::create_directories(dir);
  }
  ~WeightsFixture() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

/// tests/reference/weights.py's branches model: x(4) -> hidden Dense(5, relu) -> Dropout ->
/// Concatenate with x -> Dense(3, softmax).
nn::Model branches(int hidden_units = 5) {
  const auto x = nn::Input({4}, {.name = "x"});
  const auto hidden = nn::Dense(hidden_units, {.activation = nn::Activation::relu, .name = "hidden"})(x);
  const auto merged = nn::Concatenate()({nn::Dropout(0.5, {.seed = 3})(hidden), x});
  return nn::Model(x, nn::Dense(3, {.activation = nn::Activation::softmax})(merged), {.name = "branches"});
}

nn::Sequential sequential() {
  return nn::Sequential({nn::Dense(3, {.input_dim = 2, .activation = nn::Activation::tanh}), nn::Dense(1)}, "seq");
}

std::vector<std::vector<float>> values_of(const nn::Model& model) {
  std::vector<std::vector<float>> out;
  for (const auto& v : model.variables()) out.push_back(v.value().to_vector());
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST(got[i] == want[i], boost::test_tools::tolerance(tol));
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(weights, WeightsFixture)

BOOST_AUTO_TEST_CASE(tensorflows_files_load_and_predict_tensorflows_outputs) {
  auto model = branches();
  model.load_weights((kFixtures / "branches.weights.h5").string());
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3}, {2, 4});
  check_close(model.predict(x).to_vector(),
              {0.35641035437583923, 0.34307861328125, 0.30051112174987793, 0.2598533034324646, 0.3248823881149292,
               0.4152643382549286},
              1e-6);
  auto seq = sequential();
  seq.load_weights((kFixtures / "sequential.weights.h5").string());
  check_close(seq.predict(dt::constant<float>({1, -2, 0.5f, 0.25f, 0, 0}, {3, 2})).to_vector(),
              {-0.007567934226244688, -0.00392807275056839, -0.005058523267507553}, 1e-5);
}

BOOST_AUTO_TEST_CASE(saved_files_have_keras_layout_and_load_back) {
  auto model = branches();
  const fs::path file = dir / "branches.weights.h5";
  model.save_weights(file.string());
  // Keras's layout: layers by class name and position, the user's names as attributes.
  const auto root = dt::hdf5::open_file(file);
  BOOST_TEST(root.group("layers").children() ==
                 std::vector<std::string>({"concatenate", "dense", "dense_1", "dropout", "input_layer"}),
             boost::test_tools::per_element());
  BOOST_TEST(root.group("vars").string_attribute("name") == "branches");
  const auto hidden = root.group("layers").group("dense").group("vars");
  BOOST_TEST(hidden.string_attribute("name") == "hidden");
  BOOST_TEST(root.group("layers").group("input_layer").group("vars").string_attribute("name") == "x");
  BOOST_TEST(root.group("layers").group("dropout").group("vars").children().empty());
  const auto [shape, values] = hidden.read_floats("0");
  BOOST_TEST(shape == std::vector<std::int64_t>({4, 5}), boost::test_tools::per_element());
  BOOST_TEST(values == model.variables()[0].value().to_vector(), boost::test_tools::per_element());
  BOOST_TEST(hidden.read_floats("1").first == std::vector<std::int64_t>({5}), boost::test_tools::per_element());
  BOOST_TEST(
      root.group("layers").group("dense_1").group("vars").read_floats("0").first == std::vector<std::int64_t>({9, 3}),
      boost::test_tools::per_element());
  // A fresh model (other initial values) loads them exactly.
  auto other = branches();
  BOOST_TEST(values_of(other) != values_of(model));
  other.load_weights(file.string());
  BOOST_TEST(values_of(other) == values_of(model));
  // TensorFlow's files round-trip through devtensor unchanged.
  auto from_tf = branches();
  from_tf.load_weights((kFixtures / "branches.weights.h5").string());
  from_tf.save_weights((dir / "again.weights.h5").string());
  auto reread = branches();
  reread.load_weights((dir / "again.weights.h5").string());
  BOOST_TEST(values_of(reread) == values_of(from_tf));
}

BOOST_AUTO_TEST_CASE(weights_reach_every_replica_of_a_mirrored_model) {
  dt::config::set_logical_device_configuration(dt::config::list_physical_devices("CPU")[0], {{}, {}});
  dt::distribute::MirroredStrategy strategy(std::vector<std::string>{"/cpu:0", "/cpu:1"});
  std::optional<nn::Model> model;
  {
    auto guard = strategy.scope();
    model.emplace(branches());
  }
  model->load_weights((kFixtures / "branches.weights.h5").string());
  const auto kernel = model->trainable_variables()[0];
  BOOST_TEST_REQUIRE(kernel.num_components() == 2u);
  BOOST_TEST(kernel.component(1).to_vector() == kernel.component(0).to_vector(), boost::test_tools::per_element());
  auto plain = branches();
  plain.load_weights((kFixtures / "branches.weights.h5").string());
  BOOST_TEST(kernel.component(1).to_vector() == plain.trainable_variables()[0].value().to_vector(),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_checkpoint_resumes_training_bit_for_bit) {
  // Weights, the optimizer's step count and slots in one file (Keras's /optimizer group): a run
  // resumed from it equals the uninterrupted run exactly, Dropout's masks included (they follow
  // the step count).
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1,  0,    3, 1,     1, -2, 0.5f, 0, 0, 1, -1,
                                      2,    0,  1, 1,     -1,    -1, 0.5f, 2, 0.25f, 3, -2, 1,    1, 2, 3, 4},
                                     {8, 4});
  const auto y = dt::constant<float>({1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0}, {8, 3});
  for (const bool adam : {true, false}) {
    const auto make = [adam] {
      const auto in = nn::Input({4});
      const auto hidden = nn::Dense(6, {.activation = nn::Activation::relu,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 1}})(in);
      nn::Model model(in, nn::Dense(3, {.activation = nn::Activation::softmax,
                                        .kernel_initializer = nn::initializers::GlorotUniform{.seed = 2}})(
                              nn::Dropout(0.25, {.seed = 7})(hidden)));
      if (adam)
        model.compile("categorical_crossentropy", nn::optimizers::Adam{.learning_rate = 0.05, .amsgrad = true});
      else
        model.compile("categorical_crossentropy", nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.9});
      return model;
    };
    const dt::nn::FitOptions two_epochs{.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false};
    auto uninterrupted = make();
    auto first_half = make();
    (void)first_half.fit(x, y, two_epochs);
    const auto whole = uninterrupted.fit(x, y, {.epochs = 4, .batch_size = 4, .verbose = 0, .shuffle = false});
    const fs::path checkpoint = dir / "checkpoint.weights.h5";
    first_half.save_weights(checkpoint.string());
    auto resumed = make();
    resumed.load_weights(checkpoint.string());
    BOOST_TEST(resumed.optimizer().iterations() == 4);
    const auto second_half = resumed.fit(x, y, two_epochs);
    BOOST_TEST(second_half.loss[0] == whole.loss[2]);
    BOOST_TEST(second_half.loss[1] == whole.loss[3]);
    BOOST_TEST(values_of(resumed) == values_of(uninterrupted));
    // Keras's layout of the optimizer's state.
    const auto vars = dt::hdf5::open_file(checkpoint).group("optimizer").group("vars");
    BOOST_TEST(vars.string_attribute("name") == (adam ? "adam" : "sgd"));
    BOOST_TEST(vars.read_int64("0") == 4);
    BOOST_TEST(vars.read_floats("1").second == std::vector<float>({adam ? 0.05f : 0.1f}),
               boost::test_tools::per_element());
    BOOST_TEST(vars.children().size() == (adam ? 2u + 3u * 4u : 2u + 4u));  // m, v and v_hat; or the velocities
    BOOST_TEST(vars.read_floats("2").first == std::vector<std::int64_t>({4, 6}), boost::test_tools::per_element());
    // A model compiled with another optimizer refuses the state, and changes nothing.
    auto other = make();
    other.compile("categorical_crossentropy", nn::optimizers::SGD{.learning_rate = 0.1});
    const auto before = values_of(other);
    DEVTENSOR_CHECK_THROW_WITH(other.load_weights(checkpoint.string()), dt::InvalidArgumentError,
                               "/optimizer/vars holds");
    BOOST_TEST(values_of(other) == before);
    // An uncompiled model takes the weights and skips the optimizer's state, as Keras.
    const auto in = nn::Input({4});
    nn::Model bare(in, nn::Dense(3)(nn::Dropout(0.25)(nn::Dense(6)(in))));
    bare.load_weights(checkpoint.string());
    BOOST_TEST(values_of(bare) == values_of(first_half));
  }
}

BOOST_AUTO_TEST_CASE(mismatched_models_and_bad_files_load_nothing) {
  const std::string tf_file = (kFixtures / "branches.weights.h5").string();
  auto wider = branches(6);
  const auto before = values_of(wider);
  DEVTENSOR_CHECK_THROW_WITH(wider.load_weights(tf_file), dt::InvalidArgumentError,
                             "/layers/dense/vars/0 has shape (4, 5), but variable hidden/kernel:0 has shape (4, 6)");
  BOOST_TEST(values_of(wider) == before);  // all or nothing
  // A layer the file lacks, a layer the model lacks.
  auto seq = sequential();
  DEVTENSOR_CHECK_THROW_WITH(seq.load_weights(tf_file), dt::InvalidArgumentError,
                             "it has a layer /layers/concatenate that the model does not have");
  const auto x = nn::Input({4}, {.name = "x"});
  nn::Model smaller(x, nn::Dense(5, {.name = "hidden"})(x));
  DEVTENSOR_CHECK_THROW_WITH(smaller.load_weights(tf_file), dt::InvalidArgumentError, "does not match model");
  // Not HDF5, truncated, missing, a float64 variable.
  const fs::path text = dir / "not.weights.h5";
  std::ofstream(text) << "not an HDF5 file";
  auto model = branches();
  const auto unchanged = values_of(model);
  DEVTENSOR_CHECK_THROW_WITH(model.load_weights(text.string()), dt::InvalidArgumentError, "is not an HDF5 file");
  const fs::path truncated = dir / "truncated.weights.h5";
  fs::copy_file(tf_file, truncated);
  fs::resize_file(truncated, fs::file_size(truncated) / 2);
  BOOST_CHECK_THROW(model.load_weights(truncated.string()), dt::InvalidArgumentError);
  DEVTENSOR_CHECK_THROW_WITH(model.load_weights((dir / "missing.weights.h5").string()), dt::NotFoundError,
                             "no such file");
  {
    const fs::path doubles = dir / "doubles.weights.h5";
    model.save_weights(doubles.string());
    const hid_t file = H5Fopen(doubles.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    BOOST_TEST_REQUIRE(file >= 0);
    H5Ldelete(file, "/layers/dense/vars/1", H5P_DEFAULT);
    const hsize_t dims[1] = {5};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t data =
        H5Dcreate2(file, "/layers/dense/vars/1", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(data);
    H5Sclose(space);
    H5Fclose(file);
    DEVTENSOR_CHECK_THROW_WITH(model.load_weights(doubles.string()), dt::InvalidArgumentError,
                               "dataset /layers/dense/vars/1 is not float32 (float64)");
  }
  BOOST_TEST(values_of(model) == unchanged);
  DEVTENSOR_CHECK_THROW_WITH(model.save_weights((dir / "no" / "such" / "folder.weights.h5").string()),
                             dt::InvalidArgumentError, "cannot create the HDF5 file");
  nn::Sequential unbuilt({nn::Dense(1)});
  DEVTENSOR_CHECK_THROW_WITH(unbuilt.save_weights((dir / "u.weights.h5").string()), dt::FailedPreconditionError,
                             "has not been built yet");
  DEVTENSOR_CHECK_THROW_WITH(unbuilt.load_weights(tf_file), dt::FailedPreconditionError, "has not been built yet");
}

BOOST_AUTO_TEST_CASE(convolutional_models_read_and_write_keras_files) {
  // tests/reference/conv_weights.py's model, its Keras file, and TensorFlow's predictions with it.
  const auto conv_model = [] {
    return nn::Sequential(
        {nn::Conv2D(3, 2, {.activation = nn::Activation::relu, .input_shape = nn::PartialShape{5, 5, 2}}),
         nn::MaxPooling2D(2, {.strides = 1, .padding = "same"}), nn::Conv2D(2, {2, 1}, {.strides = 2}),
         nn::GlobalAveragePooling2D(), nn::Dense(2)},
        "conv");
  };
  std::vector<float> input(2 * 5 * 5 * 2);
  for (std::size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
  const auto x = dt::constant<float>(input, {2, 5, 5, 2});
  auto model = conv_model();
  model.load_weights((kFixtures / "conv.weights.h5").string());
  const std::vector<double> tensorflow{-0.017696991562843323, 0.004135080613195896, -0.01736908219754696,
                                       0.004301475826650858};
  check_close(model.predict(x).to_vector(), tensorflow, 1e-5);
  // Written back: Keras's keys (conv2d, max_pooling2d, ...), and a fresh model reads them.
  const fs::path file = dir / "conv.weights.h5";
  model.save_weights(file.string());
  const auto root = dt::hdf5::open_file(file);
  BOOST_TEST(root.group("layers").children() ==
                 std::vector<std::string>({"conv2d", "conv2d_1", "dense", "global_average_pooling2d", "max_pooling2d"}),
             boost::test_tools::per_element());
  BOOST_TEST(root.group("layers").group("conv2d").group("vars").read_floats("0").first ==
                 std::vector<std::int64_t>({2, 2, 2, 3}),
             boost::test_tools::per_element());
  auto fresh = conv_model();
  fresh.load_weights(file.string());
  check_close(fresh.predict(x).to_vector(), tensorflow, 1e-5);
}

BOOST_AUTO_TEST_CASE(batch_normalization_reads_and_writes_keras_files) {
  // tests/reference/batch_norm.py's trained model (moving statistics away from their initial
  // values), its Keras file, and TensorFlow's predictions on the first 4 digits.
  const auto bn_model = [] {
    return nn::Sequential({nn::Conv2D(4, 3, {.input_shape = nn::PartialShape{8, 8, 1}}), nn::BatchNormalization(),
                           nn::ActivationLayer(nn::Activation::relu), nn::AveragePooling2D(), nn::Flatten(),
                           nn::Dense(10)});
  };
  std::ifstream in(DEVTENSOR_DIGITS_CSV);
  BOOST_TEST_REQUIRE(static_cast<bool>(in));
  std::vector<float> pixels;
  std::string line;
  for (int row = 0; row < 4 && std::getline(in, line); ++row) {
    std::istringstream fields(line);
    std::string field;
    for (int column = 0; column < 64 && std::getline(fields, field, ','); ++column)
      pixels.push_back(std::stof(field) / 16.0f);
  }
  const auto x = dt::constant<float>(pixels, {4, 8, 8, 1});
  const std::vector<double> tensorflow{
      0.196142882,   -0.0752608404, 0.0521874279,  -0.0495807044, -0.00300946273, 0.0114998799, -0.0175711066,
      -0.0159076899, 0.0745779499,  -0.0522920936, 0.0610028952,  0.042595122,    0.0281171575, -0.0193183795,
      0.0846364051,  -0.0394378528, 0.0855379701,  -0.114829518,  0.0173422918,   0.0388229936, 0.14721863,
      -0.0368872955, 0.153988838,   -0.105072498,  -0.0760108232, -0.0326382443,  0.0637126639, -0.0928008482,
      0.134972826,   0.0225783531,  0.0842881575,  0.00807384402, 0.0372339264,   0.0410882384, 0.0209460147,
      0.0188591853,  0.0174777359,  -0.0711824,    0.0602103546,  0.0483163223};
  auto model = bn_model();
  model.load_weights((kFixtures / "batch_norm.weights.h5").string());
  check_close(model.predict(x).to_vector(), tensorflow, 1e-5);
  const fs::path file = dir / "batch_norm.weights.h5";
  model.save_weights(file.string());
  const auto root = dt::hdf5::open_file(file);
  const auto bn = root.group("layers").group("batch_normalization").group("vars");
  BOOST_TEST(bn.children() == std::vector<std::string>({"0", "1", "2", "3"}), boost::test_tools::per_element());
  // gamma, beta, moving_mean, moving_variance: Keras's order.
  const auto moving_variance = bn.read_floats("3").second;
  BOOST_TEST_REQUIRE(moving_variance.size() == 4u);
  BOOST_TEST(std::abs(moving_variance[0] - 0.788631499f) <= 2e-5f);
  auto fresh = bn_model();
  fresh.load_weights(file.string());
  check_close(fresh.predict(x).to_vector(), tensorflow, 1e-5);
}

BOOST_AUTO_TEST_CASE(depthwise_convolution_reads_and_writes_keras_files) {
  // tests/reference/depthwise.py's model, its Keras file, and TensorFlow's predictions with it.
  const auto depthwise_model = [] {
    return nn::Sequential({nn::DepthwiseConv2D(3, {.padding = "same",
                                                   .depth_multiplier = 2,
                                                   .activation = nn::Activation::relu,
                                                   .input_shape = nn::PartialShape{6, 6, 2}}),
                           nn::GlobalAveragePooling2D(), nn::Dense(3)});
  };
  std::vector<float> input(2 * 6 * 6 * 2);
  for (std::size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
  const auto x = dt::constant<float>(input, {2, 6, 6, 2});
  const std::vector<double> tensorflow{0.0275085382, -0.0318845473, 0.0642696172,
                                       0.0276044142, -0.0309886076, 0.064798519};
  auto model = depthwise_model();
  std::ostringstream summary;
  model.summary(summary);
  BOOST_TEST(summary.str().find("│ depthwise_conv2d                │ (None, 6, 6, 4)        │            40 │\n"
                                "│ (DepthwiseConv2D)               │") != std::string::npos,
             summary.str());
  model.load_weights((kFixtures / "depthwise.weights.h5").string());
  check_close(model.predict(x).to_vector(), tensorflow, 1e-5);
  const fs::path file = dir / "depthwise.weights.h5";
  model.save_weights(file.string());
  const auto root = dt::hdf5::open_file(file);
  BOOST_TEST(root.group("layers").group("depthwise_conv2d").group("vars").read_floats("0").first ==
                 std::vector<std::int64_t>({3, 3, 2, 2}),
             boost::test_tools::per_element());
  auto fresh = depthwise_model();
  fresh.load_weights(file.string());
  check_close(fresh.predict(x).to_vector(), tensorflow, 1e-5);
  DEVTENSOR_CHECK_THROW_WITH(
      nn::DepthwiseConv2D(3, {.depth_multiplier = 0}), dt::InvalidArgumentError,
      "Invalid value for argument `depth_multiplier`. Expected a strictly positive value. Received "
      "depth_multiplier=0.");
}

BOOST_AUTO_TEST_SUITE_END()

// ModelCheckpoint (nn/callbacks.hpp) against Keras 3.15's messages and files (tests/reference/callbacks.py):
// y = 2x + 1 on 8 points, batches of 4, no shuffling, a Dense(1) from zeros and SGD.
BOOST_FIXTURE_TEST_SUITE(checkpoints, WeightsFixture)

namespace {
namespace cb = nn::callbacks;
nn::Sequential zeros_model(double learning_rate) {
  nn::clear_session();
  nn::Sequential model({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = learning_rate});
  return model;
}
nn::History fit_with(nn::Sequential& model, std::ostringstream& out, std::vector<nn::Callback> callbacks, int epochs,
                     bool validation = false) {
  std::vector<float> x, y;
  for (int i = 0; i < 8; ++i) {
    x.push_back(static_cast<float>(-1.0 + 2.0 * i / 7.0));
    y.push_back(2 * x.back() + 1);
  }
  nn::ValidationData two_points;
  if (validation)
    two_points = {dt::constant<float>({0.3f, -0.6f}, {2, 1}),
                  dt::constant<float>({2 * 0.3f + 1, 2 * -0.6f + 1}, {2, 1})};
  return model.fit(dt::constant<float>(x, {8, 1}), dt::constant<float>(y, {8, 1}),
                   {.epochs = epochs,
                    .batch_size = 4,
                    .verbose = 0,
                    .shuffle = false,
                    .out = &out,
                    .validation_data = std::move(two_points),
                    .callbacks = std::move(callbacks)});
}
std::vector<std::string> files_in(const fs::path& folder) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(folder)) out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

BOOST_AUTO_TEST_CASE(a_loss_scale_optimizers_state_comes_back_and_a_bad_scale_changes_nothing) {
  // A mixed_float16 model's LossScaleOptimizer (compile wraps the SGD): the weights file keeps its
  // scale and step counter beside the SGD's state, as Keras 3's layout; a file whose scale is not
  // a positive number is refused before anything changes.
  nn::mixed_precision::set_global_policy("mixed_float16");
  const auto make = [] {
    nn::Sequential model({nn::Dense(2, {.input_dim = 3}), nn::Dense(1, {.dtype = "float32"})});
    model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{.learning_rate = 0.05, .momentum = 0.9});
    return model;
  };
  auto model = make();
  const auto x = dt::random_normal<float>(dt::Shape{8, 3}, {.seed = 5});
  const auto y = dt::random_normal<float>(dt::Shape{8, 1}, {.seed = 6});
  (void)model.fit(x, y, {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
  const auto* lso = model.optimizer().target<nn::optimizers::LossScaleOptimizer>();
  BOOST_TEST_REQUIRE(lso);
  lso->restore_scale(4096, 3);  // a state the fit did not reach by itself
  const auto path = (dir / "scaled.weights.h5").string();
  model.save_weights(path);
  auto copy = make();
  (void)copy(x);
  copy.load_weights(path);
  const auto* loaded = copy.optimizer().target<nn::optimizers::LossScaleOptimizer>();
  BOOST_TEST(loaded->dynamic_scale() == 4096.0);
  BOOST_TEST(loaded->step_counter() == 3);
  BOOST_TEST(model.optimizer().iterations() > 0);
  BOOST_TEST(copy.optimizer().iterations() == model.optimizer().iterations());
  BOOST_TEST(values_of(copy) == values_of(model));
  // The same file with the scale 0, written with the library's own writers.
  const auto bad = (dir / "bad_scale.weights.h5").string();
  {
    dt::hdf5::Group root = dt::hdf5::create_file(bad);
    nn::weights_io::write_layers(root, model.tracked_layers());
    root.create_group("vars").set_string_attribute("name", model.name());
    dt::hdf5::Group group = root.create_group("optimizer");
    dt::hdf5::Group inner = group.create_group("inner_optimizer").create_group("vars");
    nn::weights_io::write_optimizer_vars(inner, lso->inner_optimizer, model.trainable_variables());
    dt::hdf5::Group vars = group.create_group("vars");
    vars.write_int64("0", 0);
    vars.write_floats("1", {}, {0.0f});
    vars.write_int64("2", 1);
    vars.write_floats("3", {}, {0.0f});
    nn::weights_io::write_optimizer_vars(vars, lso->inner_optimizer, model.trainable_variables(), 4);
  }
  auto fresh = make();
  (void)fresh(x);
  const auto before = values_of(fresh);
  DEVTENSOR_CHECK_THROW_WITH(fresh.load_weights(bad), dt::InvalidArgumentError,
                             "the loss scale's step counter 1 and scale 0.000000) are not a count and a positive");
  BOOST_TEST(values_of(fresh) == before);  // nothing loaded
  BOOST_TEST(fresh.optimizer().target<nn::optimizers::LossScaleOptimizer>()->dynamic_scale() == 32768.0);
  DEVTENSOR_CHECK_THROW_WITH(lso->restore_scale(-1, 0), dt::InvalidArgumentError,
                             "a saved loss scale must be a positive finite float32");
  BOOST_TEST(lso->dynamic_scale() == 4096.0);
  // Before its first step a LossScaleOptimizer has no counter or scale to save (Keras's unbuilt
  // layout: its iterations and rate, then the SGD's), and loading such a file keeps the initial
  // scale rather than reading the SGD's learning rate as one.
  auto untrained = make();
  (void)untrained(x);
  const auto unbuilt = (dir / "unbuilt.weights.h5").string();
  untrained.save_weights(unbuilt);
  BOOST_TEST(dt::hdf5::open_file(unbuilt).group("optimizer").group("vars").children().size() == 4u);
  auto reloaded = make();
  (void)reloaded(x);
  reloaded.load_weights(unbuilt);
  const auto* initial = reloaded.optimizer().target<nn::optimizers::LossScaleOptimizer>();
  BOOST_TEST(initial->dynamic_scale() == 32768.0);
  BOOST_TEST(initial->step_counter() == 0);
}

BOOST_AUTO_TEST_CASE(every_epoch_and_every_n_batches_as_keras_names_them) {
  auto model = zeros_model(0.05);
  std::ostringstream out;
  const fs::path folder = dir / "ck";  // made by the callback
  cb::ModelCheckpoint every{.filepath = (folder / "e{epoch:02d}-{loss:.3f}.weights.h5").string(),
                            .monitor = "loss",
                            .verbose = 1,
                            .save_weights_only = true};
  (void)fit_with(model, out, {every}, 3);
  BOOST_TEST(files_in(folder) ==
                 std::vector<std::string>({"e01-2.704.weights.h5", "e02-2.079.weights.h5", "e03-1.620.weights.h5"}),
             boost::test_tools::per_element());  // and no temporary file left
  std::string expected;
  for (const auto* name :
       {"1: saving model to ck/e01-2.704", "2: saving model to ck/e02-2.079", "3: saving model to ck/e03-1.620"}) {
    const std::string text(name);
    const std::string epoch = text.substr(0, 1), path = (dir / text.substr(text.find("ck/"))).string() + ".weights.h5";
    expected += "\nEpoch " + epoch + ": saving model to " + path + "\n\nEpoch " + epoch +
                ": finished saving model to " + path + "\n";
  }
  BOOST_TEST(out.str() == expected);
  BOOST_TEST(every.files_written().size() == 3u);
  // Epoch 2's file holds epoch 2's weights (Keras's after 2 epochs: 0.32779, 0.36042).
  auto reloaded = zeros_model(0.05);
  reloaded.load_weights((folder / "e02-2.079.weights.h5").string());
  check_close(reloaded.variables()[0].to_vector(), {0.3277900218963623}, 1e-5);
  check_close(reloaded.variables()[1].to_vector(), {0.3604198098182678}, 1e-5);
  BOOST_TEST(reloaded.optimizer().iterations() == 4);

  // save_freq = 3 batches over 2 epochs of 2: once, at epoch 2's first batch (Keras: b2-1).
  model = zeros_model(0.05);
  std::ostringstream batches;
  (void)fit_with(model, batches,
                 {cb::ModelCheckpoint{.filepath = (dir / "b{epoch}-{batch}.weights.h5").string(),
                                      .verbose = 1,
                                      .save_weights_only = true,
                                      .save_freq = 3}},
                 2);
  const std::string b21 = (dir / "b2-1.weights.h5").string();
  BOOST_TEST(batches.str() ==
             "\nEpoch 2: saving model to " + b21 + "\n\nEpoch 2: finished saving model to " + b21 + "\n");
  BOOST_TEST(fs::exists(b21));
}

BOOST_AUTO_TEST_CASE(save_best_only_keeps_the_best_epoch) {
  auto model = zeros_model(0.6);
  std::ostringstream out;
  const std::string best = (dir / "best.weights.h5").string();
  cb::ModelCheckpoint checkpoint{.filepath = best, .verbose = 1, .save_best_only = true, .save_weights_only = true};
  (void)fit_with(model, out, {checkpoint}, 5, true);
  const auto saved = [&](int epoch, const char* from, const char* to) {
    return "\nEpoch " + std::to_string(epoch) + ": val_loss improved from " + from + " to " + to +
           ", saving model to " + best + "\n\nEpoch " + std::to_string(epoch) + ": finished saving model to " + best +
           "\n";
  };
  BOOST_TEST(out.str() == saved(1, "None", "1.87925") + saved(2, "1.87925", "0.55426") +
                              saved(3, "0.55426", "0.03729") + "\nEpoch 4: val_loss did not improve from 0.03729\n" +
                              saved(5, "0.03729", "0.02253"));
  BOOST_TEST(*checkpoint.best() == 0.022526845335960388, boost::test_tools::tolerance(1e-5));
  auto reloaded = zeros_model(0.6);
  reloaded.load_weights(best);
  check_close(reloaded.variables()[0].to_vector(), {2.0867128372192383}, 1e-5);
  check_close(reloaded.variables()[1].to_vector(), {0.8680785894393921}, 1e-5);
  // Without the monitored value: Keras's warning, and the file is saved anyway.
  model = zeros_model(0.6);
  std::ostringstream quiet;
  const std::string unmonitored = (dir / "m.weights.h5").string();
  (void)fit_with(model, quiet,
                 {cb::ModelCheckpoint{.filepath = unmonitored, .save_best_only = true, .save_weights_only = true}}, 1);
  BOOST_TEST(log.count("Can save best model only with val_loss available.") == 1u);
  BOOST_TEST(fs::exists(unmonitored));
  // A folder where the file should be: Keras's error, and nothing left behind.
  fs::create_directories(dir / "taken.weights.h5");
  DEVTENSOR_CHECK_THROW_WITH(
      fit_with(model, quiet,
               {cb::ModelCheckpoint{.filepath = (dir / "taken.weights.h5").string(), .save_weights_only = true}}, 1),
      dt::InvalidArgumentError, "Please specify a non-directory filepath for ModelCheckpoint");
  BOOST_TEST(files_in(dir) == std::vector<std::string>({"best.weights.h5", "m.weights.h5", "taken.weights.h5"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_learning_rate_is_saved_as_keras_saves_it) {
  // A number: /optimizer/vars/1, restored by load_weights (a ReduceLROnPlateau's reduction
  // resumes). A schedule: no variable (Keras keeps only "iteration"), the slots from "1".
  auto model = zeros_model(0.05);
  std::ostringstream out;
  (void)fit_with(model, out, {}, 1);
  model.optimizer().set_learning_rate(0.025);
  const std::string reduced = (dir / "reduced.weights.h5").string();
  model.save_weights(reduced);
  auto resumed = zeros_model(0.05);
  resumed.load_weights(reduced);
  BOOST_TEST(static_cast<float>(resumed.optimizer().learning_rate()) == 0.025f);

  nn::clear_session();
  const auto make = [] {
    nn::Sequential m({nn::Dense(1, {.input_dim = 1, .kernel_initializer = nn::initializers::Zeros{}})});
    m.compile(nn::losses::MeanSquaredError{},
              nn::optimizers::SGD{.learning_rate =
                                      nn::schedules::ExponentialDecay{
                                          .initial_learning_rate = 0.1, .decay_steps = 2, .decay_rate = 0.5},
                                  .momentum = 0.9});
    return m;
  };
  auto scheduled = make();
  (void)fit_with(scheduled, out, {}, 1);
  const std::string file = (dir / "scheduled.weights.h5").string();
  scheduled.save_weights(file);
  const auto vars = dt::hdf5::open_file(file).group("optimizer").group("vars");
  BOOST_TEST(vars.read_int64("0") == 2);
  BOOST_TEST(vars.children() == std::vector<std::string>({"0", "1", "2"}), boost::test_tools::per_element());
  BOOST_TEST(vars.read_floats("1").first == std::vector<std::int64_t>({1, 1}), boost::test_tools::per_element());
  auto again = make();
  again.load_weights(file);
  BOOST_TEST(again.optimizer().iterations() == 2);
  BOOST_TEST(again.optimizer().learning_rate() == 0.05, boost::test_tools::tolerance(1e-7));  // the schedule at step 2
  // A file with a learning rate does not fit an optimizer with a schedule, and changes nothing.
  DEVTENSOR_CHECK_THROW_WITH(again.load_weights(reduced), dt::InvalidArgumentError, "its learning rate is a schedule");
}

BOOST_AUTO_TEST_SUITE_END()

// BackupAndRestore (nn/backup_and_restore.hpp): a fit interrupted, then run again as a relaunched
// program would (the same seeded program: a fresh model and dataset), ends where the uninterrupted
// fit ends, bit for bit: weights, Adam's slots, Dropout's draws, the shuffled order of every epoch,
// and the global random sequence a callback draws from.
BOOST_FIXTURE_TEST_SUITE(backup_and_restore, WeightsFixture)

namespace {
namespace cb = nn::callbacks;
using checkpoints::files_in;
using checkpoints::fit_with;
using checkpoints::zeros_model;

/// Throws at an epoch's beginning (at_batch < 0) or before one of its batches, as a killed process stops.
struct Interrupt {
  int at_epoch = 0;
  std::int64_t at_batch = -1;
  int epoch = 0;
  void on_epoch_begin(int e, const nn::Logs&) {
    epoch = e;
    if (e == at_epoch && at_batch < 0) throw std::runtime_error("interrupted");
  }
  void on_train_batch_begin(std::int64_t batch, const nn::Logs&) {
    if (epoch == at_epoch && batch == at_batch) throw std::runtime_error("interrupted");
  }
};

struct Run {
  nn::History history;
  std::vector<std::vector<float>> weights;
  std::vector<float> draws;  // one number of the global sequence per epoch end
  dt::random::GlobalState rng;
};

/// The same program every time: 16 rows shuffled anew every epoch, Dropout, Adam, 4 epochs of 4
/// batches (with `repeat`: one endless pass, 4 steps per epoch).
Run train(const std::vector<nn::Callback>& extra, bool repeat = false) {
  nn::clear_session();
  nn::utils::set_random_seed(11);
  nn::Sequential model(
      {nn::Dense(8, {.input_dim = 3, .activation = nn::Activation::relu}), nn::Dropout(0.25), nn::Dense(1)});
  model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::Adam{.learning_rate = 0.01});
  std::vector<float> x, y;
  for (int i = 0; i < 16; ++i) {
    const float a = static_cast<float>(i % 5) / 5.0f, b = static_cast<float>(i % 3) / 3.0f;
    x.insert(x.end(), {a, b, a * b});
    y.push_back(a - 2 * b + 0.5f);
  }
  auto data = dt::data::Dataset<float, float>::from_tensor_slices(dt::constant<float>(x, {16, 3}),
                                                                  dt::constant<float>(y, {16, 1}))
                  .shuffle(16)
                  .batch(4);
  if (repeat) data = data.repeat();
  Run run;
  std::vector<nn::Callback> callbacks{cb::LambdaCallback{.on_epoch_end_fn = [&run](int, nn::Logs&) {
    run.draws.push_back(dt::random_uniform<float>(dt::Shape{1}).item());
  }}};
  callbacks.insert(callbacks.end(), extra.begin(), extra.end());
  run.history = model.fit(data, {.epochs = 4,
                                 .verbose = 0,
                                 .steps_per_epoch = repeat ? std::optional<std::int64_t>(4) : std::nullopt,
                                 .callbacks = callbacks});
  run.weights = values_of(model);
  run.rng = dt::random::global_state();
  return run;
}

void check_same_end(const Run& resumed, const Run& reference, std::size_t epochs_resumed, std::size_t exact_losses) {
  BOOST_TEST((resumed.weights == reference.weights));  // bit for bit
  BOOST_TEST((resumed.rng == reference.rng));
  BOOST_TEST_REQUIRE(resumed.history.loss.size() == epochs_resumed);
  for (std::size_t i = epochs_resumed - exact_losses; i < epochs_resumed; ++i)
    BOOST_TEST(resumed.history.loss[i] == reference.history.loss[4 - epochs_resumed + i]);
  BOOST_TEST(std::vector<float>(reference.draws.end() - static_cast<std::ptrdiff_t>(epochs_resumed),
                                reference.draws.end()) == resumed.draws);
}
}  // namespace

BOOST_AUTO_TEST_CASE(an_interrupted_fit_resumes_at_its_last_epoch_bit_for_bit) {
  const Run reference = train({});
  const std::string backup_dir = (dir / "backup").string();
  cb::BackupAndRestore backup{.backup_dir = backup_dir};
  BOOST_CHECK_THROW(train({backup, Interrupt{.at_epoch = 2}}), std::runtime_error);
  BOOST_TEST(backup.saves() == 2);
  BOOST_TEST(!backup.restored());
  const auto saved = cb::BackupAndRestore::read_metadata((dir / "backup" / "training_metadata.json").string());
  BOOST_TEST((saved.point == nn::ResumePoint{2, 0}));
  BOOST_TEST(
      files_in(dir / "backup") == std::vector<std::string>({"epoch-2-step-0.weights.h5", "training_metadata.json"}),
      boost::test_tools::per_element());  // epoch 1's weights gone, no temporary file left

  cb::BackupAndRestore relaunched{.backup_dir = backup_dir};
  const Run resumed = train({relaunched});
  BOOST_TEST((relaunched.restored() == nn::ResumePoint{2, 0}));
  check_same_end(resumed, reference, 2, 2);
  BOOST_TEST(resumed.history.epoch == std::vector<int>({2, 3}), boost::test_tools::per_element());
  BOOST_TEST(!fs::exists(backup_dir));  // deleted at the end (delete_checkpoint)

  // delete_checkpoint = false: the finished fit's backup stays (epoch 4), and a fit again has
  // nothing left to do.
  cb::BackupAndRestore kept{.backup_dir = backup_dir, .delete_checkpoint = false};
  const Run finished = train({kept});
  BOOST_TEST((finished.weights == reference.weights));
  BOOST_TEST(
      (cb::BackupAndRestore::read_metadata(backup_dir + "/training_metadata.json").point == nn::ResumePoint{4, 0}));
  const Run again = train({kept});
  BOOST_TEST(again.history.loss.empty());
  BOOST_TEST((again.weights == reference.weights));
}

BOOST_AUTO_TEST_CASE(a_backup_every_n_batches_resumes_at_its_batch) {
  for (const bool repeat : {false, true}) {
    BOOST_TEST_CONTEXT("one pass per epoch: " << !repeat) {
      const Run reference = train({}, repeat);
      const std::string backup_dir = (dir / "batches").string();
      // Every 3 batches of 4 per epoch: at epoch 0's third batch, then epoch 1's second.
      cb::BackupAndRestore backup{.backup_dir = backup_dir, .save_freq = 3};
      BOOST_CHECK_THROW(train({backup, Interrupt{.at_epoch = 1, .at_batch = 2}}, repeat), std::runtime_error);
      BOOST_TEST(
          (cb::BackupAndRestore::read_metadata(backup_dir + "/training_metadata.json").point == nn::ResumePoint{1, 2}));
      cb::BackupAndRestore relaunched{.backup_dir = backup_dir, .save_freq = 3};
      const Run resumed = train({relaunched}, repeat);
      BOOST_TEST((relaunched.restored() == nn::ResumePoint{1, 2}));
      // Epoch 1's loss covers its last 2 batches only; the epochs after it are the reference's.
      check_same_end(resumed, reference, 3, 2);
      BOOST_TEST(resumed.history.loss[0] != reference.history.loss[1]);
    }
  }
  // A save due at an epoch's last batch is made at the epoch's end: a resume starts a whole epoch.
  const std::string backup_dir = (dir / "last").string();
  cb::BackupAndRestore every_epoch_of_4{.backup_dir = backup_dir, .save_freq = 4};
  BOOST_CHECK_THROW(train({every_epoch_of_4, Interrupt{.at_epoch = 1, .at_batch = 1}}), std::runtime_error);
  BOOST_TEST(
      (cb::BackupAndRestore::read_metadata(backup_dir + "/training_metadata.json").point == nn::ResumePoint{1, 0}));
}

BOOST_AUTO_TEST_CASE(double_checkpoint_restores_the_backup_before_a_damaged_one) {
  const Run reference = train({});
  const fs::path folder = dir / "double";
  cb::BackupAndRestore backup{.backup_dir = folder.string(), .double_checkpoint = true};
  BOOST_CHECK_THROW(train({backup, Interrupt{.at_epoch = 3}}), std::runtime_error);
  BOOST_TEST(files_in(folder) == std::vector<std::string>({"epoch-2-step-0.weights.h5", "epoch-3-step-0.weights.h5",
                                                           "training_metadata.json", "training_metadata.json.bkp"}),
             boost::test_tools::per_element());
  fs::resize_file(folder / "epoch-3-step-0.weights.h5", 100);  // cut short
  cb::BackupAndRestore relaunched{.backup_dir = folder.string(), .double_checkpoint = true};
  const Run resumed = train({relaunched});
  BOOST_TEST((relaunched.restored() == nn::ResumePoint{2, 0}));
  BOOST_TEST(log.count("the latest backup in " + folder.string() + " could not be read; restored the one before it") ==
             1u);
  check_same_end(resumed, reference, 2, 2);
  BOOST_TEST(!fs::exists(folder));
}

BOOST_AUTO_TEST_CASE(bad_backups_and_bad_arguments_are_typed_errors) {
  std::ostringstream quiet;
  auto model = zeros_model(0.05);
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, quiet, {cb::BackupAndRestore{}}, 1), dt::InvalidArgumentError,
                             "Empty `backup_dir` argument passed");
  DEVTENSOR_CHECK_THROW_WITH((void)(cb::BackupAndRestore{.backup_dir = "b", .save_freq = 0}), dt::InvalidArgumentError,
                             "Unrecognized save_freq: 0");
  model.set_resume_point({-1, 0});
  DEVTENSOR_CHECK_THROW_WITH(fit_with(model, quiet, {}, 1), dt::InvalidArgumentError,
                             "fit: cannot resume at epoch -1, batch 0; a resume point is never negative");
  // Keras's check: the model must be built before fit.
  nn::Sequential unbuilt({nn::Dense(1)});
  unbuilt.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{});
  DEVTENSOR_CHECK_THROW_WITH(
      unbuilt.fit(dt::constant<float>({1, 2}, {2, 1}), dt::constant<float>({1, 2}, {2, 1}),
                  {.verbose = 0, .callbacks = {cb::BackupAndRestore{.backup_dir = (dir / "u").string()}}}),
      dt::InvalidArgumentError, "you model must be built before you call `fit()`");

  // Damaged metadata: DataLossError naming the file, the model untouched.
  const fs::path folder = dir / "damaged";
  fs::create_directories(folder);
  const auto write = [&](const std::string& text) {
    std::ofstream(folder / "training_metadata.json", std::ios::trunc) << text;
  };
  const auto before = values_of(model);
  const auto fit_restoring = [&] {
    return fit_with(model, quiet, {cb::BackupAndRestore{.backup_dir = folder.string()}}, 1);
  };
  for (const auto& [text, reason] : std::vector<std::pair<std::string, std::string>>{
           {"{\"epoch\": 1, \"step\": 0", "expected '}'"},
           {"{\"epoch\": -1, \"step\": 0, \"weights\": \"w.weights.h5\", \"global_seed\": null, \"global_sequence\": "
            "0}",
            "no value for \"epoch\""},
           {"{\"epoch\": 1, \"step\": 0, \"weights\": \"../w.weights.h5\", \"global_seed\": null, \"global_sequence\": "
            "0}",
            "\"weights\" is \"../w.weights.h5\", not a file name"},
           {"{\"epoch\": 1, \"step\": 0, \"global_seed\": null, \"global_sequence\": 0}", "no \"weights\""},
           {"{\"epoch\": 1e9, \"step\": 0}", "\"epoch\" is 1e9, not an integer"}}) {
    write(text);
    DEVTENSOR_CHECK_THROW_WITH(fit_restoring(), dt::DataLossError, reason);
  }
  BOOST_TEST((values_of(model) == before));
  // Metadata naming weights that are not there, or of another model: the loader's errors.
  write("{\"epoch\": 1, \"step\": 0, \"weights\": \"w.weights.h5\", \"global_seed\": null, \"global_sequence\": 0}");
  DEVTENSOR_CHECK_THROW_WITH(fit_restoring(), dt::NotFoundError, "w.weights.h5");
  sequential().save_weights((folder / "w.weights.h5").string());
  BOOST_CHECK_THROW(fit_restoring(), dt::InvalidArgumentError);
  BOOST_TEST((values_of(model) == before));
}

BOOST_AUTO_TEST_SUITE_END()
