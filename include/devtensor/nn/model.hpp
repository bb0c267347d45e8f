#pragma once
/// @file model.hpp
/// @brief Model: Keras's model of layer calls between inputs and outputs (functional.hpp), with
/// compile / fit / evaluate / predict / summary. Sequential (sequential.hpp) is a Model whose graph
/// is a chain it makes itself.
///
///     auto inputs = nn::Input({1});
///     auto predictions = nn::Dense(1)(inputs);
///     nn::Model model(inputs, predictions);            // "functional"
///     model.compile(nn::losses::MeanSquaredError{}, nn::optimizers::SGD{0.2});
///     model.fit(x, y, {.epochs = 2, .batch_size = 10});
///
/// fit() runs, per batch, the forward pass under a
/// GradientTape, the loss, its gradients and the optimizer's update; an epoch's loss is the mean of
/// the batches' losses weighted by their sizes (Keras's loss tracker). Under a distribution
/// strategy each replica takes its share of the batch (see distribute/). As Keras, fit, evaluate
/// and predict trace their step into a graph (graph::traced_step) once per batch shape unless
/// compiled with run_eagerly; the graph runs the same kernels, so the results are the same bits.
/// The loops are training_loop.hpp's, the loss tracker metrics.hpp's, fit(x, y)'s batching
/// data_adapter.hpp's.

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devtensor/autodiff/gradient_tape.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/distribute/distributed_dataset.hpp"
#include "devtensor/graph/function.hpp"
#include "devtensor/nn/compile_utils.hpp"
#include "devtensor/nn/data_adapter.hpp"
#include "devtensor/nn/functional.hpp"
#include "devtensor/nn/keras_tensor.hpp"
#include "devtensor/nn/layer.hpp"
#include "devtensor/nn/losses.hpp"
#include "devtensor/nn/metrics.hpp"
#include "devtensor/nn/optimizers.hpp"
#include "devtensor/nn/summary.hpp"
#include "devtensor/nn/training_loop.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/graph_nodes.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

class Model;

namespace weights_io {
/// Where Model::save_weights and load_weights find the weights-file code: set by
/// <devtensor/hdf5/weights.hpp> (the devtensor::hdf5 component), so that models without it need
/// no HDF5.
struct Hooks {
  void (*save)(const Model&, const std::string&) = nullptr;
  void (*load)(Model&, const std::string&) = nullptr;
};
inline Hooks& hooks() noexcept {
  static Hooks installed;
  return installed;
}

/// Whether this translation unit belongs to a program that links the hdf5 component: the
/// devtensor::hdf5 target defines DEVTENSOR_WITH_HDF5 for its users (without CMake: -DDEVTENSOR_WITH_HDF5
/// and HDF5's flags). A call of save_weights or load_weights without it does not compile, instead of
/// failing after training (Note [Components are checked where they are called]).
struct Hdf5Component {
#if defined(DEVTENSOR_WITH_HDF5)
  static constexpr bool linked = true;
#else
  static constexpr bool linked = false;
#endif
};
}  // namespace weights_io

namespace saving {
/// Where Model::save and to_json, nn::load_model and model_from_json find the `.keras` archive
/// code: set by the devtensor::keras_archive component's object (src/devtensor_keras_archive.cpp,
/// compiled once, over libzip, nlohmann_json and HDF5), so that no other file needs any of them.
struct Hooks {
  void (*save)(const Model&, const std::string&) = nullptr;
  std::string (*to_json)(const Model&) = nullptr;
  std::shared_ptr<Model> (*load)(const std::string&, bool compile) = nullptr;
  std::shared_ptr<Model> (*from_json)(const std::string&) = nullptr;
};
inline Hooks& hooks() noexcept {
  static Hooks installed;
  return installed;
}
/// Whether this translation unit's program links the keras_archive component (its target defines
/// DEVTENSOR_WITH_KERAS_ARCHIVE); checked where the API is called, as Hdf5Component is.
struct KerasArchiveComponent {
#if defined(DEVTENSOR_WITH_KERAS_ARCHIVE)
  static constexpr bool linked = true;
#else
  static constexpr bool linked = false;
#endif
};
#define DEVTENSOR_KERAS_ARCHIVE_NEEDED(what)                                                                  \
  what " needs devtensor's keras_archive component: find_package(devtensor CONFIG COMPONENTS keras_archive) " \
       "and target_link_libraries(<your target> PRIVATE devtensor::keras_archive) (without CMake: "           \
       "-DDEVTENSOR_WITH_KERAS_ARCHIVE, and src/devtensor_keras_archive.cpp compiled and linked with HDF5, "  \
       "libzip and nlohmann_json)"
/// The bodies: UnimplementedError when the program holds no code of the component (neither its
/// object nor a file that includes <devtensor/saving/keras_archive.hpp>).
std::shared_ptr<Model> load_model_now(const std::string& path, bool compile);
std::shared_ptr<Model> model_from_json_now(const std::string& json);
}  // namespace saving

