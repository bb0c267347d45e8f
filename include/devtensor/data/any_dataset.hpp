#pragma once
/// @file any_dataset.hpp
/// @brief data::AnyDataset: a dataset whose element types are values, not part of its type (as
/// AnyTensor is to Tensor<T>). Every data::Dataset<Ts...> is one with its types put back, so the
/// input pipeline's steps (sources, repeat, batch, shuffle, take, concatenate) are compiled once.

// Note [One pipeline for every element type]
// A Dataset<Ts...> holds an AnyDataset, whose elements are Columns (a vector of AnyTensor), and
// gives the elements their types back when its iterator reads them (Dataset::typed). Its
// transformations are one-line forwards. When every Dataset type instantiated its own pipeline
// (a std::function per step and element type), a translation unit that fits a model on a dataset
// spent a tenth of its compile time there; now the steps are compiled once, in the library in
// compiled mode, and a row's bytes are copied without knowing their type anyway.
//
// Note [Datasets of rows]
// from_tensor_slices's elements are rows of tensors it holds. Building a tensor for every row, only
// for batch to copy the rows into one tensor again, costs an allocation and a copy per row and
// component: a batch of 256 rows of 1024 floats took 188 us where a memcpy of its bytes takes 25
// (fit over such a dataset spent half its step there). So such a dataset, and what take, repeat
// and shuffle make of it, passes row numbers down its pipeline (AnyDataset::Rows): iterating it
// builds a row's tensor at the end, and batch copies its rows from the sliced tensors directly, a
// run of consecutive rows at once. The transformations are written once for any element type
// (pipeline::take, repeat, shuffle), so row numbers go through the same steps as elements would:
// shuffle draws the same random numbers and the elements come out in the same order.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/data/pipeline.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

#if DEVTENSOR_HEADER_DEFINITIONS
#include <algorithm>
#include <string>
#include <utility>

#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/device/scope.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/random.hpp"
#endif

namespace devtensor::data {

/// cardinality() of a dataset that never ends.
inline constexpr std::int64_t INFINITE_CARDINALITY = -1;
/// cardinality() when the number of elements is not known in advance.
inline constexpr std::int64_t UNKNOWN_CARDINALITY = -2;
/// prefetch's buffer size that lets devtensor choose (tf.data.AUTOTUNE): two elements ahead.
inline constexpr std::int64_t AUTOTUNE = -1;

namespace pipeline {

/// An element: one tensor per component.
using Columns = std::vector<AnyTensor>;

/// The host CPU, where input pipelines run (the first dataset may initialise devtensor).
const Device& host_device();

/// Rows [start, start + count) of `t` (along dimension 0) copied to `device`; with `drop_dim`
/// (count 1) without the first dimension. The caller checks the range.
AnyTensor copy_rows(const AnyTensor& t, std::int64_t start, std::int64_t count, const Device& device, bool drop_dim,
                    std::string_view op);
/// The rows of `t` (along dimension 0) listed in `rows`, stacked on the host CPU; a run of
/// consecutive rows is copied at once. The caller checks the row numbers.
AnyTensor gather_rows(const AnyTensor& t, std::span<const std::int64_t> rows, std::string_view op);

template <Element T>
Tensor<T> rows_on(const Tensor<T>& t, std::int64_t start, std::int64_t count, const Device& device,
                  bool drop_dim = false) {
  return copy_rows(t, start, count, device, drop_dim, "TensorSliceDataset").template as<T>();
}
template <Element T>
Tensor<T> gather_rows(const Tensor<T>& t, std::span<const std::int64_t> rows, std::string_view op) {
  return gather_rows(AnyTensor(t), rows, op).template as<T>();
}

}  // namespace pipeline

/// A dataset of elements of any types: what Dataset<Ts...> is underneath (Note [One pipeline for
/// every element type]). Its members are Dataset's, which documents them.
class AnyDataset {
 public:
  using Columns = pipeline::Columns;

  static AnyDataset from_tensors(Columns element);
  static AnyDataset from_tensor_slices(Columns components);

