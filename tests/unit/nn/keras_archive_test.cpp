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
double largest_difference(const std::vector<dt::Tensor<float>>& got, const std::vector<dt::Tensor<float>>& want) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    BOOST_TEST_REQUIRE(got[i].shape() == want[i].shape());
    const auto a = got[i].to_vector(), b = want[i].to_vector();
    for (std::size_t j = 0; j < a.size(); ++j) worst = std::max(worst, static_cast<double>(std::abs(a[j] - b[j])));
  }
  return worst;
}

std::vector<std::vector<float>> values_of(const nn::Model& model) {
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
  return nn::Sequential({nn::Rescaling(0.5, {.offset = 0.25, .input_shape = nn::PartialShape{8, 8, 1}}),
                         nn::Conv2D(4, 3, {.padding = "same", .activation = nn::Activation::relu}),
                         nn::BatchNormalization(), nn::MaxPooling2D(),
                         nn::DepthwiseConv2D(3, {.padding = "same", .depth_multiplier = 2}), nn::ZeroPadding2D(1),
                         nn::AveragePooling2D(2), nn::Reshape({3, 24}), nn::Flatten(), nn::Dropout(0.25),
                         nn::Dense(10), nn::ActivationLayer(nn::Activation::softmax)},
                        "convolutional");
}

/// Writes `model`'s archive and its predictions on `inputs` where DEVTENSOR_KERAS_ARCHIVE_OUT says
/// (for tests/reference/keras_archive.py check: Keras loads devtensor's archives).
void export_for_keras(nn::Model& model, const std::string& name, const std::vector<dt::Tensor<float>>& inputs) {
  const char* out = std::getenv("DEVTENSOR_KERAS_ARCHIVE_OUT");
  if (!out) return;
  model.save((fs::path(out) / (name + ".keras")).string());
  const auto to_json = [](const dt::Tensor<float>& t) {
    Json flat = t.to_vector();
    return Json{{"shape", t.shape().dims_vector()}, {"values", flat}};
  };
  Json doc{{"inputs", Json::array()}, {"outputs", Json::array()}};
  for (const auto& x : inputs) doc["inputs"].push_back(to_json(x));
  for (const auto& y : model.predict(inputs)) doc["outputs"].push_back(to_json(y));
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
      BOOST_TEST(largest_difference(outputs, tensors_of(expected["outputs"])) <= 1e-6);
      BOOST_TEST(model->name() == name);
      BOOST_TEST(model->compiled() == false);  // the compile config is read past
    }
  }
  // A Sequential comes back as one (its summary and weights files list no Input); names as saved.
  const auto seq = nn::load_model((kArchives / "seq.keras").string());
  BOOST_TEST(dynamic_cast<nn::Sequential*>(seq.get()) != nullptr);
  BOOST_TEST(seq->count_params() == 4 * 8 + 8 + 8 * 3 + 3);
  const auto two = nn::load_model((kArchives / "two_heads.keras").string());
  std::vector<std::string> names;
  for (const auto& layer : two->layers()) names.push_back(layer->name());
  BOOST_TEST(names == std::vector<std::string>({"a", "b", "project", "da", "shared", "concatenate", "add", "head", "reg"}),
             boost::test_tools::per_element());
  BOOST_TEST(two->inputs().size() == 2u);
  BOOST_TEST(two->outputs().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_deflated_archive_loads_as_the_stored_one) {
  const auto stored = nn::load_model((kArchives / "seq.keras").string());
  const auto deflated = nn::load_model((kArchives / "hostile" / "deflated.keras").string());
  BOOST_TEST(values_of(*deflated) == values_of(*stored));
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
      BOOST_TEST(layer["inbound_nodes"][1]["args"][0]["config"]["keras_history"] == Json::parse(R"(["project", 0, 0])"));
      BOOST_TEST(layer["build_config"]["input_shape"] == Json::parse("[null, 3]"));
      BOOST_TEST(layer["config"]["activation"] == "tanh");
    }
    if (layer["name"] == "add") {
      BOOST_TEST(layer["inbound_nodes"][0]["args"][0].size() == 2u);
      BOOST_TEST(layer["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"] == Json::parse(R"(["shared", 1, 0])"));
    }
  }
  // Loaded back: the same layers, the same weights, the same predictions, bit for bit.
  const auto loaded = nn::load_model(file.string());
  BOOST_TEST(values_of(*loaded) == values_of(model));
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
  BOOST_TEST(values_of(*loaded) == values_of(model));
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
  BOOST_TEST(values_of(*loaded) == values_of(model));
}

