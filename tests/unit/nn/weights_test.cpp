// Keras 3 weights files: TensorFlow 2.21's files load and predict TensorFlow's outputs; devtensor's
// files have Keras's layout (names, shapes, values: TensorFlow loads them, checked with
// tests/reference/weights.py); bad files and mismatched models raise typed errors and load
// nothing. The fixtures and the expected predictions come from tests/reference/weights.py.
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
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
  BOOST_TEST(root.group("layers").group("dense_1").group("vars").read_floats("0").first ==
                 std::vector<std::int64_t>({9, 3}),
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
  const auto x = dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3, 1, 1, -2, 0.5f, 0, 0, 1, -1,
                                      2, 0, 1, 1, -1, -1, 0.5f, 2, 0.25f, 3, -2, 1, 1, 2, 3, 4},
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
      if (adam) model.compile("categorical_crossentropy", nn::optimizers::Adam{.learning_rate = 0.05, .amsgrad = true});
      else model.compile("categorical_crossentropy", nn::optimizers::SGD{.learning_rate = 0.1, .momentum = 0.9});
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
    BOOST_TEST(vars.read_floats("1").second == std::vector<float>({adam ? 0.05f : 0.1f}), boost::test_tools::per_element());
    BOOST_TEST(vars.children().size() == (adam ? 2u + 3u * 4u : 2u + 4u));  // m, v and v_hat; or the velocities
    BOOST_TEST(vars.read_floats("2").first == std::vector<std::int64_t>({4, 6}), boost::test_tools::per_element());
    // A model compiled with another optimizer refuses the state, and changes nothing.
    auto other = make();
    other.compile("categorical_crossentropy", nn::optimizers::SGD{.learning_rate = 0.1});
    const auto before = values_of(other);
    DEVTENSOR_CHECK_THROW_WITH(other.load_weights(checkpoint.string()), dt::InvalidArgumentError, "/optimizer/vars holds");
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
  DEVTENSOR_CHECK_THROW_WITH(model.load_weights((dir / "missing.weights.h5").string()), dt::NotFoundError, "no such file");
  {
    const fs::path doubles = dir / "doubles.weights.h5";
    model.save_weights(doubles.string());
    const hid_t file = H5Fopen(doubles.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    BOOST_TEST_REQUIRE(file >= 0);
    H5Ldelete(file, "/layers/dense/vars/1", H5P_DEFAULT);
    const hsize_t dims[1] = {5};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t data = H5Dcreate2(file, "/layers/dense/vars/1", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
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
    return nn::Sequential({nn::Conv2D(3, 2, {.activation = nn::Activation::relu, .input_shape = nn::PartialShape{5, 5, 2}}),
                           nn::MaxPooling2D(2, {.strides = 1, .padding = "same"}), nn::Conv2D(2, {2, 1}, {.strides = 2}),
                           nn::GlobalAveragePooling2D(), nn::Dense(2)},
                          "conv");
  };
  std::vector<float> input(2 * 5 * 5 * 2);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(static_cast<int>((i * 5) % 11) - 5) / 4.0f;
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
  BOOST_TEST(root.group("layers").children() == std::vector<std::string>({"conv2d", "conv2d_1", "dense",
                                                                          "global_average_pooling2d", "max_pooling2d"}),
             boost::test_tools::per_element());
  BOOST_TEST(root.group("layers").group("conv2d").group("vars").read_floats("0").first ==
                 std::vector<std::int64_t>({2, 2, 2, 3}),
             boost::test_tools::per_element());
  auto fresh = conv_model();
  fresh.load_weights(file.string());
  check_close(fresh.predict(x).to_vector(), tensorflow, 1e-5);
}

BOOST_AUTO_TEST_SUITE_END()
