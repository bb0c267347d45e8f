#pragma once
/// @file data_adapter.hpp
/// @brief Keras's data adapters: what fit and evaluate iterate. Batches is a re-iterable source of
/// (inputs, targets) batches; it comes from arrays (fit(x, y): batched here and, for training,
/// shuffled every pass, validation_split holding out the last examples) or from a batched dataset
/// whose components are the model's inputs, then its targets.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/nn/training_options.hpp"
#include "devtensor/ops/shape_ops.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace nn::data_adapter {

/// One batch as a step takes it: a tensor per model input, then one per output.
struct Batch {
  std::vector<Tensor<float>> xs, ys;
  /// The batch's examples (its first input's first dimension).
  [[nodiscard]] std::int64_t examples() const { return xs.empty() || xs[0].rank() == 0 ? 1 : xs[0].shape()[0]; }
};

/// A description of batches: every open() starts a fresh pass, as iterating a Dataset does.
class Batches {
 public:
  /// The next batch of a pass, or nothing at its end.
  using Next = std::function<std::optional<Batch>()>;

  Batches(std::function<Next()> open, std::int64_t cardinality) : open_(std::move(open)), cardinality_(cardinality) {}

  /// The elements of a batched dataset: the first `inputs` components are inputs, the others targets.
  template <Element... Ts>
  static Batches from_dataset(const data::Dataset<Ts...>& dataset, std::size_t inputs) {
    static_assert((std::is_same_v<Ts, float> && ...), "fit and evaluate take datasets of float32 components");
    return from_dataset(dataset.erased(), inputs);
  }
  /// The same for a dataset whose components are float32 (checked as each element is read:
  /// InvalidArgumentError).
  static Batches from_dataset(const data::AnyDataset& dataset, std::size_t inputs);

  [[nodiscard]] Next open() const { return open_(); }
  [[nodiscard]] std::int64_t cardinality() const noexcept { return cardinality_; }

 private:
  std::function<Next()> open_;
  std::int64_t cardinality_;
};

/// Examples xs (one tensor [n, ...] per input) and targets ys (one per output), batched by
/// `batch_size` (shuffled every pass with `shuffle`: the order Dataset::shuffle(n, seed) gives).
/// @throws InvalidArgumentError for tensors without an examples dimension, different numbers of
/// examples (Keras's "Data cardinality is ambiguous"), or a batch size below 1.
Batches from_arrays(const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys, std::int64_t batch_size,
                    bool shuffle, std::optional<std::uint64_t> seed);

/// For fit(x, y): keeps in xs and ys the examples to train on, after `options.validation_split`
/// moved the last examples into `options.validation_data` (Keras: the first floor(n · (1 −
/// split)) train; validation_data given explicitly wins). @throws InvalidArgumentError for a split
/// outside [0, 1) or one that leaves either side without an example (Keras's text).
void split_validation(std::vector<Tensor<float>>& xs, std::vector<Tensor<float>>& ys, FitOptions& options);

namespace detail {
/// Rows [begin, begin + count) of t.
Tensor<float> rows(const Tensor<float>& t, std::int64_t begin, std::int64_t count);
}  // namespace detail

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION Tensor<float> detail::rows(const Tensor<float>& t, std::int64_t begin, std::int64_t count) {
  std::vector<std::int64_t> start(t.rank(), 0), size(t.rank(), -1);
  start[0] = begin;
  size[0] = count;
  return slice(t, start, size);
}

DEVTENSOR_DEFINITION Batches Batches::from_dataset(const data::AnyDataset& dataset, std::size_t inputs) {
  return Batches(
      [dataset, inputs]() -> Next {
        return [pass = data::pipeline::Next<data::pipeline::Columns>(), dataset,
                inputs]() mutable -> std::optional<Batch> {
          if (!pass) pass = dataset.open();  // opened on the first request: a pass reads lazily
          const auto element = pass();
          if (!element) return std::nullopt;
          Batch batch;
          for (std::size_t i = 0; i < element->size(); ++i) {
            const AnyTensor& component = (*element)[i];
            if (component.dtype != DType::DT_FLOAT)
              throw InvalidArgumentError("fit and evaluate take datasets of float32 components, got " +
                                         std::string(dtype_name(component.dtype)) + " in component " +
                                         std::to_string(i));
            (i < inputs ? batch.xs : batch.ys).push_back(component.as<float>());
          }
          return batch;
        };
      },
      dataset.cardinality());
}

