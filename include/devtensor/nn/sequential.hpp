#pragma once
/// @file sequential.hpp
/// @brief Sequential: a stack of layers with Keras's compile / fit / evaluate / predict / summary.
///
/// The model builds when its input shape is known: at construction when the first layer declares
/// an input_dim, else on the first call. fit() runs, per batch, the forward pass under a
/// GradientTape, the loss, its gradients and the optimizer's update; an epoch's loss is the mean of
/// the batches' losses weighted by their sizes (Keras's loss tracker). Under a distribution
/// strategy each replica takes its share of the batch (see distribute/). As Keras, fit, evaluate
/// and predict trace their step into a graph (graph::traced_step) once per batch shape unless
/// compiled with run_eagerly; the graph runs the same kernels, so the results are the same bits.
/// The loops are training_loop.hpp's, the loss tracker metrics.hpp's, fit(x, y)'s batching
/// data_adapter.hpp's.

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "devtensor/autodiff/gradient_tape.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/distributed_dataset.hpp"
#include "devtensor/graph/function.hpp"
#include "devtensor/nn/layers.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/nn/data_adapter.hpp"
#include "devtensor/nn/training_loop.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

class Sequential {
 public:
  using Dataset = data::Dataset<float, float>;

  /// Built inside a distribution strategy's scope, the model trains across its replicas.
  explicit Sequential(std::vector<Layer> layers = {}, std::string name = "");

  /// Appends a layer; builds it at once when the model's output shape is known.
  void add(Layer layer);

  /// Runs the layers in order (building them on the first call).
  /// @throws InvalidArgumentError for an empty model or inputs the layers do not accept.
  Tensor<float> operator()(const Tensor<float>& x);

