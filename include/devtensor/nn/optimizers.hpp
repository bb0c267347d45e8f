#pragma once
/// @file optimizers.hpp
/// @brief SGD (with momentum and Nesterov) and Adam with Keras's update rules, each a fused
/// update per variable per step on the variable's device (ops/training_functors.hpp), and the
/// type-erased Optimizer compile() takes.
///
/// An optimizer's state (iterations, slots) is shared by its copies, so the optimizer passed to
/// compile() and the model's optimizer are one. Slots live beside each component of a variable,
/// on its device, created as zeros on first use (Keras's add_variable_from_reference).
/// apply_gradients in cross-replica context: the gradient (summed across replicas by the caller,
/// as fit does) is brought to each component's device and the same update is applied there, so
/// mirrored components stay equal. Inside strategy.run (TensorFlow's custom training loop), every
/// replica's gradients meet in merge_call, are summed across the replicas (and workers) by the
/// strategy's all-reduce, and the update runs once, each component with the sum on its device.

#include <any>
#include <array>
#include <cctype>
#include <cmath>
#include <concepts>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/distribute/distributed_variable.hpp"
#include "devtensor/distribute/remote_variable.hpp"
#include "devtensor/nn/optimizer_apply.hpp"
#include "devtensor/nn/optimizer_slots.hpp"
#include "devtensor/nn/schedules.hpp"
#include "devtensor/ops/graph.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

namespace optimizers {

struct SGD {
  /// A number or a schedule (schedules.hpp); copies share it.
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  /// Shared by copies: the step count and the velocities.
  std::shared_ptr<optimizer_detail::SlotTable<1>> slots = std::make_shared<optimizer_detail::SlotTable<1>>();
  static constexpr std::string_view name = "SGD";

  /// @throws InvalidArgumentError for a learning rate <= 0 (a number; a schedule checked itself) or
  /// a momentum outside [0, 1].
  void validate() const;

  /// One update of every variable with its gradient (ResourceApplyGradientDescent, or
  /// ResourceApplyKerasMomentum with a velocity slot); variables without a gradient are skipped
  /// with Keras's warning. @throws InvalidArgumentError for no variables, no gradients at all,
  /// mismatched counts or shapes (nothing is updated then).
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const;
  /// Internal (ops::ResourceApply): one step of every variable of `updates`, component c of
  /// variable k with `gradient(k, c, its device)`, and the step count advanced.
  void update(const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) const;
  /// The update rule as a parameter server runs it: {learning_rate (this step's), momentum, nesterov}.
  [[nodiscard]] distribute::OptimizerRule rule() const {
    return {std::string(name), {learning_rate.at(iterations()), momentum, nesterov ? 1.0 : 0.0}};
  }
  [[nodiscard]] std::int64_t iterations() const {
    std::lock_guard lock(slots->mutex);
    return slots->iterations;
  }
  /// The velocities (with momentum) of `vars` in Keras's order; restore sets them and the count.
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const;
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
               const std::vector<Tensor<float>>& values) const;

