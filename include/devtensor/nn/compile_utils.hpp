#pragma once
/// @file compile_utils.hpp
/// @brief What compile() makes of its losses and metrics for a model's outputs (Keras's
/// CompileLoss and CompileMetrics): a loss per output, weighted and summed into the loss trained
/// on; with several outputs each output's loss reported on its own ("reg_loss", unweighted, as
/// Keras reports it) and each output's metrics named after it ("cls_accuracy").

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/reduction.hpp"

namespace devtensor {
namespace nn {

class CompiledLoss {
 public:
  /// `losses`: one per output, or one every output shares; `output_names`: the layers that make
  /// the outputs (empty for a model not built yet, which has one). @throws InvalidArgumentError
  /// for a number of losses, loss_weights or output_metrics lists that is not the number of
  /// outputs, flat metrics on a model of several outputs, or a metric name Keras does not know.
  CompiledLoss(std::vector<Loss> losses, const CompileOptions& options, std::vector<std::string> output_names);

  /// What a step reports after "loss": each output's loss when there are several, then the metrics.
  [[nodiscard]] const std::vector<std::string>& reported_names() const noexcept { return names_; }
  /// The loss of output `i`.
  [[nodiscard]] const Loss& loss(std::size_t i) const { return losses_.at(losses_.size() == 1 ? 0 : i); }
  /// The losses and options compile() was given (Keras's get_compile_config).
  [[nodiscard]] const std::vector<Loss>& losses() const noexcept { return losses_; }
  [[nodiscard]] const CompileOptions& options() const noexcept { return options_; }

  /// On a batch: the loss to train on, then the reported values (means over the batch).
  /// @throws InvalidArgumentError when `ys` and `predictions` are not one per output.
  [[nodiscard]] std::vector<Tensor<float>> operator()(const std::vector<Tensor<float>>& ys,
                                                      const std::vector<Tensor<float>>& predictions) const;
  /// A replica's share of a global batch of `global` examples: each value summed over the
  /// replica's examples and divided by the global batch's (a SUM-reduced loss: summed), so that
  /// the replicas' values add up to the global batch's.
  [[nodiscard]] std::vector<Tensor<float>> replica_share(const std::vector<Tensor<float>>& ys,
                                                         const std::vector<Tensor<float>>& predictions,
                                                         std::int64_t global) const;

 private:
  struct OutputMetric {
    std::size_t output;
    Metric metric;
  };
  std::vector<Loss> losses_;
  CompileOptions options_;
  std::vector<double> weights_;
  std::vector<OutputMetric> metrics_;
  std::vector<std::string> names_;
  std::size_t outputs_;

