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
/// reshuffle_each_iteration, differ between passes in a deterministic way), take, prefetch, map.
///
/// The pipeline itself is an AnyDataset, compiled once for every element type (data/any_dataset.hpp,
/// Note [One pipeline for every element type]); a Dataset only gives its elements their types.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "devtensor/core/error.hpp"
#include "devtensor/data/any_dataset.hpp"
#include "devtensor/tensor/any_tensor.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::data {

template <Element... Ts>
class Dataset;

namespace dataset_detail {
/// A map function's result as a Dataset's element: a Tensor<U>, a std::pair or a std::tuple of
/// tensors.
template <class R>
struct MapResult {
  static constexpr bool valid = false;
};
inline AnyTensor checked_component(AnyTensor t, std::size_t i) {
  if (!t.storage)
    throw InvalidArgumentError("Dataset.map: the function returned an undefined tensor for component " +
                               std::to_string(i));
  return t;
}
template <Element U>
struct MapResult<Tensor<U>> {
  static constexpr bool valid = true;
  using dataset = Dataset<U>;
  static pipeline::Columns columns(const Tensor<U>& t) { return {checked_component(t, 0)}; }
};
template <Element... Us>
struct MapResult<std::tuple<Tensor<Us>...>> {
  static constexpr bool valid = sizeof...(Us) > 0;
  using dataset = Dataset<Us...>;
  static pipeline::Columns columns(const std::tuple<Tensor<Us>...>& t) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return pipeline::Columns{checked_component(std::get<I>(t), I)...};
    }
    (std::index_sequence_for<Us...>{});
  }
};
template <Element A, Element B>
struct MapResult<std::pair<Tensor<A>, Tensor<B>>> {
  static constexpr bool valid = true;
  using dataset = Dataset<A, B>;
  static pipeline::Columns columns(const std::pair<Tensor<A>, Tensor<B>>& t) {
    return {checked_component(t.first, 0), checked_component(t.second, 1)};
  }
};
}  // namespace dataset_detail

template <Element... Ts>
class Dataset {
  static_assert(sizeof...(Ts) > 0, "a Dataset has at least one component");

 public:
  using value_type = std::tuple<Tensor<Ts>...>;

  /// A dataset with one element: the given tensors.
  /// @throws InvalidArgumentError for an undefined tensor.
  static Dataset from_tensors(Tensor<Ts>... components);

  /// One element per index along the first dimension of every component.
  /// @throws InvalidArgumentError for a rank-0, undefined or symbolic component, or first
  /// dimensions that differ.
  static Dataset from_tensor_slices(Tensor<Ts>... components);

  /// The dataset `count` times over; forever when `count` is -1 (the default).
  /// @throws InvalidArgumentError for a count below -1.
  [[nodiscard]] Dataset repeat(std::int64_t count = -1) const { return Dataset(any_.repeat(count)); }

  /// Consecutive elements stacked along a new first dimension; the last batch may be smaller
  /// unless `drop_remainder`. @throws InvalidArgumentError for batch_size < 1; iterating throws it
  /// for elements whose shapes differ.
  [[nodiscard]] Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const {
    return Dataset(any_.batch(batch_size, drop_remainder));
  }

