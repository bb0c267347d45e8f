#pragma once
/// @file dataset.hpp
/// @brief data::Dataset<Ts...>: an input pipeline of tuples of tensors (tf.data's core).
///
///     auto ds = dt::data::Dataset<float, float>::from_tensor_slices(x, y).shuffle(100, 42).batch(32);
///     for (const auto& [xb, yb] : ds) ...
///
/// A Dataset is an immutable description; every iteration (range-for, `begin()`) opens a fresh
/// pass over it, so a dataset can be iterated any number of times. Elements are produced on the
/// host CPU (logical device 0), as tf.data's kernels run there. Transformations: repeat, batch,
/// concatenate, shuffle (TensorFlow's buffer algorithm; seeded shuffles are deterministic and, with
/// reshuffle_each_iteration, differ between passes in a deterministic way), take.

// Note [Datasets of rows]
// from_tensor_slices's elements are rows of tensors it holds. Building a tensor for every row, only
// for batch to copy the rows into one tensor again, costs an allocation and a copy per row and
// component: a batch of 256 rows of 1024 floats took 188 us where a memcpy of its bytes takes 25
// (fit over such a dataset spent half its step there). So such a dataset, and what take, repeat
// and shuffle make of it, passes row numbers down its pipeline (Dataset::Rows): iterating it
// builds a row's tensor at the end, and batch copies its rows from the sliced tensors directly, a
// run of consecutive rows at once. The transformations are written once for any element type
// (pipeline::take, repeat, shuffle), so row numbers go through the same steps as tensors would:
// shuffle draws the same random numbers and the elements come out in the same order. Their
// row-number versions are compiled once, not in every translation unit that uses a dataset
// (pipeline::take_rows, ...).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/core/checked.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/placer.hpp"
#include "devtensor/ops/random.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::data {

/// cardinality() of a dataset that never ends.
inline constexpr std::int64_t INFINITE_CARDINALITY = -1;
/// cardinality() when the number of elements is not known in advance.
inline constexpr std::int64_t UNKNOWN_CARDINALITY = -2;

namespace pipeline {

/// The host CPU, where input pipelines run (the first dataset may initialise devtensor).
inline const Device& host_device() { return device_set("the first dataset").host_cpu(); }

/// Rows [start, start + count) of `t` (along dimension 0) copied to `device`;
/// with `drop_dim` (count 1) without the first dimension.
template <Element T>
Tensor<T> rows_on(const Tensor<T>& t, std::int64_t start, std::int64_t count, const Device& device,
                  bool drop_dim = false) {
  std::vector<std::int64_t> dims = t.shape().dims_vector();
  const std::int64_t row_elements = dims[0] > 0 ? t.num_elements() / dims[0] : 0;
  if (drop_dim) dims.erase(dims.begin());
  else dims[0] = count;
  auto out = Tensor<T>::empty(Shape(dims), device, "TensorSliceDataset");
  copy_bytes(out.mutable_data(), out.device_info(), t.data() + start * row_elements, t.device_info(),
                     static_cast<std::size_t>(count * row_elements) * sizeof(T));
  return out;
}

/// Stacks same-shaped tensors along a new first dimension (on the host CPU).
template <Element T>
Tensor<T> stack(const std::vector<Tensor<T>>& parts, std::size_t component) {
  const Shape& first = parts.front().shape();
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (parts[i].shape() != first)
      throw InvalidArgumentError("Cannot batch tensors with different shapes in component " + std::to_string(component) +
                                 ". First element had shape " + first.to_string() + " and element " +
                                 std::to_string(i) + " had shape " + parts[i].shape().to_string() + ".");
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(parts.size())};
  for (auto d : first.dims()) dims.push_back(d);
  auto out = Tensor<T>::empty(Shape(dims, "BatchDataset"), host_device(), "BatchDataset");
  const auto bytes = static_cast<std::size_t>(first.num_elements()) * sizeof(T);  // <= out's bytes
  auto* dst = reinterpret_cast<unsigned char*>(out.mutable_data());
  for (std::size_t i = 0; i < parts.size(); ++i)
    copy_bytes(dst + i * bytes, out.device_info(), parts[i].data(), parts[i].device_info(), bytes);
  return out;
}

