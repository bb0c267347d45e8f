#pragma once
/// @file losses.hpp
/// @brief Losses (Keras's): MeanSquaredError, BinaryCrossentropy, CategoricalCrossentropy and
/// SparseCategoricalCrossentropy, with Keras's reductions, and the type-erased Loss that
/// Sequential::compile takes (also by Keras's names: "mse", "categorical_crossentropy", ...).
///
/// A loss first computes one value per example (over the last axis), then reduces:
/// NONE keeps the per-example values, SUM adds them, SUM_OVER_BATCH_SIZE (and AUTO) divides the
/// sum by their number. Labels of rank one less than the predictions get a trailing axis, as
/// Keras does; other shape differences are errors rather than silent broadcasts.

#include <any>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/distribute/context.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/nn_ops.hpp"
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
  if (t.rank() + 1 == p.rank())
    t = expanded(t);
  else if (p.rank() + 1 == t.rank())
    p = expanded(p);
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

/// Categorical cross-entropy over the last axis; y_true holds one-hot rows (or distributions) of
/// y_pred's shape. With `from_logits` the predictions are logits: −Σ y·log_softmax(x), computed
/// stably. Otherwise they are probabilities, scaled to sum 1 per row and clipped to
/// [1e-7, 1 − 1e-7] before the log, as Keras does. `label_smoothing` s replaces y_true by
/// y·(1 − s) + s / classes.
struct CategoricalCrossentropy {
  bool from_logits = false;
  double label_smoothing = 0.0;
  Reduction reduction = Reduction::AUTO;
  static constexpr std::string_view name = "categorical_crossentropy";
  static constexpr double epsilon = 1e-7;

  template <Floating T>
  [[nodiscard]] Tensor<T> per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const;
  template <Floating T>
  [[nodiscard]] Tensor<T> operator()(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
    return loss_detail::reduce(per_example(y_true, y_pred), reduction);
  }
};

/// Categorical cross-entropy with y_true holding class indices: [batch] (or [batch, 1]) for
/// y_pred [batch, classes]. The indices are floats (datasets here are float) that must be whole
/// numbers in [0, classes): eagerly on the CPU anything else raises TensorFlow's error; on a GPU
/// or in a traced step it gives a NaN loss for that example, as TensorFlow's GPU kernel does.
/// Probabilities are clipped to [1e-7, 1 − 1e-7], as Keras does, and not rescaled.
struct SparseCategoricalCrossentropy {
  bool from_logits = false;
  Reduction reduction = Reduction::AUTO;
  static constexpr std::string_view name = "sparse_categorical_crossentropy";
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

template <Floating T>
Tensor<T> CategoricalCrossentropy::per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
  if (label_smoothing < 0 || label_smoothing > 1)
    throw InvalidArgumentError("CategoricalCrossentropy: label_smoothing must be in [0, 1], got " +
                               std::to_string(label_smoothing));
  if (!y_true.defined() || !y_pred.defined() || y_true.shape() != y_pred.shape() || y_pred.rank() == 0)
    throw InvalidArgumentError(
        "CategoricalCrossentropy: arguments `target` and `output` must have the same shape of rank >= 1. Received: "
        "target.shape=" +
        (y_true.defined() ? y_true.shape().to_string() : "undefined") +
        ", output.shape=" + (y_pred.defined() ? y_pred.shape().to_string() : "undefined"));
  Tensor<T> target = y_true;
  if (label_smoothing > 0) {
    const auto classes = static_cast<double>(y_pred.shape()[y_pred.rank() - 1]);
    target = add(mul(target, scalar<T>(static_cast<T>(1 - label_smoothing))),
                 scalar<T>(static_cast<T>(label_smoothing / classes)));
  }
  if (from_logits) return neg(reduce_sum(mul(target, log_softmax(y_pred)), -1));
  const auto eps = scalar<T>(static_cast<T>(epsilon));
  const auto scaled = div(y_pred, reduce_sum(y_pred, -1, /*keepdims=*/true));
  const auto clipped = minimum(maximum(scaled, eps), sub(scalar<T>(1), eps));
  return neg(reduce_sum(mul(target, log(clipped)), -1));
}

namespace loss_detail {
/// Raises TensorFlow's error when a class index of `labels` is not a whole number in
/// [0, classes); only for values on the host, outside a trace (elsewhere they give NaN).
template <Floating T>
void check_class_indices(const Tensor<T>& labels, std::int64_t classes) {
  if (labels.symbolic() || !labels.host_memory()) return;
  const auto values = labels.to_vector();
  for (const T v : values) {
    if (v >= 0 && v < static_cast<T>(classes) && v == std::floor(v)) continue;
    std::string listed;
    for (std::size_t i = 0; i < values.size() && i < 32; ++i) {
      std::ostringstream text;
      text << values[i];
      listed += (i ? " " : "") + text.str();
    }
    std::ostringstream bad;
    bad << v;
    throw InvalidArgumentError("Received a label value of " + bad.str() + " which is outside the valid range of [0, " +
                               std::to_string(classes) + ").  Label values: " + listed);
  }
}
}  // namespace loss_detail