BOOST_AUTO_TEST_CASE(to_json_and_model_from_json_round_trip_the_architecture) {
  auto model = two_heads();
  const std::string text = model.to_json();
  nn::clear_session();
  const auto rebuilt = nn::model_from_json(text);
  BOOST_TEST(rebuilt->to_json() == text);
  BOOST_TEST(rebuilt->count_params() == model.count_params());
  BOOST_TEST(values_of(*rebuilt) != values_of(model));  // fresh weights, as Keras's model_from_json
  // Keras's own config text, rebuilt and written again, keeps every layer's class and arguments.
  const Json keras = Json::parse(nn::saving::read_zip(kArchives / "conv.keras").text("config.json"));
  const Json again = Json::parse(nn::model_from_json(keras.dump())->to_json());
  BOOST_TEST_REQUIRE(again["config"]["layers"].size() == keras["config"]["layers"].size());
  for (std::size_t i = 0; i < keras["config"]["layers"].size(); ++i) {
    Json want = keras["config"]["layers"][i], got = again["config"]["layers"][i];
    // Keras's dtype policies carry a "shared_object_id" (a Python id of the policy it shares).
    if (want["config"].contains("dtype") && want["config"]["dtype"].is_object()) want["config"]["dtype"].erase("shared_object_id");
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
  DEVTENSOR_CHECK_THROW_WITH(nn::saving::read_zip(kArchives / "seq.keras", {.max_members = 2}), dt::InvalidArgumentError,
                             "holds 3 members, more than the 2");
  // Contents: a config that is not JSON, layers devtensor does not have (all named), weights that do not fit.
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("not_json.keras")), dt::InvalidArgumentError,
                             "not_json.keras's config.json is not JSON");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("unknown_layers.keras")), dt::UnimplementedError,
                             "the model uses 2 layer(s) devtensor does not have: LSTM (\"dense\"), Embedding (\"dense_1\")");
  DEVTENSOR_CHECK_THROW_WITH(nn::load_model(hostile("wrong_kernel.keras")), dt::InvalidArgumentError,
                             "/layers/dense/vars/0 has shape (4, 8), but variable dense/kernel:0 has shape (4, 9)");
}

BOOST_AUTO_TEST_CASE(configs_that_are_not_keras_are_refused_with_typed_errors) {
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json("[1, 2"), dt::InvalidArgumentError, "is not JSON");
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
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 4, 4, 3]}},
      {"class_name": "Conv2D", "config": {"name": "c", "filters": 6, "kernel_size": 3, "strides": 1, "groups": 3}}]}})"),
                             dt::UnimplementedError, "layer \"c\" (Conv2D) sets \"groups\" to 3");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": "eight"}}]}})"),
                             dt::InvalidArgumentError, "layer \"d\" (Dense) is not Keras's: \"units\" is not an integer");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Rescaling", "config": {"name": "r", "scale": 1e300}}]}})"),
                             dt::InvalidArgumentError, "\"scale\" is 1e+300, beyond float32's range");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 4294967296}}]}})"),
                             dt::InvalidArgumentError, "\"units\" is 4294967296, beyond +-2^31");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 1048576, 1048576, 2]}},
      {"class_name": "Dense", "config": {"name": "d", "units": 2}}]}})"),
                             dt::InvalidArgumentError, "has more than 2^40 elements");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "InputLayer", "config": {"batch_shape": [null, 65536]}},
      {"class_name": "Dense", "config": {"name": "d", "units": 65536}}]}})"),
                             dt::InvalidArgumentError, "layer \"d\" (Dense) would create 4295032832 weights, beyond the 2147483648");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 2, "activation": "gelu"}}]}})"),
                             dt::UnimplementedError, "uses the activation \"gelu\", which devtensor does not have");
  DEVTENSOR_CHECK_THROW_WITH((void)nn::model_from_json(R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
      {"class_name": "Dense", "config": {"name": "d", "units": 2, "dtype": {"class_name": "DTypePolicy",
                                                                            "config": {"name": "mixed_float16"}}}}]}})"),
                             dt::UnimplementedError, "computes in mixed_float16");
}

BOOST_AUTO_TEST_SUITE_END()