/// The rows of `t` (along dimension 0) listed in `rows`, stacked on the host CPU; a run of
/// consecutive rows is copied at once. The caller checks the row numbers.
template <Element T>
Tensor<T> gather_rows(const Tensor<T>& t, std::span<const std::int64_t> rows, std::string_view op) {
  std::vector<std::int64_t> dims = t.shape().dims_vector();
  const std::int64_t row_elements = dims[0] > 0 ? t.num_elements() / dims[0] : 0;
  dims[0] = static_cast<std::int64_t>(rows.size());
  auto out = Tensor<T>::empty(Shape(std::span<const std::int64_t>(dims), op), host_device(), op);
  const auto row_bytes = static_cast<std::size_t>(row_elements) * sizeof(T);
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t run = 1;
    while (i + run < rows.size() && rows[i + run] == rows[i] + static_cast<std::int64_t>(run)) ++run;
    copy_bytes(out.mutable_data() + static_cast<std::int64_t>(i) * row_elements, out.device_info(),
               t.data() + rows[i] * row_elements, t.device_info(), run * row_bytes);
    i += run;
  }
  return out;
}

// The transformations, written once for any element type E: a dataset's tuples of tensors, or
// the row numbers of a dataset of rows (Note [Datasets of rows]).

/// One pass: the next element, or nothing at the end.
template <class E>
using Next = std::function<std::optional<E>()>;
/// Opens a fresh pass.
template <class E>
using Open = std::function<Next<E>()>;

/// The first `count` elements of a pass (-1: all).
template <class E>
Next<E> take(Next<E> inner, std::int64_t count) {
  return [inner = std::move(inner), count, taken = std::int64_t{0}]() mutable -> std::optional<E> {
    if (count >= 0 && taken >= count) return std::nullopt;
    ++taken;
    return inner();
  };
}

/// `count` passes one after the other (-1: forever); a pass without elements ends it, as
/// repeating it forever would hang.
template <class E>
Next<E> repeat(Open<E> open, std::int64_t count) {
  return [open = std::move(open), count, done = std::int64_t{0}, current = Next<E>(),
          produced = false]() mutable -> std::optional<E> {
    while (count == -1 || done < count) {
      if (!current) {
        current = open();
        produced = false;
      }
      if (auto element = current()) {
        produced = true;
        return element;
      }
      current = Next<E>();
      ++done;
      if (!produced) return std::nullopt;
    }
    return std::nullopt;
  };
}

/// TensorFlow's shuffle buffer: up to `buffer_size` elements; each output is drawn uniformly
/// from it and its place taken by the last.
template <class E>
Next<E> shuffle(Next<E> inner, std::int64_t buffer_size, std::mt19937_64 rng) {
  return [inner = std::move(inner), buffer_size, rng, buffer = std::vector<E>(),
          exhausted = false]() mutable -> std::optional<E> {
    while (!exhausted && static_cast<std::int64_t>(buffer.size()) < buffer_size) {
      auto element = inner();
      if (!element) exhausted = true;
      else buffer.push_back(std::move(*element));
    }
    if (buffer.empty()) return std::nullopt;
    std::uniform_int_distribution<std::size_t> pick(0, buffer.size() - 1);
    const std::size_t i = pick(rng);
    E out = std::move(buffer[i]);
    buffer[i] = std::move(buffer.back());
    buffer.pop_back();
    return out;
  };
}

/// Openers of passes transformed by take, repeat and shuffle (Dataset's, for either kind of element).
template <class E>
Open<E> take_opener(Open<E> open, std::int64_t count) {
  return [open = std::move(open), count] { return take(open(), count); };
}
template <class E>
Open<E> repeat_opener(Open<E> open, std::int64_t count) {
  return [open = std::move(open), count] { return repeat(open, count); };
}
/// Pass p of a shuffle draws from splitmix64(base ^ splitmix64(p)); p counts the passes opened
/// when `reshuffle`, else stays 0.
template <class E>
Open<E> shuffle_opener(Open<E> open, std::int64_t buffer_size, std::uint64_t base,
                       std::shared_ptr<std::atomic<std::uint64_t>> passes, bool reshuffle) {
  return [open = std::move(open), buffer_size, base, passes = std::move(passes), reshuffle] {
    const std::uint64_t pass = reshuffle ? passes->fetch_add(1) : 0;
    return shuffle(open(), buffer_size, std::mt19937_64(splitmix64(base ^ splitmix64(pass))));
  };
}