struct ModelOptions {
  /// Default: "functional", "functional_1", ...
  std::string name{};
};

/// nn::load_model's options (Keras's load_model arguments).
struct LoadModelOptions {
  /// Compile the model as the archive's compile_config says and restore its optimizer's state, so
  /// that training resumes (Keras's compile=True). false: the model comes back uncompiled and
  /// the archive's compile config and optimizer state are not read.
  bool compile = true;
};

class Model {
 public:
  using Dataset = data::Dataset<float, float>;

  /// The model of the layer calls between `inputs` (tensors nn::Input returned) and `outputs`.
  /// Made inside a distribution strategy's scope (its layers called there too), it trains across
  /// the strategy's replicas. @throws InvalidArgumentError when an input is not an Input's, or an
  /// output depends on an Input that is not among `inputs` ("Graph disconnected").
  Model(const KerasTensor& inputs, const KerasTensor& outputs, ModelOptions options = {})
      : Model(std::vector{inputs}, std::vector{outputs}, std::move(options)) {}
  Model(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs, ModelOptions options = {});
  Model(std::vector<KerasTensor> inputs, const KerasTensor& outputs, ModelOptions options = {})
      : Model(std::move(inputs), std::vector{outputs}, std::move(options)) {}
  Model(const KerasTensor& inputs, std::vector<KerasTensor> outputs, ModelOptions options = {})
      : Model(std::vector{inputs}, std::move(outputs), std::move(options)) {}
  virtual ~Model() = default;
  Model(const Model&) = default;
  Model& operator=(const Model&) = default;
  Model(Model&&) noexcept = default;
  Model& operator=(Model&&) noexcept = default;

  /// Runs the model on a batch; `training` as Keras's `training=` (Dropout is active only then).
  /// @throws InvalidArgumentError for a model of several inputs or outputs, or inputs of the wrong shape.
  Tensor<float> operator()(const Tensor<float>& x, bool training = false);
  /// Runs a model of several inputs or outputs: its outputs, in order.
  std::vector<Tensor<float>> operator()(const std::vector<Tensor<float>>& xs, bool training = false);
  /// Records a call of the model on symbolic tensors: a model inside another model.
  KerasTensor operator()(const KerasTensor& x);
  std::vector<KerasTensor> operator()(const std::vector<KerasTensor>& xs);
  /// The model as a layer (Layer(model), Sequential::add(model)). @throws FailedPreconditionError
  /// before it is built.
  [[nodiscard]] std::shared_ptr<LayerBase> impl() const;

