#pragma once
/// @file optimizers.hpp
/// @brief SGD with momentum (Keras's update rule) and the type-erased Optimizer compile() takes.
///
///   velocity = momentum · velocity − learning_rate · g
///   w += velocity                                  (nesterov: w += momentum · velocity − lr · g)
/// With momentum 0 this is w −= learning_rate · g. An optimizer's state (iterations, velocities)
/// is shared by its copies, so the SGD passed to compile() and the model's optimizer are one.

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "devtensor/core/error.hpp"
#include "devtensor/core/log.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/variables/variable.hpp"

namespace devtensor {
namespace nn {

namespace optimizer_detail {
struct SgdSlots {
  std::mutex mutex;
  std::int64_t iterations = 0;
  std::unordered_map<std::uint64_t, Tensor<float>> velocity;  // by variable handle id
};

/// The (gradient, variable) pairs that have a gradient, after Keras's checks.
inline std::vector<std::pair<Tensor<float>, Variable<float>>> pairs(const std::vector<Tensor<float>>& grads,
                                                                    const std::vector<Variable<float>>& vars) {
  if (vars.empty())
    throw InvalidArgumentError(
        "apply_gradients: no variables to update. Pass the model's trainable_variables() (a model has none "
        "until it is built: give the first layer an input_dim or call the model once).");
  if (grads.size() != vars.size())
    throw InvalidArgumentError("apply_gradients: " + std::to_string(grads.size()) + " gradients for " +
                               std::to_string(vars.size()) + " variables; pass one gradient per variable");
  std::vector<std::pair<Tensor<float>, Variable<float>>> out;
  std::string missing;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    if (!vars[i].defined()) throw InvalidArgumentError("apply_gradients: variable " + std::to_string(i) + " is empty");
    if (!grads[i].defined()) {
      missing += (missing.empty() ? "'" : ", '") + vars[i].name() + "'";
      continue;
    }
    if (grads[i].shape() != vars[i].shape())
      throw InvalidArgumentError("apply_gradients: the gradient for " + vars[i].name() + " has shape " +
                                 grads[i].shape().to_string() + " but the variable has shape " +
                                 vars[i].shape().to_string());
    out.emplace_back(grads[i], vars[i]);
  }
  if (out.empty())
    throw InvalidArgumentError("No gradients provided for any variable: ([" + missing +
                               "],). Check that the loss depends on the variables and was computed while the "
                               "GradientTape was recording.");
  if (!missing.empty())
    log(LogSource::python_logger, LogSeverity::warning, "Gradients do not exist for variables [" + missing +
                                  "] when minimizing the loss. If you're using `model.compile()`, did you forget "
                                  "to provide a `loss` argument?");
  return out;
}
}  // namespace optimizer_detail

namespace optimizers {

struct SGD {
  double learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  /// Shared by copies: the step count and the velocities.
  std::shared_ptr<optimizer_detail::SgdSlots> slots = std::make_shared<optimizer_detail::SgdSlots>();
  static constexpr std::string_view name = "SGD";

  /// @throws InvalidArgumentError for a learning rate <= 0 or a momentum outside [0, 1].
  void validate() const {
    if (!(learning_rate > 0))
      throw InvalidArgumentError("SGD: learning_rate must be positive, got " + std::to_string(learning_rate));
    if (momentum < 0 || momentum > 1)
      throw InvalidArgumentError("`momentum` must be between [0, 1]. Received: momentum=" + std::to_string(momentum) +
                                 " (of type <class 'float'>)");
  }

  /// One update of every variable with its gradient; variables without a gradient are skipped
  /// with Keras's warning. @throws InvalidArgumentError for no variables, no gradients at all,
  /// mismatched counts or shapes.
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
    validate();
    const auto updates = optimizer_detail::pairs(grads, vars);
    const auto lr = static_cast<float>(learning_rate);
    const auto m = static_cast<float>(momentum);
    std::lock_guard lock(slots->mutex);
    for (const auto& [g, v] : updates) {
      DeviceScope scope(v.device_spec());  // parsed once, at initialisation
      const auto step = mul(g, scalar<float>(lr));
      if (momentum == 0.0) {
        v.assign_sub(step);
        continue;
      }
      auto [slot, fresh] = slots->velocity.try_emplace(v.handle_id());
      const Tensor<float> velocity = fresh ? neg(step) : sub(mul(slot->second, scalar<float>(m)), step);
      slot->second = velocity;
      v.assign_add(nesterov ? sub(mul(velocity, scalar<float>(m)), step) : velocity);
    }
    ++slots->iterations;
  }
  [[nodiscard]] std::int64_t iterations() const {
    std::lock_guard lock(slots->mutex);
    return slots->iterations;
  }
};

}  // namespace optimizers

/// Any optimizer with `apply_gradients(grads, vars)`, `validate()` and a `name`.
class Optimizer {
 public:
  template <class O>
    requires requires(const O& o, const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
      o.apply_gradients(g, v);
      o.validate();
      { O::name } -> std::convertible_to<std::string_view>;
    }
  Optimizer(O optimizer)  // NOLINT: implicit, so compile() takes any optimizer
      : apply_([optimizer](const std::vector<Tensor<float>>& g, const std::vector<Variable<float>>& v) {
          optimizer.apply_gradients(g, v);
        }),
        name_(O::name) {
    optimizer.validate();
  }
  void apply_gradients(const std::vector<Tensor<float>>& grads, const std::vector<Variable<float>>& vars) const {
    apply_(grads, vars);
  }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::function<void(const std::vector<Tensor<float>>&, const std::vector<Variable<float>>&)> apply_;
  std::string name_;
};

}  // namespace nn
}  // namespace devtensor