// The same for row numbers, the same for every Dataset type: compiled once, in the library in
// compiled mode, rather than in every translation unit that uses a dataset.
Open<std::int64_t> row_numbers(std::int64_t rows);
Open<std::int64_t> take_rows(Open<std::int64_t> open, std::int64_t count);
Open<std::int64_t> repeat_rows(Open<std::int64_t> open, std::int64_t count);
Open<std::int64_t> shuffle_rows(Open<std::int64_t> open, std::int64_t buffer_size, std::uint64_t base,
                                std::shared_ptr<std::atomic<std::uint64_t>> passes, bool reshuffle);
/// Replaces `rows` with the next at most `count` row numbers of `pass`.
void next_rows(Next<std::int64_t>& pass, std::int64_t count, std::vector<std::int64_t>& rows);

#if DEVTENSOR_HEADER_DEFINITIONS  // Note [Compiled mode]
DEVTENSOR_DEFINITION Open<std::int64_t> row_numbers(std::int64_t rows) {
  return [rows] {
    return Next<std::int64_t>([rows, next = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
      if (next >= rows) return std::nullopt;
      return next++;
    });
  };
}
DEVTENSOR_DEFINITION Open<std::int64_t> take_rows(Open<std::int64_t> open, std::int64_t count) {
  return take_opener(std::move(open), count);
}
DEVTENSOR_DEFINITION Open<std::int64_t> repeat_rows(Open<std::int64_t> open, std::int64_t count) {
  return repeat_opener(std::move(open), count);
}
DEVTENSOR_DEFINITION Open<std::int64_t> shuffle_rows(Open<std::int64_t> open, std::int64_t buffer_size,
                                                     std::uint64_t base,
                                                     std::shared_ptr<std::atomic<std::uint64_t>> passes,
                                                     bool reshuffle) {
  return shuffle_opener(std::move(open), buffer_size, base, std::move(passes), reshuffle);
}
DEVTENSOR_DEFINITION void next_rows(Next<std::int64_t>& pass, std::int64_t count, std::vector<std::int64_t>& rows) {
  rows.clear();
  while (static_cast<std::int64_t>(rows.size()) < count) {
    const auto row = pass();
    if (!row) break;
    rows.push_back(*row);
  }
}
#endif  // DEVTENSOR_HEADER_DEFINITIONS

}  // namespace pipeline

template <Element... Ts>
class Dataset {
  static_assert(sizeof...(Ts) > 0, "a Dataset has at least one component");

 public:
  using value_type = std::tuple<Tensor<Ts>...>;
  /// One pass: returns the next element, or nothing at the end.
  using Generator = pipeline::Next<value_type>;
  /// Opens a fresh pass.
  using Opener = pipeline::Open<value_type>;

  /// A dataset with one element: the given tensors.
  static Dataset from_tensors(Tensor<Ts>... components) {
    require_defined(components...);
    value_type element{std::move(components)...};
    return Dataset(
        [element] {
          return Generator([element, done = false]() mutable -> std::optional<value_type> {
            if (done) return std::nullopt;
            done = true;
            return element;
          });
        },
        1);
  }

  /// One element per index along the first dimension of every component.
  /// @throws InvalidArgumentError for a rank-0 component or first dimensions that differ.
  static Dataset from_tensor_slices(Tensor<Ts>... components) {
    require_defined(components...);
    std::int64_t rows = -1;
    (check_sliceable(components, rows), ...);
    return Dataset(Rows{std::make_shared<const value_type>(std::move(components)...), pipeline::row_numbers(rows)}, rows);
  }

  /// The dataset `count` times over; forever when `count` is -1 (the default).
  /// @throws InvalidArgumentError for a count below -1.
  [[nodiscard]] Dataset repeat(std::int64_t count = -1) const {
    if (count < -1) throw InvalidArgumentError("repeat(count): count must be >= -1 (-1: forever), got " + std::to_string(count));
    const std::int64_t c = cardinality_;
    std::int64_t card = UNKNOWN_CARDINALITY;
    if (c == 0 || count == 0) card = 0;
    else if (c == INFINITE_CARDINALITY || count == -1) card = INFINITE_CARDINALITY;
    else if (c > 0) card = devtensor::checked_mul(c, count, "the cardinality of the repeated dataset", "RepeatDataset");
    if (rows_) return with_rows(pipeline::repeat_rows(rows_->open, count), card);
    return Dataset(pipeline::repeat_opener(open_, count), card, batch_size_);
  }

