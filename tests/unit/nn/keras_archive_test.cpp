// Keras 3 `.keras` archives: archives Keras 3.15.1 saved load and predict Keras's values; archives
// devtensor saves have Keras's members and config and load back exactly (Keras loads them too:
// tests/reference/keras_archive.py check); to_json / model_from_json; and hostile archives each
// refused with a typed error, nothing written outside, nothing huge allocated. The fixtures come
// from tests/reference/keras_archive.py.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "devtensor/devtensor.hpp"
#include "devtensor/saving/keras_archive.hpp"
#include "devtensor_test.hpp"

namespace dt = devtensor;
namespace nn = dt::nn;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {
const fs::path kArchives = DEVTENSOR_KERAS_ARCHIVES_DIR;

struct ArchiveFixture : dt::test::FreshContext {
  fs::path dir = fs::temp_directory_path() / ("devtensor_archive_" + std::to_string(::getpid()));
  ArchiveFixture() {
    nn::clear_session();
    fs::create_directories(dir);
  }
  ~ArchiveFixture() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

Json read_json(const fs::path& path) {
  std::ifstream in(path);
  return Json::parse(in);
}

/// A JSON array of arrays (any depth) as a tensor.
dt::Tensor<float> tensor_of(const Json& value) {
  std::vector<std::int64_t> shape;
  for (const Json* v = &value; v->is_array(); v = &(*v)[0]) shape.push_back(static_cast<std::int64_t>(v->size()));
  std::vector<float> flat;
  const auto walk = [&](const auto& self, const Json& v) -> void {
    if (v.is_array()) {
      for (const auto& e : v) self(self, e);
    } else {
      flat.push_back(v.get<float>());
    }
  };
  walk(walk, value);
  return dt::constant<float>(flat, dt::Shape(shape));
}

std::vector<dt::Tensor<float>> tensors_of(const Json& list) {
  std::vector<dt::Tensor<float>> out;
  for (const auto& v : list) out.push_back(tensor_of(v));
  return out;
}

/// The largest |got - want| over every output.
/// The largest difference, relative to the wanted value where it exceeds 1.
double largest_difference(const std::vector<dt::Tensor<float>>& got, const std::vector<dt::Tensor<float>>& want) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST_REQUIRE(got[i].shape() == want[i].shape());
    const auto a = got[i].to_vector(), b = want[i].to_vector();
    for (std::size_t j = 0; j < a.size(); ++j)
      worst = std::max(worst,
                       std::abs(static_cast<double>(a[j]) - b[j]) / std::max(1.0, std::abs(static_cast<double>(b[j]))));
  }
  return worst;
}

std::vector<std::vector<float>> variable_values(const nn::Model& model) {
  std::vector<std::vector<float>> out;
  for (const auto& v : model.variables()) out.push_back(v.value().to_vector());
  return out;
}

/// A functional model of every kind of node: two inputs, a shared layer called twice, a merge, two outputs.
nn::Model two_heads() {
  const auto a = nn::Input({4}, {.name = "a"});
  const auto b = nn::Input({3}, {.name = "b"});
  const auto merged = nn::Concatenate()({nn::Dense(8, {.activation = nn::Activation::relu, .name = "da"})(a), b});
  const auto head = nn::Dense(2, {.activation = nn::Activation::softmax, .name = "head"})(merged);
  const nn::Dense shared(3, {.activation = nn::Activation::tanh, .name = "shared"});
  const auto summed = nn::Add()({shared(b), shared(nn::Dense(3, {.name = "project"})(a))});
  return nn::Model({a, b}, {head, nn::Dense(1, {.name = "reg"})(summed)}, {.name = "two_heads"});
}

/// The convolution layers, in a Sequential.
nn::Sequential convolutional() {
  return nn::Sequential(
      {nn::Rescaling(0.5, {.offset = 0.25, .input_shape = nn::PartialShape{8, 8, 1}}),
       nn::Conv2D(4, 3, {.padding = "same", .activation = nn::Activation::relu}), nn::BatchNormalization(),
       nn::MaxPooling2D(), nn::DepthwiseConv2D(3, {.padding = "same", .depth_multiplier = 2}), nn::ZeroPadding2D(1),
       nn::AveragePooling2D(2), nn::Reshape({3, 24}), nn::Flatten(), nn::Dropout(0.25), nn::Dense(10),
       nn::ActivationLayer(nn::Activation::softmax)},
      "convolutional");
}

/// A tensor as the check script reads it: {"shape", "values"}.
Json json_of(const dt::Tensor<float>& t) {
  Json flat = t.to_vector();
  return Json{{"shape", t.shape().dims_vector()}, {"values", flat}};
}

/// Writes `model`'s archive and its predictions on `inputs` where DEVTENSOR_KERAS_ARCHIVE_OUT says
/// (for tests/reference/keras_archive.py check: Keras loads devtensor's archives).
void export_for_keras(nn::Model& model, const std::string& name, const std::vector<dt::Tensor<float>>& inputs) {
  const char* out = std::getenv("DEVTENSOR_KERAS_ARCHIVE_OUT");
  if (!out) return;
  model.save((fs::path(out) / (name + ".keras")).string());
  Json doc{{"inputs", Json::array()}, {"outputs", Json::array()}};
  for (const auto& x : inputs) doc["inputs"].push_back(json_of(x));
  for (const auto& y : model.predict(inputs)) doc["outputs"].push_back(json_of(y));
  std::ofstream(fs::path(out) / (name + ".json")) << doc.dump();
}
/// As export_for_keras, for a compiled model: also its training data, and the history and
/// predictions (resumed_outputs) of 2 more epochs devtensor trains on a copy loaded from the
/// archive, which tests/reference/keras_archive.py check resumes the same way in Keras.
void export_trained_for_keras(nn::Model& model, const std::string& name, const dt::Tensor<float>& x,
                              const dt::Tensor<float>& y) {
  const char* out = std::getenv("DEVTENSOR_KERAS_ARCHIVE_OUT");
  if (!out) return;
  const auto path = (fs::path(out) / (name + ".keras")).string();
  model.save(path);
  const auto copy = nn::load_model(path);
  const auto history = copy->fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
  Json doc{{"inputs", Json::array({json_of(x)})},
           {"targets", Json::array({json_of(y)})},
           {"outputs", Json::array()},
           {"history", {{"loss", history.loss}}},
           {"resumed_outputs", Json::array()}};
  for (const auto& [key, values] : history.metrics) doc["history"][key] = values;
  for (const auto& p : model.predict(std::vector{x})) doc["outputs"].push_back(json_of(p));
  for (const auto& p : copy->predict(std::vector{x})) doc["resumed_outputs"].push_back(json_of(p));
  std::ofstream(fs::path(out) / (name + ".json")) << doc.dump();
}
}  // namespace

