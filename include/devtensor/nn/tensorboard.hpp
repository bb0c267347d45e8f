#pragma once
/// @file tensorboard.hpp
/// @brief Keras's TensorBoard callback: the training's scalars, weight histograms and the traced
/// step's graph (each node with its device) in TensorBoard's event files (event_file.hpp).
///
///     model.fit(x, y, {.epochs = 10, .callbacks = {nn::callbacks::TensorBoard{.log_dir = "logs"}}});
///     // tensorboard --logdir logs

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/nn/callback.hpp"
#include "devtensor/nn/event_file.hpp"
#include "devtensor/nn/model.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS  // what only the bodies use
#include <filesystem>
#endif

namespace devtensor {
namespace nn {
namespace callbacks {

/// Keras 3's TensorBoard callback, its defaults and its files: in `log_dir`, the runs `train`
/// and `validation`. At each epoch's end `epoch_<name>` for the logs (step: the epoch from 0) and
/// `epoch_learning_rate` in train/, the `val_` logs without their prefix in validation/; after
/// each evaluation `evaluation_<name>_vs_iterations` (step: the optimizer's iterations) in
/// validation/; with `update_freq` a number N (or "batch", 1) `batch_<name>` every N batches
/// (step: the batch counted over the training); with `histogram_freq` N, every N epochs
/// `<model>/<layer>/<weight>/histogram` for each weight; with `write_graph` the traced training
/// step's graph, each node with the device it runs on (TensorBoard's graph view colours by
/// device); with `write_steps_per_second` `epoch_steps_per_second` and `batch_steps_per_second`.
/// Only the chief writes (Model::is_chief). Keras's image, embedding and profiler options are not
/// offered; the "keras" model-config summary is not written (no `to_json` yet).
struct TensorBoard {
  /// "epoch", "batch" (= 1) or a number of batches. @throws InvalidArgumentError otherwise.
  struct UpdateFrequency {
    UpdateFrequency(const char* every);   // NOLINT: implicit, as Keras's update_freq="epoch"
    UpdateFrequency(std::int64_t every);  // NOLINT: implicit, as update_freq=100
    UpdateFrequency(int every) : UpdateFrequency(static_cast<std::int64_t>(every)) {}  // NOLINT
    std::int64_t batches = 0;                                                          // 0: every epoch
  };

  std::string log_dir = "logs";
  int histogram_freq = 0;
  bool write_graph = true;
  bool write_steps_per_second = false;
  UpdateFrequency update_freq = "epoch";

  struct State {
    Model* model = nullptr;
    std::optional<summary::FileWriter> train, validation;  // made on first use, as Keras's
    std::int64_t train_batch = 0, test_batch = 0;          // counted over the training
    bool graph_pending = false;
    std::chrono::steady_clock::time_point epoch_start, batch_start;
    std::int64_t epoch_start_iterations = 0;
  };
  std::shared_ptr<State> state = new_state();
  static std::shared_ptr<State> new_state();  // out of line: no make_shared in every user's translation unit

  void set_model(Model& model);
  void on_train_begin(const Logs&);
  void on_train_end(const Logs&);
  void on_epoch_begin(int epoch, const Logs&);
  /// @throws InvalidArgumentError when a file cannot be made or written.
  void on_epoch_end(int epoch, const Logs& logs);
  void on_train_batch_begin(std::int64_t batch, const Logs&);
  void on_train_batch_end(std::int64_t batch, const BatchLogs& logs);
  void on_test_batch_begin(std::int64_t, const Logs&) { ++state->test_batch; }
  void on_test_end(const Logs& logs);

