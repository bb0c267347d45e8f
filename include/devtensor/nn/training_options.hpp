#pragma once
/// @file training_options.hpp
/// @brief What Keras's compile, fit, evaluate and predict take (CompileOptions, FitOptions,
/// EvaluateOptions, PredictOptions) and what fit and evaluate return (History, Evaluation).

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/callback.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn {

/// What compile() takes besides the loss and the optimizer.
struct CompileOptions {
  /// Metrics fit and evaluate report besides the loss, by Keras's names: "accuracy" (or "acc":
  /// binary, categorical or sparse categorical accuracy, chosen from the first batch's shapes as
  /// Keras chooses), "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy".
  std::vector<std::string> metrics = {};
  /// For a model of several outputs: each output's metrics, in the outputs' order (Keras's
  /// `metrics=[[], ["accuracy"]]`), reported as "<output layer>_<metric>" ("cls_accuracy").
  /// `metrics` must then be empty.
  std::vector<std::vector<std::string>> output_metrics = {};
  /// For a model of several outputs: the weight of each output's loss in the loss trained on
  /// (Keras's loss_weights; default 1 each). The per-output losses are reported unweighted.
  std::vector<double> loss_weights = {};
  /// Run fit's, evaluate's and predict's steps op by op. By default (false, as Keras) each step is
  /// traced into a graph once per batch shape and replayed (graph/function.hpp; a program that
  /// does not include it runs them eagerly): the same results, bit for bit, from fused kernels.
  bool run_eagerly = false;
  /// On GPUs, replay fit's and evaluate's traced steps as CUDA graphs (FunctionOptions::
  /// cuda_graph, graph/cuda_graph.hpp): a step's results are read before the next step overwrites
  /// them. Under a MirroredStrategy one graph holds every replica's step and the all-reduce; across
  /// processes (MultiWorkerMirroredStrategy) the step runs op by op after one WARNING. Not
  /// predict's, whose batches' results are kept. No effect with run_eagerly.
  bool cuda_graph = false;
  /// Under the mixed_float16 policy (the model's: the global one when it was made), wrap the
  /// optimizer in an optimizers::LossScaleOptimizer, as Keras 3's compile does.
  bool auto_scale_loss = true;
};

/// What fit evaluates at the end of every epoch (Keras's validation_data): examples and targets,
/// batched by fit's batch_size, or a batched dataset. Empty by default.
/// A model of several inputs or outputs takes one tensor per input and one per output.
struct ValidationData {
  ValidationData() = default;
  ValidationData(Tensor<float> examples, Tensor<float> targets) : xs{std::move(examples)}, ys{std::move(targets)} {}
  ValidationData(std::vector<Tensor<float>> examples, std::vector<Tensor<float>> targets)
      : xs(std::move(examples)), ys(std::move(targets)) {}
  ValidationData(data::Dataset<float, float> batches) : dataset(std::move(batches)) {}  // NOLINT: implicit
  [[nodiscard]] bool empty() const noexcept { return !dataset && xs.empty() && ys.empty(); }

  std::vector<Tensor<float>> xs, ys;
  std::optional<data::Dataset<float, float>> dataset;
};

struct FitOptions {
  int epochs = 1;
  /// For fit(x, y): examples per batch (a dataset is batched already).
  std::int64_t batch_size = 32;
  /// 0 silent, 1 progress bar, 2 one line per epoch.
  int verbose = 1;
  /// For fit(x, y): shuffle the examples every epoch.
  bool shuffle = true;
  std::optional<std::uint64_t> seed = std::nullopt;
  /// Steps per epoch; required for an infinitely repeating dataset.
  std::optional<std::int64_t> steps_per_epoch = std::nullopt;
  /// Where progress goes (default std::cout) and whether it is a terminal (default: detected).
  std::ostream* out = nullptr;
  std::optional<bool> interactive = std::nullopt;
  /// Evaluated after every epoch; its loss and metrics join the logs and the history as
  /// "val_loss", "val_accuracy", ... `fit(x, y, {.validation_data = {x_val, y_val}})`.
  ValidationData validation_data = {};
  /// For fit(x, y) without validation_data: the last fraction of the examples (before any
  /// shuffling) is held out as validation data, as Keras does.
  double validation_split = 0.0;
  /// Called at Keras's hooks (callback.hpp, callbacks.hpp), in order, then the History fit
  /// returns and the progress bar (unless the list has its own).
  std::vector<Callback> callbacks = {};
  /// The epoch to start at (0-based; Keras's initial_epoch): fit runs epochs initial_epoch ..
  /// epochs - 1, as a resumed training does.
  int initial_epoch = 0;
};

/// Where a resumed fit starts (what BackupAndRestore restores; Model::set_resume_point): the epoch,
/// and the batches of it trained before the interruption (0: the epoch starts afresh).
struct ResumePoint {
  int epoch = 0;
  std::int64_t step = 0;
  friend bool operator==(const ResumePoint&, const ResumePoint&) = default;
};

struct EvaluateOptions {
  std::int64_t batch_size = 32;
  int verbose = 1;
  std::ostream* out = nullptr;
  std::optional<bool> interactive = std::nullopt;
  /// Called at on_test_begin, on_test_batch_begin/end and on_test_end.
  std::vector<Callback> callbacks = {};
};

struct PredictOptions {
  std::int64_t batch_size = 32;
  /// Called at on_predict_begin, on_predict_batch_begin/end and on_predict_end.
  std::vector<Callback> callbacks = {};
};

/// What evaluate returns: the loss, and each compiled metric's value (Keras's
/// `evaluate(return_dict=True)`). Converts to the loss, so `double loss = model.evaluate(...)`.
struct Evaluation {
  double loss = 0.0;
  std::map<std::string, double> metrics = {};
  operator double() const noexcept { return loss; }  // NOLINT: the loss, as before metrics
  /// "loss: 0.0123 - accuracy: 0.9500".
  friend std::ostream& operator<<(std::ostream& out, const Evaluation& e) {
    out << "loss: " << e.loss;
    for (const auto& [name, value] : e.metrics) out << " - " << name << ": " << value;
    return out;
  }
};

}  // namespace nn
}  // namespace devtensor