BOOST_FIXTURE_TEST_SUITE(keras_archive, ArchiveFixture)

BOOST_AUTO_TEST_CASE(keras_saved_archives_load_and_predict_keras_values) {
  for (const std::string name : {"seq", "two_heads", "conv", "tutorial"}) {
    BOOST_TEST_CONTEXT(name) {
      const auto model = nn::load_model((kArchives / (name + ".keras")).string());
      const Json expected = read_json(kArchives / (name + ".json"));
      const auto outputs = model->predict(tensors_of(expected["inputs"]));
      // OpenBLAS's kernels, chosen per CPU (its generic Prescott ones where it does not know the
      // CPU), sum in other orders: the tutorial model's outputs near 6 come out 1.5e-6 apart there
      BOOST_TEST(largest_difference(outputs, tensors_of(expected["outputs"])) <= 4e-6);
      BOOST_TEST(model->name() == name);
      BOOST_TEST(model->compiled() == (name == "seq"));  // Keras saved seq compiled, the others not
    }
  }
  // A Sequential comes back as one (its summary and weights files list no Input); names as saved.
  const auto seq = nn::load_model((kArchives / "seq.keras").string());
  BOOST_TEST(dynamic_cast<nn::Sequential*>(seq.get()) != nullptr);
  BOOST_TEST(seq->count_params() == 4 * 8 + 8 + 8 * 3 + 3);
  const auto two = nn::load_model((kArchives / "two_heads.keras").string());
  std::vector<std::string> names;
  for (const auto& layer : two->layers()) names.push_back(layer->name());
  BOOST_TEST(
      names == std::vector<std::string>({"a", "b", "project", "da", "shared", "concatenate", "add", "head", "reg"}),
      boost::test_tools::per_element());
  BOOST_TEST(two->inputs().size() == 2u);
  BOOST_TEST(two->outputs().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_deflated_archive_loads_as_the_stored_one) {
  const auto stored = nn::load_model((kArchives / "seq.keras").string());
  const auto deflated = nn::load_model((kArchives / "hostile" / "deflated.keras").string());
  BOOST_TEST(variable_values(*deflated) == variable_values(*stored));
}

BOOST_AUTO_TEST_CASE(saved_archives_have_keras_members_and_config_and_load_back) {
  auto model = two_heads();
  const fs::path file = dir / "two_heads.keras";
  model.save(file.string());
  const auto contents = nn::saving::read_zip(file);
  BOOST_TEST(contents.names() == std::vector<std::string>({"config.json", "metadata.json", "model.weights.h5"}),
             boost::test_tools::per_element());
  const Json metadata = Json::parse(contents.text("metadata.json"));
  BOOST_TEST(metadata["keras_version"] == "3.15.1");
  BOOST_TEST(metadata["date_saved"].get<std::string>().find('@') == 10u);  // "2026-11-30@04:26:27"
  const Json config = Json::parse(contents.text("config.json"));
  BOOST_TEST(config["class_name"] == "Functional");
  BOOST_TEST(config["registered_name"] == "Functional");
  BOOST_TEST(config["config"]["input_layers"] == Json::parse(R"([["a", 0, 0], ["b", 0, 0]])"));
  BOOST_TEST(config["config"]["output_layers"] == Json::parse(R"([["head", 0, 0], ["reg", 0, 0]])"));
  // Keras's form of a layer of two calls and of a merge's list argument.
  for (const auto& layer : config["config"]["layers"]) {
    if (layer["name"] == "shared") {
      BOOST_TEST(layer["inbound_nodes"].size() == 2u);
      BOOST_TEST(layer["inbound_nodes"][1]["args"][0]["config"]["keras_history"] ==
                 Json::parse(R"(["project", 0, 0])"));
      BOOST_TEST(layer["build_config"]["input_shape"] == Json::parse("[null, 3]"));
      BOOST_TEST(layer["config"]["activation"] == "tanh");
    }
    if (layer["name"] == "add") {
      BOOST_TEST(layer["inbound_nodes"][0]["args"][0].size() == 2u);
      BOOST_TEST(layer["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"] ==
                 Json::parse(R"(["shared", 1, 0])"));
    }
  }
  // Loaded back: the same layers, the same weights, the same predictions, bit for bit.
  const auto loaded = nn::load_model(file.string());
  BOOST_TEST(variable_values(*loaded) == variable_values(model));
  const std::vector x{dt::constant<float>({0.5f, -1, 2, 0.25f, -0.5f, 1, 0, 3}, {2, 4}),
                      dt::constant<float>({1, 2, 3, -1, -2, -3}, {2, 3})};
  BOOST_TEST(largest_difference(loaded->predict(x), model.predict(x)) == 0.0);
  export_for_keras(model, "devtensor_two_heads", x);
}

BOOST_AUTO_TEST_CASE(a_convolutional_sequential_round_trips) {
  auto model = convolutional();
  // Moving statistics away from their initial values, so that a loader that skips them fails.
  const auto images = dt::random_uniform<float>(dt::Shape{6, 8, 8, 1}, {.seed = 5});
  model.compile(nn::losses::SparseCategoricalCrossentropy{}, nn::optimizers::SGD{0.05});
  model.fit(images, dt::constant<float>({0, 1, 2, 3, 4, 5}, {6}), {.epochs = 2, .batch_size = 3, .verbose = 0});
  const fs::path file = dir / "convolutional.keras";
  model.save(file.string());
  const auto loaded = nn::load_model(file.string());
  BOOST_TEST(dynamic_cast<nn::Sequential*>(loaded.get()) != nullptr);
  BOOST_TEST(variable_values(*loaded) == variable_values(model));
  BOOST_TEST(largest_difference({loaded->predict(images)}, {model.predict(images)}) == 0.0);
  const Json config = Json::parse(nn::saving::read_zip(file).text("config.json"));
  BOOST_TEST(config["class_name"] == "Sequential");
  BOOST_TEST(config["config"]["layers"][0]["class_name"] == "InputLayer");
  BOOST_TEST(config["config"]["layers"][0]["config"]["batch_shape"] == Json::parse("[null, 8, 8, 1]"));
  BOOST_TEST(config["config"]["layers"][2]["config"]["kernel_size"] == Json::parse("[3, 3]"));
  BOOST_TEST(config["config"]["layers"][6]["config"]["padding"] == Json::parse("[[1, 1], [1, 1]]"));
  BOOST_TEST(config["build_config"]["input_shape"] == Json::parse("[null, 8, 8, 1]"));
  export_for_keras(model, "devtensor_convolutional", {images});
}

BOOST_AUTO_TEST_CASE(an_archive_just_big_enough_for_its_weights_loads) {
  // The weights a config may create are bounded by the file's size: counted exactly (no bias, no
  // beta or gamma where the config has none), a wide layer without them is not refused.
  nn::Sequential model({nn::Dense(20000, {.input_dim = 1, .use_bias = false}),
                        nn::BatchNormalization({.center = false, .scale = false})},
                       "wide");
  const fs::path file = dir / "wide.keras";
  model.save(file.string());
  const auto loaded = nn::load_model(file.string());
  BOOST_TEST(loaded->count_params() == 20000 + 2 * 20000);
  BOOST_TEST(variable_values(*loaded) == variable_values(model));
}

BOOST_AUTO_TEST_CASE(to_json_and_model_from_json_round_trip_the_architecture) {
  auto model = two_heads();
  const std::string text = model.to_json();
  nn::clear_session();
  const auto rebuilt = nn::model_from_json(text);
  BOOST_TEST(rebuilt->to_json() == text);
  BOOST_TEST(rebuilt->count_params() == model.count_params());
  BOOST_TEST(variable_values(*rebuilt) != variable_values(model));  // fresh weights, as Keras's model_from_json
  // Keras's own config text, rebuilt and written again, keeps every layer's class and arguments.
  const Json keras = Json::parse(nn::saving::read_zip(kArchives / "conv.keras").text("config.json"));
  const Json again = Json::parse(nn::model_from_json(keras.dump())->to_json());
  BOOST_TEST_REQUIRE(again["config"]["layers"].size() == keras["config"]["layers"].size());
  for (std::size_t i = 0; i < keras["config"]["layers"].size(); ++i) {
    Json want = keras["config"]["layers"][i], got = again["config"]["layers"][i];
    // Keras's dtype policies carry a "shared_object_id" (a Python id of the policy it shares).
    if (want["config"].contains("dtype") && want["config"]["dtype"].is_object())
      want["config"]["dtype"].erase("shared_object_id");
    BOOST_TEST_CONTEXT(want["name"]) { BOOST_TEST(got == want); }
  }
}

BOOST_AUTO_TEST_CASE(saving_refuses_a_wrong_path_and_an_unbuilt_model) {
  auto model = two_heads();
  DEVTENSOR_CHECK_THROW_WITH(model.save((dir / "m.h5").string()), dt::InvalidArgumentError,
                             "Invalid `filepath` argument: expected a `.keras` extension. Received: filepath=");
  DEVTENSOR_CHECK_THROW_WITH(model.save((dir / "no" / "such" / "folder" / "m.keras").string()), dt::UnavailableError,
                             "check that its folder exists");
  nn::Sequential unbuilt({nn::Dense(2)}, "unbuilt");
  DEVTENSOR_CHECK_THROW_WITH(unbuilt.save((dir / "u.keras").string()), dt::FailedPreconditionError,
                             "has not been built yet");
  BOOST_TEST(!fs::exists(dir / "u.keras"));
  // A failed save leaves the earlier archive whole.
  model.save((dir / "m.keras").string());
  const auto before = fs::file_size(dir / "m.keras");
  DEVTENSOR_CHECK_THROW_WITH(unbuilt.save((dir / "m.keras").string()), dt::FailedPreconditionError, "built");
  BOOST_TEST(fs::file_size(dir / "m.keras") == before);
  BOOST_TEST(nn::load_model((dir / "m.keras").string())->count_params() == model.count_params());
}

BOOST_AUTO_TEST_CASE(hostile_archives_are_refused_with_typed_errors) {
  const auto hostile = [&](const char* name) { return (kArchives / "hostile" / name).string(); };
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model((dir / "absent.keras").string()), dt::NotFoundError, "no such file");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(dir.string()), dt::InvalidArgumentError, "is not a regular file");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("not_a_zip.keras")), dt::InvalidArgumentError,
                             "is not a zip archive that can be read");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("truncated.keras")), dt::InvalidArgumentError,
                             "is not a zip archive that can be read");
  // Names that are paths out of the archive: refused, and nothing is written anywhere.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("traversal.keras")), dt::InvalidArgumentError,
                             "its member '../evil.txt' is not a name inside the archive: it climbs out");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("absolute.keras")), dt::InvalidArgumentError,
                             "its member '/tmp/evil.txt' is not a name inside the archive: it is an absolute path");
  fs::current_path(cwd);
  BOOST_TEST(!fs::exists(dir.parent_path() / "evil.txt"));
  BOOST_TEST(fs::is_empty(dir));
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("duplicate.keras")), dt::InvalidArgumentError,
                             "two of its members have the same name");
  // Sizes are checked before anything is allocated.
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("huge_member.keras")), dt::InvalidArgumentError,
                             "declares 1099511627776 bytes");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("bomb.keras")), dt::InvalidArgumentError, "(a zip bomb?)");
  DEVTENSOR_CHECK_THROW_WITH(nn::saving::read_zip(kArchives / "seq.keras", {.max_member_bytes = 1000}),
                             dt::InvalidArgumentError, "more than the limit of 1000");
  DEVTENSOR_CHECK_THROW_WITH(nn::saving::read_zip(kArchives / "seq.keras", {.max_members = 2}),
                             dt::InvalidArgumentError, "holds 3 members, more than the 2");
  // Contents: a config that is not JSON, layers devtensor does not have (all named), weights that do not fit.
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("not_json.keras")), dt::InvalidArgumentError,
                             "not_json.keras's config.json is not JSON");
  DEVTENSOR_CHECK_THROW_WITH(
      nn::load_model(hostile("unknown_layers.keras")), dt::UnimplementedError,
      "the model uses 2 layer(s) devtensor does not have: LSTM (\"dense\"), Embedding (\"dense_1\")");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("wrong_kernel.keras")), dt::InvalidArgumentError,
                             "/layers/dense/vars/0 has shape (4, 8), but variable dense/kernel:0 has shape (4, 9)");
}

