#pragma once
/// @file callbacks.hpp
/// @brief Keras 3's callbacks (keras.callbacks) with its defaults and messages: EarlyStopping,
/// ModelCheckpoint, ReduceLROnPlateau, LearningRateScheduler, CSVLogger, TerminateOnNaN (History,
/// ProgbarLogger and LambdaCallback are callback.hpp's).
///
///     nn::callbacks::EarlyStopping early{.monitor = "val_loss", .patience = 3, .restore_best_weights = true};
///     model.fit(x, y, {.epochs = 100, .validation_split = 0.2, .callbacks = {early}});
///     early.stopped_epoch();  // copies share their state
///
/// Each is an aggregate of Keras's arguments (designated initializers) and a `state` its copies
/// share. Messages go where fit's progress goes (FitOptions::out), warnings to the log. Under a
/// strategy every process runs the callbacks on the same all-reduced logs, so all decide alike
/// (stopping, reducing the rate); only the chief (Model::is_chief) writes files, each to a
/// temporary file renamed into place, so a crash never leaves half a checkpoint.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/nn/callback.hpp"
#include "devtensor/nn/callback_utils.hpp"
#include "devtensor/nn/model.hpp"

namespace devtensor {
namespace nn {
namespace callbacks {

/// Stops training when the monitored value has stopped improving for `patience` epochs (Keras's
/// EarlyStopping), optionally restoring the best epoch's weights at the end.
struct EarlyStopping {
  std::string monitor = "val_loss";
  double min_delta = 0.0;
  int patience = 0;
  int verbose = 0;
  std::string mode = "auto";
  /// The value to beat: waiting only restarts on epochs better than it too.
  std::optional<double> baseline = std::nullopt;
  bool restore_best_weights = false;
  /// Epochs before this one are not monitored (a warm-up).
  int start_from_epoch = 0;

  struct State {
    Model* model = nullptr;
    CallbackParams params;
    callbacks_detail::Monitor monitor;
    int wait = 0, stopped_epoch = 0, best_epoch = 0;
    std::optional<double> best;
    std::optional<std::vector<Tensor<float>>> best_weights;
  };
  /// Shared by copies; read it through the accessors.
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  /// The epoch (0-based) at which training was stopped; 0 when it was not.
  [[nodiscard]] int stopped_epoch() const noexcept { return state->stopped_epoch; }
  [[nodiscard]] int best_epoch() const noexcept { return state->best_epoch; }
  [[nodiscard]] std::optional<double> best() const noexcept { return state->best; }
  [[nodiscard]] int wait() const noexcept { return state->wait; }

  void set_model(Model& model);
  void set_params(const CallbackParams& params) { state->params = params; }
  void on_train_begin(const Logs&);
  void on_epoch_end(int epoch, const Logs& logs);
  void on_train_end(const Logs&);
};

/// Saves the model's weights (a `.weights.h5` file; whole `.keras` models are not written yet)
/// every epoch, every `save_freq` batches, or only when the monitored value improves (Keras's
/// ModelCheckpoint). `filepath` may hold Keras's fields: `"ckpt/e{epoch:02d}-{val_loss:.2f}.weights.h5"`.
struct ModelCheckpoint {
  using SaveFrequency = callbacks::SaveFrequency;

  std::string filepath;
  std::string monitor = "val_loss";
  int verbose = 0;
  bool save_best_only = false;
  bool save_weights_only = false;
  std::string mode = "auto";
  SaveFrequency save_freq = "epoch";
  /// The best value so far before training (only better values are saved with save_best_only).
  std::optional<double> initial_value_threshold = std::nullopt;

  struct State {
    Model* model = nullptr;
    CallbackParams params;
    callbacks_detail::Monitor monitor;
    std::optional<double> best;
    bool started = false;
    int epoch = 0;
    callbacks_detail::BatchCounter batches;
    std::vector<std::string> written;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  /// The best monitored value saved so far.
  [[nodiscard]] std::optional<double> best() const noexcept { return state->best; }
  /// The files written, in order (on the chief).
  [[nodiscard]] const std::vector<std::string>& files_written() const noexcept { return state->written; }