  /// Consecutive elements stacked along a new first dimension; the last batch may be smaller
  /// unless `drop_remainder`. @throws InvalidArgumentError for batch_size < 1; iterating throws it
  /// for elements whose shapes differ.
  [[nodiscard]] Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const {
    if (batch_size < 1) throw InvalidArgumentError("batch_size must be greater than zero, got " + std::to_string(batch_size));
    const std::int64_t c = cardinality_;
    std::int64_t card = c;
    if (c >= 0) card = c / batch_size + (!drop_remainder && c % batch_size != 0 ? 1 : 0);
    if (rows_)
      return Dataset(
          [rows = *rows_, batch_size, drop_remainder] {
            return Generator([source = rows.source, inner = rows.open(), batch_size, drop_remainder,
                              picked = std::vector<std::int64_t>()]() mutable -> std::optional<value_type> {
              pipeline::next_rows(inner, batch_size, picked);
              if (picked.empty() || (drop_remainder && static_cast<std::int64_t>(picked.size()) < batch_size))
                return std::nullopt;
              return std::apply([&](const auto&... part) { return value_type{pipeline::gather_rows(part, picked, "BatchDataset")...}; },
                                *source);
            });
          },
          card, batch_size);
    return Dataset(
        [open = open_, batch_size, drop_remainder] {
          return Generator([inner = open(), batch_size, drop_remainder]() mutable -> std::optional<value_type> {
            std::vector<value_type> parts;
            while (static_cast<std::int64_t>(parts.size()) < batch_size) {
              auto element = inner();
              if (!element) break;
              parts.push_back(std::move(*element));
            }
            if (parts.empty() || (drop_remainder && static_cast<std::int64_t>(parts.size()) < batch_size))
              return std::nullopt;
            return stack_all(parts, std::index_sequence_for<Ts...>{});
          });
        },
        card, batch_size);
  }