BOOST_AUTO_TEST_CASE(configs_that_are_not_keras_are_refused_with_typed_errors) {
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json("[1, 2"), dt::InvalidArgumentError, "is not JSON");
  // A number beyond a double's range (found by the fuzzer: nlohmann's out_of_range, not a parse error).
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "x": 14e0071065192592})"),
                             dt::InvalidArgumentError,
                             "is not JSON: [json.exception.out_of_range.406] number overflow");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Adam"})"), dt::UnimplementedError,
                             "the config describes a Adam; devtensor rebuilds Sequential and Functional models");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Functional", "config": {"layers": 3}})"),
                             dt::InvalidArgumentError, "has no list of layers");
  // A node that takes a tensor no layer makes.
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Functional", "config": {"name": "m",
      "layers": [{"class_name": "InputLayer", "name": "x", "config": {"batch_shape": [null, 2], "name": "x"}},
                 {"class_name": "Dense", "name": "d", "config": {"name": "d", "units": 1},
                  "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["y", 0, 0]}}],
                                     "kwargs": {}}]}],
      "input_layers": [["x", 0, 0]], "output_layers": [["d", 0, 0]]}})"),
                             dt::InvalidArgumentError, "call 0 of layer \"d\" takes y[0], which no layer's call makes");
  // Arguments devtensor's layers do not have, and fields of the wrong type, named.
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 4, 4, 3]}},
      {"class_name": "Conv2D", "config": {"name": "c", "filters": 6, "kernel_size": 3, "strides": 1, "groups": 3}}]}})"),
      dt::UnimplementedError, "layer \"c\" (Conv2D) sets \"groups\" to 3");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": "eight"}}]}})"),
      dt::InvalidArgumentError, "layer \"d\" (Dense) is not Keras's: \"units\" is not an integer");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Rescaling", "config": {"name": "r", "scale": 1e300}}]}})"),
      dt::InvalidArgumentError, "\"scale\" is 1e+300, beyond float32's range");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 4294967296}}]}})"),
      dt::InvalidArgumentError, "\"units\" is 4294967296, beyond +-2^31");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 1048576, 1048576, 2]}},
      {"class_name": "Dense", "config": {"name": "d", "units": 2}}]}})"),
      dt::InvalidArgumentError, "has more than 2^40 elements");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 65536]}},
      {"class_name": "Dense", "config": {"name": "d", "units": 65536}}]}})"),
      dt::InvalidArgumentError, "layer \"d\" (Dense) would create 4295032832 weights, beyond the 2147483648");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "gelu"}}]}})"),
      dt::UnimplementedError, "uses the activation \"gelu\", which devtensor does not have");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "DepthwiseConv2D", "config": {"name": "c", "kernel_size": [3, 3],
          "dtype": {"class_name": "DTypePolicy", "config": {"name": "float16"}}}}]}})"),
      dt::UnimplementedError,
      "layer \"c\" (DepthwiseConv2D): The dtype policy 'float16' keeps variables in float16; devtensor's layers keep "
      "float32 variables");
  DEVTENSOR_CHECK_THROW_WITH(
      (void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 2, "dtype": "mixed_int8"}}]}})"),
      dt::InvalidArgumentError, "Cannot convert 'mixed_int8' to a mixed precision DTypePolicy");
}