 private:
  summary::FileWriter& writer(bool validation) const;
  void write_graph_once() const;
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION TensorBoard::UpdateFrequency::UpdateFrequency(const char* every) {
  const std::string_view text = every ? every : "(null)";
  if (text == "batch")
    batches = 1;
  else if (text != "epoch")
    throw InvalidArgumentError("Unrecognized update_freq: " + std::string(text) +
                               ". Expected 'epoch', 'batch' or a number of batches");
}

DEVTENSOR_DEFINITION TensorBoard::UpdateFrequency::UpdateFrequency(std::int64_t every) : batches(every) {
  if (every < 1)
    throw InvalidArgumentError("update_freq must be a positive number of batches, got " + std::to_string(every));
}

DEVTENSOR_DEFINITION std::shared_ptr<TensorBoard::State> TensorBoard::new_state() { return std::make_shared<State>(); }

DEVTENSOR_DEFINITION summary::FileWriter& TensorBoard::writer(bool validation) const {
  auto& slot = validation ? state->validation : state->train;
  if (!slot) slot.emplace((std::filesystem::path(log_dir) / (validation ? "validation" : "train")).string());
  return *slot;
}

DEVTENSOR_DEFINITION void TensorBoard::set_model(Model& model) {
  state->model = &model;
  state->train.reset();  // Keras resets its writers with the model
  state->validation.reset();
  state->graph_pending = write_graph;
}

DEVTENSOR_DEFINITION void TensorBoard::on_train_begin(const Logs&) {
  state->train_batch = 0;
  state->epoch_start_iterations = 0;
}

DEVTENSOR_DEFINITION void TensorBoard::on_train_end(const Logs&) {
  // Closed, so that a later fit starts new files (Keras's writers are made again on use).
  for (auto* slot : {&state->train, &state->validation}) {
    if (*slot) (*slot)->close();
    slot->reset();
  }
}

DEVTENSOR_DEFINITION void TensorBoard::on_epoch_begin(int, const Logs&) {
  if (!write_steps_per_second || !state->model) return;
  state->epoch_start_iterations = state->model->compiled() ? state->model->optimizer().iterations() : 0;
  state->epoch_start = std::chrono::steady_clock::now();
}

DEVTENSOR_DEFINITION void TensorBoard::on_epoch_end(int epoch, const Logs& logs) {
  Model* model = state->model;
  if (!model || !model->is_chief()) return;
  bool any_train = false, any_validation = false;
  for (const auto& [name, value] : logs) {
    const bool validation = name.rfind("val_", 0) == 0;
    writer(validation).scalar("epoch_" + (validation ? name.substr(4) : name), value, epoch);
    (validation ? any_validation : any_train) = true;
  }
  if (model->compiled()) {
    if (!log_value(logs, "learning_rate"))
      writer(false).scalar("epoch_learning_rate", model->optimizer().learning_rate(), epoch);
    if (write_steps_per_second) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - state->epoch_start).count();
      const auto steps = static_cast<double>(model->optimizer().iterations() - state->epoch_start_iterations);
      writer(false).scalar("epoch_steps_per_second", seconds > 0 ? steps / seconds : 0.0, epoch);
    }
    any_train = true;
  }
  if (histogram_freq > 0 && epoch % histogram_freq == 0) {
    for (const auto& variable : model->variables()) {
      std::string path = model->name() + "/" + variable.name();
      if (const auto colon = path.rfind(':'); colon != std::string::npos) path.erase(colon);
      for (char& c : path)
        if (c == ':') c = '_';
      const auto values = variable.value().to_vector();
      const std::vector<double> data(values.begin(), values.end());
      writer(false).histogram(path + "/histogram", data, epoch);
    }
    any_train = true;
  }
  if (any_train) writer(false).flush();
  if (any_validation) writer(true).flush();
}

DEVTENSOR_DEFINITION void TensorBoard::on_train_batch_begin(std::int64_t, const Logs&) {
  ++state->train_batch;
  if (write_steps_per_second) state->batch_start = std::chrono::steady_clock::now();
}

DEVTENSOR_DEFINITION void TensorBoard::write_graph_once() const {
  state->graph_pending = false;
  const auto function = state->model->train_function();
  if (!function) return;  // run eagerly: no graph, as Keras writes none for an eager train_function
  const auto nodes = function->graph().snapshot();
  const auto devices = function->node_devices();
  std::vector<summary::GraphNode> out;
  out.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    summary::GraphNode node{nodes[i]->name, std::string(nodes[i]->type()), {}, i < devices.size() ? devices[i] : ""};
    for (const auto& edge : nodes[i]->inputs)
      node.inputs.push_back(nodes[edge.node]->name + (edge.output == 0 ? "" : ":" + std::to_string(edge.output)));
    for (const auto control : nodes[i]->control_inputs) node.inputs.push_back("^" + nodes[control]->name);
    out.push_back(std::move(node));
  }
  writer(false).graph(out);
  writer(false).flush();
}

DEVTENSOR_DEFINITION void TensorBoard::on_train_batch_end(std::int64_t, const BatchLogs& logs) {
  if (!state->model || !state->model->is_chief()) return;
  if (state->graph_pending) write_graph_once();
  const std::int64_t step = state->train_batch;
  if (update_freq.batches == 0 || step % update_freq.batches != 0) return;  // Keras's record_if
  if (write_steps_per_second) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - state->batch_start).count();
    writer(false).scalar("batch_steps_per_second", seconds > 0 ? 1.0 / seconds : 0.0, step);
  }
  for (const auto& [name, value] : logs.get()) writer(false).scalar("batch_" + name, value, step);
}

DEVTENSOR_DEFINITION void TensorBoard::on_test_end(const Logs& logs) {
  Model* model = state->model;
  if (!model || !model->is_chief() || !model->compiled()) return;
  for (const auto& [name, value] : logs)
    writer(true).scalar("evaluation_" + name + "_vs_iterations", value, model->optimizer().iterations());
  writer(true).flush();
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace callbacks
}  // namespace nn
}  // namespace devtensor
