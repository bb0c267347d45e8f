#pragma once
/// @file any_tensor.hpp
/// @brief AnyTensor: a tensor without its element type in the type (its DType a value), for code
/// that handles tensors of every type alike: the tape's records, a graph's values and feeds.

#include <cstdint>
#include <memory>
#include <utility>

#include "devtensor/tensor/dtype.hpp"
#include "devtensor/tensor/shape.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor {

/// A tensor handle with its element type as a value: enough to rebuild the typed handle,
/// identity included.
struct AnyTensor {
  std::uint64_t id = 0;
  DType dtype = DType::DT_FLOAT;
  Shape shape;
  std::shared_ptr<TensorStorage> storage;

  AnyTensor() = default;
  AnyTensor(std::uint64_t id_, DType dtype_, Shape shape_, std::shared_ptr<TensorStorage> storage_)
      : id(id_), dtype(dtype_), shape(std::move(shape_)), storage(std::move(storage_)) {}
  template <Element T>
  AnyTensor(const Tensor<T>& t)  // NOLINT(google-explicit-constructor): a typed tensor is one
      : id(t.id()), dtype(dtype_enum<T>()), shape(t.shape()), storage(t.storage()) {}

  /// The typed handle. The caller knows the type (dtype == dtype_enum<T>()).
  template <Element T>
  [[nodiscard]] Tensor<T> as() const {
    return Tensor<T>(storage, shape, id);
  }
  [[nodiscard]] bool defined() const noexcept { return storage != nullptr; }
  [[nodiscard]] std::size_t bytes() const noexcept {
    return static_cast<std::size_t>(shape.num_elements()) * dtype_size(dtype);
  }
};

}  // namespace devtensor