template <Floating T>
Tensor<T> SparseCategoricalCrossentropy::per_example(const Tensor<T>& y_true, const Tensor<T>& y_pred) const {
  if (!y_true.defined() || !y_pred.defined())
    throw InvalidArgumentError("SparseCategoricalCrossentropy: y_true and y_pred must be non-empty tensors");
  Tensor<T> labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.rank() > 0 && labels.shape()[labels.rank() - 1] == 1) {
    auto dims = labels.shape().dims_vector();
    dims.pop_back();
    labels = reshape(labels, dims);
  }
  bool leading_match = y_pred.rank() >= 1 && labels.rank() + 1 == y_pred.rank();
  for (std::size_t d = 0; leading_match && d < labels.rank(); ++d)
    leading_match = labels.shape()[d] == y_pred.shape()[d];
  if (!leading_match)
    throw InvalidArgumentError(
        "SparseCategoricalCrossentropy: argument `output` must have rank `target.ndim + 1` and "
        "`target`'s leading dimensions (class indices for rows of class scores). Received: "
        "target.shape=" +
        y_true.shape().to_string() + ", output.shape=" + y_pred.shape().to_string());
  const std::int64_t classes = y_pred.shape()[y_pred.rank() - 1];
  loss_detail::check_class_indices(labels, classes);
  Tensor<T> logits = y_pred;
  if (!from_logits) {
    const auto eps = scalar<T>(static_cast<T>(epsilon));
    logits = log(minimum(maximum(y_pred, eps), sub(scalar<T>(1), eps)));
  }
  // One-hot rows by comparing each index with 0 … classes − 1; a row without a 1 (an invalid
  // index) divides 0 by 0: NaN, where a valid row divides by exactly 1.
  auto dims = labels.shape().dims_vector();
  dims.push_back(1);
  const auto one_hot = grad_ops::equal(reshape(labels, dims), range<T>(0, static_cast<T>(classes), 1));
  return div(neg(reduce_sum(mul(one_hot, log_softmax(logits)), -1)), reduce_sum(one_hot, -1));
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
                                             std::optional<std::int64_t> global_batch_size = std::nullopt);

/// sum(loss) / num_replicas_in_sync (1 outside a strategy).
template <Floating T>
[[nodiscard]] Tensor<T> scale_regularization_loss(const Tensor<T>& loss);

// Their bodies: header-only here, else compiled for float and double in src/devtensor.cpp (the
// only floating types), so that a custom training loop does not compile the ops they run.
#if DEVTENSOR_HEADER_DEFINITIONS
template <Floating T>
Tensor<T> compute_average_loss(const Tensor<T>& per_example_loss, std::optional<std::int64_t> global_batch_size) {
  if (!per_example_loss.defined() || per_example_loss.rank() == 0)
    throw InvalidArgumentError(
        "Invalid value passed for `per_example_loss`. Expected a tensor with at least rank 1, "
        "received: " +
        (per_example_loss.defined() ? per_example_loss.shape().to_string() : std::string("an undefined tensor")));
  std::int64_t global = 0;
  if (global_batch_size) {
    global = *global_batch_size;
  } else {
    const auto* replica = distribute::current_replica_context();
    if (!replica) {
      bool distributed = distribute::current_distribution_scope() != nullptr;
      if (distributed)
        throw FailedPreconditionError(
            "You are calling `compute_average_loss` in cross replica context, while it was "
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

template <Floating T>
Tensor<T> scale_regularization_loss(const Tensor<T>& loss) {
  const auto* replica = distribute::current_replica_context();
  const int replicas = replica ? replica->num_replicas : 1;
  return div(reduce_sum(loss), scalar<T>(static_cast<T>(replicas)));
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

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
        name_(L::name),
        object_(loss) {}

  /// A loss by its Keras identifier, with its defaults: "mse" / "MSE" / "mean_squared_error" /
  /// "MeanSquaredError", "bce" / "BCE" / "binary_crossentropy" / "BinaryCrossentropy",
  /// "categorical_crossentropy" / "CategoricalCrossentropy", "sparse_categorical_crossentropy" /
  /// "SparseCategoricalCrossentropy". @throws InvalidArgumentError for another name.
  Loss(const char* identifier) : Loss(std::string(identifier)) {}  // NOLINT: compile("mse", "sgd")
  Loss(const std::string& identifier) : Loss(by_name(identifier)) { identifier_ = identifier; }  // NOLINT

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
  /// The Keras identifier it was made from ("mse"; what a saved compile config repeats), or empty.
  [[nodiscard]] const std::string& identifier() const noexcept { return identifier_; }
  /// The loss as given (or as its identifier made it), when it is an `L`; else null.
  template <class L>
  [[nodiscard]] const L* target() const noexcept {
    return std::any_cast<L>(&object_);
  }

 private:
  static Loss by_name(std::string_view identifier);

  std::function<Tensor<float>(const Tensor<float>&, const Tensor<float>&)> per_example_;
  Reduction reduction_;
  std::string name_;
  std::any object_;
  std::string identifier_;
};

#if DEVTENSOR_HEADER_DEFINITIONS
DEVTENSOR_DEFINITION Loss Loss::by_name(std::string_view id) {
  if (id == "mse" || id == "MSE" || id == "mean_squared_error" || id == "MeanSquaredError")
    return losses::MeanSquaredError{};
  if (id == "bce" || id == "BCE" || id == "binary_crossentropy" || id == "BinaryCrossentropy")
    return losses::BinaryCrossentropy{};
  if (id == "categorical_crossentropy" || id == "CategoricalCrossentropy") return losses::CategoricalCrossentropy{};
  if (id == "sparse_categorical_crossentropy" || id == "SparseCategoricalCrossentropy")
    return losses::SparseCategoricalCrossentropy{};
  throw InvalidArgumentError(
      "Could not interpret loss identifier: " + std::string(id) +
      " (known here: mse, mean_squared_error, bce, binary_crossentropy, categorical_crossentropy, "
      "sparse_categorical_crossentropy and their class names; or pass a loss object)");
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