  [[nodiscard]] virtual bool built() const { return graph_ != nullptr; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// The layers in Keras's order, its InputLayers included (a Sequential lists only its own).
  [[nodiscard]] std::vector<Layer> layers() const;
  [[nodiscard]] const std::vector<KerasTensor>& inputs() const;
  [[nodiscard]] const std::vector<KerasTensor>& outputs() const;

  [[nodiscard]] std::vector<Variable<float>> variables() const;
  /// What fit trains: the trainable variables of the layers not frozen; none for a frozen model.
  [[nodiscard]] std::vector<Variable<float>> trainable_variables() const;
  /// Freezes (false) or thaws every layer of the model, as Keras's `model.trainable = False`
  /// (transfer learning: a loaded base frozen under a new head). One layer: `layer.set_trainable`.
  void set_trainable(bool trainable);
  [[nodiscard]] bool trainable() const noexcept { return trainable_; }
  [[nodiscard]] std::int64_t count_params() const;
  /// The global dtype policy when the model was made (Keras's model.dtype_policy): under
  /// mixed_float16, compile wraps the optimizer in a LossScaleOptimizer.
  [[nodiscard]] const mixed_precision::DTypePolicy& dtype_policy() const noexcept { return policy_; }
  /// Whether compile() wrapped the optimizer it was given in a LossScaleOptimizer (then the model's
  /// compile config names the optimizer it was given, as Keras's).
  [[nodiscard]] bool optimizer_wrapped_for_loss_scaling() const noexcept { return optimizer_wrapped_; }

  /// The layers Keras tracks, in order: what summary lists and weights files hold (a functional
  /// model's InputLayers included, a Sequential's not).
  [[nodiscard]] virtual std::vector<std::shared_ptr<LayerBase>> tracked_layers() const;

  /// Writes every layer's variables to a Keras 3 weights file (`x.weights.h5`) that TensorFlow's
  /// `model.load_weights` reads; load_weights reads one (TensorFlow's or devtensor's) into the
  /// variables, all or nothing. Both need the devtensor::hdf5 component (whose header,
  /// <devtensor/hdf5/weights.hpp>, documents the layout and the errors; the umbrella header
  /// includes it when the component is linked). A call in a program without the component does
  /// not compile: the static_assert names the component.
  //
  // Note [Components are checked where they are called]: these are templates only so that the
  // check runs in the caller's translation unit, with the caller's definitions, and only when
  // called; src/devtensor.cpp compiles the bodies (save_weights_now) once.
  template <class Component = weights_io::Hdf5Component>
  void save_weights(const std::string& path) const {
    static_assert(Component::linked,
                  "model.save_weights needs devtensor's hdf5 component: find_package(devtensor CONFIG "
                  "COMPONENTS hdf5) and target_link_libraries(<your target> PRIVATE devtensor::hdf5) "
                  "(without CMake: -DDEVTENSOR_WITH_HDF5 and HDF5's compile and link flags)");
    save_weights_now(path);
  }
  template <class Component = weights_io::Hdf5Component>
  void load_weights(const std::string& path) {
    static_assert(Component::linked,
                  "model.load_weights needs devtensor's hdf5 component: find_package(devtensor CONFIG "
                  "COMPONENTS hdf5) and target_link_libraries(<your target> PRIVATE devtensor::hdf5) "
                  "(without CMake: -DDEVTENSOR_WITH_HDF5 and HDF5's compile and link flags)");
    load_weights_now(path);
  }
  /// The bodies: UnimplementedError when <devtensor/hdf5/weights.hpp> was included nowhere in the
  /// program (a program that defines DEVTENSOR_WITH_HDF5 by hand and includes only this header).
  void save_weights_now(const std::string& path) const;
  void load_weights_now(const std::string& path);

  /// Writes the whole model to a Keras 3 archive (`m.keras`: its config, its weights; what
  /// `keras.models.load_model` reads); nn::load_model reads one back. to_json: the config alone
  /// (Keras's `model.to_json()`), which nn::model_from_json reads. Both need the keras_archive
  /// component (<devtensor/saving/keras_archive.hpp> documents the format and the errors; linking
  /// the component is enough, no include); a call in a program without it does not compile.
  template <class Component = saving::KerasArchiveComponent>
  void save(const std::string& path) const {
    static_assert(Component::linked, DEVTENSOR_KERAS_ARCHIVE_NEEDED("model.save"));
    save_now(path);
  }
  template <class Component = saving::KerasArchiveComponent>
  [[nodiscard]] std::string to_json() const {
    static_assert(Component::linked, DEVTENSOR_KERAS_ARCHIVE_NEEDED("model.to_json"));
    return to_json_now();
  }
  void save_now(const std::string& path) const;
  [[nodiscard]] std::string to_json_now() const;

  /// Keras 3's summary table (summary.hpp). @throws FailedPreconditionError before the model is built.
  void summary(std::ostream& out = std::cout, SummaryOptions options = {}) const;

  /// Sets the loss and optimizer for fit and evaluate, the metrics they report, and whether their
  /// steps run eagerly. A model of several outputs applies the loss to each and trains on their
  /// sum. @throws InvalidArgumentError for an invalid optimizer configuration, a metric name Keras
  /// does not know, or metrics or loss_weights that do not match the outputs (compile_utils.hpp).
  void compile(Loss loss, Optimizer optimizer, CompileOptions options = {}) {
    compile(std::vector{std::move(loss)}, std::move(optimizer), std::move(options));
  }
  /// One loss per output, in the outputs' order; trained on Σ loss_weights[i] · loss_i.
  void compile(std::vector<Loss> losses, Optimizer optimizer, CompileOptions options = {});
  [[nodiscard]] bool compiled() const noexcept { return compiled_loss_.has_value(); }
  /// Whether fit, evaluate and predict run their steps op by op (Keras's model.run_eagerly).
  [[nodiscard]] bool run_eagerly() const noexcept { return run_eagerly_; }
  void set_run_eagerly(bool run_eagerly) noexcept { run_eagerly_ = run_eagerly; }

  /// Trains on batches: each epoch one pass, or steps_per_epoch steps continuing one pass.
  /// @throws FailedPreconditionError before compile(); InvalidArgumentError for negative epochs,
  /// an infinite dataset without steps_per_epoch, batches the model or the loss cannot take
  /// (another number of inputs or targets than the model has inputs and outputs).
  History fit(const data_adapter::Batches& batches, FitOptions options = {});
  /// Trains on a batched dataset whose components are the model's inputs, then its targets:
  /// (x, y), or (x1, x2, y) for a model of two inputs and one output.
  History fit(const Dataset& dataset, FitOptions options = {});
  template <Element... Ts>
  requires(sizeof...(Ts) > 2) History fit(const data::Dataset<Ts...>& dataset, FitOptions options = {}) {
    return fit(data_adapter::Batches::from_dataset(dataset, input_count()), std::move(options));
  }

  /// Trains on examples x [n, ...] and targets y [n, ...], batched (shuffled each epoch) here, the
  /// last validation_split of them held out. @throws InvalidArgumentError for different counts.
  History fit(const Tensor<float>& x, const Tensor<float>& y, FitOptions options = {}) {
    return fit(std::vector{x}, std::vector{y}, std::move(options));
  }
  /// A model of several inputs or outputs: one tensor [n, ...] per input, one per output.
  History fit(std::vector<Tensor<float>> xs, std::vector<Tensor<float>> ys, FitOptions options = {}) {
    require_compiled();
    data_adapter::split_validation(xs, ys, options);
    return fit(data_adapter::from_arrays(xs, ys, options.batch_size, options.shuffle, options.seed),
               std::move(options));
  }

  /// The loss and the compiled metrics over batches (weighted by batch sizes), without training.
  Evaluation evaluate(const data_adapter::Batches& batches, EvaluateOptions options = {});
  Evaluation evaluate(const Dataset& dataset, EvaluateOptions options = {});
  template <Element... Ts>
  requires(sizeof...(Ts) > 2) Evaluation evaluate(const data::Dataset<Ts...>& dataset, EvaluateOptions options = {}) {
    return evaluate(data_adapter::Batches::from_dataset(dataset, input_count()), std::move(options));
  }
  Evaluation evaluate(const Tensor<float>& x, const Tensor<float>& y, EvaluateOptions options = {}) {
    return evaluate(std::vector{x}, std::vector{y}, std::move(options));
  }
  Evaluation evaluate(const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys,
                      EvaluateOptions options = {}) {
    require_compiled();
    return evaluate(data_adapter::from_arrays(xs, ys, options.batch_size, false, std::nullopt), std::move(options));
  }

  /// The model's outputs for x [n, ...], computed batch_size examples at a time.
  Tensor<float> predict(const Tensor<float>& x, PredictOptions options = {}) {
    return predict(std::vector{x}, options).front();
  }
  /// A model of several inputs (each [n, ...]) or outputs.
  std::vector<Tensor<float>> predict(const std::vector<Tensor<float>>& xs, PredictOptions options = {});

  /// One training step on a batch: returns the batch's loss and its number of examples. Under a
  /// strategy the batch is split across the replicas, each computes its gradients concurrently,
  /// the gradients are summed by the strategy's cross-device ops, and the update is applied to
  /// every replica's variables alike.
  /// Runs op by op, as Keras's train_step; train_on_batch runs it as fit does.
  std::pair<double, std::int64_t> train_step(const Tensor<float>& x, const Tensor<float>& y) {
    return train_step(std::vector{x}, std::vector{y});
  }
  /// A model of several inputs or outputs: one tensor per input, one per output.
  std::pair<double, std::int64_t> train_step(const std::vector<Tensor<float>>& xs,
                                             const std::vector<Tensor<float>>& ys);

  /// One training step on a batch as fit runs it (traced unless run_eagerly): the batch's loss.
  double train_on_batch(const Tensor<float>& x, const Tensor<float>& y) {
    return train_on_batch(std::vector{x}, std::vector{y});
  }
  double train_on_batch(const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys) {
    require_compiled();
    return static_cast<double>(fit_step({xs, ys}).loss.item());
  }

  /// The loss (of the first output, for a model compiled with one per output).
  [[nodiscard]] const Loss& loss() const {
    require_compiled();
    return compiled_loss_->loss(0);
  }
  [[nodiscard]] const Optimizer& optimizer() const {
    require_compiled();
    return *optimizer_;
  }
  /// The losses compile() was given (one, or one per output) and its options, metrics included
  /// (what model.save writes as the compile config). @throws FailedPreconditionError before compile().
  [[nodiscard]] const std::vector<Loss>& losses() const {
    require_compiled();
    return compiled_loss_->losses();
  }
  [[nodiscard]] const CompileOptions& compile_options() const {
    require_compiled();
    return compiled_loss_->options();
  }

  /// The graph of fit's traced training step (Keras's `model.train_function`), as traced for the
  /// latest batch shape; null before the first step or when the model runs eagerly.
  [[nodiscard]] std::shared_ptr<const ConcreteFunction> train_function() const {
    return traced_.train ? graph::last_concrete_function(traced_.train) : nullptr;
  }

  /// Whether a callback asked fit to stop (Keras's model.stop_training): fit stops after the
  /// batch or the epoch under way. fit clears it when it starts.
  [[nodiscard]] bool stop_training() const noexcept { return stop_training_; }
  void set_stop_training(bool stop) noexcept { stop_training_ = stop; }
  /// Makes the next fit start at `point` instead of FitOptions::initial_epoch (Keras's
  /// model._initial_epoch, which BackupAndRestore sets in on_train_begin): fit reads it after the
  /// callbacks' on_train_begin, moves its data on to where the interrupted run was, and clears it.
  void set_resume_point(ResumePoint point) noexcept { resume_point_ = point; }
  /// Whether this process writes the training's files (checkpoints, logs): without a strategy, or
  /// a multi-worker strategy's worker 0 (Keras's chief).
  [[nodiscard]] bool is_chief() const;

  /// Copies of the variables' values, on the host, in variables()' order (Keras's get_weights).
  [[nodiscard]] std::vector<Tensor<float>> get_weights() const;
  /// Assigns every variable its value (all components of a mirrored one). @throws
  /// InvalidArgumentError for another count or a shape that differs (nothing changes then).
  void set_weights(const std::vector<Tensor<float>>& weights) const;

 protected:
  /// A model without a graph yet (Sequential).
  explicit Model(std::string name);

  /// Makes the graph for inputs of `input_shape` (batch first) if the model has none: Sequential
  /// builds when it first sees its input. Called in the strategy's scope.
  virtual void build_graph(const Shape& /*input_shape*/) {}
  /// Whether summary has the "Connected to" column.
  [[nodiscard]] virtual bool summary_connections() const;
  /// Builds the model for inputs like x, eagerly and in the strategy's scope (a traced step must
  /// not create the variables).
  void build_for(const Tensor<float>& x);
  /// A change of the model's layers: the traced steps are made again.
  void forget_traced_steps() noexcept { traced_ = {}; }

  std::string name_;
  std::shared_ptr<distribute::StrategyInterface> strategy_;
  std::shared_ptr<layer_detail::FunctionalGraph> graph_;
  mixed_precision::DTypePolicy policy_ = mixed_precision::global_policy();
  bool optimizer_wrapped_ = false;  // compile() made the LossScaleOptimizer

 private:
  std::optional<CompiledLoss> compiled_loss_;
  std::optional<Optimizer> optimizer_;
  bool run_eagerly_ = false;
  bool cuda_graph_ = false;  // CompileOptions::cuda_graph
  bool trainable_ = true;
  /// The trainable variables (their handles) the traced steps were made for: fit traces again
  /// when a layer was frozen or thawed since.
  std::vector<std::uint64_t> traced_trainables_;
  bool stop_training_ = false;
  std::optional<ResumePoint> resume_point_;

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
    TracedSteps(TracedSteps&&) noexcept {}
    TracedSteps& operator=(TracedSteps&&) noexcept {
      train = test = predict = nullptr;
      return *this;
    }
  };
  TracedSteps traced_;
  /// `slot`, made from `step` on first use; nullptr when the model runs eagerly.
  const graph::TracedStep* traced(graph::TracedStep& slot, graph::TracedStep step, const char* name,
                                  bool cuda_graph = false) {
    if (run_eagerly_) return nullptr;
    if (!slot) slot = graph::traced_step(std::move(step), name, cuda_graph);
    return &slot;
  }