  void require_pairs(const std::vector<Tensor<float>>& ys, const std::vector<Tensor<float>>& predictions) const;
  /// The loss trained on: Σ weight · loss (the one loss itself when there is one output).
  [[nodiscard]] Tensor<float> total(const std::vector<Tensor<float>>& per_output) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION CompiledLoss::CompiledLoss(std::vector<Loss> losses, const CompileOptions& options,
                                                std::vector<std::string> output_names)
    : losses_(std::move(losses)), options_(options), outputs_(std::max<std::size_t>(1, output_names.size())) {
  std::string outputs = "[";
  for (std::size_t i = 0; i < output_names.size(); ++i) outputs += (i ? ", '" : "'") + output_names[i] + "'";
  outputs += "]";
  if (losses_.empty() || (losses_.size() != 1 && losses_.size() != outputs_))
    throw InvalidArgumentError("compile: " + std::to_string(losses_.size()) + " losses for a model of " +
                               std::to_string(outputs_) + " outputs " + outputs +
                               "; pass one loss per output, in the outputs' order, or one loss for all");
  weights_ = options.loss_weights.empty() ? std::vector<double>(outputs_, 1.0) : options.loss_weights;
  if (weights_.size() != outputs_)
    throw InvalidArgumentError("`loss_weights` must match the number of losses, got " + std::to_string(outputs_) +
                               " losses and " + std::to_string(weights_.size()) + " weights.");
  if (outputs_ > 1 && !options.metrics.empty())
    throw InvalidArgumentError(
        "Invalid `metrics`. `metrics` should contain metrics objects and either be a dict or a "
        "list matching the output names of the functional model " +
        outputs +
        " or match the output structure of the model: pass them per output, in "
        "CompileOptions::output_metrics");
  if (!options.output_metrics.empty() && options.output_metrics.size() != outputs_)
    throw InvalidArgumentError("Invalid `metrics`: " + std::to_string(options.output_metrics.size()) +
                               " lists in output_metrics for a model of " + std::to_string(outputs_) + " outputs " +
                               outputs + "; give one list per output (empty for none)");
  if (outputs_ > 1)
    for (std::size_t i = 0; i < outputs_; ++i) names_.push_back(output_names[i] + "_loss");
  for (const auto& name : options.metrics) metrics_.push_back({0, metric_by_name(name)});
  for (std::size_t i = 0; i < options.output_metrics.size(); ++i)
    for (const auto& name : options.output_metrics[i]) metrics_.push_back({i, metric_by_name(name)});
  for (const auto& m : metrics_)
    names_.push_back(outputs_ > 1 ? output_names[m.output] + "_" + m.metric.name : m.metric.name);
}

DEVTENSOR_DEFINITION void CompiledLoss::require_pairs(const std::vector<Tensor<float>>& ys,
                                                      const std::vector<Tensor<float>>& predictions) const {
  if (ys.size() != predictions.size() || predictions.size() != outputs_)
    throw InvalidArgumentError("y_true and y_pred have different structures: " + std::to_string(ys.size()) +
                               " targets for " + std::to_string(predictions.size()) +
                               " outputs; give one target tensor per model output, in the outputs' order");
}

DEVTENSOR_DEFINITION Tensor<float> CompiledLoss::total(const std::vector<Tensor<float>>& per_output) const {
  Tensor<float> sum;
  for (std::size_t i = 0; i < per_output.size(); ++i) {
    const auto weighted =
        weights_[i] == 1.0 ? per_output[i] : mul(per_output[i], scalar<float>(static_cast<float>(weights_[i])));
    sum = sum.defined() ? add(sum, weighted) : weighted;
  }
  return sum;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> CompiledLoss::operator()(
    const std::vector<Tensor<float>>& ys, const std::vector<Tensor<float>>& predictions) const {
  require_pairs(ys, predictions);
  std::vector<Tensor<float>> per_output;
  for (std::size_t i = 0; i < outputs_; ++i) per_output.push_back(loss(i)(ys[i], predictions[i]));
  std::vector<Tensor<float>> out{total(per_output)};
  if (outputs_ > 1) out.insert(out.end(), per_output.begin(), per_output.end());
  for (const auto& m : metrics_)
    out.push_back(reduce_mean(metric_matches(m.metric, ys[m.output], predictions[m.output])));
  return out;
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> CompiledLoss::replica_share(
    const std::vector<Tensor<float>>& ys, const std::vector<Tensor<float>>& predictions, std::int64_t global) const {
  require_pairs(ys, predictions);
  const auto per_row = [](const Tensor<float>& t) { return t.shape()[0] > 0 ? t.num_elements() / t.shape()[0] : 1; };
  std::vector<Tensor<float>> per_output;
  for (std::size_t i = 0; i < outputs_; ++i) {
    const Tensor<float> per_example = loss(i).per_example(ys[i], predictions[i]);
    per_output.push_back(loss(i).reduction() == Reduction::SUM
                             ? reduce_sum(per_example)
                             : compute_average_loss(per_example, global * per_row(per_example)));
  }
  std::vector<Tensor<float>> out{total(per_output)};
  if (outputs_ > 1) out.insert(out.end(), per_output.begin(), per_output.end());
  for (const auto& m : metrics_) {
    const auto matches = metric_matches(m.metric, ys[m.output], predictions[m.output]);
    out.push_back(div(reduce_sum(matches), scalar<float>(static_cast<float>(global * per_row(matches)))));
  }
  return out;
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