BOOST_AUTO_TEST_CASE(mixed_precision_policies_come_back_from_configs) {
  // Keras writes each layer's policy as {"class_name": "DTypePolicy", "config": {"name": ...}}.
  const auto model = nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 3]}},
      {"class_name": "Dense", "config": {"name": "d", "units": 2, "dtype": {"module": "keras",
          "class_name": "DTypePolicy", "config": {"name": "mixed_bfloat16"}, "registered_name": null}}},
      {"class_name": "Activation", "config": {"name": "a", "activation": "softmax", "dtype": "float32"}},
      {"class_name": "Reshape", "config": {"name": "r", "target_shape": [1, 1, 2], "dtype": "mixed_bfloat16"}},
      {"class_name": "Conv2D", "config": {"name": "c", "filters": 2, "kernel_size": [1, 1], "strides": [1, 1],
          "dtype": {"class_name": "DTypePolicy", "config": {"name": "mixed_float16"}}}},
      {"class_name": "MaxPooling2D", "config": {"name": "p", "pool_size": [1, 1], "dtype": "mixed_float16"}},
      {"class_name": "DepthwiseConv2D", "config": {"name": "w", "kernel_size": [1, 1], "strides": [1, 1],
          "dtype": {"class_name": "DTypePolicy", "config": {"name": "mixed_float16"}}}},
      {"class_name": "ZeroPadding2D", "config": {"name": "z", "padding": [[1, 1], [0, 0]], "dtype": "mixed_bfloat16"}},
      {"class_name": "BatchNormalization", "config": {"name": "b", "dtype": "mixed_bfloat16"}},
      {"class_name": "Flatten", "config": {"name": "f", "dtype": "mixed_bfloat16"}},
      {"class_name": "Rescaling", "config": {"name": "k", "scale": 2.0, "dtype": "mixed_float16"}}]}})");
  const auto layers = model->layers();  // InputLayer, d, a, r, c, p, w, z, b, f, k
  BOOST_TEST_REQUIRE(layers.size() == 11u);
  const std::vector<std::string> policies{"mixed_bfloat16", "float32",       "mixed_bfloat16", "mixed_float16",
                                          "mixed_float16",  "mixed_float16", "mixed_bfloat16", "mixed_bfloat16",
                                          "mixed_bfloat16", "mixed_float16"};
  const auto json = Json::parse(model->to_json());
  for (std::size_t i = 1; i < layers.size(); ++i) {
    BOOST_TEST(layers.at(i)->dtype_policy().name() == policies[i - 1], layers.at(i)->name());
    BOOST_TEST(json["config"]["layers"][i]["config"]["dtype"]["config"]["name"] == policies[i - 1]);
  }
  BOOST_TEST(json["config"]["layers"][1]["config"]["dtype"]["class_name"] == "DTypePolicy");
  // A functional model's merge layers keep theirs through to_json and back.
  nn::mixed_precision::set_global_policy("mixed_float16");
  const auto in = nn::Input({4});
  const auto dense = nn::Dense(4)(in);
  const auto merged = nn::Concatenate(-1, {.dtype = "mixed_bfloat16"})({nn::Add()({in, dense}), dense});
  const nn::Model functional(in, nn::Dense(1, {.dtype = "float32"})(merged));
  nn::mixed_precision::set_global_policy("float32");
  const auto loaded = nn::model_from_json(functional.to_json())->layers();
  const std::vector<std::string> functional_policies{"mixed_float16", "mixed_float16", "mixed_bfloat16", "float32"};
  BOOST_TEST_REQUIRE(loaded.size() == 5u);
  for (std::size_t i = 1; i < loaded.size(); ++i)
    BOOST_TEST(loaded[i]->dtype_policy().name() == functional_policies[i - 1], loaded[i]->type_name());
}