  /// The forward pass of a built model.
  std::vector<Tensor<float>> forward(const std::vector<Tensor<float>>& xs, bool training);
  Tensor<float> forward(const Tensor<float>& x, bool training);
  /// @throws InvalidArgumentError unless the model has one input and one output.
  void require_one_input_and_output(const char* what) const;
  /// The model's number of inputs (1 before a Sequential is built).
  [[nodiscard]] std::size_t input_count() const { return graph_ ? graph_->inputs().size() : 1; }
  /// @throws InvalidArgumentError unless the batch has a tensor per input and per output, each
  /// with the same number of examples.
  void require_matching_batch(const data_adapter::Batch& batch) const;

  /// fit's step: the batch's loss and reported values (not read) and its number of examples.
  training_loop::StepResult fit_step(const data_adapter::Batch& batch);
  /// evaluate's step, the same without training.
  training_loop::StepResult test_step(const data_adapter::Batch& batch);

  /// One step of the tape, the loss and the optimizer on this process's devices; the loss and the
  /// metrics are not read (fit decides when).
  training_loop::StepResult local_train_step(const data_adapter::Batch& batch, const Tensor<std::int64_t>& seed);
  /// A loss-scale optimizer's traced step: the loss and metrics, then the scaled gradients of the
  /// trainable variables (the update runs after the step, eagerly: its finite check reads them).
  std::vector<Tensor<float>> scaled_gradients_step(const data_adapter::Batch& batch, const Tensor<std::int64_t>& seed);
  /// The variables scaled_gradients_step's trace found no gradient for (zeros among its outputs,
  /// left out of the update as Keras leaves out a None gradient).
  std::vector<std::size_t> scaled_unconnected_;
  /// A loss-scale optimizer's update after a step whose last values are the scaled gradients of
  /// the trainable variables (taken off `values`); `unconnected`: those that have none.
  void apply_scaled_gradients(std::vector<Tensor<float>>& values, const std::vector<std::size_t>& unconnected);
  /// The seed of the next training step's random layers: the optimizer's iterations, so that a
  /// run resumed from a checkpoint draws as the uninterrupted one.
  Tensor<std::int64_t> step_seed() const { return scalar<std::int64_t>(optimizer_->iterations()); }
  /// The same on the host, for the traced steps, as TensorFlow keeps int64 scalars in host memory:
  /// their graph reads it only where a random layer does, and the executor copies it there, so a
  /// step on a GPU without one uploads nothing for it.
  Tensor<std::int64_t> host_step_seed() const;