  /// TensorFlow's shuffle: a buffer of `buffer_size` elements, each output drawn uniformly from it
  /// and replaced by the next input. With a seed the order is reproducible; with
  /// `reshuffle_each_iteration` every pass draws a different (still reproducible) order.
  /// @throws InvalidArgumentError for buffer_size < 1.
  [[nodiscard]] Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                                bool reshuffle_each_iteration = true) const {
    return Dataset(any_.shuffle(buffer_size, seed, reshuffle_each_iteration));
  }

  /// At most the first `count` elements (-1: all). @throws InvalidArgumentError for count < -1.
  [[nodiscard]] Dataset take(std::int64_t count) const { return Dataset(any_.take(count)); }

  /// The same elements, each pass computed up to `buffer_size` elements ahead on a thread of its
  /// own while the reader works (tf.data's prefetch; Note [Prefetching]); AUTOTUNE (-1): two
  /// elements; 0: none. Errors reach the reader in the element's place. It pays when an element
  /// costs more to make than the hand-over between threads (16-19 us on a 2-vCPU VM); a pipeline
  /// that reads GPU memory is not prefetched. @throws InvalidArgumentError below -1.
  [[nodiscard]] Dataset prefetch(std::int64_t buffer_size) const { return Dataset(any_.prefetch(buffer_size)); }

  /// `f` applied to every element (tf.data's map): f takes the components (`const Tensor<T>&`
  /// each) and returns a Tensor, a std::pair or a std::tuple of tensors, the new element. It runs
  /// eagerly when the element is made (on the prefetch thread after a prefetch), one element at a
  /// time, under a CPU device scope, as tf.data runs its functions on the host; what it throws
  /// reaches the reader in the element's place. The batch size is no longer known statically.
  /// @throws InvalidArgumentError, when an element is made, for an undefined tensor returned.
  template <class F>
  [[nodiscard]] auto map(F f) const {
    using Result = std::remove_cvref_t<std::invoke_result_t<const F&, const Tensor<Ts>&...>>;
    using Mapped = dataset_detail::MapResult<Result>;
    static_assert(Mapped::valid, "Dataset::map's function returns a Tensor, a std::pair or a std::tuple of Tensors");
    return typename Mapped::dataset(any_.map([f = std::move(f)](const pipeline::Columns& element) {
      return Mapped::columns([&]<std::size_t... I>(std::index_sequence<I...>) {
        return f(element[I].template as<Ts>()...);
      }(std::index_sequence_for<Ts...>{}));
    }));
  }

  /// This dataset's elements, then `other`'s.
  [[nodiscard]] Dataset concatenate(const Dataset& other) const { return Dataset(any_.concatenate(other.any_)); }

  /// The number of elements, INFINITE_CARDINALITY or UNKNOWN_CARDINALITY.
  [[nodiscard]] std::int64_t cardinality() const noexcept { return any_.cardinality(); }
  /// The batch size when the elements are batches of a statically known size (the last may be
  /// smaller unless drop_remainder), which distribution strategies split across replicas.
  [[nodiscard]] std::optional<std::int64_t> batch_size() const noexcept { return any_.batch_size(); }
  /// The same pipeline with the element types as values: for code that takes datasets of any types.
  [[nodiscard]] const AnyDataset& erased() const noexcept { return any_; }

  /// An input iterator over one pass.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Dataset::value_type;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    explicit Iterator(pipeline::Next<pipeline::Columns> pass);
    const value_type& operator*() const { return *current_; }
    const value_type* operator->() const { return &*current_; }
    Iterator& operator++();
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept { return !it.current_; }

   private:
    std::shared_ptr<pipeline::Next<pipeline::Columns>> pass_;
    std::optional<value_type> current_;

    /// The element with its types back: the pipeline keeps each component's dtype.
    template <std::size_t... I>
    static value_type typed(pipeline::Columns& element, std::index_sequence<I...>) {
      return value_type{Tensor<Ts>(std::move(element[I].storage), std::move(element[I].shape), element[I].id)...};
    }
  };

  [[nodiscard]] Iterator begin() const;
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

 private:
  template <Element...>
  friend class Dataset;  // map makes datasets of other element types
  explicit Dataset(AnyDataset any) : any_(std::move(any)) {}

  AnyDataset any_;
};

// Out of the class and not inline, so that the explicit instances below are the only copies
// (Note [Explicit instantiations]).
template <Element... Ts>
Dataset<Ts...> Dataset<Ts...>::from_tensors(Tensor<Ts>... components) {
  return Dataset(AnyDataset::from_tensors({AnyTensor(components)...}));
}
template <Element... Ts>
Dataset<Ts...> Dataset<Ts...>::from_tensor_slices(Tensor<Ts>... components) {
  return Dataset(AnyDataset::from_tensor_slices({AnyTensor(components)...}));
}
template <Element... Ts>
typename Dataset<Ts...>::Iterator Dataset<Ts...>::begin() const {
  return Iterator(any_.open());
}
template <Element... Ts>
Dataset<Ts...>::Iterator::Iterator(pipeline::Next<pipeline::Columns> pass)
    : pass_(std::make_shared<pipeline::Next<pipeline::Columns>>(std::move(pass))) {
  ++*this;
}
template <Element... Ts>
typename Dataset<Ts...>::Iterator& Dataset<Ts...>::Iterator::operator++() {
  auto element = (*pass_)();
  if (element)
    current_.emplace(typed(*element, std::index_sequence_for<Ts...>{}));
  else
    current_.reset();
  return *this;
}

#ifdef DEVTENSOR_EXTERN_TEMPLATE  // the usual (features, labels) (Note [Explicit instantiations])
DEVTENSOR_EXTERN_TEMPLATE class Dataset<float, float>;
DEVTENSOR_EXTERN_TEMPLATE class Dataset<float, std::int32_t>;
#endif

}  // namespace devtensor::data
