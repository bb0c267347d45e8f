#pragma once
/// @file keras_archive.hpp
/// @brief Keras 3's `.keras` model files both ways: the bodies of Model::save and to_json,
/// nn::load_model and model_from_json (the devtensor::keras_archive component, whose object,
/// src/devtensor_keras_archive.cpp, compiles this header once per build tree; a program includes
/// it only to call what it adds: load_archive from memory, read_zip).
///
///     model.save("m.keras");                        // what keras.models.load_model reads
///     auto loaded = nn::load_model("m.keras");      // a model Keras (or devtensor) saved
///     auto y = loaded->predict(x);
///
/// The archive is Keras's: a zip of `metadata.json` ({"keras_version", "date_saved"}: the Keras
/// version whose format devtensor writes, 3.15.1), `config.json` (nn/model_config.hpp) and
/// `model.weights.h5` (the layout of hdf5/weights.hpp), members stored uncompressed as Keras
/// writes them. Loading reads the archive into memory (saving/zip_archive.hpp: no member name is
/// ever used as a path, sizes are bounded before allocation), rebuilds the model from its config,
/// then checks the weights file whole against the model before it sets any variable. Every failure
/// is typed and names the file: NotFoundError (no such file), InvalidArgumentError (not a zip
/// archive, a refused member, a config that is not JSON or not Keras's, weights that do not fit
/// the model), UnimplementedError (layers or arguments devtensor does not have, all of them named).
/// A compiled model's archive holds its compile config (nn/compile_config.hpp) and its optimizer's
/// state (iterations, learning rate, slots: hdf5/weights.hpp), as Keras's does; loading compiles the
/// model alike and restores that state, so training resumes where it was saved (a model saved
/// before its first step restores its count and rate only). `compile` false: the model comes back
/// uncompiled, its compile config and optimizer state not read (Keras's compile=False). Not read or
/// written: assets, weights in `.npz` form.

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "devtensor/core/error.hpp"
#include "devtensor/hdf5/file.hpp"
#include "devtensor/hdf5/weights.hpp"
#include "devtensor/nn/compile_config.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/model_config.hpp"
#include "devtensor/saving/zip_archive.hpp"

namespace devtensor::nn::saving {

/// The Keras version whose archive format devtensor writes (metadata.json's keras_version).
inline constexpr const char* kKerasFormatVersion = "3.15.1";

/// Writes `model` to a `.keras` archive at `path` (replaced whole, or left as it was on failure).
/// @throws InvalidArgumentError without the `.keras` extension (Keras's text),
/// FailedPreconditionError before the model is built, UnavailableError when it cannot be written.
void save_archive(const Model& model, const std::string& path);
/// The model in the archive at `path`, with its weights; compiled as it was saved, with its
/// optimizer's state, when `compile`.
[[nodiscard]] std::shared_ptr<Model> load_archive(const std::string& path, bool compile = true);
/// The same from an archive in memory (`source` names it in errors).
[[nodiscard]] std::shared_ptr<Model> load_archive(const std::vector<unsigned char>& bytes, const std::string& source,
                                                  bool compile = true);
/// The same from an archive's members.
[[nodiscard]] std::shared_ptr<Model> load_contents(const ZipContents& contents, const std::string& source,
                                                   bool compile = true);
/// The model's config as JSON text (Keras's model.to_json()).
[[nodiscard]] std::string config_json(const Model& model);
/// The model a config's JSON text describes, with fresh weights, compiled when the config has a
/// compile config (as Keras's model_from_json).
[[nodiscard]] std::shared_ptr<Model> model_of_json(const std::string& json);

// ---------------------------------------------------------------------------------------------
// Definitions: only programs that use the component include this header, so they are inline.

namespace archive_detail {
inline std::string date_saved() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &local);  // Keras's format
  return text;
}

inline std::vector<unsigned char> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

/// Compiles `model` as the config's compile_config says (nothing for none). `source` begins errors.
inline void compile_as_saved(Model& model, const Json& config, const std::string& source) {
  if (!config.is_object() || !config.contains("compile_config")) return;
  std::vector<std::string> outputs;
  for (const auto& output : model.outputs()) outputs.push_back(output.node()->layer->name());
  std::optional<CompileCall> call;
  try {
    call = compile_from_config(config["compile_config"], outputs);
    if (call) model.compile(std::move(call->losses), std::move(*call->optimizer), std::move(call->options));
  } catch (const UnimplementedError& e) {
    throw UnimplementedError(source + ": " + e.what());
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(source + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(source + ": the compile config is not what Keras writes: " + e.what());
  }
}

inline Json parse(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // a parse error, or a number beyond a double (out_of_range)
    throw InvalidArgumentError(what + " is not JSON: " + e.what());
  }
}
}  // namespace archive_detail