  [[nodiscard]] AnyDataset repeat(std::int64_t count) const;
  [[nodiscard]] AnyDataset batch(std::int64_t batch_size, bool drop_remainder) const;
  [[nodiscard]] AnyDataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                                   bool reshuffle_each_iteration) const;
  [[nodiscard]] AnyDataset take(std::int64_t count) const;
  [[nodiscard]] AnyDataset concatenate(const AnyDataset& other) const;
  [[nodiscard]] AnyDataset prefetch(std::int64_t buffer_size) const;
  /// Each element replaced by `fn(element)`, called on the thread that makes the element, under a
  /// CPU device scope (tf.data's functions run on the host).
  [[nodiscard]] AnyDataset map(std::function<Columns(const Columns&)> fn) const;

  [[nodiscard]] std::int64_t cardinality() const noexcept { return cardinality_; }
  [[nodiscard]] std::optional<std::int64_t> batch_size() const noexcept { return batch_size_; }
  /// A fresh pass over the elements.
  [[nodiscard]] pipeline::Next<Columns> open() const { return open_(); }
  /// Whether a pass reads tensors in device memory (a GPU's): such a pipeline is not prefetched,
  /// as its copies would queue on the streams the steps use (Note [Prefetching]).
  [[nodiscard]] bool reads_device_memory() const noexcept { return device_sources_; }

 private:
  /// A dataset of rows of fixed tensors, told by row numbers (Note [Datasets of rows]).
  struct Rows {
    std::shared_ptr<const Columns> source;  // one tensor per component
    pipeline::Open<std::int64_t> open;
  };

  pipeline::Open<Columns> open_;
  std::optional<Rows> rows_;  // when the elements are rows of rows_->source
  std::int64_t cardinality_;
  std::optional<std::int64_t> batch_size_;
  bool device_sources_;  // some tensor it reads lives in device memory

  AnyDataset(pipeline::Open<Columns> open, std::int64_t cardinality, std::optional<std::int64_t> batch_size,
             bool device_sources);
  /// A dataset of rows; iterating it makes a tensor of every row.
  AnyDataset(Rows rows, std::int64_t cardinality, std::optional<std::int64_t> batch_size, bool device_sources);
  /// A dataset of the same rows, told by the row numbers `open` gives.
  [[nodiscard]] AnyDataset with_rows(pipeline::Open<std::int64_t> open, std::int64_t cardinality) const;
};

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
namespace pipeline {

DEVTENSOR_DEFINITION const Device& host_device() { return device_set("the first dataset").host_cpu(); }

/// A new tensor of `dtype` and `dims` on `device`, for the pipeline's copies to fill.
DEVTENSOR_DEFINITION AnyTensor empty_tensor(DType dtype, std::span<const std::int64_t> dims, const Device& device,
                                            std::string_view op) {
  Shape shape(dims, op);
  auto storage = allocate_storage(device, checked_byte_count(shape.num_elements(), dtype_size(dtype), op), shape,
                                  dtype_string(dtype), op);
  return AnyTensor(next_tensor_id(), dtype, std::move(shape), std::move(storage));
}

DEVTENSOR_DEFINITION AnyTensor copy_rows(const AnyTensor& t, std::int64_t start, std::int64_t count,
                                         const Device& device, bool drop_dim, std::string_view op) {
  std::vector<std::int64_t> dims = t.shape.dims_vector();
  const std::int64_t row_elements = dims[0] > 0 ? t.shape.num_elements() / dims[0] : 0;
  if (drop_dim)
    dims.erase(dims.begin());
  else
    dims[0] = count;
  AnyTensor out = empty_tensor(t.dtype, dims, device, op);
  const std::size_t element_bytes = dtype_size(t.dtype);
  const auto offset = static_cast<std::size_t>(start * row_elements) * element_bytes;
  copy_bytes(out.storage->data, device, static_cast<const unsigned char*>(t.storage->data) + offset, *t.storage->device,
             static_cast<std::size_t>(count * row_elements) * element_bytes);
  return out;
}

DEVTENSOR_DEFINITION AnyTensor gather_rows(const AnyTensor& t, std::span<const std::int64_t> rows,
                                           std::string_view op) {
  std::vector<std::int64_t> dims = t.shape.dims_vector();
  const std::int64_t row_elements = dims[0] > 0 ? t.shape.num_elements() / dims[0] : 0;
  dims[0] = static_cast<std::int64_t>(rows.size());
  const Device& host = host_device();
  AnyTensor gathered = empty_tensor(t.dtype, dims, host, op);
  const auto row_bytes = static_cast<std::size_t>(row_elements) * dtype_size(t.dtype);
  auto* out = static_cast<unsigned char*>(gathered.storage->data);
  const auto* in = static_cast<const unsigned char*>(t.storage->data);
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t run = 1;
    while (i + run < rows.size() && rows[i + run] == rows[i] + static_cast<std::int64_t>(run)) ++run;
    copy_bytes(out + i * row_bytes, host, in + static_cast<std::size_t>(rows[i]) * row_bytes, *t.storage->device,
               run * row_bytes);
    i += run;
  }
  return gathered;
}