  [[nodiscard]] bool built() const {
    return !layers_.empty() && std::all_of(layers_.begin(), layers_.end(), [](const Layer& l) { return l->built(); });
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::vector<Layer>& layers() const noexcept { return layers_; }

  [[nodiscard]] std::vector<Variable<float>> variables() const;
  [[nodiscard]] std::vector<Variable<float>> trainable_variables() const;
  [[nodiscard]] std::int64_t count_params() const;

  /// Keras's summary table. @throws FailedPreconditionError before the model is built.
  void summary(std::ostream& out = std::cout) const;

  /// Sets the loss and optimizer for fit and evaluate, the metrics they report, and whether their
  /// steps run eagerly. @throws InvalidArgumentError for an invalid optimizer configuration or a
  /// metric name Keras does not know.
  void compile(Loss loss, Optimizer optimizer, CompileOptions options = {});
  [[nodiscard]] bool compiled() const noexcept { return loss_.has_value(); }
  /// Whether fit, evaluate and predict run their steps op by op (Keras's model.run_eagerly).
  [[nodiscard]] bool run_eagerly() const noexcept { return run_eagerly_; }
  void set_run_eagerly(bool run_eagerly) noexcept { run_eagerly_ = run_eagerly; }

  /// Trains on a batched dataset of (x, y). @throws FailedPreconditionError before compile();
  /// InvalidArgumentError for negative epochs, an infinite dataset without steps_per_epoch, or
  /// batches the model or the loss cannot take.
  History fit(const Dataset& dataset, FitOptions options = {});

  /// Trains on examples x [n, ...] and targets y [n, ...], batched (shuffled each epoch) here, the
  /// last validation_split of them held out. @throws InvalidArgumentError for different counts.
  History fit(const Tensor<float>& x, const Tensor<float>& y, FitOptions options = {}) {
    require_compiled();
    const auto [train_x, train_y] = data_adapter::split_validation(x, y, options);
    return fit(data_adapter::from_arrays(train_x, train_y, options.batch_size, options.shuffle, options.seed), options);
  }

  /// The loss and the compiled metrics over a dataset (weighted by batch sizes), without training.
  Evaluation evaluate(const Dataset& dataset, EvaluateOptions options = {});
  Evaluation evaluate(const Tensor<float>& x, const Tensor<float>& y, EvaluateOptions options = {}) {
    require_compiled();
    return evaluate(data_adapter::from_arrays(x, y, options.batch_size, false, std::nullopt), options);
  }

  /// The model's outputs for x [n, features], computed batch_size examples at a time.
  Tensor<float> predict(const Tensor<float>& x, PredictOptions options = {});

  /// One training step on a batch: returns the batch's loss and its number of examples. Under a
  /// strategy the batch is split across the replicas, each computes its gradients concurrently,
  /// the gradients are summed by the strategy's cross-device ops, and the update is applied to
  /// every replica's variables alike.
  /// Runs op by op, as Keras's train_step; train_on_batch runs it as fit does.
  std::pair<double, std::int64_t> train_step(const Tensor<float>& x, const Tensor<float>& y);

  /// One training step on a batch as fit runs it (traced unless run_eagerly): the batch's loss.
  double train_on_batch(const Tensor<float>& x, const Tensor<float>& y) {
    require_compiled();
    return static_cast<double>(fit_step(x, y).loss.item());
  }

  [[nodiscard]] const Loss& loss() const {
    require_compiled();
    return *loss_;
  }
  [[nodiscard]] const Optimizer& optimizer() const {
    require_compiled();
    return *optimizer_;
  }

 private:
  std::string name_;
  std::shared_ptr<distribute::StrategyInterface> strategy_;
  std::vector<Layer> layers_;
  std::optional<std::vector<std::int64_t>> input_shape_;
  std::optional<Loss> loss_;
  std::optional<Optimizer> optimizer_;
  std::vector<Metric> metrics_;
  std::vector<std::string> metric_names_;
  bool run_eagerly_ = false;

  /// fit's, evaluate's and predict's traced steps, made on first use and dropped when the model
  /// changes (compile, add). A copy of the model starts without: the steps call their own model.
  struct TracedSteps {
    graph::TracedStep train, test, predict;
    TracedSteps() = default;
    TracedSteps(const TracedSteps&) noexcept {}
    TracedSteps& operator=(const TracedSteps&) noexcept {
      train = test = predict = nullptr;
      return *this;
    }
  };
  TracedSteps traced_;
  /// `slot`, made from `step` on first use; nullptr when the model runs eagerly.
  const graph::TracedStep* traced(graph::TracedStep& slot, graph::TracedStep step, const char* name) {
    if (run_eagerly_) return nullptr;
    if (!slot) slot = graph::traced_step(std::move(step), name);
    return &slot;
  }

  /// fit's step: the batch's loss and metrics (not read) and its number of examples.
  training_loop::StepResult fit_step(const Tensor<float>& x, const Tensor<float>& y);
  /// The compiled metrics' values on a batch (means over its examples).
  std::vector<Tensor<float>> batch_metrics(const Tensor<float>& y, const Tensor<float>& prediction) const;
  /// Builds the layers for inputs like x, eagerly and in the strategy's scope (a traced step
  /// must not create the variables).
  void build_for(const Tensor<float>& x);

  /// One step of the tape, the loss and the optimizer on this process's devices; the loss and the
  /// metrics are not read (fit decides when).
  training_loop::StepResult local_train_step(const Tensor<float>& x, const Tensor<float>& y);

  void capture_strategy();

  /// Splits the batch across the replicas and runs replicated_train_step, traced when
  /// `may_trace` and the model does not run eagerly.
  training_loop::StepResult distributed_train_step(const Tensor<float>& x, const Tensor<float>& y, bool may_trace);

  /// Each replica's forward and backward pass on its rows, the gradients summed across the
  /// replicas, the update; returns the global loss, then the metrics over the global batch.
  /// `global`: the examples of every process.
  std::vector<Tensor<float>> replicated_train_step(const std::vector<Tensor<float>>& xs,
                                                   const std::vector<Tensor<float>>& ys, std::int64_t global);
  void require_compiled() const {
    if (!loss_) throw FailedPreconditionError("You must call `compile()` before using the model.");
  }
  std::vector<std::int64_t> current_output_shape() const {
    std::vector<std::int64_t> shape = *input_shape_;
    for (const auto& l : layers_) shape = l->output_shape(shape);
    return shape;
  }
  static Shape batch_shape(std::vector<std::int64_t> shape) {
    for (auto& d : shape)
      if (d < 0) d = 1;
    return Shape(shape);
  }
  static std::string shape_string(const std::vector<std::int64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + (shape[i] < 0 ? std::string("None") : std::to_string(shape[i]));
    return s + (shape.size() == 1 ? ",)" : ")");
  }
  static std::string bytes_string(std::int64_t bytes) {
    char buffer[48];
    const auto b = static_cast<double>(bytes);
    if (b < 1024) std::snprintf(buffer, sizeof buffer, "%.2f Byte", b);
    else if (b < 1024.0 * 1024) std::snprintf(buffer, sizeof buffer, "%.2f KB", b / 1024);
    else std::snprintf(buffer, sizeof buffer, "%.2f MB", b / (1024.0 * 1024));
    return buffer;
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Sequential::Sequential(std::vector<Layer> layers, std::string name)
    : name_(name.empty() ? unique_name("sequential") : std::move(name)) {
  capture_strategy();
  for (auto& l : layers) add(std::move(l));
}

// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION void Sequential::summary(std::ostream& out) const {
  if (!built() || !input_shape_)
    throw FailedPreconditionError(
        "This model has not yet been built. Build the model first by calling it on a batch of data, or give the "
        "first layer an `input_dim`.");
  const std::string rule(65, '_');
  const std::string double_rule(65, '=');
  out << "Model: \"" << name_ << "\"\n" << rule << "\n";
  out << std::left << std::setw(29) << " Layer (type)" << std::setw(26) << "Output Shape" << "Param #\n";
  out << double_rule << "\n";
  std::vector<std::int64_t> shape = *input_shape_;
  for (const auto& l : layers_) {
    shape = l->output_shape(shape);
    std::int64_t params = 0;
    for (const auto& v : l->variables()) params += v.shape().num_elements();
    out << std::left << std::setw(29) << (" " + l->name() + " (" + l->type_name() + ")") << std::setw(26)
        << shape_string(shape) << params << "\n";
    out << "\n";
  }
  const std::int64_t total = count_params();
  std::int64_t trainable = 0;
  for (const auto& v : trainable_variables()) trainable += v.shape().num_elements();
  out << double_rule << "\n";
  out << "Total params: " << total << " (" << bytes_string(total * 4) << ")\n";
  out << "Trainable params: " << trainable << " (" << bytes_string(trainable * 4) << ")\n";
  out << "Non-trainable params: " << total - trainable << " (" << bytes_string((total - trainable) * 4) << ")\n";
  out << rule << "\n";
}

DEVTENSOR_DEFINITION History Sequential::fit(const Dataset& dataset, FitOptions options) {
  require_compiled();
  return training_loop::fit(
      dataset, options, metric_names_, [this](const Tensor<float>& x, const Tensor<float>& y) { return fit_step(x, y); },
      [this](const Dataset& validation) { return evaluate(validation, {.verbose = 0}); });
}

DEVTENSOR_DEFINITION Evaluation Sequential::evaluate(const Dataset& dataset, EvaluateOptions options) {
  require_compiled();
  return training_loop::evaluate(dataset, options, metric_names_, [this](const Tensor<float>& x, const Tensor<float>& y) {
    const std::int64_t n = x.rank() > 0 ? x.shape()[0] : 1;
    build_for(x);
    const auto test_step = [this](const std::vector<Tensor<float>>& xy, std::int64_t) {
      const Tensor<float> prediction = (*this)(xy[0]);
      std::vector<Tensor<float>> out{(*loss_)(xy[1], prediction)};
      for (auto& m : batch_metrics(xy[1], prediction)) out.push_back(std::move(m));
      return out;
    };
    const auto* traced_step = traced(traced_.test, test_step, "test_function");
    auto values = traced_step ? (*traced_step)({x, y}, 0) : test_step({x, y}, 0);
    return training_loop::StepResult{values[0], n, {values.begin() + 1, values.end()}};
  });
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Sequential::batch_metrics(const Tensor<float>& y,
                                                                           const Tensor<float>& prediction) const {
  std::vector<Tensor<float>> out;
  for (const auto& metric : metrics_) out.push_back(reduce_mean(metric_matches(metric, y, prediction)));
  return out;
}

DEVTENSOR_DEFINITION Tensor<float> Sequential::predict(const Tensor<float>& x, PredictOptions options) {
  if (options.batch_size < 1) throw InvalidArgumentError("predict: batch_size must be >= 1");
  if (!x.defined() || x.rank() == 0) throw InvalidArgumentError("predict: x must be a tensor of rank >= 1 (examples first)");
  const std::int64_t n = x.shape()[0];
  build_for(x);
  const auto* traced_step = traced(
      traced_.predict, [this](const std::vector<Tensor<float>>& in, std::int64_t) { return std::vector{(*this)(in[0])}; },
      "predict_function");
  const auto predict_step = [&](const Tensor<float>& batch) {
    return traced_step ? (*traced_step)({batch}, 0)[0] : (*this)(batch);
  };
  if (n <= options.batch_size) return predict_step(x);
  std::vector<Tensor<float>> parts;
  for (std::int64_t begin = 0; begin < n; begin += options.batch_size) {
    std::vector<std::int64_t> start(x.rank(), 0);
    std::vector<std::int64_t> size(x.rank(), -1);
    start[0] = begin;
    size[0] = std::min(options.batch_size, n - begin);
    parts.push_back(predict_step(slice(x, start, size)));
  }
  return concat(parts, 0);
}

DEVTENSOR_DEFINITION std::pair<double, std::int64_t> Sequential::train_step(
    const Tensor<float>& x, const Tensor<float>& y) {
  require_compiled();
  const auto step = strategy_ ? distributed_train_step(x, y, false) : local_train_step(x, y);
  return {static_cast<double>(step.loss.item()), step.examples};
}

DEVTENSOR_DEFINITION training_loop::StepResult Sequential::fit_step(const Tensor<float>& x, const Tensor<float>& y) {
  if (strategy_) return distributed_train_step(x, y, true);
  build_for(x);
  const auto* traced_step = traced(
      traced_.train,
      [this](const std::vector<Tensor<float>>& xy, std::int64_t) {
        auto step = local_train_step(xy[0], xy[1]);
        step.metrics.insert(step.metrics.begin(), std::move(step.loss));
        return std::move(step.metrics);
      },
      "train_function");
  if (!traced_step) return local_train_step(x, y);
  auto values = (*traced_step)({x, y}, 0);
  return {values[0], x.rank() > 0 ? x.shape()[0] : 1, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION void Sequential::build_for(const Tensor<float>& x) {
  if (built() || layers_.empty() || !x.defined()) return;  // operator() reports an empty model
  std::unique_ptr<distribute::StrategyScopeGuard> scope;
  if (strategy_) scope = strategy_->enter_scope();  // so that the variables are mirrored
  if (!input_shape_) {
    auto dims = x.shape().dims_vector();
    if (!dims.empty()) dims[0] = -1;
    input_shape_ = dims;
  }
  std::vector<std::int64_t> shape = *input_shape_;
  for (auto& layer : layers_) {
    layer->ensure_built(batch_shape(shape));
    shape = layer->output_shape(shape);
  }
}

DEVTENSOR_DEFINITION training_loop::StepResult Sequential::local_train_step(const Tensor<float>& x,
                                                                            const Tensor<float>& y) {
  Tensor<float> prediction;
  Tensor<float> loss;
  const auto vars = trainable_variables();
  {
    GradientTape tape;
    prediction = (*this)(x);
    loss = (*loss_)(y, prediction);
    optimizer_->apply_gradients(tape.gradient(loss, vars), vars);
  }
  return {std::move(loss), x.rank() > 0 ? x.shape()[0] : 1, batch_metrics(y, prediction)};
}

DEVTENSOR_DEFINITION training_loop::StepResult Sequential::distributed_train_step(const Tensor<float>& x,
                                                                                  const Tensor<float>& y,
                                                                                  bool may_trace) {
  if (x.rank() == 0 || y.rank() == 0 || x.shape()[0] != y.shape()[0])
    throw InvalidArgumentError("train_step: x and y need the same number of examples, got " + x.shape().to_string() +
                               " and " + y.shape().to_string());
  const std::int64_t global = x.shape()[0];
  build_for(x);
  // Each replica's share of the batch on its device (this process's share: DATA auto-shard),
  // split before the traced step as Keras distributes its dataset.
  const auto& devices = strategy_->replica_devices();
  const auto batch = strategy_->local_batch(global);
  auto xs = distribute::split_rows(x, batch, devices);
  const auto ys = distribute::split_rows(y, batch, devices);
  const auto replicated = [this](const std::vector<Tensor<float>>& xs_then_ys, std::int64_t examples) {
    const auto half = xs_then_ys.begin() + static_cast<std::ptrdiff_t>(xs_then_ys.size() / 2);
    return replicated_train_step({xs_then_ys.begin(), half}, {half, xs_then_ys.end()}, examples);
  };
  const auto* traced_step = may_trace ? traced(traced_.train, replicated, "train_function") : nullptr;
  std::vector<Tensor<float>> values;
  if (traced_step) {
    xs.insert(xs.end(), ys.begin(), ys.end());
    values = (*traced_step)(xs, global);
  } else {
    values = replicated_train_step(xs, ys, global);
  }
  return {values[0], global, {values.begin() + 1, values.end()}};
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Sequential::replicated_train_step(
    const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys, std::int64_t global) {
  // strategy.run: each replica's forward and backward pass on its tape.
  const auto vars = trainable_variables();
  const auto& devices = strategy_->replica_devices();
  std::vector<std::vector<Tensor<float>>> grads(devices.size());
  std::vector<Tensor<float>> losses(devices.size());
  // metrics[m][replica]: the replica's matches summed and divided by the global batch's.
  std::vector<std::vector<Tensor<float>>> metrics(metrics_.size(), std::vector<Tensor<float>>(devices.size()));
  strategy_->run_replicas([&](int r) {
    const auto i = static_cast<std::size_t>(r);
    GradientTape tape;
    const Tensor<float> prediction = (*this)(xs[i]);
    const Tensor<float> per_example = loss_->per_example(ys[i], prediction);
    // Each replica divides by the global batch, so the all-reduced SUM is the global mean.
    const std::int64_t elements_per_example = per_example.shape()[0] > 0 ? per_example.num_elements() / per_example.shape()[0] : 1;
    const Tensor<float> loss = loss_->reduction() == Reduction::SUM
                                   ? reduce_sum(per_example)
                                   : compute_average_loss(per_example, global * elements_per_example);
    grads[i] = tape.gradient(loss, vars, {.unconnected_gradients = UnconnectedGradients::ZERO});
    losses[i] = loss;  // not read: fit reads the sum when it displays it
    for (std::size_t m = 0; m < metrics_.size(); ++m) {
      const auto matches = metric_matches(metrics_[m], ys[i], prediction);
      const std::int64_t per_row = matches.shape()[0] > 0 ? matches.num_elements() / matches.shape()[0] : 1;
      metrics[m][i] = div(reduce_sum(matches), scalar<float>(static_cast<float>(global * per_row)));
    }
  });
  // batch_reduce_to(SUM), then the update in cross-replica context: every component gets it.
  const auto summed = strategy_->batch_all_reduce_sum(grads);
  optimizer_->apply_gradients(summed[0], vars);
  // strategy.reduce(SUM) of the replicas' losses (each already divided by the global batch), on
  // the first replica's device: every process gets the global loss.
  std::vector<Tensor<float>> out{strategy_->reduce_sum_to_first_replica(losses, "the step's loss")};
  for (std::size_t m = 0; m < metrics_.size(); ++m)
    out.push_back(strategy_->reduce_sum_to_first_replica(metrics[m], "the step's " + metric_names_[m]));
  return out;
}

DEVTENSOR_DEFINITION void Sequential::capture_strategy() {
  if (const auto* scope = distribute::current_distribution_scope()) {
    if (strategy_ && strategy_ != scope->strategy)
      throw InvalidArgumentError("Mixing different tf.distribute.Strategy objects: model \"" + name_ +
                                 "\" belongs to " + strategy_->description());
    strategy_ = scope->strategy;
  }
}

DEVTENSOR_DEFINITION void Sequential::add(Layer layer) {
  traced_ = {};
  if (layers_.empty()) {
    if (auto declared = layer->declared_input_shape()) input_shape_ = *declared;
  } else if (input_shape_) {
    layer->ensure_built(batch_shape(current_output_shape()));
  }
  layers_.push_back(std::move(layer));
}

DEVTENSOR_DEFINITION Tensor<float> Sequential::operator()(const Tensor<float>& x) {
  if (layers_.empty()) throw InvalidArgumentError("Sequential model \"" + name_ + "\" has no layers; add() some first");
  if (!input_shape_) {
    auto dims = x.shape().dims_vector();
    if (!dims.empty()) dims[0] = -1;
    input_shape_ = dims;
  }
  Tensor<float> y = x;
  for (auto& layer : layers_) y = layer(y);
  return y;
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> Sequential::variables() const {
  std::vector<Variable<float>> out;
  for (const auto& l : layers_)
    for (auto& v : l->variables()) out.push_back(v);
  return out;
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> Sequential::trainable_variables() const {
  std::vector<Variable<float>> out;
  for (const auto& l : layers_)
    for (auto& v : l->trainable_variables()) out.push_back(v);
  return out;
}

DEVTENSOR_DEFINITION std::int64_t Sequential::count_params() const {
  std::int64_t n = 0;
  for (const auto& v : variables()) n += v.shape().num_elements();
  return n;
}

DEVTENSOR_DEFINITION void Sequential::compile(Loss loss, Optimizer optimizer, CompileOptions options) {
  // A model whose variables exist already must have created them in the strategy's scope: plain
  // variables would train on one device while the strategy splits the batch (Keras's check).
  // Checked before anything changes, so a refused compile leaves the model as it was.
  const auto* scope = distribute::current_distribution_scope();
  const distribute::StrategyInterface* strategy = scope ? scope->strategy.get() : strategy_.get();
  if (strategy && built())
    for (const auto& v : variables()) {
      const auto* distributed = distribute::as_distributed(v);
      if (!distributed || &distributed->strategy() != strategy)
        throw InvalidArgumentError(
            "Variable (" + v.name() + ", shape " + v.shape().to_python() +
            ") was not created in the distribution strategy scope of (" + strategy->description() +
            "). It is most likely due to not all layers or the model or optimizer being created outside the "
            "distribution strategy scope. Try to make sure your code looks similar to the following.\n"
            "{\n  const auto scope = strategy.scope();\n  auto model = create_model();\n  model.compile(...);\n}");
    }
  std::vector<Metric> metrics;
  for (const auto& name : options.metrics) metrics.push_back(metric_by_name(name));
  capture_strategy();
  loss_ = std::move(loss);
  optimizer_ = std::move(optimizer);
  metrics_ = std::move(metrics);
  metric_names_ = options.metrics;
  run_eagerly_ = options.run_eagerly;
  traced_ = {};  // Keras makes its train_function again
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