 private:
  [[nodiscard]] optimizer_detail::SlotGroups groups() const {
    return momentum != 0.0 ? optimizer_detail::SlotGroups{{0}} : optimizer_detail::SlotGroups{};
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: the state's export and import are compiled once.
DEVTENSOR_DEFINITION std::vector<Tensor<float>> SGD::slot_values(const std::vector<Variable<float>>& vars) const {
  return optimizer_detail::export_slots(*slots, vars, groups());
}
DEVTENSOR_DEFINITION void SGD::restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
                                       const std::vector<Tensor<float>>& values) const {
  optimizer_detail::import_slots(*slots, vars, groups(), steps, values);
}

DEVTENSOR_DEFINITION void SGD::validate() const {
  if (!learning_rate.is_schedule() && !(learning_rate.at(0) > 0))
    throw InvalidArgumentError("SGD: learning_rate must be positive, got " + std::to_string(learning_rate.at(0)));
  if (!(momentum >= 0 && momentum <= 1))
    throw InvalidArgumentError("`momentum` must be between [0, 1]. Received: momentum=" + std::to_string(momentum) +
                               " (of type <class 'float'>)");
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// Adam (Kingma & Ba) with Keras's defaults and update rule: bias correction folded into the step
/// size, alpha = learning_rate · sqrt(1 − beta_2^t) / (1 − beta_1^t), epsilon added to sqrt(v)
/// (Keras's "epsilon hat"), AMSGrad keeping the running maximum of v.
struct Adam {
  /// A number or a schedule (schedules.hpp); copies share it.
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  /// Shared by copies: the step count and the moments (m, v, v_hat).
  std::shared_ptr<optimizer_detail::SlotTable<3>> slots = std::make_shared<optimizer_detail::SlotTable<3>>();
  static constexpr std::string_view name = "Adam";

  /// @throws InvalidArgumentError for a negative or non-finite learning rate (a number), a beta outside
  /// [0, 1), or a negative epsilon.
  void validate() const;

  /// One Adam step of every variable with its gradient (ResourceApplyAdam), rules as SGD's.
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const;
  /// Internal: as SGD::update.
  void update(const optimizer_detail::Updates& updates, const optimizer_detail::GradientFor& gradient) const;
  /// The update rule as a parameter server runs it: {learning_rate (this step's), beta_1, beta_2,
  /// epsilon, amsgrad}.
  [[nodiscard]] distribute::OptimizerRule rule() const {
    return {std::string(name), {learning_rate.at(iterations()), beta_1, beta_2, epsilon, amsgrad ? 1.0 : 0.0}};
  }
  [[nodiscard]] std::int64_t iterations() const {
    std::lock_guard lock(slots->mutex);
    return slots->iterations;
  }
  /// The moments of `vars` in Keras's order (m, v per variable; then v_hat); restore sets them.
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const;
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
               const std::vector<Tensor<float>>& values) const;

 private:
  [[nodiscard]] optimizer_detail::SlotGroups groups() const {
    return amsgrad ? optimizer_detail::SlotGroups{{0, 1}, {2}} : optimizer_detail::SlotGroups{{0, 1}};
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION std::vector<Tensor<float>> Adam::slot_values(const std::vector<Variable<float>>& vars) const {
  return optimizer_detail::export_slots(*slots, vars, groups());
}
DEVTENSOR_DEFINITION void Adam::restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
                                        const std::vector<Tensor<float>>& values) const {
  optimizer_detail::import_slots(*slots, vars, groups(), steps, values);
}

DEVTENSOR_DEFINITION void Adam::validate() const {
  if (const double lr = learning_rate.at(0); !learning_rate.is_schedule() && (!(lr >= 0) || !std::isfinite(lr)))
    throw InvalidArgumentError("Adam: `learning_rate` must be a non-negative number. Received: learning_rate=" +
                               std::to_string(lr));
  const auto check_beta = [](const char* what, double beta) {
    if (!(beta >= 0 && beta < 1))
      throw InvalidArgumentError(std::string("Adam: `") + what + "` must be between [0, 1). Received: " + what + "=" +
                                 std::to_string(beta));
  };
  check_beta("beta_1", beta_1);
  check_beta("beta_2", beta_2);
  if (!(epsilon >= 0))
    throw InvalidArgumentError("Adam: `epsilon` must be non-negative. Received: epsilon=" + std::to_string(epsilon));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace optimizers

/// Any optimizer with `apply_gradients(grads, vars)`, `validate()` and a `name`.
class Optimizer {
 public:
  /// A loss-scale optimizer (optimizers::LossScaleOptimizer): fit multiplies the loss by
  /// scale_loss and hands it the scaled gradients; its learning rate, iterations and slots are its
  /// inner optimizer's.
  template <class O>
  requires requires { O::scales_the_loss; }
  Optimizer(O optimizer)  // NOLINT: implicit, so compile() takes it
      : apply_([optimizer](const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
          optimizer.apply_gradients(g, v);
        }),
        iterations_([optimizer] { return optimizer.iterations(); }),
        slot_values_([optimizer](const std::vector<Variable<float>>& vars) {
          return optimizer.inner_optimizer.slot_values(vars);
        }),
        restore_([optimizer](const std::vector<Variable<float>>& vars, std::int64_t steps,
                             const std::vector<Tensor<float>>& values) {
          optimizer.inner_optimizer.restore(vars, steps, values);
        }),
        scale_loss_([optimizer](const Tensor<float>& loss) { return optimizer.scale_loss(loss); }),
        build_loss_scale_([optimizer] { optimizer.build(); }),
        learning_rate_(optimizer.inner_optimizer.learning_rate_),
        rate_settable_(optimizer.inner_optimizer.rate_settable_),
        name_(O::name),
        object_(optimizer) {
    optimizer.validate();
  }
  template <class O>
  requires(!requires { O::scales_the_loss; }) &&
      requires(const O& o, const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
    o.apply_gradients(g, v);
    o.validate();
    { O::name } -> std::convertible_to<std::string_view>;
  }
  Optimizer(O optimizer)  // NOLINT: implicit, so compile() takes any optimizer
      : apply_([optimizer](const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
          optimizer.apply_gradients(g, v);
        }),
        iterations_([optimizer]() -> std::int64_t {
          if constexpr (requires { optimizer.iterations(); })
            return optimizer.iterations();
          else
            return 0;
        }),
        slot_values_([optimizer](const std::vector<Variable<float>>& vars) -> std::vector<Tensor<float>> {
          if constexpr (requires { optimizer.slot_values(vars); })
            return optimizer.slot_values(vars);
          else
            return {};
        }),
        restore_([optimizer](const std::vector<Variable<float>>& vars, std::int64_t steps,
                             const std::vector<Tensor<float>>& values) {
          if constexpr (requires { optimizer.restore(vars, steps, values); })
            optimizer.restore(vars, steps, values);
          else
            throw UnimplementedError(std::string(O::name) + " cannot restore a saved state");
        }),
        learning_rate_(rate_of(optimizer)),
        rate_settable_(std::same_as<std::remove_cvref_t<decltype(optimizer.learning_rate)>, LearningRate>),
        name_(O::name),
        object_(optimizer) {
    optimizer.validate();
  }
  /// An optimizer by its Keras identifier, with Keras's defaults: "sgd" (learning rate 0.01),
  /// "adam" (0.001), in any case. @throws InvalidArgumentError for another name.
  Optimizer(const char* identifier) : Optimizer(by_name(identifier)) {}         // NOLINT: compile("mse", "sgd")
  Optimizer(const std::string& identifier) : Optimizer(by_name(identifier)) {}  // NOLINT

  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
    apply_(grads, vars);
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Whether fit differentiates scale_loss(loss) rather than the loss (a loss-scale optimizer).
  [[nodiscard]] bool scales_the_loss() const noexcept { return static_cast<bool>(scale_loss_); }
  /// The loss fit differentiates: `loss` times the scale, for a loss-scale optimizer; else `loss`.
  [[nodiscard]] Tensor<float> scale_loss(const Tensor<float>& loss) const {
    return scale_loss_ ? scale_loss_(loss) : loss;
  }
  /// Makes a loss-scale optimizer's scale variable, in the current variable scope (a strategy's:
  /// mirrored), unless it has one; nothing for other optimizers.
  void build_loss_scale() const {
    if (build_loss_scale_) build_loss_scale_();
  }
  /// The optimizer as given, when it is an `O` (`optimizers::SGD`: what a saved compile config
  /// describes; it shares the state of this one); else null.
  template <class O>
  [[nodiscard]] const O* target() const noexcept {
    return std::any_cast<O>(&object_);
  }
  /// The updates applied so far (Keras's optimizer.iterations; 0 for an optimizer that does not count).
  [[nodiscard]] std::int64_t iterations() const { return iterations_(); }
  /// The learning rate of the next update (Keras's optimizer.learning_rate: a schedule's value at
  /// iterations()).
  [[nodiscard]] double learning_rate() const { return learning_rate_.at(iterations()); }
  /// Whether the learning rate is a schedule (then set_learning_rate refuses).
  [[nodiscard]] bool learning_rate_is_schedule() const noexcept { return learning_rate_.is_schedule(); }
  /// Sets the learning rate for the updates to come, also inside traced steps (Keras's
  /// `optimizer.learning_rate = x`; what ReduceLROnPlateau and LearningRateScheduler do).
  /// @throws InvalidArgumentError for a learning rate that is a schedule, or a value that is
  /// negative or not finite (the rate is unchanged then); UnimplementedError for an optimizer
  /// type whose `learning_rate` is a plain number, not a LearningRate.
  void set_learning_rate(double value) const {
    if (!rate_settable_)
      throw UnimplementedError(name_ +
                               " keeps its learning rate as a plain number, which nothing outside it can "
                               "change; declare its `learning_rate` as nn::LearningRate to let callbacks set it");
    if (!(value >= 0) || !std::isfinite(value))
      throw InvalidArgumentError("set_learning_rate: the learning rate must be a non-negative number, got " +
                                 std::to_string(value));
    learning_rate_.set(value);
  }
  /// The optimizer's slots for `vars` in Keras's order (what Keras saves after iterations and the
  /// learning rate); `restore` sets them and the step count (a checkpoint's resumption).
  /// @throws InvalidArgumentError for values of other counts or shapes (nothing changes then).
  [[nodiscard]] std::vector<Tensor<float>> slot_values(const std::vector<Variable<float>>& vars) const {
    return slot_values_(vars);
  }
  void restore(const std::vector<Variable<float>>& vars, std::int64_t steps,
               const std::vector<Tensor<float>>& values) const {
    restore_(vars, steps, values);
  }

 private:
  static Optimizer by_name(std::string_view identifier);
  /// The optimizer's own learning rate (shared), or for an optimizer whose learning rate is a plain
  /// number a copy of it, to read.
  template <class O>
  static LearningRate rate_of(const O& optimizer) {
    if constexpr (std::same_as<std::remove_cvref_t<decltype(optimizer.learning_rate)>, LearningRate>)
      return optimizer.learning_rate;
    else
      return static_cast<double>(optimizer.learning_rate);
  }

  std::function<void(const std::vector<Tensor<float>>&, const std::vector<Variable<float>>&)> apply_;
  std::function<std::int64_t()> iterations_;
  std::function<std::vector<Tensor<float>>(const std::vector<Variable<float>>&)> slot_values_;
  std::function<void(const std::vector<Variable<float>>&, std::int64_t, const std::vector<Tensor<float>>&)> restore_;
  std::function<Tensor<float>(const Tensor<float>&)> scale_loss_;  // empty: the loss as it is
  std::function<void()> build_loss_scale_;
  LearningRate learning_rate_;
  bool rate_settable_;
  std::string name_;
  std::any object_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
// Note [Compiled mode]: inline here header-only, compiled once in src/devtensor.cpp otherwise.

DEVTENSOR_DEFINITION Optimizer Optimizer::by_name(std::string_view id) {
  std::string lower(id);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "sgd") return optimizers::SGD{};
  if (lower == "adam") return optimizers::Adam{};
  throw InvalidArgumentError("Could not interpret optimizer identifier: " + std::string(id) +
                             " (known here: sgd, adam; or pass an optimizer object)");
}

DEVTENSOR_DEFINITION void optimizers::SGD::apply_gradients(const std::vector<Tensor<float>>& grads,
                                                           const std::vector<Variable<float>>& vars) const {
  validate();
  optimizer_detail::apply(*this, grads, vars,
                          momentum == 0.0 ? optimizer_detail::apply_info<ops::ApplyGradientDescent>
                                          : optimizer_detail::apply_info<ops::ApplyKerasMomentum>);
}

DEVTENSOR_DEFINITION void optimizers::SGD::update(const optimizer_detail::Updates& updates,
                                                  const optimizer_detail::GradientFor& gradient) const {
  const std::string_view op = momentum == 0.0 ? ops::ApplyGradientDescent::name : ops::ApplyKerasMomentum::name;
  const auto m = static_cast<float>(momentum);
  std::lock_guard lock(slots->mutex);
  const auto lr = static_cast<float>(optimizer_detail::rate_of_step(learning_rate, slots));
  for (std::size_t k = 0; k < updates.size(); ++k) {
    const Variable<float>& v = updates[k].second;
    if (momentum == 0.0) {
      v.apply_update(op, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
        const auto grad = gradient(k, c, var.device_info());
        kernels::run_update<ops::ApplyGradientDescent, float>(
            var.device_info(), ops::GradientDescentUpdate<float>{var.data(), grad.data(), out.mutable_data(), lr},
            var.num_elements());
      });
      continue;
    }
    v.apply_update(op, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
      const auto grad = gradient(k, c, var.device_info());
      auto& [velocity] = slots->of(v, c, var);
      kernels::run_update<ops::ApplyKerasMomentum, float>(
          var.device_info(),
          ops::KerasMomentumUpdate<float>{var.data(), grad.data(), velocity.mutable_data(), out.mutable_data(), lr, m,
                                          nesterov},
          var.num_elements());
    });
  }
  optimizer_detail::advance(slots);
}

DEVTENSOR_DEFINITION void optimizers::Adam::apply_gradients(const std::vector<Tensor<float>>& grads,
                                                            const std::vector<Variable<float>>& vars) const {
  validate();
  optimizer_detail::apply(*this, grads, vars, optimizer_detail::apply_info<ops::ApplyAdam>);
}

DEVTENSOR_DEFINITION void optimizers::Adam::update(const optimizer_detail::Updates& updates,
                                                   const optimizer_detail::GradientFor& gradient) const {
  std::lock_guard lock(slots->mutex);
  const double lr = optimizer_detail::rate_of_step(learning_rate, slots);
  const double t = static_cast<double>(slots->iterations + 1);
  const double alpha = lr * std::sqrt(1 - std::pow(beta_2, t)) / (1 - std::pow(beta_1, t));
  // GPUs compute the step size themselves, from their own step count: a replayed CUDA graph
  // takes each step with its own (ops/capture.hpp). Once per GPU and step.
  std::vector<std::pair<const Device*, const float*>> step_sizes;
  const auto step_size_at = [&](const Device& device) -> const float* {
    if (device.host_memory()) {
      if (graph::Capture::current())  // not expected: a capture holds GPU work only
        throw UnimplementedError("Adam's step size on " + device.full_name + " is computed on the host");
      return nullptr;
    }
    for (const auto& [where, size] : step_sizes)
      if (where == &device) return size;
    return step_sizes.emplace_back(&device, optimizer_detail::step_size_on(slots, device, lr, beta_1, beta_2)).second;
  };
  for (std::size_t k = 0; k < updates.size(); ++k) {
    const Variable<float>& v = updates[k].second;
    v.apply_update(ops::ApplyAdam::name, [&](std::size_t c, const Tensor<float>& var, Tensor<float>& out) {
      const auto grad = gradient(k, c, var.device_info());
      const float* alpha_at = step_size_at(var.device_info());
      auto& [m, v_moment, v_hat] = slots->of(v, c, var, amsgrad ? 3 : 2);
      kernels::run_update<ops::ApplyAdam, float>(
          var.device_info(),
          ops::AdamUpdate<float>{var.data(), grad.data(), m.mutable_data(), v_moment.mutable_data(),
                                 amsgrad ? v_hat.mutable_data() : nullptr, out.mutable_data(),
                                 static_cast<float>(alpha), static_cast<float>(1 - beta_1),
                                 static_cast<float>(1 - beta_2), static_cast<float>(epsilon), alpha_at},
          var.num_elements());
    });
  }
  optimizer_detail::advance(slots);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