  void capture_strategy();

  /// This process's share of the batch split across its replicas, each part on its replica's
  /// device (TensorFlow's split; DATA auto-shard across processes).
  std::vector<data_adapter::Batch> split_across_replicas(const data_adapter::Batch& batch) const;
  /// Splits the batch across the replicas and runs replicated_train_step, traced when
  /// `may_trace` and the model does not run eagerly.
  training_loop::StepResult distributed_train_step(const data_adapter::Batch& batch, bool may_trace);
  /// evaluate's step under a strategy: the batch split as fit's, replicated_test_step, traced
  /// unless the model runs eagerly.
  training_loop::StepResult distributed_test_step(const data_adapter::Batch& batch);
  /// Each replica's forward pass and its shares of the loss and metrics, summed over every replica.
  std::vector<Tensor<float>> replicated_test_step(const std::vector<data_adapter::Batch>& replicas,
                                                  std::int64_t global);
  /// predict's inputs under a strategy: every row split across this process's replicas, flat
  /// (replica after replica, its inputs in order), each part on its replica's device.
  std::vector<Tensor<float>> split_inputs_across_replicas(const std::vector<Tensor<float>>& xs) const;
  /// predict's forward pass under a strategy: replicas[r] the inputs of replica r; the outputs
  /// concatenated in replica order, which is the batch's row order.
  std::vector<Tensor<float>> replicated_predict_step(const std::vector<std::vector<Tensor<float>>>& replicas);
  /// strategy.reduce(SUM) of each replica's values (values[replica][k]) over every replica of every
  /// process: the step's loss, then its reported values.
  std::vector<Tensor<float>> sum_over_replicas(std::vector<std::vector<Tensor<float>>> values);

