#pragma once
/// @file losses.hpp
/// @brief Losses (Keras's): MeanSquaredError and BinaryCrossentropy, with Keras's reductions, and
/// the type-erased Loss that Sequential::compile takes.
///
/// A loss first computes one value per example (the mean over the last axis), then reduces:
/// NONE keeps the per-example values, SUM adds them, SUM_OVER_BATCH_SIZE (and AUTO) divides the
/// sum by their number. Labels of rank one less than the predictions get a trailing axis, as
/// Keras does; other shape differences are errors rather than silent broadcasts.

#include <functional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/shape_ops.hpp"

namespace devtensor {
namespace nn {

enum class Reduction { AUTO, NONE, SUM, SUM_OVER_BATCH_SIZE };

namespace loss_detail {

/// y_true and y_pred with equal shapes (a trailing axis added to the one of lower rank).
template <Floating T>
std::pair<Tensor<T>, Tensor<T>> align(const Tensor<T>& y_true, const Tensor<T>& y_pred, std::string_view loss);
/// The loss's reduction of the per-example losses.
template <Floating T>
Tensor<T> reduce(const Tensor<T>& per_example, Reduction reduction);

// Compiled mode: these and the built-in losses' bodies are instantiated for float and double in
// src/devtensor.cpp (Note [Compiled mode]).
#if DEVTENSOR_HEADER_DEFINITIONS
template <Floating T>
std::pair<Tensor<T>, Tensor<T>> align(const Tensor<T>& y_true, const Tensor<T>& y_pred, std::string_view loss) {
  if (!y_true.defined() || !y_pred.defined())
    throw InvalidArgumentError(std::string(loss) + ": y_true and y_pred must be non-empty tensors");
  Tensor<T> t = y_true;
  Tensor<T> p = y_pred;
  auto expanded = [](const Tensor<T>& x) {
    auto dims = x.shape().dims_vector();
    dims.push_back(1);
    return reshape(x, dims);
  };
  if (t.rank() + 1 == p.rank()) t = expanded(t);
  else if (p.rank() + 1 == t.rank()) p = expanded(p);
  if (t.shape() != p.shape() || p.rank() == 0)
    throw InvalidArgumentError(std::string(loss) + ": y_true and y_pred have incompatible shapes " +
                               y_true.shape().to_string() + " and " + y_pred.shape().to_string() +
                               " (they must be equal, or y_true may lack y_pred's last axis of size 1; "
                               "predictions need rank >= 1)");
  return {t, p};
}

template <Floating T>
Tensor<T> reduce(const Tensor<T>& per_example, Reduction reduction) {
  switch (reduction) {
    case Reduction::NONE: return per_example;
    case Reduction::SUM: return reduce_sum(per_example);
    case Reduction::AUTO:
    case Reduction::SUM_OVER_BATCH_SIZE: {
      const auto n = static_cast<T>(std::max<std::int64_t>(1, per_example.num_elements()));
      return div(reduce_sum(per_example), scalar<T>(n));
    }
  }
  return per_example;
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace loss_detail

namespace losses {

/// mean((y_pred - y_true)^2) over the last axis, then the reduction.
struct MeanSquaredError {
  Reduction reduction = Reduction::AUTO;
  static constexpr std::string_view name = "mean_squared_error";

  template <Floating T>
  [[nodiscard]] Tensor<T> per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const;
  template <Floating T>
  [[nodiscard]] Tensor<T> operator()(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
    return loss_detail::reduce(per_example(y_true, y_pred), reduction);
  }
};

/// Binary cross-entropy. With `from_logits` the predictions are logits and the loss is
/// computed stably as max(x, 0) - x·z + log(1 + exp(-|x|)); otherwise they are probabilities,
/// clipped to [1e-7, 1 - 1e-7] as Keras does.
struct BinaryCrossentropy {
  bool from_logits = false;
  double label_smoothing = 0.0;
  Reduction reduction = Reduction::AUTO;
  static constexpr std::string_view name = "binary_crossentropy";
  static constexpr double epsilon = 1e-7;

  template <Floating T>
  [[nodiscard]] Tensor<T> per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const;
  template <Floating T>
  [[nodiscard]] Tensor<T> operator()(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
    return loss_detail::reduce(per_example(y_true, y_pred), reduction);
  }
};

#if DEVTENSOR_HEADER_DEFINITIONS
template <Floating T>
Tensor<T> MeanSquaredError::per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
  auto [t, p] = loss_detail::align(y_true, y_pred, "MeanSquaredError");
  return reduce_mean(square(sub(p, t)), -1);
}

template <Floating T>
Tensor<T> BinaryCrossentropy::per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
  if (label_smoothing < 0 || label_smoothing > 1)
    throw InvalidArgumentError("BinaryCrossentropy: label_smoothing must be in [0, 1], got " +
                               std::to_string(label_smoothing));
  auto [z, x] = loss_detail::align(y_true, y_pred, "BinaryCrossentropy");
  if (label_smoothing > 0)
    z = add(mul(z, scalar<T>(static_cast<T>(1 - label_smoothing))), scalar<T>(static_cast<T>(0.5 * label_smoothing)));
  Tensor<T> elementwise;
  if (from_logits) {
    const auto abs_x = abs(x);
    elementwise = add(sub(relu(x), mul(x, z)), log(add(scalar<T>(1), exp(neg(abs_x)))));
  } else {
    const auto eps = scalar<T>(static_cast<T>(epsilon));
    const auto one = scalar<T>(1);
    const auto p = minimum(maximum(x, eps), sub(one, eps));
    elementwise = neg(add(mul(z, log(add(p, eps))), mul(sub(one, z), log(add(sub(one, p), eps)))));
  }
  return reduce_mean(elementwise, -1);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace losses

/// sum(per_example_loss) / global_batch_size: summed over replicas, the mean over the global batch
/// (TensorFlow's tf.nn.compute_average_loss). The default global batch size is this replica's
/// batch dimension × the number of replicas; a global batch size of 0 gives 0.
/// @throws InvalidArgumentError for a rank-0 loss; FailedPreconditionError without a global batch
/// size in cross-replica context.
template <Floating T>
[[nodiscard]] Tensor<T> compute_average_loss(const Tensor<T>& per_example_loss,
                                             std::optional<std::int64_t> global_batch_size = std::nullopt) {
  if (!per_example_loss.defined() || per_example_loss.rank() == 0)
    throw InvalidArgumentError("Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1, "
                               "received: " + (per_example_loss.defined() ? per_example_loss.shape().to_string() : std::string("an undefined tensor")));
  std::int64_t global = 0;
  if (global_batch_size) {
    global = *global_batch_size;
  } else {
    const auto* replica = distribute::current_replica_context();
    if (!replica) {
      bool distributed = distribute::current_distribution_scope() != nullptr;
      if (distributed)
        throw FailedPreconditionError("You are calling `compute_average_loss` in cross replica context, while it was "
                                      "expected to be called in replica context. Pass global_batch_size.");
      global = per_example_loss.shape()[0];
    } else {
      global = per_example_loss.shape()[0] * replica->num_replicas;
    }
  }
  if (global < 0) throw InvalidArgumentError("global_batch_size must be >= 0, got " + std::to_string(global));
  const Tensor<T> total = reduce_sum(per_example_loss);
  if (global == 0) return zeros<T>(Shape{});
  return div(total, scalar<T>(static_cast<T>(global)));
}

/// sum(loss) / num_replicas_in_sync (1 outside a strategy).
template <Floating T>
[[nodiscard]] Tensor<T> scale_regularization_loss(const Tensor<T>& loss) {
  const auto* replica = distribute::current_replica_context();
  const int replicas = replica ? replica->num_replicas : 1;
  return div(reduce_sum(loss), scalar<T>(static_cast<T>(replicas)));
}

/// Any loss with `per_example(y_true, y_pred)`, a `reduction` and a `name` (float32).
class Loss {
 public:
  template <class L>
    requires requires(const L& l, const Tensor<float>& t) {
      { l.per_example(t, t) } -> std::same_as<Tensor<float>>;
      { l.reduction } -> std::convertible_to<Reduction>;
      { L::name } -> std::convertible_to<std::string_view>;
    }
  Loss(L loss)  // NOLINT: implicit, so compile() takes any loss
      : per_example_([loss](const Tensor<float>& t, const Tensor<float>& p) { return loss.per_example(t, p); }),
        reduction_(loss.reduction),
        name_(L::name) {}

  /// The per-example values (before reduction).
  [[nodiscard]] Tensor<float> per_example(const Tensor<float>& y_true, const Tensor<float>& y_pred) const {
    return per_example_(y_true, y_pred);
  }
  /// The reduced loss.
  [[nodiscard]] Tensor<float> operator()(const Tensor<float>& y_true, const Tensor<float>& y_pred) const {
    return loss_detail::reduce(per_example_(y_true, y_pred), reduction_);
  }
  [[nodiscard]] Reduction reduction() const noexcept { return reduction_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }

 private:
  std::function<Tensor<float>(const Tensor<float>&, const Tensor<float>&)> per_example_;
  Reduction reduction_;
  std::string name_;
};

}  // namespace nn
}  // namespace devtensor
