#pragma once
/// @file training_loop.hpp
/// @brief Keras's fit and evaluate loops, for any model: epochs, steps (steps_per_epoch continuing
/// one pass across epochs), the progress output, the loss and metric trackers and the warnings
/// when the input runs out. The model supplies the step.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/callback.hpp"
#include "devtensor/nn/data_adapter.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/progress.hpp"
#include "devtensor/nn/training_options.hpp"

namespace devtensor {
namespace nn::training_loop {

using data_adapter::Batch;
using data_adapter::Batches;
/// What one step on a batch gives: its loss and its metrics' values (means over the batch, in
/// the order of the names the loop reports; not read yet: the trackers decide when) and its
/// number of examples.
struct StepResult {
  Tensor<float> loss;
  std::int64_t examples = 0;
  std::vector<Tensor<float>> metrics;
};
using TrainStep = std::function<StepResult(const Batch&)>;
using TestStep = TrainStep;
using callback_detail::CallbackList;
/// The model's evaluate, silent, calling fit's callbacks' on_test_* hooks: what fit runs on its
/// validation data after every epoch.
using Validate = std::function<Evaluation(const Batches&, const CallbackList&)>;
/// What the loop asks the model: whether a callback asked the training to stop (Keras's
/// model.stop_training) and its reset, and where a restored training resumes (taken once, after
/// on_train_begin: Model::set_resume_point).
struct Control {
  std::function<bool()> stop_requested;
  std::function<void()> reset_stop;
  std::function<std::optional<ResumePoint>()> take_resume_point = nullptr;
};

/// Keras's fit over batches, reporting the loss and the values named `metric_names` (the steps'
/// StepResult::metrics, in that order: per-output losses, metrics), and after every epoch `validate`'s results on
/// options.validation_data as "val_loss", "val_<metric>"; options.callbacks (and History, the
/// progress bar) called at Keras's hooks with `model`. A resume point the callbacks set in
/// on_train_begin (BackupAndRestore) replaces options.initial_epoch: Note [Resuming].
/// @throws InvalidArgumentError for a negative resume point, negative epochs, an initial_epoch
/// outside [0, epochs], a steps_per_epoch below 1, an infinite dataset without steps_per_epoch, a
/// dataset without a batch (before training, or after a first epoch that found none), or a
/// validation_split (fit(x, y) only); what the step or a callback throws.
History fit(const Batches& dataset, const FitOptions& options, const std::vector<std::string>& metric_names,
            const TrainStep& train_step, const Validate& validate, Model* model, const Control& control);

/// Keras's evaluate: the loss and the metrics over the dataset, weighted by batch sizes, with
/// options.callbacks (and the progress bar) called at the on_test_* hooks.
/// @throws InvalidArgumentError for a dataset that repeats forever or has no batch; what the step
/// throws.
Evaluation evaluate(const Batches& dataset, const EvaluateOptions& options,
                    const std::vector<std::string>& metric_names, const TestStep& test_step, Model* model);
/// The same with the callbacks of a list (fit's, whose progress bar keeps quiet in validation).
Evaluation evaluate(const Batches& dataset, const std::vector<std::string>& metric_names, const TestStep& test_step,
                    const CallbackList& callbacks);

/// The running means of a loss and of metrics, each weighted by its batches' examples.
class Trackers {
 public:
  explicit Trackers(const std::vector<std::string>& metric_names) : names_(metric_names), metrics_(names_.size()) {}
  void add(const StepResult& step) {
    loss_.add(step.loss, step.examples);
    for (std::size_t i = 0; i < metrics_.size() && i < step.metrics.size(); ++i)
      metrics_[i].add(step.metrics[i], step.examples);
  }
  /// The loss and the metrics, as a progress line reports them.
  [[nodiscard]] Logs logs() {
    Logs out{{"loss", loss_.result()}};
    for (std::size_t i = 0; i < metrics_.size(); ++i) out.emplace_back(names_[i], metrics_[i].result());
    return out;
  }