  /// @throws InvalidArgumentError for a filepath Keras refuses (Keras's texts);
  /// UnimplementedError without save_weights_only (whole models) or without the hdf5 component.
  void set_model(Model& model);
  void set_params(const CallbackParams& params) { state->params = params; }
  void on_train_begin(const Logs&);
  void on_epoch_begin(int epoch, const Logs&) { state->epoch = epoch; }
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs);
  void on_epoch_end(int epoch, const Logs& logs);

 private:
  void save(int epoch, std::optional<std::int64_t> batch, const Logs& logs);
};

/// Multiplies the learning rate by `factor` when the monitored value has not improved for
/// `patience` epochs, then waits `cooldown` epochs (Keras's ReduceLROnPlateau). Adds
/// "learning_rate" to the epoch's logs.
struct ReduceLROnPlateau {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int patience = 10;
  int verbose = 0;
  std::string mode = "auto";
  double min_delta = 1e-4;
  int cooldown = 0;
  double min_lr = 0.0;

  struct State {
    Model* model = nullptr;
    CallbackParams params;
    callbacks_detail::Monitor monitor;
    std::optional<double> best;
    int wait = 0, cooldown_counter = 0;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  /// @throws InvalidArgumentError for a factor >= 1 (Keras's text).
  void set_model(Model& model);
  void set_params(const CallbackParams& params) { state->params = params; }
  void on_train_begin(const Logs&);
  void on_epoch_end(int epoch, Logs& logs);
};

/// Sets the learning rate at the start of every epoch to `schedule(epoch, current rate)`
/// (Keras's LearningRateScheduler). Adds "learning_rate" to the epoch's logs.
struct LearningRateScheduler {
  std::function<double(int epoch, double learning_rate)> schedule;
  int verbose = 0;

  struct State {
    Model* model = nullptr;
    CallbackParams params;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  /// @throws InvalidArgumentError without a schedule.
  void set_model(Model& model);
  void set_params(const CallbackParams& params) { state->params = params; }
  /// @throws InvalidArgumentError for a rate the optimizer refuses (negative, not finite; a
  /// schedule as the optimizer's learning rate).
  void on_epoch_begin(int epoch, const Logs&);
  void on_epoch_end(int epoch, Logs& logs);
};

/// Streams every epoch's logs to a CSV file (Keras's CSVLogger): "epoch" (0-based), then the
/// logs' names sorted (with "val_" columns added, "NA", when the first epoch has none).
struct CSVLogger {
  std::string filename;
  std::string separator = ",";
  /// Append to an existing file (its header is written only if it is empty).
  bool append = false;

  struct State {
    State() = default;
    State(const State&) = delete;
    State& operator=(const State&) = delete;
    ~State() { close(); }
    void close() noexcept {
      if (file) std::fclose(file);
      file = nullptr;
    }
    Model* model = nullptr;
    std::FILE* file = nullptr;  // <cstdio>: no <fstream> for the compiled mode's users
    std::vector<std::string> keys;
    bool header = true;
    bool keys_known = false;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  void set_model(Model& model) { state->model = &model; }
  /// @throws InvalidArgumentError for a file that cannot be opened.
  void on_train_begin(const Logs&);
  void on_epoch_end(int epoch, const Logs& logs);
  void on_train_end(const Logs&);
};

/// Stops training at the first batch whose loss is NaN or infinite (Keras's TerminateOnNaN), or
/// with raise_error throws InvalidArgumentError instead.
struct TerminateOnNaN {
  bool raise_error = false;

