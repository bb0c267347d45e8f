#pragma once
/// @file backup_and_restore.hpp
/// @brief Keras's BackupAndRestore: fit backs up its training state at every epoch's end (or every
/// so many batches), and a fit that finds a backup, in a relaunched program, restores it and goes
/// on from there instead of starting again.
///
///     nn::callbacks::BackupAndRestore backup{.backup_dir = "/shared/run7/backup"};
///     model.fit(data, {.epochs = 50, .callbacks = {backup}});  // killed at epoch 31? relaunch it
///
/// What a backup holds, written by the chief (Model::is_chief) into `backup_dir`:
///
///     training_metadata.json         {"epoch": 31, "step": 0, "weights": "epoch-31-step-0.weights.h5",
///                                     "global_seed": 7, "global_sequence": 12}
///     epoch-31-step-0.weights.h5     the model's weights and its optimizer's state (weights.hpp)
///
/// The epoch and the batch of it to resume at, the weights, the optimizer's step count, slots and
/// learning rate, and where the global random sequence stood (random::global_state). Each file is
/// written beside its place and renamed into it, the metadata last: a process killed at any moment
/// leaves the previous backup or the new one, never a mixture. Every worker of a multi-worker
/// training restores from the same folder, which must be on a file system they all see.
///
/// A relaunch of the same program resumes **bit for bit** on CPUs: fit moves its data on to where
/// the interrupted run was (Note [Resuming] in training_loop.hpp), and each step's randomness
/// follows from the optimizer's step count. Differences from Keras 3: a backup made every
/// `save_freq` batches resumes at that batch (TensorFlow 2's behaviour; Keras 3 restarts the
/// epoch), a save due at an epoch's last batch waits for the epoch's end (so a resume never starts
/// at an epoch with no batch left), and at the end of training only the backup's own files are
/// deleted, with the folder if it is then empty (Keras deletes the folder with whatever it holds).
/// `save_freq = False` (Keras's preemption checkpointing) is not offered.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/nn/callback.hpp"
#include "devtensor/nn/callback_utils.hpp"
#include "devtensor/nn/model.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/random.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use
#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <vector>
#endif

namespace devtensor {
namespace nn {
namespace callbacks {

/// Backs up the training state and restores it when fit starts again (Keras's BackupAndRestore).
/// The model must be built (given its input shape) before fit, as in Keras.
struct BackupAndRestore {
  std::string backup_dir;
  /// "epoch" (at every epoch's end), or every so many batches.
  SaveFrequency save_freq = "epoch";
  /// Also keeps the backup before the latest, restored when the latest cannot be read.
  bool double_checkpoint = false;
  /// Deletes the backup when fit ends (not when it is interrupted).
  bool delete_checkpoint = true;

  /// What one backup says (training_metadata.json).
  struct Backup {
    ResumePoint point;
    std::string weights;  // the weights file's name, in backup_dir
    random::GlobalState rng;
  };
  struct State {
    Model* model = nullptr;
    CallbackParams params;
    int epoch = 0;
    callbacks_detail::BatchCounter batches;
    bool save_at_epoch_end = false;
    std::optional<ResumePoint> restored;
    std::int64_t saves = 0;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  /// Where the latest fit resumed (nullopt: it found no backup and started afresh).
  [[nodiscard]] std::optional<ResumePoint> restored() const noexcept { return state->restored; }
  /// The backups this process wrote (0 on every worker but the chief).
  [[nodiscard]] std::int64_t saves() const noexcept { return state->saves; }

  /// @throws InvalidArgumentError for an empty backup_dir (Keras's text); UnimplementedError
  /// without the hdf5 component.
  void set_model(Model& model);
  void set_params(const CallbackParams& params) { state->params = params; }
  /// Restores the backup, if there is one. @throws InvalidArgumentError for a model that is not
  /// built (Keras's text) or a backup that does not fit the model; DataLossError for a damaged
  /// backup (when double_checkpoint has no readable older one).
  void on_train_begin(const Logs&);
  void on_epoch_begin(int epoch, const Logs&) { state->epoch = epoch; }
  void on_train_batch_end(std::int64_t batch, const BatchLogs&);
  void on_epoch_end(int epoch, const Logs&);
  void on_train_end(const Logs&);

  /// Reads a training_metadata.json. @throws NotFoundError for a missing file, DataLossError for
  /// one that is not what save writes.
  static Backup read_metadata(const std::string& path);