 private:
  const std::vector<std::string>& names_;
  LossTracker loss_;
  std::vector<LossTracker> metrics_;
};

/// The error for data without an example: Keras's text, then what to do.
InvalidArgumentError empty_data_error(std::string_view what);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION InvalidArgumentError empty_data_error(std::string_view what) {
  // Keras 3.15 itself warns "Your input ran out of data" and returns empty logs here; a loss of
  // nothing is not a number a caller should read, so this is an error, with Keras's older text.
  return InvalidArgumentError("Expected input data to be non-empty. " + std::string(what) +
                              " got a dataset without a batch; pass at least one example");
}

DEVTENSOR_DEFINITION History fit(const Batches& dataset, const FitOptions& options,
                                 const std::vector<std::string>& metric_names, const TrainStep& train_step,
                                 const Validate& validate, Model* model, const Control& control) {
  if (options.validation_split != 0.0)
    throw InvalidArgumentError(
        "Argument `validation_split` is only supported for tensors (fit(x, y)); with a "
        "dataset, pass validation_data");
  std::optional<Batches> validation;
  if (const auto& v = options.validation_data; !v.empty())
    validation = v.dataset ? Batches::from_dataset(*v.dataset, 1)
                           : data_adapter::from_arrays(v.xs, v.ys, options.batch_size, false, std::nullopt);
  if (options.epochs < 0) throw InvalidArgumentError("fit: epochs must be >= 0, got " + std::to_string(options.epochs));
  if (options.initial_epoch < 0 || options.initial_epoch > options.epochs)
    throw InvalidArgumentError("fit: initial_epoch must be in [0, epochs] (" + std::to_string(options.epochs) +
                               "), got " + std::to_string(options.initial_epoch));
  if (options.steps_per_epoch && *options.steps_per_epoch < 1)
    throw InvalidArgumentError("fit: steps_per_epoch must be >= 1, got " + std::to_string(*options.steps_per_epoch));
  const std::int64_t card = dataset.cardinality();
  if (card == data::INFINITE_CARDINALITY && !options.steps_per_epoch)
    throw InvalidArgumentError(
        "When passing an infinitely repeating dataset, please specify a `steps_per_epoch` value so that epoch can "
        "be determined.");
  if (card == 0 && options.epochs > options.initial_epoch) throw empty_data_error("fit");
  const std::int64_t target = options.steps_per_epoch.value_or(card >= 0 ? card : 0);
  const CallbackList callbacks(options.callbacks, true, options.verbose != 0, model,
                               {.epochs = options.epochs,
                                .steps = target,
                                .verbose = options.verbose,
                                .out = options.out,
                                .interactive = options.interactive});
  // With steps_per_epoch one pass continues across epochs, as Keras's iterator does.
  std::optional<Batches::Next> shared;
  if (options.steps_per_epoch) shared = dataset.open();
  control.reset_stop();
  callbacks.each(&Callback::on_train_begin, Logs{});
  // Note [Resuming]
  // A restored training (BackupAndRestore) starts at the epoch, and the batch of it, where its
  // backup was made. The data is moved on to where the interrupted run was, its passes opened and
  // its batches drawn and dropped, so that a shuffle draws the orders it drew there: a new process
  // running the same program resumes bit for bit (the interrupted one's dataset has moved on
  // already). It costs a batch per skipped epoch (a pass opens at its first batch), and every
  // skipped batch of one endless pass. The resumed epoch's logs cover the batches trained after
  // the resume, as TensorFlow 2's resumption mid-epoch did.
  std::optional<ResumePoint> resumed = control.take_resume_point ? control.take_resume_point() : std::nullopt;
  if (resumed && (resumed->epoch < 0 || resumed->step < 0))
    throw InvalidArgumentError("fit: cannot resume at epoch " + std::to_string(resumed->epoch) + ", batch " +
                               std::to_string(resumed->step) + "; a resume point is never negative");
  const ResumePoint start = resumed ? *resumed : ResumePoint{options.initial_epoch, 0};
  const auto drop_batches = [](Batches::Next& next, std::int64_t n) {
    for (std::int64_t i = 0; i < n && next(); ++i) {
    }
  };
  if (start.epoch > options.initial_epoch || start.step > 0) {
    const std::int64_t epochs_done = std::max(0, start.epoch - options.initial_epoch);
    if (shared)
      drop_batches(*shared, epochs_done * *options.steps_per_epoch + start.step);
    else
      for (std::int64_t e = 0; e < epochs_done; ++e) {
        auto pass = dataset.open();
        drop_batches(pass, 1);
      }
  }
  Logs training_logs;
  for (int epoch = start.epoch; epoch < options.epochs; ++epoch) {
    callbacks.each(&Callback::on_epoch_begin, epoch, Logs{});
    Trackers mean(metric_names);
    const std::int64_t skipped = epoch == start.epoch ? start.step : 0;
    std::int64_t steps = skipped;  // the next batch's index in the epoch
    bool ran_out = false;
    // One step; false once a callback asked to stop.
    auto step = [&](const Batch& batch) {
      callbacks.each(&Callback::on_train_batch_begin, steps, Logs{});
      mean.add(train_step(batch));
      const BatchLogs logs([&mean] { return mean.logs(); });
      callbacks.each(&Callback::on_train_batch_end, steps, logs);
      ++steps;
      return !control.stop_requested();
    };
    if (shared) {
      for (std::int64_t s = skipped; s < *options.steps_per_epoch; ++s) {
        auto batch = (*shared)();
        if (!batch) {
          ran_out = true;
          break;
        }
        if (!step(*batch)) break;
      }
    } else {
      auto next = dataset.open();
      drop_batches(next, skipped);
      while (auto batch = next())
        if (!step(*batch)) break;
    }
    const bool trained = steps > skipped;
    if (!trained && epoch == start.epoch && skipped == 0) throw empty_data_error("fit");  // a size that was unknown
    if (!trained && ran_out) {
      log(LogSource::python_logger, LogSeverity::warning,
          "Your input ran out of data; interrupting training. Make sure that your dataset or generator can generate "
          "at least `steps_per_epoch * epochs` batches. You may need to use the `.repeat()` function when building "
          "your dataset.");
      break;
    }
    Logs logs = mean.logs();
    if (validation) {
      const Evaluation evaluation = validate(*validation, callbacks);
      logs.emplace_back("val_loss", evaluation.loss);
      for (const auto& [name, value] : evaluation.metrics) logs.emplace_back("val_" + name, value);
    }
    callbacks.each(&Callback::on_epoch_end, epoch, logs);
    training_logs = std::move(logs);
    if (ran_out) {
      log(LogSource::python_logger, LogSeverity::warning, "Your input ran out of data; interrupting training.");
      break;
    }
    if (control.stop_requested()) break;
  }
  callbacks.each(&Callback::on_train_end, training_logs);
  return callbacks.history();
}

DEVTENSOR_DEFINITION Evaluation evaluate(const Batches& dataset, const EvaluateOptions& options,
                                         const std::vector<std::string>& metric_names, const TestStep& test_step,
                                         Model* model) {
  if (dataset.cardinality() == data::INFINITE_CARDINALITY)
    throw InvalidArgumentError("evaluate: the dataset repeats forever; take() a finite number of batches");
  if (dataset.cardinality() == 0) throw empty_data_error("evaluate");
  const CallbackList callbacks(options.callbacks, false, options.verbose != 0, model,
                               {.epochs = 1,
                                .steps = std::max<std::int64_t>(0, dataset.cardinality()),
                                .verbose = options.verbose,
                                .out = options.out,
                                .interactive = options.interactive});
  return evaluate(dataset, metric_names, test_step, callbacks);
}

DEVTENSOR_DEFINITION Evaluation evaluate(const Batches& dataset, const std::vector<std::string>& metric_names,
                                         const TestStep& test_step, const CallbackList& callbacks) {
  callbacks.each(&Callback::on_test_begin, Logs{});
  Trackers mean(metric_names);
  std::int64_t steps = 0;
  auto next = dataset.open();
  while (auto batch = next()) {
    callbacks.each(&Callback::on_test_batch_begin, steps, Logs{});
    mean.add(test_step(*batch));
    const BatchLogs logs([&mean] { return mean.logs(); });
    callbacks.each(&Callback::on_test_batch_end, steps, logs);
    ++steps;
  }
  if (steps == 0) throw empty_data_error("evaluate");  // a dataset whose size was unknown
  const Logs logs = mean.logs();
  callbacks.each(&Callback::on_test_end, logs);
  Evaluation result{.loss = logs[0].second, .metrics = {}};
  for (std::size_t i = 1; i < logs.size(); ++i) result.metrics[logs[i].first] = logs[i].second;
  return result;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn::training_loop
}  // namespace devtensor