  struct State {
    Model* model = nullptr;
    CallbackParams params;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  void set_model(Model& model) { state->model = &model; }
  void set_params(const CallbackParams& params) { state->params = params; }
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs);
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION std::shared_ptr<EarlyStopping::State> EarlyStopping::new_state() {
  return std::make_shared<State>();
}
DEVTENSOR_DEFINITION std::shared_ptr<ModelCheckpoint::State> ModelCheckpoint::new_state() {
  return std::make_shared<State>();
}
DEVTENSOR_DEFINITION std::shared_ptr<ReduceLROnPlateau::State> ReduceLROnPlateau::new_state() {
  return std::make_shared<State>();
}
DEVTENSOR_DEFINITION std::shared_ptr<LearningRateScheduler::State> LearningRateScheduler::new_state() {
  return std::make_shared<State>();
}
DEVTENSOR_DEFINITION std::shared_ptr<CSVLogger::State> CSVLogger::new_state() { return std::make_shared<State>(); }
DEVTENSOR_DEFINITION std::shared_ptr<TerminateOnNaN::State> TerminateOnNaN::new_state() {
  return std::make_shared<State>();
}

// --- EarlyStopping --------------------------------------------------------------------------

DEVTENSOR_DEFINITION void EarlyStopping::set_model(Model& model) {
  state->model = &model;
  callbacks_detail::warn_unknown_mode("EarlyStopping", mode);
}

DEVTENSOR_DEFINITION void EarlyStopping::on_train_begin(const Logs&) {  // reusable across fits, as Keras's
  state->wait = state->stopped_epoch = state->best_epoch = 0;
  state->best.reset();
  state->best_weights.reset();
}

DEVTENSOR_DEFINITION void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  auto& s = *state;
  if (!s.monitor.decided) s.monitor.decide("EarlyStopping", monitor, mode);
  const auto current = log_value(logs, monitor);
  if (!current)
    log(LogSource::python_logger, LogSeverity::warning,
        "Early stopping conditioned on metric `" + monitor +
            "` which is not available. Available metrics are: " + log_names(logs));
  if (!current || epoch < start_from_epoch) return;
  if (restore_best_weights && !s.best_weights) {  // never set: the current weights are the best
    s.best_weights = s.model->get_weights();
    s.best_epoch = epoch;
  }
  ++s.wait;
  if (s.monitor.improves(*current, s.best, min_delta)) {
    s.best = *current;
    s.best_epoch = epoch;
    if (restore_best_weights) s.best_weights = s.model->get_weights();
    // Waiting restarts only on an epoch better than the baseline too.
    if (!baseline || s.monitor.improves(*current, baseline, min_delta)) s.wait = 0;
    return;
  }
  if (s.wait >= patience && epoch > 0) {
    s.stopped_epoch = epoch;
    s.model->set_stop_training(true);
  }
}

DEVTENSOR_DEFINITION void EarlyStopping::on_train_end(const Logs&) {
  auto& s = *state;
  if (s.stopped_epoch > 0 && verbose > 0)
    s.params.stream() << "Epoch " << s.stopped_epoch + 1 << ": early stopping\n" << std::flush;
  if (restore_best_weights && s.best_weights) {
    if (verbose > 0)
      s.params.stream() << "Restoring model weights from the end of the best epoch: " << s.best_epoch + 1 << ".\n"
                        << std::flush;
    s.model->set_weights(*s.best_weights);
  }
}

// --- ModelCheckpoint ------------------------------------------------------------------------

DEVTENSOR_DEFINITION void ModelCheckpoint::set_model(Model& model) {
  const auto ends_with = [&](std::string_view suffix) {
    return filepath.size() >= suffix.size() &&
           std::string_view(filepath).substr(filepath.size() - suffix.size()) == suffix;
  };
  if (save_weights_only && !ends_with(".weights.h5"))
    throw InvalidArgumentError(
        "When using `save_weights_only=True` in `ModelCheckpoint`, the filepath provided must "
        "end in `.weights.h5` (Keras weights format). Received: filepath=" +
        filepath);
  if (!save_weights_only) {
    if (!ends_with(".keras") && !ends_with(".h5"))
      throw InvalidArgumentError(
          "The filepath provided must end in `.keras` (Keras model format). Received: filepath=" + filepath);
    throw UnimplementedError(
        "ModelCheckpoint: whole models (.keras files) are not written yet; pass "
        "save_weights_only = true and a filepath ending in .weights.h5");
  }
  if (!weights_io::hooks().save)
    throw UnimplementedError(
        "ModelCheckpoint writes weights files, which need the HDF5 component: link "
        "devtensor::hdf5 (find_package(devtensor COMPONENTS hdf5)) and include "
        "<devtensor/hdf5/weights.hpp>");
  callbacks_detail::warn_unknown_mode("ModelCheckpoint", mode);
  state->model = &model;
}

DEVTENSOR_DEFINITION void ModelCheckpoint::on_train_begin(const Logs&) {
  if (!state->started) state->best = initial_value_threshold;  // Keras keeps its best across fits
  state->started = true;
}

DEVTENSOR_DEFINITION void ModelCheckpoint::on_train_batch_end(std::int64_t batch, const BatchLogs& logs) {
  if (save_freq.batches == 0) return;
  if (!state->batches.due(batch, save_freq.batches)) return;
  save(state->epoch, batch, logs.get());
}

DEVTENSOR_DEFINITION void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  if (!state->monitor.decided && save_best_only) state->monitor.decide("ModelCheckpoint", monitor, mode);
  if (save_freq.batches == 0) save(epoch, std::nullopt, logs);
}

DEVTENSOR_DEFINITION void ModelCheckpoint::save(int epoch, std::optional<std::int64_t> batch, const Logs& logs) {
  auto& s = *state;
  const std::string path = callbacks_detail::format_path(filepath, epoch, batch, logs);
  std::ostream& out = s.params.stream();
  if (save_best_only) {
    const auto current = log_value(logs, monitor);
    if (!current) {
      log(LogSource::python_logger, LogSeverity::warning, "Can save best model only with " + monitor + " available.");
    } else {
      if (!s.monitor.decided) s.monitor.decide("ModelCheckpoint", monitor, mode);
      char best_text[64] = "None";
      if (s.best) std::snprintf(best_text, sizeof best_text, "%.5f", *s.best);
      if (!s.monitor.improves(*current, s.best, 0.0)) {
        if (verbose > 0)
          out << "\nEpoch " << epoch + 1 << ": " << monitor << " did not improve from " << best_text << "\n";
        return;
      }
      char current_text[64];
      std::snprintf(current_text, sizeof current_text, "%.5f", *current);
      if (verbose > 0)
        out << "\nEpoch " << epoch + 1 << ": " << monitor << " improved from " << best_text << " to " << current_text
            << ", saving model to " << path << "\n";
      s.best = *current;
    }
  }
  if (!save_best_only && verbose > 0) out << "\nEpoch " << epoch + 1 << ": saving model to " << path << "\n";
  if (s.model->is_chief()) {
    callbacks_detail::write_atomically(path,
                                       [&](const std::string& temporary) { s.model->save_weights_now(temporary); });
    s.written.push_back(path);
  }
  if (verbose > 0) out << "\nEpoch " << epoch + 1 << ": finished saving model to " << path << "\n" << std::flush;
}

// --- ReduceLROnPlateau ----------------------------------------------------------------------

DEVTENSOR_DEFINITION void ReduceLROnPlateau::set_model(Model& model) {
  if (factor >= 1.0)
    throw InvalidArgumentError("ReduceLROnPlateau does not support a factor >= 1.0. Received factor=" +
                               callbacks_detail::python_float(factor));
  callbacks_detail::warn_unknown_mode("ReduceLROnPlateau", mode);
  state->model = &model;
}

DEVTENSOR_DEFINITION void ReduceLROnPlateau::on_train_begin(const Logs&) {
  state->best.reset();
  state->wait = state->cooldown_counter = 0;
}

DEVTENSOR_DEFINITION void ReduceLROnPlateau::on_epoch_end(int epoch, Logs& logs) {
  auto& s = *state;
  if (!s.monitor.decided) s.monitor.decide("ReduceLROnPlateau", monitor, mode);
  const Optimizer& optimizer = s.model->optimizer();
  // Keras's learning rate is a float32 variable: its value, read as a Python float.
  const auto rate = [&] { return static_cast<double>(static_cast<float>(optimizer.learning_rate())); };
  set_log_value(logs, "learning_rate", rate());
  const auto current = log_value(logs, monitor);
  if (!current) {
    log(LogSource::python_logger, LogSeverity::warning,
        "Learning rate reduction is conditioned on metric `" + monitor +
            "` which is not available. Available metrics are: " + log_names(logs) + ".");
    return;
  }
  if (s.cooldown_counter > 0) {
    --s.cooldown_counter;
    s.wait = 0;
  }
  if (s.monitor.improves(*current, s.best, min_delta)) {
    s.best = *current;
    s.wait = 0;
    return;
  }
  if (s.cooldown_counter > 0 || ++s.wait < patience) return;
  const double old_rate = rate();
  if (!(old_rate > static_cast<double>(static_cast<float>(min_lr)))) return;
  const double new_rate = std::max(old_rate * factor, min_lr);
  optimizer.set_learning_rate(new_rate);
  if (verbose > 0)
    s.params.stream() << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to "
                      << callbacks_detail::python_float(new_rate) << ".\n"
                      << std::flush;
  s.cooldown_counter = cooldown;
  s.wait = 0;
}

// --- LearningRateScheduler ------------------------------------------------------------------

DEVTENSOR_DEFINITION void LearningRateScheduler::set_model(Model& model) {
  if (!schedule)
    throw InvalidArgumentError("LearningRateScheduler: no schedule given; pass a function (epoch, rate) -> rate");
  state->model = &model;
}

DEVTENSOR_DEFINITION void LearningRateScheduler::on_epoch_begin(int epoch, const Logs&) {
  const Optimizer& optimizer = state->model->optimizer();
  const double rate = schedule(epoch, static_cast<double>(static_cast<float>(optimizer.learning_rate())));
  optimizer.set_learning_rate(rate);
  if (verbose > 0)
    state->params.stream() << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to "
                           << callbacks_detail::python_float(rate) << ".\n"
                           << std::flush;
}

DEVTENSOR_DEFINITION void LearningRateScheduler::on_epoch_end(int, Logs& logs) {
  set_log_value(logs, "learning_rate",
                static_cast<double>(static_cast<float>(state->model->optimizer().learning_rate())));
}

// --- CSVLogger ------------------------------------------------------------------------------

DEVTENSOR_DEFINITION void CSVLogger::on_train_begin(const Logs&) {
  auto& s = *state;
  s.keys.clear();
  s.keys_known = false;
  s.close();
  if (!s.model || !s.model->is_chief()) return;
  s.header = true;
  if (append)
    if (std::FILE* existing = std::fopen(filename.c_str(), "rb")) {  // a header only in an empty file
      s.header = std::fgetc(existing) == EOF;
      std::fclose(existing);
    }
  s.file = std::fopen(filename.c_str(), append ? "ab" : "wb");
  if (!s.file) throw InvalidArgumentError("CSVLogger: cannot open " + filename + " for writing");
}

DEVTENSOR_DEFINITION void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  auto& s = *state;
  if (!s.file) return;
  std::string text;
  if (!s.keys_known) {
    for (const auto& [name, value] : logs) s.keys.push_back(name);
    std::sort(s.keys.begin(), s.keys.end());
    const bool has_validation =
        std::any_of(s.keys.begin(), s.keys.end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
    if (!has_validation && !s.keys.empty()) {
      const std::size_t n = s.keys.size();
      for (std::size_t i = 0; i < n; ++i) s.keys.push_back("val_" + s.keys[i]);
    }
    s.keys_known = true;
    if (s.header) {
      text = "epoch";
      for (const auto& key : s.keys) text += separator + key;
      text += "\r\n";  // Python csv's line end
    }
  }
  text += std::to_string(epoch);
  for (const auto& key : s.keys) {
    const auto value = log_value(logs, key);
    text += separator + (value ? callbacks_detail::python_float(*value) : std::string("NA"));
  }
  text += "\r\n";
  if (std::fwrite(text.data(), 1, text.size(), s.file) != text.size() || std::fflush(s.file) != 0)
    throw InvalidArgumentError("CSVLogger: writing " + filename + " failed");
}

DEVTENSOR_DEFINITION void CSVLogger::on_train_end(const Logs&) { state->close(); }

// --- TerminateOnNaN -------------------------------------------------------------------------

DEVTENSOR_DEFINITION void TerminateOnNaN::on_train_batch_end(std::int64_t batch, const BatchLogs& logs) {
  const auto loss = log_value(logs.get(), "loss");
  if (!loss || std::isfinite(*loss)) return;
  if (raise_error)
    throw InvalidArgumentError("NaN or Inf loss encountered at batch " + std::to_string(batch) + ". Loss value: " +
                               callbacks_detail::python_float(*loss) + ". Terminating training immediately.");
  state->params.stream() << "Batch " << batch << ": Invalid loss, terminating training\n" << std::flush;
  state->model->set_stop_training(true);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace callbacks
}  // namespace nn
}  // namespace devtensor
