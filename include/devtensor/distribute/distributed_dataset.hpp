#pragma once
/// @file distributed_dataset.hpp
/// @brief DistributedDataset (experimental_distribute_dataset): every global batch split across
/// a strategy's replicas, each piece on its replica's device; and that split for one tensor.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

#include "devtensor/config.hpp"
#include "devtensor/data/dataset.hpp"
#include "devtensor/distribute/values.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {
namespace distribute {

/// TensorFlow's split of a global batch of `t` (along dimension 0) across replicas: replica r
/// gets batch.sizes[r] consecutive rows from batch.offset on, on devices[r]; a partial batch runs
/// out early and later replicas get empty pieces.
template <Element T>
std::vector<Tensor<T>> split_rows(const Tensor<T>& t, const LocalBatch& batch,
                                  const std::vector<const Device*>& devices) {
  const std::int64_t rows = t.rank() > 0 ? t.shape()[0] : 1;
  std::vector<Tensor<T>> out;
  out.reserve(devices.size());
  std::int64_t start = batch.offset;
  for (std::size_t r = 0; r < devices.size(); ++r) {
    const std::int64_t take = std::max<std::int64_t>(0, std::min(batch.sizes[r], rows - start));
    out.push_back(data::pipeline::rows_on(t, start, take, *devices[r]));
    start += take;
  }
  return out;
}

/// A dataset whose global batches are split across replicas (experimental_distribute_dataset).
template <Element... Ts>
class DistributedDataset {
 public:
  using value_type = PerReplica<std::tuple<Tensor<Ts>...>>;

  /// `devices`: this worker's replicas; with several workers, each takes its own share of every
  /// global batch (DATA auto-shard: every worker reads the whole dataset).
  DistributedDataset(data::Dataset<Ts...> dataset, std::vector<const Device*> devices, int workers = 1, int worker = 0)
      : dataset_(std::move(dataset)), devices_(std::move(devices)), workers_(workers), worker_(worker) {}

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = DistributedDataset::value_type;
    using difference_type = std::ptrdiff_t;
    Iterator(typename data::Dataset<Ts...>::Iterator it, const DistributedDataset* owner)
        : it_(std::move(it)), owner_(owner) {
      fill();
    }
    const value_type& operator*() const { return current_; }
    const value_type* operator->() const { return &current_; }
    Iterator& operator++() {
      ++it_;
      fill();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& i, std::default_sentinel_t s) { return i.it_ == s; }

   private:
    typename data::Dataset<Ts...>::Iterator it_;
    const DistributedDataset* owner_;
    value_type current_;
    void fill() {
      if (!(it_ == std::default_sentinel)) current_ = owner_->split(*it_);
    }
  };
  [[nodiscard]] Iterator begin() const { return Iterator(dataset_.begin(), this); }
  [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

  /// Where this worker's replicas start in a global batch of `rows` elements, and their sizes.
  [[nodiscard]] LocalBatch split_for(std::int64_t rows) const {
    return local_batch(dataset_.batch_size(), rows, workers_, static_cast<std::int64_t>(devices_.size()), worker_);
  }
  /// The per-replica sizes of a global batch of `rows` elements (this worker's replicas).
  [[nodiscard]] std::vector<std::int64_t> sizes_for(std::int64_t rows) const { return split_for(rows).sizes; }

 private:
  data::Dataset<Ts...> dataset_;
  std::vector<const Device*> devices_;
  int workers_ = 1;
  int worker_ = 0;

  value_type split(const std::tuple<Tensor<Ts>...>& element) const;
};

// Out of the class and not inline, so that in compiled mode the explicit instantiation
// declarations below keep it out of the caller's translation unit.
template <Element... Ts>
typename DistributedDataset<Ts...>::value_type DistributedDataset<Ts...>::split(
    const std::tuple<Tensor<Ts>...>& element) const {
  const std::int64_t rows = std::get<0>(element).rank() > 0 ? std::get<0>(element).shape()[0] : 1;
  const auto parts =
      std::apply([&](const auto&... c) { return std::tuple{split_rows(c, split_for(rows), devices_)...}; }, element);
  value_type out;
  for (std::size_t r = 0; r < devices_.size(); ++r)
    out.values.push_back(std::apply([r](const auto&... p) { return std::tuple{p[r]...}; }, parts));
  return out;
}

// (lists of macro calls, one instance per line: clang-format would run them together)
// clang-format off
#ifdef DEVTENSOR_EXTERN_TEMPLATE  // the usual (features, labels) of floats (Note [Explicit instantiations])
DEVTENSOR_EXTERN_TEMPLATE class DistributedDataset<float, float>;
#define DEVTENSOR_ALL(T) \
  DEVTENSOR_EXTERN_TEMPLATE std::vector<Tensor<T>> split_rows<T>(const Tensor<T>&, const LocalBatch&, const std::vector<const Device*>&);
DEVTENSOR_FOR_INSTANCE_TYPES(DEVTENSOR_ALL)
#undef DEVTENSOR_ALL
#endif
// clang-format on

}  // namespace distribute
}  // namespace devtensor
