#pragma once
/// @file data_adapter.hpp
/// @brief Keras's data adapter for arrays: fit(x, y) and evaluate(x, y) turn examples into a
/// batched (and, for training, shuffled) dataset of (x, y); fit's validation_split holds out the
/// last examples.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn::data_adapter {

/// Examples x [n, ...] and targets y [n, ...], batched by `batch_size` (shuffled every pass with
/// `shuffle`). @throws InvalidArgumentError for tensors without an examples dimension, different
/// numbers of examples, or a batch size below 1.
data::Dataset<float, float> from_arrays(const Tensor<float>& x, const Tensor<float>& y, std::int64_t batch_size,
                                        bool shuffle, std::optional<std::uint64_t> seed);

/// For fit(x, y): the examples to train on, after `options.validation_split` moved the last
/// floor(n · split)… examples into `options.validation_data` (Keras: the first floor(n · (1 −
/// split)) train; validation_data given explicitly wins). @throws InvalidArgumentError for a split
/// outside [0, 1) or one that leaves either side without an example (Keras's text).
std::pair<Tensor<float>, Tensor<float>> split_validation(const Tensor<float>& x, const Tensor<float>& y,
                                                         FitOptions& options);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION std::pair<Tensor<float>, Tensor<float>> split_validation(const Tensor<float>& x,
                                                                              const Tensor<float>& y,
                                                                              FitOptions& options) {
  const double split = options.validation_split;
  options.validation_split = 0.0;
  if (split == 0.0) return {x, y};
  if (!(split > 0.0 && split < 1.0))
    throw InvalidArgumentError("validation_split must be in [0, 1), got " + std::to_string(split));
  if (!options.validation_data.empty()) return {x, y};  // Keras: validation_data overrides the split
  if (!x.defined() || x.rank() == 0 || !y.defined() || y.rank() == 0 || x.shape()[0] != y.shape()[0])
    return {x, y};  // from_arrays reports it
  const std::int64_t n = x.shape()[0];
  const auto train = static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - split));
  if (train == 0 || train == n)
    throw InvalidArgumentError("Training data contains " + std::to_string(n) + " samples, which is not sufficient "
                               "to split it into a validation and training set as specified by `validation_split=" +
                               std::to_string(split) + "`. Either provide more data, or a different value for the "
                               "`validation_split` argument.");
  const auto rows = [](const Tensor<float>& t, std::int64_t begin, std::int64_t count) {
    std::vector<std::int64_t> start(t.rank(), 0), size(t.rank(), -1);
    start[0] = begin;
    size[0] = count;
    return slice(t, start, size);
  };
  options.validation_data = ValidationData(rows(x, train, n - train), rows(y, train, n - train));
  return {rows(x, 0, train), rows(y, 0, train)};
}

DEVTENSOR_DEFINITION data::Dataset<float, float> from_arrays(const Tensor<float>& x, const Tensor<float>& y,
                                                             std::int64_t batch_size, bool shuffle,
                                                             std::optional<std::uint64_t> seed) {
  if (!x.defined() || !y.defined() || x.rank() == 0 || y.rank() == 0)
    throw InvalidArgumentError("fit/evaluate: x and y must be tensors of rank >= 1 with examples first");
  if (x.shape()[0] != y.shape()[0])
    throw InvalidArgumentError("Data cardinality is ambiguous:\n  x sizes: " + std::to_string(x.shape()[0]) +
                               "\n  y sizes: " + std::to_string(y.shape()[0]) +
                               "\nMake sure all arrays contain the same number of samples.");
  if (batch_size < 1) throw InvalidArgumentError("batch_size must be >= 1, got " + std::to_string(batch_size));
  auto ds = data::Dataset<float, float>::from_tensor_slices(x, y);
  if (shuffle) ds = ds.shuffle(std::max<std::int64_t>(1, x.shape()[0]), seed);
  return ds.batch(batch_size);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn::data_adapter
}  // namespace devtensor