inline void save_archive(const Model& model, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.size() < 6 || path.compare(path.size() - 6, 6, ".keras") != 0)
    throw InvalidArgumentError("Invalid `filepath` argument: expected a `.keras` extension. Received: filepath=" +
                               path);
  if (!model.built())
    throw FailedPreconditionError("model.save: the model \"" + model.name() +
                                  "\" has not been built yet, so it has no "
                                  "weights to save. Call it on a batch of data first.");
  const Json config = model_to_config(model);
  const Json metadata{{"keras_version", kKerasFormatVersion}, {"date_saved", archive_detail::date_saved()}};
  hdf5::Group weights = hdf5::create_in_memory();
  weights_io::write_model(model, weights, /*with_optimizer=*/true);
  std::vector<ZipMember> members{{"metadata.json", archive_detail::bytes_of(metadata.dump())},
                                 {"config.json", archive_detail::bytes_of(config.dump())},
                                 {"model.weights.h5", hdf5::file_image(weights)}};
  // Written beside the target, then renamed over it: a reader never sees half an archive.
  const fs::path target(path);
  if (std::error_code ec; target.has_parent_path() && !fs::is_directory(target.parent_path(), ec))
    throw UnavailableError("cannot create " + path + ": its folder " + target.parent_path().string() +
                           " does not exist (check that its folder exists and is writable)");
  const fs::path temporary =
      target.parent_path() / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
  try {
    write_zip(temporary, members);
    fs::rename(temporary, target);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

inline std::shared_ptr<Model> load_archive(const std::string& path, bool compile) {
  return load_contents(read_zip(path), path, compile);
}

inline std::shared_ptr<Model> load_archive(const std::vector<unsigned char>& bytes, const std::string& source,
                                           bool compile) {
  return load_contents(read_zip(bytes, source), source, compile);
}

inline std::shared_ptr<Model> load_contents(const ZipContents& contents, const std::string& path, bool compile) {
  if (contents.has("model.weights.npz") && !contents.has("model.weights.h5"))
    throw UnimplementedError(path +
                             " holds its weights as model.weights.npz; devtensor reads model.weights.h5 "
                             "(save with Keras's default weights_format=\"h5\")");
  const Json config = archive_detail::parse(contents.text("config.json"), path + "'s config.json");
  // The weights file holds every weight as float32: its size bounds what the config may allocate.
  const auto& weights_bytes = contents.at("model.weights.h5");
  std::shared_ptr<Model> model;
  try {
    model = model_from_config(config, static_cast<std::int64_t>(weights_bytes.size() / sizeof(float)),
                              /*fresh_weights=*/false);
  } catch (const UnimplementedError& e) {
    throw UnimplementedError("load_model: " + path + ": " + e.what());
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError("load_model: " + path + ": " + e.what());
  }
  if (compile) archive_detail::compile_as_saved(*model, config, "load_model: " + path);
  const hdf5::Group weights = hdf5::open_image(weights_bytes, path + "'s model.weights.h5", /*borrow=*/true);
  weights_io::read_model(*model, weights, "load_model: " + path + "'s model.weights.h5");
  return model;
}

inline std::string config_json(const Model& model) { return model_to_config(model).dump(); }

inline std::shared_ptr<Model> model_of_json(const std::string& json) {
  const Json config = archive_detail::parse(json, "model_from_json's argument");
  auto model = model_from_config(config);
  archive_detail::compile_as_saved(*model, config, "model_from_json");
  return model;
}

/// Installs the bodies of Model::save, to_json, nn::load_model and model_from_json (once per
/// program, at start-up).
inline const bool installed = [] {
  hooks().save = &save_archive;
  hooks().to_json = &config_json;
  hooks().load = [](const std::string& path, bool compile) { return load_archive(path, compile); };
  hooks().from_json = &model_of_json;
  return true;
}();

}  // namespace devtensor::nn::saving