  /// Each replica's forward and backward pass on its rows, the gradients summed across the
  /// replicas, the update; returns the global loss, then the reported values over the global
  /// batch. `global`: the examples of every process.
  std::vector<Tensor<float>> replicated_train_step(const std::vector<data_adapter::Batch>& replicas,
                                                   const Tensor<std::int64_t>& seed, std::int64_t global);
  void require_compiled() const {
    if (!compiled_loss_) throw FailedPreconditionError("You must call `compile()` before using the model.");
  }
  void require_built() const {
    if (!built())
      throw FailedPreconditionError(
          "This model has not yet been built. Build the model first by calling it on a batch of data, or give the "
          "first layer an `input_dim`.");
  }
};

/// Rebuilds a model Keras 3 saved (`model.save("m.keras")`) or devtensor saved: its layers, their
/// weights, ready to predict; a Sequential comes back as a Sequential. A model saved compiled comes
/// back compiled alike, its optimizer's state restored (options.compile). Needs the keras_archive
/// component (<devtensor/saving/keras_archive.hpp>: the layers and optimizers it knows, the errors).
template <class Component = saving::KerasArchiveComponent>
[[nodiscard]] std::shared_ptr<Model> load_model(const std::string& path, LoadModelOptions options = {}) {
  static_assert(Component::linked, DEVTENSOR_KERAS_ARCHIVE_NEEDED("nn::load_model"));
  return saving::load_model_now(path, options.compile);
}
/// The model a config (Keras's `model.to_json()`) describes, with fresh weights.
template <class Component = saving::KerasArchiveComponent>
[[nodiscard]] std::shared_ptr<Model> model_from_json(const std::string& json) {
  static_assert(Component::linked, DEVTENSOR_KERAS_ARCHIVE_NEEDED("nn::model_from_json"));
  return saving::model_from_json_now(json);
}

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Model::Model(std::string name) : name_(std::move(name)) { capture_strategy(); }

