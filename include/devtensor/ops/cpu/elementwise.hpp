#pragma once
/// @file elementwise.hpp
/// @brief CPU kernels for elementwise ops: contiguous loops the compiler vectorises, NumPy
/// broadcasting with a contiguous inner loop, split over the thread pool for large tensors.

#include <cstdint>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cpu {

/// Elements per parallel piece: below this a kernel runs on the calling thread.
inline constexpr std::int64_t kParallelGrain = std::int64_t{1} << 18;

template <class T, class F>
void unary(const T* __restrict in, T* __restrict out, std::int64_t n, F f) {
  // Pointers captured by value into restrict locals: captured by reference, a store to out[i]
  // could alias the captured pointer itself, and GCC then reloads it each iteration instead of
  // vectorising (seen as Relu running 1.8x slower after an unrelated header change).
  backend::cpu::parallel_for(n, kParallelGrain, [in, out, f](std::int64_t begin, std::int64_t end) {
    const T* __restrict src = in;
    T* __restrict dst = out;
    for (std::int64_t i = begin; i < end; ++i) dst[i] = f(src[i]);
  });
}

namespace detail {

/// Row-major strides of `shape` padded on the left to `rank`, 0 where the dimension broadcasts.
inline std::vector<std::int64_t> broadcast_strides(const Shape& shape, std::size_t rank) {
  std::vector<std::int64_t> out(rank, 0);
  const auto strides = shape.strides();
  const std::size_t offset = rank - shape.rank();
  for (std::size_t i = 0; i < shape.rank(); ++i) out[offset + i] = shape[i] == 1 ? 0 : strides[i];
  return out;
}

}  // namespace detail

/// out = f(a, b) with NumPy broadcasting; `out_shape` is the broadcast shape.
template <class T, class F>
void binary(const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* out, const Shape& out_shape, F f) {
  const std::int64_t n = out_shape.num_elements();
  if (n == 0) return;
  const std::int64_t na = a_shape.num_elements();
  const std::int64_t nb = b_shape.num_elements();
  if (na == n && nb == n) {  // same number of elements: same shape up to leading ones
    backend::cpu::parallel_for(n, kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) out[i] = f(a[i], b[i]);
    });
    return;
  }
  if (nb == 1) {
    const T y = b[0];
    backend::cpu::parallel_for(n, kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) out[i] = f(a[i], y);
    });
    return;
  }
  if (na == 1) {
    const T x = a[0];
    backend::cpu::parallel_for(n, kParallelGrain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) out[i] = f(x, b[i]);
    });
    return;
  }
  // General case: an odometer over the outer dimensions, a strided loop over the last one.
  const std::size_t rank = out_shape.rank();
  const auto sa = detail::broadcast_strides(a_shape, rank);
  const auto sb = detail::broadcast_strides(b_shape, rank);
  const std::int64_t inner = out_shape[rank - 1];
  const std::int64_t ia = sa[rank - 1];
  const std::int64_t ib = sb[rank - 1];
  const std::int64_t rows = n / inner;
  backend::cpu::parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / inner),
                             [&](std::int64_t row_begin, std::int64_t row_end) {
                               std::vector<std::int64_t> index(rank, 0);
                               std::int64_t oa = 0;
                               std::int64_t ob = 0;
                               // Position the odometer at row_begin.
                               std::int64_t r = row_begin;
                               for (std::size_t d = rank - 1; d-- > 0;) {
                                 index[d] = r % out_shape[d];
                                 r /= out_shape[d];
                                 oa += index[d] * sa[d];
                                 ob += index[d] * sb[d];
                               }
                               for (std::int64_t row = row_begin; row < row_end; ++row) {
                                 T* o = out + row * inner;
                                 for (std::int64_t j = 0; j < inner; ++j) o[j] = f(a[oa + j * ia], b[ob + j * ib]);
                                 for (std::size_t d = rank - 1; d-- > 0;) {  // advance the odometer
                                   ++index[d];
                                   oa += sa[d];
                                   ob += sb[d];
                                   if (index[d] < out_shape[d]) break;
                                   oa -= sa[d] * index[d];
                                   ob -= sb[d] * index[d];
                                   index[d] = 0;
                                 }
                               }
                             });
}

}  // namespace devtensor::ops::cpu
