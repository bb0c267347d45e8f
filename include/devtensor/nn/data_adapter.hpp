#pragma once
/// @file data_adapter.hpp
/// @brief Keras's data adapter for arrays: fit(x, y) and evaluate(x, y) turn examples into a
/// batched (and, for training, shuffled) dataset of (x, y).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn::data_adapter {

/// Examples x [n, ...] and targets y [n, ...], batched by `batch_size` (shuffled every pass with
/// `shuffle`). @throws InvalidArgumentError for tensors without an examples dimension, different
/// numbers of examples, or a batch size below 1.
data::Dataset<float, float> from_arrays(const Tensor<float>& x, const Tensor<float>& y, std::int64_t batch_size,
                                        bool shuffle, std::optional<std::uint64_t> seed);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
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