  /// TensorFlow's shuffle: a buffer of `buffer_size` elements, each output drawn uniformly from it
  /// and replaced by the next input. With a seed the order is reproducible; with
  /// `reshuffle_each_iteration` every pass draws a different (still reproducible) order.
  /// @throws InvalidArgumentError for buffer_size < 1.
  [[nodiscard]] Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                                bool reshuffle_each_iteration = true) const {
    if (buffer_size < 1) throw InvalidArgumentError("buffer_size must be greater than zero, got " + std::to_string(buffer_size));
    const std::uint64_t base = seed.value_or(next_seed());
    auto passes = std::make_shared<std::atomic<std::uint64_t>>(0);
    if (rows_)
      return with_rows(pipeline::shuffle_rows(rows_->open, buffer_size, base, std::move(passes), reshuffle_each_iteration),
                       cardinality_);
    return Dataset(pipeline::shuffle_opener(open_, buffer_size, base, std::move(passes), reshuffle_each_iteration),
                   cardinality_, batch_size_);
  }

  /// At most the first `count` elements (-1: all). @throws InvalidArgumentError for count < -1.
  [[nodiscard]] Dataset take(std::int64_t count) const {
    if (count < -1) throw InvalidArgumentError("take(count): count must be >= -1 (-1: all), got " + std::to_string(count));
    const std::int64_t c = cardinality_;
    std::int64_t card = c;
    if (count >= 0 && c == INFINITE_CARDINALITY) card = count;
    else if (count >= 0 && c >= 0) card = std::min(c, count);
    if (rows_) return with_rows(pipeline::take_rows(rows_->open, count), card);
    return Dataset(pipeline::take_opener(open_, count), card, batch_size_);
  }

  /// This dataset's elements, then `other`'s.
  [[nodiscard]] Dataset concatenate(const Dataset& other) const {
    const std::int64_t a = cardinality_;
    const std::int64_t b = other.cardinality_;
    std::int64_t card = UNKNOWN_CARDINALITY;
    if (a == INFINITE_CARDINALITY || b == INFINITE_CARDINALITY) card = INFINITE_CARDINALITY;
    else if (a >= 0 && b >= 0) card = devtensor::checked_add(a, b, "the cardinality of the concatenated dataset", "ConcatenateDataset");
    return Dataset(
        [first = open_, second = other.open_] {
          return Generator([first = first(), second, rest = Generator()]() mutable -> std::optional<value_type> {
            if (!rest) {
              if (auto element = first()) return element;
              rest = second();
            }
            return rest();
          });
        },
        card, batch_size_ == other.batch_size_ ? batch_size_ : std::nullopt);
  }

  /// The number of elements, INFINITE_CARDINALITY or UNKNOWN_CARDINALITY.
  [[nodiscard]] std::int64_t cardinality() const noexcept { return cardinality_; }
  /// The batch size when the elements are batches of a statically known size (the last may be
  /// smaller unless drop_remainder), which distribution strategies split across replicas.
  [[nodiscard]] std::optional<std::int64_t> batch_size() const noexcept { return batch_size_; }

  /// An input iterator over one pass.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Dataset::value_type;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    explicit Iterator(Generator generator) : generator_(std::make_shared<Generator>(std::move(generator))) { ++*this; }
    const value_type& operator*() const { return *current_; }
    const value_type* operator->() const { return &*current_; }
    Iterator& operator++() {
      current_ = (*generator_)();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return !it.current_; }

   private:
    std::shared_ptr<Generator> generator_;
    std::optional<value_type> current_;
  };

  [[nodiscard]] Iterator begin() const { return Iterator(open_()); }
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

 private:
  /// A dataset of rows of fixed tensors, told by row numbers (Note [Datasets of rows]).
  struct Rows {
    std::shared_ptr<const value_type> source;
    pipeline::Open<std::int64_t> open;
  };

  Opener open_;
  std::optional<Rows> rows_;  // when the elements are rows of rows_->source
  std::int64_t cardinality_;
  std::optional<std::int64_t> batch_size_;

  Dataset(Opener open, std::int64_t cardinality, std::optional<std::int64_t> batch_size = std::nullopt)
      : open_(std::move(open)), cardinality_(cardinality), batch_size_(batch_size) {}
  /// A dataset of rows; iterating it makes a tensor of every row.
  Dataset(Rows rows, std::int64_t cardinality, std::optional<std::int64_t> batch_size = std::nullopt)
      : open_([rows] {
          return Generator([source = rows.source, inner = rows.open()]() mutable -> std::optional<value_type> {
            const auto row = inner();
            if (!row) return std::nullopt;
            return std::apply([&](const auto&... c) { return value_type{pipeline::rows_on(c, *row, 1, pipeline::host_device(), true)...}; },
                              *source);
          });
        }),
        rows_(std::move(rows)),
        cardinality_(cardinality),
        batch_size_(batch_size) {}

  /// A dataset of the same rows, told by the row numbers `open` gives.
  Dataset with_rows(pipeline::Open<std::int64_t> open, std::int64_t cardinality) const {
    return Dataset(Rows{rows_->source, std::move(open)}, cardinality, batch_size_);
  }

  static void require_defined(const Tensor<Ts>&... components) {
    if (!(components.defined() && ...))
      throw InvalidArgumentError("Dataset: a component is an undefined tensor (default-constructed or moved from)");
  }
  template <Element T>
  static void check_sliceable(const Tensor<T>& t, std::int64_t& rows) {
    if (t.rank() == 0)
      throw InvalidArgumentError("from_tensor_slices: every component needs rank >= 1 to be sliced, got a scalar");
    const std::int64_t n = t.shape()[0];
    if (rows >= 0 && n != rows)
      throw InvalidArgumentError("from_tensor_slices: Dimensions " + std::to_string(rows) + " and " + std::to_string(n) +
                                 " are not compatible: every component needs the same first dimension, got " +
                                 t.shape().to_string() + " after a component with " + std::to_string(rows) + " rows");
    rows = n;
  }
  template <std::size_t... I>
  static value_type stack_all(const std::vector<value_type>& parts, std::index_sequence<I...>) {
    return value_type{stack_component<I>(parts)...};
  }
  template <std::size_t I>
  static auto stack_component(const std::vector<value_type>& parts) {
    using T = typename std::tuple_element_t<I, value_type>::value_type;
    std::vector<Tensor<T>> column;
    column.reserve(parts.size());
    for (const auto& p : parts) column.push_back(std::get<I>(p));
    return pipeline::stack(column, I);
  }
};

}  // namespace devtensor::data