/// Whether any of `tensors` lives in device memory.
DEVTENSOR_DEFINITION bool in_device_memory(const Columns& tensors) {
  return std::any_of(tensors.begin(), tensors.end(), [](const AnyTensor& t) {
    return t.storage && t.storage->device && !t.storage->device->host_memory();
  });
}

/// Component `component` of every element, stacked along a new first dimension on the host CPU.
/// @throws InvalidArgumentError when their shapes differ.
DEVTENSOR_DEFINITION AnyTensor stack(const std::vector<Columns>& elements, std::size_t component) {
  const AnyTensor& first = elements.front()[component];
  for (std::size_t i = 1; i < elements.size(); ++i)
    if (elements[i][component].shape != first.shape)
      throw InvalidArgumentError("Cannot batch tensors with different shapes in component " +
                                 std::to_string(component) + ". First element had shape " + first.shape.to_string() +
                                 " and element " + std::to_string(i) + " had shape " +
                                 elements[i][component].shape.to_string() + ".");
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(elements.size())};
  for (auto d : first.shape.dims()) dims.push_back(d);
  const Device& host = host_device();
  AnyTensor batch = empty_tensor(first.dtype, dims, host, "BatchDataset");
  const std::size_t bytes = first.bytes();  // every element's, <= the batch's bytes
  auto* out = static_cast<unsigned char*>(batch.storage->data);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    const AnyTensor& part = elements[i][component];
    copy_bytes(out + i * bytes, host, part.storage->data, *part.storage->device, bytes);
  }
  return batch;
}

}  // namespace pipeline

DEVTENSOR_DEFINITION AnyDataset::AnyDataset(pipeline::Open<Columns> open, std::int64_t cardinality,
                                            std::optional<std::int64_t> batch_size, bool device_sources)
    : open_(std::move(open)), cardinality_(cardinality), batch_size_(batch_size), device_sources_(device_sources) {}