DEVTENSOR_DEFINITION Model::Model(std::vector<KerasTensor> inputs, std::vector<KerasTensor> outputs,
                                  ModelOptions options)
    : name_(options.name.empty() ? unique_name("functional") : std::move(options.name)) {
  graph_ = std::make_shared<layer_detail::FunctionalGraph>(std::move(inputs), std::move(outputs), name_);
  capture_strategy();
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::operator()(const std::vector<Tensor<float>>& xs, bool training) {
  if (xs.size() == 1) build_for(xs[0]);
  require_built();
  return forward(xs, training);
}

DEVTENSOR_DEFINITION Tensor<float> Model::operator()(const Tensor<float>& x, bool training) {
  build_for(x);
  require_built();
  return forward(x, training);
}

DEVTENSOR_DEFINITION std::vector<Tensor<float>> Model::forward(const std::vector<Tensor<float>>& xs, bool training) {
  require_built();
  return graph_->call_inputs(xs, training);
}

DEVTENSOR_DEFINITION Tensor<float> Model::forward(const Tensor<float>& x, bool training) {
  require_built();
  require_one_input_and_output("calling it on one tensor");
  return graph_->call_inputs({x}, training).front();
}

DEVTENSOR_DEFINITION void Model::require_one_input_and_output(const char* what) const {
  if (graph_->inputs().size() != 1 || graph_->outputs().size() != 1)
    throw InvalidArgumentError("Model \"" + name_ + "\" has " + std::to_string(graph_->inputs().size()) +
                               " inputs and " + std::to_string(graph_->outputs().size()) + " outputs; " + what +
                               " needs one of each (call it on a vector of tensors, or predict on one)");
}

DEVTENSOR_DEFINITION std::vector<KerasTensor> Model::operator()(const std::vector<KerasTensor>& xs) {
  if (!built() && xs.size() == 1) {
    PartialShape dims = xs[0].shape();
    for (auto& d : dims)
      if (d < 0) d = 1;
    std::unique_ptr<distribute::StrategyScopeGuard> scope;
    if (strategy_) scope = strategy_->enter_scope();
    build_graph(Shape(dims));
  }
  require_built();
  return call_symbolic(graph_, xs);
}

DEVTENSOR_DEFINITION KerasTensor Model::operator()(const KerasTensor& x) {
  auto out = (*this)(std::vector{x});
  if (out.size() != 1) require_one_input_and_output("a symbolic call on one tensor");
  return out.front();
}

DEVTENSOR_DEFINITION std::shared_ptr<LayerBase> Model::impl() const {
  require_built();
  return graph_;
}

DEVTENSOR_DEFINITION void Model::build_for(const Tensor<float>& x) {
  if (built() || !x.defined()) return;
  std::unique_ptr<distribute::StrategyScopeGuard> scope;
  if (strategy_) scope = strategy_->enter_scope();  // so that the variables are mirrored
  build_graph(x.shape());
}

DEVTENSOR_DEFINITION std::vector<Layer> Model::layers() const {
  std::vector<Layer> out;
  if (graph_)
    for (const auto& l : graph_->layers()) out.emplace_back(l);
  return out;
}

DEVTENSOR_DEFINITION const std::vector<KerasTensor>& Model::inputs() const {
  require_built();
  return graph_->inputs();
}

DEVTENSOR_DEFINITION const std::vector<KerasTensor>& Model::outputs() const {
  require_built();
  return graph_->outputs();
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> Model::variables() const {
  return graph_ ? graph_->variables() : std::vector<Variable<float>>{};
}

DEVTENSOR_DEFINITION std::vector<Variable<float>> Model::trainable_variables() const {
  return graph_ && trainable_ ? graph_->trainable_variables() : std::vector<Variable<float>>{};
}

DEVTENSOR_DEFINITION void Model::set_trainable(bool trainable) {
  for (const auto& layer : tracked_layers()) layer->set_trainable(trainable);
  if (graph_) graph_->set_trainable(trainable);
  trainable_ = trainable;
}

DEVTENSOR_DEFINITION std::int64_t Model::count_params() const { return graph_ ? graph_->count_params() : 0; }

DEVTENSOR_DEFINITION std::vector<std::shared_ptr<LayerBase>> Model::tracked_layers() const {
  return graph_ ? graph_->layers() : std::vector<std::shared_ptr<LayerBase>>{};
}

DEVTENSOR_DEFINITION void Model::save_weights_now(const std::string& path) const {
  if (!weights_io::hooks().save)
    throw UnimplementedError(
        "save_weights needs the HDF5 component: link devtensor::hdf5 (find_package(devtensor "
        "COMPONENTS hdf5)) and include <devtensor/hdf5/weights.hpp>");
  weights_io::hooks().save(*this, path);
}

DEVTENSOR_DEFINITION void Model::save_now(const std::string& path) const {
  if (!saving::hooks().save)
    throw UnimplementedError(
        "model.save needs the keras_archive component: link devtensor::keras_archive (without CMake, "
        "compile and link src/devtensor_keras_archive.cpp)");
  saving::hooks().save(*this, path);
}

DEVTENSOR_DEFINITION std::string Model::to_json_now() const {
  if (!saving::hooks().to_json)
    throw UnimplementedError(
        "model.to_json needs the keras_archive component: link devtensor::keras_archive (without "
        "CMake, compile and link src/devtensor_keras_archive.cpp)");
  return saving::hooks().to_json(*this);
}

DEVTENSOR_DEFINITION std::shared_ptr<Model> saving::load_model_now(const std::string& path, bool compile) {
  if (!hooks().load)
    throw UnimplementedError(
        "load_model needs the keras_archive component: link devtensor::keras_archive (without "
        "CMake, compile and link src/devtensor_keras_archive.cpp)");
  return hooks().load(path, compile);
}

DEVTENSOR_DEFINITION std::shared_ptr<Model> saving::model_from_json_now(const std::string& json) {
  if (!hooks().from_json)
    throw UnimplementedError(
        "model_from_json needs the keras_archive component: link devtensor::keras_archive (without "
        "CMake, compile and link src/devtensor_keras_archive.cpp)");
  return hooks().from_json(json);
}

DEVTENSOR_DEFINITION void Model::load_weights_now(const std::string& path) {
  if (!weights_io::hooks().load)
    throw UnimplementedError(
        "load_weights needs the HDF5 component: link devtensor::hdf5 (find_package(devtensor "
        "COMPONENTS hdf5)) and include <devtensor/hdf5/weights.hpp>");
  weights_io::hooks().load(*this, path);
}

DEVTENSOR_DEFINITION bool Model::summary_connections() const { return !graph_->sequential_like(); }

DEVTENSOR_DEFINITION void Model::summary(std::ostream& out, SummaryOptions options) const {
  require_built();
  summary_detail::SummaryTable table;
  table.model_name = name_;
  table.connected_to = summary_connections();
  for (const auto& layer : tracked_layers()) {
    const auto& shapes = layer->last_output_shapes();
    std::string shape = shapes.size() == 1 ? python_shape(shapes[0]) : "?";
    if (shapes.size() > 1) {
      shape = "[";
      for (std::size_t i = 0; i < shapes.size(); ++i) shape += (i ? ", " : "") + python_shape(shapes[i]);
      shape += "]";
    }
    std::vector<std::string> row{
        layer->name() + " (" + layer->type_name() + ")", shape,
        layer->built() ? summary_detail::with_thousands(layer->count_params()) : "0 (unbuilt)"};
    if (table.connected_to) row.push_back(graph_->connections(*layer));
    table.rows.push_back(std::move(row));
  }
  for (const auto& v : trainable_variables()) table.trainable += v.shape().num_elements();
  table.non_trainable = count_params() - table.trainable;
  if (compiled() && optimizer_->iterations() > 0) {  // Keras's optimizer.built: after its first step
    std::int64_t slots = 0;
    for (const auto& slot : optimizer_->slot_values(trainable_variables())) slots += slot.num_elements();
    table.optimizer_params = 2 + slots;
    table.optimizer_bytes = 8 + 4 + 4 * slots;  // the int64 iteration count, the float32 learning rate
  }
  summary_detail::print(out, table, options);
}

DEVTENSOR_DEFINITION void Model::capture_strategy() {
  if (const auto* scope = distribute::current_distribution_scope()) {
    if (strategy_ && strategy_ != scope->strategy)
      throw InvalidArgumentError("Mixing different tf.distribute.Strategy objects: model \"" + name_ +
                                 "\" belongs to " + strategy_->description());
    strategy_ = scope->strategy;
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor

// fit's, evaluate's and predict's steps: Model's other definitions.
#include "devtensor/nn/model_training.hpp"
