#pragma once
/// @file metrics.hpp
/// @brief LossTracker: the batch-size-weighted mean of the batches' losses (and metrics) that fit
/// and evaluate report (Keras's loss tracker, a keras.metrics.Mean); the accuracy and error metrics
/// compile takes by Keras's names, as per-example values.
///
/// A loss in host memory is read at once (a read costs nothing there); a loss on a GPU is summed on
/// the GPU, one fused launch per step (AccumulateWeighted: total += loss · n, in place), and read
/// only by result(), so a training step on a GPU never waits for the host.

#include <cstdint>
#include <string>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/creation.hpp"
#include "devtensor/ops/grad_ops.hpp"
#include "devtensor/ops/math.hpp"
#include "devtensor/ops/reduction.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/ops/training_ops.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn {

class LossTracker {
 public:
  /// Adds a batch's (scalar) loss, weighing it by its `n` examples.
  void add(const Tensor<float>& loss, std::int64_t n);
  /// The mean so far: one device→host read when GPU losses were added since the last call.
  [[nodiscard]] double result();

 private:
  double host_total_ = 0.0;
  Tensor<float> device_total_;
  std::int64_t examples_ = 0;

  void read_device_total();
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION void LossTracker::add(const Tensor<float>& loss, std::int64_t n) {
  examples_ += n;
  if (loss.host_memory()) {
    host_total_ += static_cast<double>(loss.item()) * static_cast<double>(n);
    return;
  }
  if (device_total_.defined() && &device_total_.device_info() != &loss.device_info()) read_device_total();
  if (!device_total_.defined())
    device_total_ = kernels::filled_on<float>(loss.device_info(), Shape{}, 0.0f, "ZerosLike");
  kernels::run_update<ops::AccumulateWeighted, float>(
      device_total_.device_info(),
      ops::WeightedAccumulateUpdate<float>{device_total_.data(), loss.data(), device_total_.mutable_data(),
                                           static_cast<float>(n)},
      1);
}

DEVTENSOR_DEFINITION double LossTracker::result() {
  read_device_total();
  return examples_ ? host_total_ / static_cast<double>(examples_) : 0.0;
}

DEVTENSOR_DEFINITION void LossTracker::read_device_total() {
  if (!device_total_.defined()) return;
  host_total_ += static_cast<double>(device_total_.item());
  device_total_ = Tensor<float>();
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

/// A compiled metric (Keras's `metrics=[...]`): its name as reported, and which it is.
/// "accuracy" and "acc" become binary, categorical or sparse categorical accuracy on the first
/// batch, by Keras's rule (resolve_accuracy).
struct Metric {
  enum class Kind {
    accuracy,
    binary_accuracy,
    categorical_accuracy,
    sparse_categorical_accuracy,
    mean_absolute_error,
    mean_squared_error
  };
  std::string name;
  Kind kind = Kind::accuracy;
  /// binary_accuracy's: a prediction above it counts as 1.
  double threshold = 0.5;
};

/// The metric Keras names `identifier`: "accuracy" / "acc", "binary_accuracy",
/// "categorical_accuracy", "sparse_categorical_accuracy", "mae" / "mean_absolute_error", "mse" /
/// "mean_squared_error" (or their class names), reported under that name as Keras reports it.
/// @throws InvalidArgumentError for another name.
Metric metric_by_name(std::string_view identifier);

/// Keras's choice for "accuracy": binary when the predictions' last axis is 1; sparse categorical
/// when the labels have a lower rank or a last axis of 1; categorical otherwise.
Metric::Kind resolve_accuracy(const Shape& y_true, const Shape& y_pred);

/// The metric per example: for an accuracy 1 where the example is right and 0 where it is wrong
/// (binary accuracy: per output; ties in the predictions pick the first class, as argmax does),
/// for an error metric its mean over the last axis. Their mean over a batch is the batch's value.
/// @throws InvalidArgumentError for shapes the metric cannot pair.
Tensor<float> metric_matches(const Metric& metric, const Tensor<float>& y_true, const Tensor<float>& y_pred);

#if DEVTENSOR_HEADER_DEFINITIONS
namespace metrics_detail {
/// The index of each row's largest value (the first when several are equal), as floats.
DEVTENSOR_DEFINITION Tensor<float> argmax_last(const Tensor<float>& x) {
  const auto classes = static_cast<float>(x.shape()[x.rank() - 1]);
  const auto is_max = grad_ops::equal(x, reduce_max(x, -1, /*keepdims=*/true));
  // classes − i for class i: the first maximum gives the largest product.
  const auto first_is_largest = sub(scalar<float>(classes), range<float>(0, classes, 1));
  return sub(scalar<float>(classes), reduce_max(mul(is_max, first_is_largest), -1));
}
DEVTENSOR_DEFINITION Tensor<float> with_trailing_one(const Tensor<float>& labels) {
  auto dims = labels.shape().dims_vector();
  dims.push_back(1);
  return reshape(labels, dims);
}
DEVTENSOR_DEFINITION Tensor<float> without_trailing_one(const Tensor<float>& labels, std::size_t rank) {
  if (labels.rank() != rank || rank == 0 || labels.shape()[rank - 1] != 1) return labels;
  auto dims = labels.shape().dims_vector();
  dims.pop_back();
  return reshape(labels, dims);
}
}  // namespace metrics_detail

DEVTENSOR_DEFINITION Metric metric_by_name(std::string_view id) {
  if (id == "accuracy" || id == "acc") return {std::string(id), Metric::Kind::accuracy};
  if (id == "binary_accuracy" || id == "BinaryAccuracy") return {"binary_accuracy", Metric::Kind::binary_accuracy};
  if (id == "categorical_accuracy" || id == "CategoricalAccuracy")
    return {"categorical_accuracy", Metric::Kind::categorical_accuracy};
  if (id == "sparse_categorical_accuracy" || id == "SparseCategoricalAccuracy")
    return {"sparse_categorical_accuracy", Metric::Kind::sparse_categorical_accuracy};
  if (id == "mae") return {"mae", Metric::Kind::mean_absolute_error};
  if (id == "mean_absolute_error" || id == "MeanAbsoluteError")
    return {"mean_absolute_error", Metric::Kind::mean_absolute_error};
  if (id == "mse") return {"mse", Metric::Kind::mean_squared_error};
  if (id == "mean_squared_error" || id == "MeanSquaredError")
    return {"mean_squared_error", Metric::Kind::mean_squared_error};
  throw InvalidArgumentError("Could not interpret metric identifier: " + std::string(id) +
                             " (known here: accuracy, acc, binary_accuracy, categorical_accuracy, "
                             "sparse_categorical_accuracy, mae, mean_absolute_error, mse, mean_squared_error)");
}

DEVTENSOR_DEFINITION Metric::Kind resolve_accuracy(const Shape& y_true, const Shape& y_pred) {
  const std::int64_t pred_last = y_pred.rank() > 0 ? y_pred[y_pred.rank() - 1] : 1;
  const std::int64_t true_last = y_true.rank() > 0 ? y_true[y_true.rank() - 1] : 1;
  if (pred_last == 1) return Metric::Kind::binary_accuracy;
  if (y_true.rank() < y_pred.rank() || (true_last == 1 && pred_last > 1))
    return Metric::Kind::sparse_categorical_accuracy;
  return Metric::Kind::categorical_accuracy;
}

DEVTENSOR_DEFINITION Tensor<float> metric_matches(const Metric& metric, const Tensor<float>& y_true,
                                                  const Tensor<float>& y_pred) {
  const auto kind =
      metric.kind == Metric::Kind::accuracy ? resolve_accuracy(y_true.shape(), y_pred.shape()) : metric.kind;
  const auto mismatch = [&](const char* want) {
    return InvalidArgumentError("metric " + metric.name + ": labels of shape " + y_true.shape().to_string() +
                                " and predictions of shape " + y_pred.shape().to_string() + " do not pair (" + want +
                                ")");
  };
  if (kind == Metric::Kind::mean_absolute_error || kind == Metric::Kind::mean_squared_error) {
    // Keras's: the labels given the predictions' rank, then the mean over the last axis.
    const auto labels = y_true.rank() + 1 == y_pred.rank() ? metrics_detail::with_trailing_one(y_true) : y_true;
    if (labels.shape() != y_pred.shape() || y_pred.rank() < 2)
      throw mismatch("equal shapes of rank 2 or more, or labels without the predictions' last axis");
    const auto error = sub(y_pred, labels);
    return reduce_mean(kind == Metric::Kind::mean_absolute_error ? abs(error) : square(error), -1);
  }
  if (kind == Metric::Kind::binary_accuracy) {
    const auto labels = y_true.rank() + 1 == y_pred.rank() ? metrics_detail::with_trailing_one(y_true) : y_true;
    if (labels.shape() != y_pred.shape())
      throw mismatch("equal shapes, or labels without the predictions' last axis of 1");
    // y_pred > threshold, as 1 or 0: 1 − (threshold >= y_pred).
    const auto threshold = scalar<float>(static_cast<float>(metric.threshold));
    return grad_ops::equal(labels, sub(scalar<float>(1), grad_ops::greater_equal(threshold, y_pred)));
  }
  if (y_pred.rank() == 0 || y_pred.shape()[y_pred.rank() - 1] == 0) throw mismatch("predictions need classes");
  const auto predicted = metrics_detail::argmax_last(y_pred);
  if (kind == Metric::Kind::categorical_accuracy) {
    if (y_true.shape() != y_pred.shape()) throw mismatch("one-hot labels of the predictions' shape");
    return grad_ops::equal(metrics_detail::argmax_last(y_true), predicted);
  }
  const auto labels = metrics_detail::without_trailing_one(y_true, y_pred.rank());
  if (labels.shape() != predicted.shape()) throw mismatch("a class index per row of predictions");
  return grad_ops::equal(labels, predicted);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn
}  // namespace devtensor