DEVTENSOR_DEFINITION AnyDataset::AnyDataset(Rows rows, std::int64_t cardinality, std::optional<std::int64_t> batch_size,
                                            bool device_sources)
    : open_([source = rows.source, open = rows.open] {
        return pipeline::Next<Columns>([source, inner = open()]() mutable -> std::optional<Columns> {
          const auto row = inner();
          if (!row) return std::nullopt;
          Columns element;
          element.reserve(source->size());
          for (const auto& column : *source)
            element.push_back(
                pipeline::copy_rows(column, *row, 1, pipeline::host_device(), true, "TensorSliceDataset"));
          return element;
        });
      }),
      rows_(std::move(rows)),
      cardinality_(cardinality),
      batch_size_(batch_size),
      device_sources_(device_sources) {}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::with_rows(pipeline::Open<std::int64_t> open,
                                                      std::int64_t cardinality) const {
  return AnyDataset(Rows{rows_->source, std::move(open)}, cardinality, batch_size_, device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::from_tensors(Columns element) {
  for (const auto& component : element)
    if (!component.defined())
      throw InvalidArgumentError("Dataset: a component is an undefined tensor (default-constructed or moved from)");
  const bool device_sources = pipeline::in_device_memory(element);
  return AnyDataset(
      [element = std::move(element)] {
        return pipeline::Next<Columns>([element, done = false]() mutable -> std::optional<Columns> {
          if (done) return std::nullopt;
          done = true;
          return element;
        });
      },
      1, std::nullopt, device_sources);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::from_tensor_slices(Columns components) {
  std::int64_t rows = -1;
  for (const auto& t : components) {
    if (!t.defined())
      throw InvalidArgumentError("Dataset: a component is an undefined tensor (default-constructed or moved from)");
    if (t.storage->symbolic) throw_symbolic_values(*t.storage->symbolic, "from_tensor_slices");
    if (t.shape.rank() == 0)
      throw InvalidArgumentError("from_tensor_slices: every component needs rank >= 1 to be sliced, got a scalar");
    const std::int64_t n = t.shape[0];
    if (rows >= 0 && n != rows)
      throw InvalidArgumentError("from_tensor_slices: Dimensions " + std::to_string(rows) + " and " +
                                 std::to_string(n) +
                                 " are not compatible: every component needs the same first dimension, got " +
                                 t.shape.to_string() + " after a component with " + std::to_string(rows) + " rows");
    rows = n;
  }
  pipeline::Open<std::int64_t> row_numbers = [rows] {
    return pipeline::Next<std::int64_t>([rows, next = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
      if (next >= rows) return std::nullopt;
      return next++;
    });
  };
  const bool device_sources = pipeline::in_device_memory(components);
  return AnyDataset(Rows{std::make_shared<const Columns>(std::move(components)), std::move(row_numbers)}, rows,
                    std::nullopt, device_sources);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::repeat(std::int64_t count) const {
  if (count < -1)
    throw InvalidArgumentError("repeat(count): count must be >= -1 (-1: forever), got " + std::to_string(count));
  const std::int64_t c = cardinality_;
  std::int64_t card = UNKNOWN_CARDINALITY;
  if (c == 0 || count == 0)
    card = 0;
  else if (c == INFINITE_CARDINALITY || count == -1)
    card = INFINITE_CARDINALITY;
  else if (c > 0)
    card = devtensor::checked_mul(c, count, "the cardinality of the repeated dataset", "RepeatDataset");
  if (rows_) return with_rows(pipeline::repeat(rows_->open, count), card);
  return AnyDataset(pipeline::repeat(open_, count), card, batch_size_, device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  if (batch_size < 1)
    throw InvalidArgumentError("batch_size must be greater than zero, got " + std::to_string(batch_size));
  const std::int64_t c = cardinality_;
  std::int64_t card = c;
  if (c >= 0) card = c / batch_size + (!drop_remainder && c % batch_size != 0 ? 1 : 0);
  const auto full = [batch_size, drop_remainder](std::size_t size) {
    return size > 0 && (!drop_remainder || static_cast<std::int64_t>(size) == batch_size);
  };
  if (rows_)
    return AnyDataset(
        [source = rows_->source, open = rows_->open, batch_size, full] {
          return pipeline::Next<Columns>([source, inner = open(), batch_size, full,
                                          picked = std::vector<std::int64_t>()]() mutable -> std::optional<Columns> {
            picked.clear();
            while (static_cast<std::int64_t>(picked.size()) < batch_size) {
              const auto row = inner();
              if (!row) break;
              picked.push_back(*row);
            }
            if (!full(picked.size())) return std::nullopt;
            Columns batch;
            batch.reserve(source->size());
            for (const auto& column : *source) batch.push_back(pipeline::gather_rows(column, picked, "BatchDataset"));
            return batch;
          });
        },
        card, batch_size, device_sources_);
  return AnyDataset(
      [open = open_, batch_size, full] {
        return pipeline::Next<Columns>([inner = open(), batch_size, full]() mutable -> std::optional<Columns> {
          std::vector<Columns> elements;
          while (static_cast<std::int64_t>(elements.size()) < batch_size) {
            auto element = inner();
            if (!element) break;
            elements.push_back(std::move(*element));
          }
          if (!full(elements.size())) return std::nullopt;
          Columns batch;
          batch.reserve(elements.front().size());
          for (std::size_t i = 0; i < elements.front().size(); ++i) batch.push_back(pipeline::stack(elements, i));
          return batch;
        });
      },
      card, batch_size, device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                                                    bool reshuffle_each_iteration) const {
  if (buffer_size < 1)
    throw InvalidArgumentError("buffer_size must be greater than zero, got " + std::to_string(buffer_size));
  const std::uint64_t base = random::op_seed(seed);  // TensorFlow's rule, as tf.data
  if (rows_)
    return with_rows(pipeline::shuffle(rows_->open, buffer_size, base, reshuffle_each_iteration), cardinality_);
  return AnyDataset(pipeline::shuffle(open_, buffer_size, base, reshuffle_each_iteration), cardinality_, batch_size_,
                    device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::take(std::int64_t count) const {
  if (count < -1)
    throw InvalidArgumentError("take(count): count must be >= -1 (-1: all), got " + std::to_string(count));
  const std::int64_t c = cardinality_;
  std::int64_t card = c;
  if (count >= 0 && c == INFINITE_CARDINALITY)
    card = count;
  else if (count >= 0 && c >= 0)
    card = std::min(c, count);
  if (rows_) return with_rows(pipeline::take(rows_->open, count), card);
  return AnyDataset(pipeline::take(open_, count), card, batch_size_, device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::map(std::function<Columns(const Columns&)> fn) const {
  auto shared = std::make_shared<const std::function<Columns(const Columns&)>>(std::move(fn));
  // The batch size is no longer known: the function may change an element's first dimension.
  return AnyDataset(
      [open = open_, shared] {
        return pipeline::Next<Columns>([inner = open(), shared]() mutable -> std::optional<Columns> {
          auto element = inner();
          if (!element) return std::nullopt;
          DeviceScope host{cpu_t{}};
          return (*shared)(*element);
        });
      },
      cardinality_, std::nullopt, device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::concatenate(const AnyDataset& other) const {
  const std::int64_t a = cardinality_;
  const std::int64_t b = other.cardinality_;
  std::int64_t card = UNKNOWN_CARDINALITY;
  if (a == INFINITE_CARDINALITY || b == INFINITE_CARDINALITY)
    card = INFINITE_CARDINALITY;
  else if (a >= 0 && b >= 0)
    card = devtensor::checked_add(a, b, "the cardinality of the concatenated dataset", "ConcatenateDataset");
  return AnyDataset(
      [first = open_, second = other.open_] {
        return pipeline::Next<Columns>(
            [first = first(), second, rest = pipeline::Next<Columns>()]() mutable -> std::optional<Columns> {
              if (!rest) {
                if (auto element = first()) return element;
                rest = second();
              }
              return rest();
            });
      },
      card, batch_size_ == other.batch_size_ ? batch_size_ : std::nullopt, device_sources_ || other.device_sources_);
}

DEVTENSOR_DEFINITION AnyDataset AnyDataset::prefetch(std::int64_t buffer_size) const {
  if (buffer_size < AUTOTUNE)
    throw InvalidArgumentError("prefetch: buffer_size must be >= 0, or AUTOTUNE (-1) to let devtensor choose, got " +
                               std::to_string(buffer_size));
  if (buffer_size == 0 || device_sources_) return *this;  // nothing ahead: the same pipeline
  const auto buffer = static_cast<std::size_t>(buffer_size == AUTOTUNE ? 2 : buffer_size);
  // The elements are no longer rows for a later batch to gather: the thread has made them.
  return AnyDataset(pipeline::prefetch(open_, buffer), cardinality_, batch_size_, device_sources_);
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace devtensor::data