 private:
  void save(ResumePoint point) const;
  bool restore_from(const std::string& metadata) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

namespace backup_detail {
inline constexpr const char* kMetadata = "training_metadata.json";
inline constexpr const char* kPreviousMetadata = "training_metadata.json.bkp";

/// The JSON of a backup's metadata: one flat object, numbers as exact integers.
inline std::string to_json(const BackupAndRestore::Backup& b) {
  return "{\"epoch\": " + std::to_string(b.point.epoch) + ", \"step\": " + std::to_string(b.point.step) +
         ", \"weights\": \"" + b.weights +
         "\", \"global_seed\": " + (b.rng.seed ? std::to_string(*b.rng.seed) : std::string("null")) +
         ", \"global_sequence\": " + std::to_string(b.rng.next) + "}\n";
}

/// The error for a backup file that is not what save writes.
inline DataLossError damaged(const std::string& path, const std::string& what) {
  return DataLossError("BackupAndRestore: " + path + " is damaged (" + what +
                       "); delete the backup folder to start the training afresh");
}

/// A flat JSON object of unsigned integers, null and strings without escapes (what to_json
/// writes) as its keys' texts. @throws DataLossError naming `path` for anything else.
inline std::map<std::string, std::string> parse_flat_object(const std::string& text, const std::string& path) {
  const auto damaged = [&](const std::string& what) { return backup_detail::damaged(path, what); };
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  const auto expect = [&](char c) {
    skip_space();
    if (i >= text.size() || text[i] != c)
      throw damaged(std::string("expected '") + c + "' at offset " + std::to_string(i));
    ++i;
  };
  const auto string_at = [&] {
    expect('"');
    const auto end = text.find('"', i);
    if (end == std::string::npos) throw damaged("a string without its closing quote");
    std::string out = text.substr(i, end - i);
    if (out.find('\\') != std::string::npos) throw damaged("an escaped string");
    i = end + 1;
    return out;
  };
  std::map<std::string, std::string> out;
  expect('{');
  skip_space();
  if (i < text.size() && text[i] == '}')
    ++i;
  else
    for (;;) {
      const std::string key = string_at();
      expect(':');
      skip_space();
      if (i < text.size() && text[i] == '"') {
        out[key] = string_at();
      } else {
        const std::size_t begin = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) != 0)) ++i;
        out[key] = text.substr(begin, i - begin);
        if (out[key].empty()) throw damaged("no value for \"" + key + "\"");
      }
      skip_space();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      expect('}');
      break;
    }
  skip_space();
  if (i != text.size()) throw damaged("text after the object");
  return out;
}
}  // namespace backup_detail

DEVTENSOR_DEFINITION std::shared_ptr<BackupAndRestore::State> BackupAndRestore::new_state() {
  return std::make_shared<State>();
}

DEVTENSOR_DEFINITION BackupAndRestore::Backup BackupAndRestore::read_metadata(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError("BackupAndRestore: cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const auto fields = backup_detail::parse_flat_object(text.str(), path);
  const auto damaged = [&](const std::string& what) { return backup_detail::damaged(path, what); };
  const auto field = [&](const char* key) -> const std::string& {
    const auto it = fields.find(key);
    if (it == fields.end()) throw damaged(std::string("no \"") + key + "\"");
    return it->second;
  };
  const auto number = [&](const char* key, std::uint64_t max) {
    const std::string& value = field(key);
    std::uint64_t n = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (error != std::errc() || end != value.data() + value.size() || n > max)
      throw damaged(std::string("\"") + key + "\" is " + value + ", not an integer in [0, " + std::to_string(max) +
                    "]");
    return n;
  };
  Backup b;
  b.point.epoch = static_cast<int>(number("epoch", 1u << 30));
  b.point.step = static_cast<std::int64_t>(number("step", std::uint64_t{1} << 62));
  b.weights = field("weights");
  // A name in the folder, never a path: a damaged (or planted) file cannot point elsewhere.
  if (b.weights.empty() || b.weights.find('/') != std::string::npos || b.weights.find('\\') != std::string::npos ||
      b.weights == "." || b.weights == "..")
    throw damaged("\"weights\" is \"" + b.weights + "\", not a file name");
  if (field("global_seed") != "null") b.rng.seed = number("global_seed", ~std::uint64_t{0});
  b.rng.next = number("global_sequence", ~std::uint64_t{0});
  return b;
}

DEVTENSOR_DEFINITION void BackupAndRestore::set_model(Model& model) {
  if (backup_dir.empty())
    throw InvalidArgumentError(
        "Empty `backup_dir` argument passed; give BackupAndRestore a folder of its own, on a "
        "file system every worker sees");
  if (!weights_io::hooks().save)
    throw UnimplementedError(
        "BackupAndRestore writes weights files, which need the HDF5 component: link "
        "devtensor::hdf5 (find_package(devtensor COMPONENTS hdf5)) and include "
        "<devtensor/hdf5/weights.hpp>");
  state->model = &model;
}

DEVTENSOR_DEFINITION bool BackupAndRestore::restore_from(const std::string& metadata) const {
  namespace fs = std::filesystem;
  if (!fs::exists(metadata)) return false;
  const Backup b = read_metadata(metadata);
  state->model->load_weights_now((fs::path(backup_dir) / b.weights).string());  // checked whole before any change
  random::set_global_state(b.rng);
  state->model->set_resume_point(b.point);
  state->restored = b.point;
  // The uninterrupted run had just saved here: its batch count starts again from this batch.
  state->batches = {};
  if (b.point.step > 0) state->batches.last = b.point.step - 1;
  return true;
}

DEVTENSOR_DEFINITION void BackupAndRestore::on_train_begin(const Logs&) {
  namespace fs = std::filesystem;
  if (!state->model->built())
    throw InvalidArgumentError(
        "To use the BackupAndRestore callback, you model must be built before you call "
        "`fit()`. Model " +
        state->model->name() +
        " is unbuilt. You can build it "
        "beforehand by calling it on a batch of data.");
  state->restored.reset();
  state->batches = {};
  state->save_at_epoch_end = false;
  const fs::path dir(backup_dir);
  try {
    restore_from((dir / backup_detail::kMetadata).string());
  } catch (const Error&) {
    // The latest backup cannot be read (a damaged disk, a file cut short): the one before it.
    if (!double_checkpoint || !restore_from((dir / backup_detail::kPreviousMetadata).string())) throw;
    log(LogSource::python_logger, LogSeverity::warning,
        "BackupAndRestore: the latest backup in " + backup_dir + " could not be read; restored the one before it");
  }
}

DEVTENSOR_DEFINITION void BackupAndRestore::on_train_batch_end(std::int64_t batch, const BatchLogs&) {
  if (save_freq.batches == 0 || !state->batches.due(batch, save_freq.batches)) return;
  // At an epoch's last batch, the save waits for the epoch's end (its validation and callbacks).
  if (state->params.steps > 0 && batch + 1 >= state->params.steps)
    state->save_at_epoch_end = true;
  else
    save({state->epoch, batch + 1});
}

DEVTENSOR_DEFINITION void BackupAndRestore::on_epoch_end(int epoch, const Logs&) {
  if (save_freq.batches == 0 || state->save_at_epoch_end) save({epoch + 1, 0});
  state->save_at_epoch_end = false;
}

DEVTENSOR_DEFINITION void BackupAndRestore::save(ResumePoint point) const {
  namespace fs = std::filesystem;
  if (!state->model->is_chief()) return;
  const fs::path dir(backup_dir);
  fs::create_directories(dir);
  const Backup backup{point,
                      "epoch-" + std::to_string(point.epoch) + "-step-" + std::to_string(point.step) + ".weights.h5",
                      random::global_state()};
  callbacks_detail::write_atomically((dir / backup.weights).string(),
                                     [&](const std::string& temporary) { state->model->save_weights_now(temporary); });
  const fs::path latest = dir / backup_detail::kMetadata;
  std::vector<std::string> kept{backup.weights};
  const auto write_text = [](const fs::path& path, const std::string& text) {
    callbacks_detail::write_atomically(path.string(), [&](const std::string& temporary) {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << text;
      out.close();
      if (!out) throw UnavailableError("BackupAndRestore: cannot write " + temporary + " (is the disk full?)");
    });
  };
  if (double_checkpoint && fs::exists(latest)) {
    // The latest becomes the fallback: copied, so that a backup is named at every moment.
    try {
      const Backup previous = read_metadata(latest.string());
      write_text(dir / backup_detail::kPreviousMetadata, backup_detail::to_json(previous));
      kept.push_back(previous.weights);
    } catch (const DataLossError&) {  // a damaged latest is no fallback
    }
  }
  write_text(latest, backup_detail::to_json(backup));
  // Weights files no metadata names any longer (written by an earlier save, or left by a crash).
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool weights = name.size() > 11 && name.rfind("epoch-", 0) == 0 && name.ends_with(".weights.h5");
    if (weights && std::find(kept.begin(), kept.end(), name) == kept.end()) {
      std::error_code ignored;
      fs::remove(entry.path(), ignored);
    }
  }
  ++state->saves;
}

DEVTENSOR_DEFINITION void BackupAndRestore::on_train_end(const Logs&) {
  namespace fs = std::filesystem;
  if (!delete_checkpoint || !state->model->is_chief()) return;
  const fs::path dir(backup_dir);
  std::error_code ignored;
  if (!fs::is_directory(dir, ignored)) return;
  for (const auto& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    if (name == backup_detail::kMetadata || name == backup_detail::kPreviousMetadata ||
        (name.rfind("epoch-", 0) == 0 && name.ends_with(".weights.h5")))
      fs::remove(entry.path(), ignored);
  }
  fs::remove(dir, ignored);  // only when it is empty now
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace callbacks
}  // namespace nn
}  // namespace devtensor