BOOST_AUTO_TEST_CASE(keras_trained_archives_resume_training_as_keras_does) {
  // Keras trained each model 2 epochs, saved it, trained 2 more: loaded here, the 2 more epochs
  // give Keras's losses and metrics, and its weights after them (the schedule, AMSGrad's v_hat,
  // Nesterov momentum and the step count all come back from the archive).
  for (const std::string name : {"trained_adam", "trained_sgd"}) {
    BOOST_TEST_CONTEXT(name) {
      const Json expected = read_json(kArchives / (name + ".json"));
      const auto model = nn::load_model((kArchives / (name + ".keras")).string());
      BOOST_TEST_REQUIRE(model->compiled());
      BOOST_TEST(model->optimizer().iterations() == expected["iterations"].get<std::int64_t>());
      const auto history = model->fit(tensors_of(expected["inputs"]), tensors_of(expected["targets"]),
                                      {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
      for (const auto& [key, values] : expected["history"].items()) {
        const auto& got = key == "loss" ? history.loss : history.metrics.at(key);
        BOOST_TEST_REQUIRE(got.size() == 2u);
        for (std::size_t e = 0; e < 2; ++e)
          BOOST_TEST(std::abs(got[e] - values[e].get<double>()) <= 2e-6,
                     key << " epoch " << e << ": " << got[e] << " vs Keras's " << values[e]);
      }
      BOOST_TEST(largest_difference(model->predict(tensors_of(expected["inputs"])), tensors_of(expected["outputs"])) <=
                 2e-6);
    }
  }
  // The compile config as Keras gave it.
  const auto adam = nn::load_model((kArchives / "trained_adam.keras").string());
  BOOST_TEST(adam->optimizer().name() == "Adam");
  BOOST_TEST(adam->optimizer().target<nn::optimizers::Adam>()->amsgrad);
  BOOST_TEST(adam->optimizer().learning_rate_is_schedule());
  BOOST_TEST(adam->compile_options().metrics == std::vector<std::string>({"mae", "accuracy"}),
             boost::test_tools::per_element());
  BOOST_TEST(adam->losses()[0].target<nn::losses::CategoricalCrossentropy>()->label_smoothing == 0.1);
  const auto sgd = nn::load_model((kArchives / "trained_sgd.keras").string());
  BOOST_TEST(sgd->losses().size() == 2u);
  BOOST_TEST(sgd->losses()[0].identifier() == "mse");
  BOOST_TEST(sgd->compile_options().loss_weights == std::vector<double>({1.0, 0.5}), boost::test_tools::per_element());
  BOOST_TEST(sgd->compile_options().output_metrics.size() == 2u);
}

BOOST_AUTO_TEST_CASE(mixed_precision_archives_keep_the_loss_scale_as_keras) {
  // tests/reference/keras_archive.py mixed: Keras trained two mixed_float16 models 2 epochs, saved
  // them and trained 2 more. trained_mixed: compile wrapped its SGD in a LossScaleOptimizer (the
  // compile config names the SGD; the model's policy says to wrap it again); trained_scaled: an
  // explicit LossScaleOptimizer(Adam, dynamic_growth_steps=4) whose steps overflow. Loaded here
  // under the mixed_float16 global policy (a loaded model takes the global policy, as Keras's):
  // the scale, its step counter and the iterations come back, and the 2 more epochs give Keras's
  // losses, scale and predictions.
  for (const std::string name : {"trained_mixed", "trained_scaled"}) {
    BOOST_TEST_CONTEXT(name) {
      nn::clear_session();
      nn::mixed_precision::set_global_policy("mixed_float16");
      const Json expected = read_json(kArchives / (name + ".json"));
      const auto model = nn::load_model((kArchives / (name + ".keras")).string());
      BOOST_TEST(model->dtype_policy().name() == "mixed_float16");
      BOOST_TEST_REQUIRE(model->optimizer().name() == "LossScaleOptimizer");
      const auto* lso = model->optimizer().target<nn::optimizers::LossScaleOptimizer>();
      BOOST_TEST(lso->dynamic_scale() == expected["scale_saved"].get<double>());
      BOOST_TEST(lso->step_counter() == expected["step_counter_saved"].get<std::int64_t>());
      BOOST_TEST(model->optimizer().iterations() == expected["iterations"].get<std::int64_t>());
      const auto x = tensors_of(expected["inputs"])[0];
      const auto y = tensors_of(expected["targets"])[0];
      const auto history = model->fit(x, y, {.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false});
      const auto& keras_losses = expected["history"]["loss"];
      for (std::size_t e = 0; e < 2; ++e)
        BOOST_TEST(std::abs(history.loss[e] - keras_losses[e].get<double>()) <=
                       1e-5 * (1 + std::abs(keras_losses[e].get<double>())),
                   "epoch " << e << ": " << history.loss[e] << " vs Keras's " << keras_losses[e]);
      BOOST_TEST(lso->dynamic_scale() == expected["scale_after"].get<double>());
      BOOST_TEST(lso->step_counter() == expected["step_counter_after"].get<std::int64_t>());
      BOOST_TEST(largest_difference(model->predict(std::vector{x}), tensors_of(expected["outputs"])) <= 1e-4);
      // devtensor's archive of it: the same scale, counter, slots and compile config come back
      const auto path = (fs::temp_directory_path() / ("devtensor_" + name + ".keras")).string();
      model->save(path);
      const auto copy = nn::load_model(path);
      fs::remove(path);
      const auto* copied = copy->optimizer().target<nn::optimizers::LossScaleOptimizer>();
      BOOST_TEST_REQUIRE(copied);
      BOOST_TEST(copied->dynamic_scale() == lso->dynamic_scale());
      BOOST_TEST(copied->step_counter() == lso->step_counter());
      BOOST_TEST(copied->dynamic_growth_steps == lso->dynamic_growth_steps);
      BOOST_TEST(copy->optimizer().iterations() == model->optimizer().iterations());
      BOOST_TEST(copy->optimizer_wrapped_for_loss_scaling() == model->optimizer_wrapped_for_loss_scaling());
      const auto slots = model->optimizer().slot_values(model->trainable_variables());
      const auto copied_slots = copy->optimizer().slot_values(copy->trainable_variables());
      BOOST_TEST(largest_difference(copied_slots, slots) == 0.0);
      export_trained_for_keras(*model, "devtensor_" + name, x, y);
    }
  }
  nn::clear_session();
  nn::mixed_precision::set_global_policy("mixed_float16");
  const auto wrapped = nn::load_model((kArchives / "trained_mixed.keras").string());
  BOOST_TEST(wrapped->optimizer_wrapped_for_loss_scaling());
  BOOST_TEST(wrapped->optimizer().target<nn::optimizers::LossScaleOptimizer>()->inner_optimizer.name() == "SGD");
  // Under the float32 global policy the model compiles its SGD as it is (Keras's too, which then
  // skips the saved optimizer's variables; devtensor restores the SGD's from inner_optimizer).
  nn::clear_session();
  const auto plain = nn::load_model((kArchives / "trained_mixed.keras").string());
  BOOST_TEST(plain->dtype_policy().name() == "float32");
  BOOST_TEST(plain->optimizer().name() == "SGD");
  BOOST_TEST(plain->optimizer().iterations() == wrapped->optimizer().iterations());
  BOOST_TEST(largest_difference(plain->optimizer().slot_values(plain->trainable_variables()),
                                wrapped->optimizer().slot_values(wrapped->trainable_variables())) == 0.0);
  BOOST_TEST(plain->layers().at(1)->dtype_policy().name() == "mixed_float16");  // the layers keep theirs
  const auto scaled = nn::load_model((kArchives / "trained_scaled.keras").string());
  BOOST_TEST(!scaled->optimizer_wrapped_for_loss_scaling());
  const auto* given = scaled->optimizer().target<nn::optimizers::LossScaleOptimizer>();
  BOOST_TEST(given->inner_optimizer.name() == "Adam");
  BOOST_TEST(given->dynamic_growth_steps == 4);
  BOOST_TEST(given->initial_scale == 32768.0);
}

BOOST_AUTO_TEST_CASE(compile_false_loads_the_model_uncompiled) {
  const auto seq = nn::load_model((kArchives / "seq.keras").string(), {.compile = false});
  BOOST_TEST(!seq->compiled());
  const auto compiled = nn::load_model((kArchives / "seq.keras").string());
  BOOST_TEST(compiled->optimizer().name() == "Adam");
  BOOST_TEST(compiled->losses()[0].identifier() == "mse");
  BOOST_TEST(compiled->compile_options().metrics == std::vector<std::string>{"mae"}, boost::test_tools::per_element());
  BOOST_TEST(compiled->optimizer().iterations() == 0);  // Keras saved it compiled but untrained
  BOOST_TEST(variable_values(*compiled) == variable_values(*seq));
}

BOOST_AUTO_TEST_CASE(saved_compiled_models_resume_bit_for_bit_and_keras_reads_their_compile_config) {
  const auto x = dt::random_normal<float>(dt::Shape{12, 4}, {.seed = 3});
  const auto y = dt::random_uniform<float>(dt::Shape{12, 2}, {.seed = 4});
  const auto make = [] {
    const auto input = nn::Input({4}, {.name = "x"});
    const auto hidden = nn::Dense(5, {.activation = nn::Activation::tanh, .name = "hidden"})(input);
    nn::Model model(input, nn::Dense(2, {.activation = nn::Activation::sigmoid, .name = "out"})(hidden),
                    {.name = "resumed"});
    model.compile(nn::losses::BinaryCrossentropy{.label_smoothing = 0.05},
                  nn::optimizers::Adam{
                      .learning_rate = nn::schedules::PolynomialDecay{.initial_learning_rate = 0.05, .decay_steps = 10},
                      .amsgrad = true},
                  {.metrics = {"mse", "binary_accuracy"}});
    return model;
  };
  const nn::FitOptions options{.epochs = 2, .batch_size = 4, .verbose = 0, .shuffle = false};
  // Uninterrupted: 4 epochs. Resumed: 2 epochs, saved, loaded, 2 more.
  nn::clear_session();
  auto whole = make();
  const auto initial = whole.get_weights();
  const auto whole_history = whole.fit(x, y, {.epochs = 4, .batch_size = 4, .verbose = 0, .shuffle = false});
  nn::clear_session();
  auto first = make();
  first.set_weights(initial);
  (void)first.fit(x, y, options);
  const fs::path file = dir / "resumed.keras";
  first.save(file.string());
  const auto resumed = nn::load_model(file.string());
  BOOST_TEST(resumed->optimizer().iterations() == 6);
  const auto resumed_history = resumed->fit(x, y, options);
  BOOST_TEST(variable_values(*resumed) == variable_values(whole));
  BOOST_TEST(resumed_history.loss[1] == whole_history.loss[3]);
  BOOST_TEST(resumed_history.metrics.at("mse")[1] == whole_history.metrics.at("mse")[3]);
  // The compile config, key for key as Keras writes it.
  const auto config = nlohmann::ordered_json::parse(nn::saving::read_zip(file).text("config.json"));
  const auto& compile = config["compile_config"];
  BOOST_TEST(compile["optimizer"]["class_name"] == "Adam");
  BOOST_TEST(compile["optimizer"]["config"]["learning_rate"] ==
             nlohmann::ordered_json::parse(R"({"module": "keras.optimizers.schedules",
      "class_name": "PolynomialDecay", "config": {"initial_learning_rate": 0.05, "decay_steps": 10,
      "end_learning_rate": 0.0001, "power": 1.0, "cycle": false, "name": "PolynomialDecay"}, "registered_name": null})"));
  BOOST_TEST(compile["loss"] ==
             nlohmann::ordered_json::parse(R"({"module": "keras.losses", "class_name": "BinaryCrossentropy",
      "config": {"name": "binary_crossentropy", "reduction": "sum_over_batch_size", "from_logits": false,
                 "label_smoothing": 0.05, "axis": -1}, "registered_name": null})"));
  BOOST_TEST(compile["metrics"] == nlohmann::ordered_json::parse(R"(["mse", "binary_accuracy"])"));
  std::vector<std::string> keys;
  for (const auto& [key, unused] : compile.items()) keys.push_back(key);
  BOOST_TEST(keys == std::vector<std::string>({"optimizer", "loss", "loss_weights", "metrics", "weighted_metrics",
                                               "run_eagerly", "steps_per_execution", "jit_compile"}),
             boost::test_tools::per_element());
  // Keras resumes it too (tests/reference/keras_archive.py check, with the 2 more epochs devtensor trained).
  export_trained_for_keras(*nn::load_model(file.string()), "devtensor_resumed", x, y);
}

BOOST_AUTO_TEST_CASE(a_model_saved_before_its_first_step_keeps_its_count_and_rate) {
  auto model = nn::Sequential({nn::Dense(3, {.input_dim = 4}), nn::Dense(1)}, "fresh");
  model.compile("mse", nn::optimizers::SGD{.learning_rate = 0.25, .momentum = 0.5});
  model.optimizer().set_learning_rate(0.125);
  const fs::path file = dir / "fresh.keras";
  model.save(file.string());
  // Keras's layout for an optimizer not built yet: its iterations and learning rate, no slots.
  const auto contents = nn::saving::read_zip(file);
  const auto weights = dt::hdf5::open_image(contents.at("model.weights.h5"), "fresh", /*borrow=*/true);
  BOOST_TEST(weights.has("optimizer"));
  const auto loaded = nn::load_model(file.string());
  BOOST_TEST(loaded->optimizer().iterations() == 0);
  BOOST_TEST(loaded->optimizer().learning_rate() == 0.125);
  BOOST_TEST(loaded->losses()[0].identifier() == "mse");
  BOOST_TEST(loaded->optimizer().target<nn::optimizers::SGD>()->momentum == 0.5);
}

BOOST_AUTO_TEST_CASE(compile_configs_devtensor_lacks_are_named_together) {
  const auto hostile = [](const std::string& name) { return (kArchives / "hostile" / name).string(); };
  DEVTENSOR_CHECK_THROW_WITH(
      nn::load_model(hostile("unknown_compile.keras")), dt::UnimplementedError,
      "the compile config uses what devtensor does not have: the optimizer RMSprop, the loss "
      "\"huber\", the metric \"auc\". Load the model with nn::LoadModelOptions{.compile = false}");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("clipped_optimizer.keras")), dt::UnimplementedError,
                             "the Adam setting weight_decay=0.004, the Adam setting clipnorm=1.0");
  BOOST_TEST(!nn::load_model(hostile("unknown_compile.keras"), {.compile = false})->compiled());
  // From JSON: Keras's model_from_json compiles too.
  auto model = nn::Sequential({nn::Dense(2, {.input_dim = 3})}, "j");
  model.compile("categorical_crossentropy", "sgd", {.metrics = {"accuracy"}});
  Json config = Json::parse(model.to_json());
  const auto again = nn::model_from_json(config.dump());
  BOOST_TEST(again->compiled());
  BOOST_TEST(again->optimizer().learning_rate() == static_cast<double>(0.01f));
  config["compile_config"]["optimizer"]["class_name"] = "Adam";
  config["compile_config"]["optimizer"]["config"]["beta_1"] = 1.5;
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(config.dump()), dt::InvalidArgumentError,
                             "`beta_1` must be between [0, 1). Received: beta_1=1.5");
  config["compile_config"]["optimizer"]["config"]["beta_1"] = 0.9;
  BOOST_TEST(nn::model_from_json(config.dump())->optimizer().name() == "Adam");
  config["compile_config"]["loss"] = {{"a", "mse"}};
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(config.dump()), dt::InvalidArgumentError,
                             "the compile config's \"loss\" names \"a\", which is not one of the model's outputs");
}