DEVTENSOR_DEFINITION void split_validation(std::vector<Tensor<float>>& xs, std::vector<Tensor<float>>& ys,
                                           FitOptions& options) {
  const double split = options.validation_split;
  options.validation_split = 0.0;
  if (split == 0.0) return;
  if (!(split > 0.0 && split < 1.0))
    throw InvalidArgumentError("validation_split must be in [0, 1), got " + std::to_string(split));
  if (!options.validation_data.empty()) return;                     // Keras: validation_data overrides the split
  if (xs.empty() || !xs[0].defined() || xs[0].rank() == 0) return;  // from_arrays reports it
  const std::int64_t n = xs[0].shape()[0];
  for (const auto* part : {&xs, &ys})
    for (const auto& t : *part)
      if (!t.defined() || t.rank() == 0 || t.shape()[0] != n) return;
  const auto train = static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - split));
  if (train == 0 || train == n)
    throw InvalidArgumentError("Training data contains " + std::to_string(n) +
                               " samples, which is not sufficient "
                               "to split it into a validation and training set as specified by `validation_split=" +
                               std::to_string(split) +
                               "`. Either provide more data, or a different value for the "
                               "`validation_split` argument.");
  ValidationData held_out;
  for (auto* part : {&xs, &ys})
    for (auto& t : *part) {
      (part == &xs ? held_out.xs : held_out.ys).push_back(detail::rows(t, train, n - train));
      t = detail::rows(t, 0, train);
    }
  options.validation_data = std::move(held_out);
}

DEVTENSOR_DEFINITION Batches from_arrays(const std::vector<Tensor<float>>& xs, const std::vector<Tensor<float>>& ys,
                                         std::int64_t batch_size, bool shuffle, std::optional<std::uint64_t> seed) {
  if (xs.empty() || ys.empty())
    throw InvalidArgumentError("fit/evaluate: give at least one input tensor and one target tensor");
  const auto usable = [](const Tensor<float>& t) { return t.defined() && t.rank() > 0; };
  if (!std::all_of(xs.begin(), xs.end(), usable) || !std::all_of(ys.begin(), ys.end(), usable))
    throw InvalidArgumentError("fit/evaluate: x and y must be tensors of rank >= 1 with examples first");
  const std::int64_t n = xs[0].shape()[0];
  const auto same_count = [n](const Tensor<float>& t) { return t.shape()[0] == n; };
  if (!std::all_of(xs.begin(), xs.end(), same_count) || !std::all_of(ys.begin(), ys.end(), same_count)) {
    const auto sizes = [](const std::vector<Tensor<float>>& ts) {
      std::string out;
      for (const auto& t : ts) out += (out.empty() ? "" : ", ") + std::to_string(t.shape()[0]);
      return out;
    };
    throw InvalidArgumentError("Data cardinality is ambiguous:\n  x sizes: " + sizes(xs) + "\n  y sizes: " + sizes(ys) +
                               "\nMake sure all arrays contain the same number of samples.");
  }
  if (batch_size < 1) throw InvalidArgumentError("batch_size must be >= 1, got " + std::to_string(batch_size));
  const std::int64_t cardinality = n / batch_size + (n % batch_size != 0 ? 1 : 0);
  if (!shuffle)
    return Batches(
        [xs, ys, n, batch_size]() -> Batches::Next {
          return [xs, ys, n, batch_size, begin = std::int64_t{0}]() mutable -> std::optional<Batch> {
            if (begin >= n) return std::nullopt;
            const std::int64_t count = std::min(batch_size, n - begin);
            Batch batch;
            const auto& host = data::pipeline::host_device();
            for (const auto& x : xs) batch.xs.push_back(data::pipeline::rows_on(x, begin, count, host));
            for (const auto& y : ys) batch.ys.push_back(data::pipeline::rows_on(y, begin, count, host));
            begin += count;
            return batch;
          };
        },
        cardinality);
  // Every pass draws a new order of the example indices, as Dataset::shuffle draws the examples.
  auto positions = Tensor<std::int64_t>::empty(Shape({n}), data::pipeline::host_device(), "DataAdapter");
  std::int64_t* position = positions.mutable_data();
  for (std::int64_t i = 0; i < n; ++i) position[i] = i;
  const auto order = data::AnyDataset::from_tensor_slices({AnyTensor(positions)})
                         .shuffle(std::max<std::int64_t>(1, n), seed, true)
                         .batch(batch_size, false);
  return Batches(
      [xs, ys, order]() -> Batches::Next {
        return
            [xs, ys, pass = data::pipeline::Next<data::pipeline::Columns>(), order]() mutable -> std::optional<Batch> {
              if (!pass) pass = order.open();  // opened on the first request: a pass reads lazily
              const auto indices = pass();
              if (!indices) return std::nullopt;
              const AnyTensor& picked = indices->front();
              const std::span<const std::int64_t> rows(static_cast<const std::int64_t*>(picked.storage->data),
                                                       static_cast<std::size_t>(picked.shape.num_elements()));
              Batch batch;
              for (const auto& x : xs) batch.xs.push_back(data::pipeline::gather_rows(x, rows, "DataAdapter"));
              for (const auto& y : ys) batch.ys.push_back(data::pipeline::gather_rows(y, rows, "DataAdapter"));
              return batch;
            };
      },
      cardinality);
}

#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace nn::data_adapter
}  // namespace devtensor