BOOST_AUTO_TEST_CASE(frozen_layers_train_as_keras_trains_them) {
  // Keras froze "base" (Dense) and "bn" (BatchNormalization: then in inference mode while
  // training) under a trainable "head", saved the model, and trained it 3 epochs.
  const Json expected = read_json(kArchives / "frozen.json");
  const auto model = nn::load_model((kArchives / "frozen.keras").string());
  std::vector<bool> trainable;
  for (const auto& layer : model->tracked_layers()) trainable.push_back(layer->trainable());
  BOOST_TEST(trainable == std::vector<bool>({false, false, true}), boost::test_tools::per_element());
  std::int64_t count = 0;
  for (const auto& v : model->trainable_variables()) count += v.shape().num_elements();
  BOOST_TEST(count == expected["trainable_params"].get<std::int64_t>());
  std::ostringstream summary;
  model->summary(summary);
  BOOST_TEST(summary.str().find(" Trainable params: 21 (84.00 B)") != std::string::npos, summary.str());
  BOOST_TEST(summary.str().find(" Non-trainable params: 54 (216.00 B)") != std::string::npos, summary.str());
  const auto history = model->fit(tensors_of(expected["inputs"]), tensors_of(expected["targets"]),
                                  {.epochs = 3, .batch_size = 4, .verbose = 0, .shuffle = false});
  for (std::size_t e = 0; e < 3; ++e)
    BOOST_TEST(std::abs(history.loss[e] - expected["history"]["loss"][e].get<double>()) <= 2e-6, "epoch " << e);
  // Weights of magnitude ~1 after 9 Adam steps: float32's rounding of the two computations.
  BOOST_TEST(largest_difference(model->get_weights(), tensors_of(expected["weights"])) <= 5e-6);
  // Saved again, the flags come back.
  model->save((dir / "frozen.keras").string());
  const auto again = nn::load_model((dir / "frozen.keras").string());
  BOOST_TEST(!again->tracked_layers()[0]->trainable());
  BOOST_TEST(again->tracked_layers()[2]->trainable());
}

BOOST_AUTO_TEST_CASE(freezing_a_model_or_a_layer_after_training_retraces_the_step) {
  const auto x = dt::random_normal<float>(dt::Shape{8, 3}, {.seed = 1});
  const auto y = dt::random_normal<float>(dt::Shape{8, 2}, {.seed = 2});
  const nn::Dense base(4, {.input_dim = 3, .activation = nn::Activation::tanh, .name = "base"});
  nn::Sequential model({base, nn::Dense(2, {.name = "head"})}, "m");
  model.compile("mse", nn::optimizers::SGD{.learning_rate = 0.1});
  (void)model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0});  // traced with every variable
  base.set_trainable(false);
  BOOST_TEST(model.trainable_variables().size() == 2u);
  const auto kernel = base.impl()->variables()[0].value().to_vector();
  const auto head = model.layers()[1]->variables()[0].value().to_vector();
  (void)model.fit(x, y, {.epochs = 1, .batch_size = 4, .verbose = 0});
  BOOST_TEST(base.impl()->variables()[0].value().to_vector() == kernel);  // not trained: the step was traced again
  BOOST_TEST(model.layers()[1]->variables()[0].value().to_vector() != head);
  model.set_trainable(false);
  BOOST_TEST(model.trainable_variables().empty());
  BOOST_TEST(!model.layers()[1]->trainable());
  model.set_trainable(true);
  BOOST_TEST(model.trainable_variables().size() == 4u);
  // A frozen model inside another: none of its variables train there.
  const auto input = nn::Input({3});
  nn::Model outer(input, nn::Dense(1, {.name = "top"})(model(input)));
  model.set_trainable(false);
  BOOST_TEST(outer.trainable_variables().size() == 2u);
}

namespace {
/// A loss of the program's own: Keras has no config for it.
struct Halved {
  nn::Reduction reduction = nn::Reduction::AUTO;
  static constexpr std::string_view name = "halved";
  [[nodiscard]] dt::Tensor<float> per_example(const dt::Tensor<float>& t, const dt::Tensor<float>& p) const {
    return dt::reduce_mean(dt::mul(dt::square(dt::sub(p, t)), dt::scalar<float>(0.5f)), -1);
  }
};
}  // namespace

BOOST_AUTO_TEST_CASE(a_loss_of_the_programs_own_saves_without_a_compile_config_and_says_so) {
  auto model = nn::Sequential({nn::Dense(2, {.input_dim = 3})}, "own");
  model.compile(Halved{}, "adam");
  std::vector<std::string> warnings;
  {
    const dt::ScopedLogSink sink([&](dt::LogSeverity, std::string_view message) { warnings.emplace_back(message); });
    model.save((dir / "own.keras").string());
  }
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(warnings[0].find("saved without its compile config: Keras has no config for the loss halved") !=
             std::string::npos);
  BOOST_TEST(!nn::load_model((dir / "own.keras").string())->compiled());
}

BOOST_AUTO_TEST_SUITE_END()
