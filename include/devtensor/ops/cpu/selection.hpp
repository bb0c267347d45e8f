#pragma once
/// @file selection.hpp
/// @brief CPU bodies of ArgMax/ArgMin, OneHot and SelectV2 (ops/selection.hpp).

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/cpu/elementwise.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cpu {

/// A shape seen as [outer, length, inner] around `axis`.
struct AxisSplit {
  std::int64_t outer = 1, length = 1, inner = 1;
};
inline AxisSplit split_at_axis(const Shape& shape, std::size_t axis) {
  AxisSplit s;
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.length = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

/// out[o, i] = the index k of the best in[o, k, i] (largest when `Max`): TensorFlow's rule, a
/// running best from the type's lowest (highest) value at index 0 that moves only to a strictly
/// better value.
template <bool Max, class T, class Index>
void arg_reduce(const T* in, std::int64_t outer, std::int64_t length, std::int64_t inner, Index* out) {
  constexpr T start = Max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  const auto better = [](T x, T best) { return Max ? x > best : x < best; };
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(1, length * inner));
  if (inner == 1) {  // rows: one scan each
    backend::cpu::parallel_for(outer, grain, [=](std::int64_t begin, std::int64_t end) {
      for (std::int64_t o = begin; o < end; ++o) {
        const T* x = in + o * length;
        T best = start;
        std::int64_t index = 0;
        for (std::int64_t k = 0; k < length; ++k)
          if (better(x[k], best)) {
            best = x[k];
            index = k;
          }
        out[o] = static_cast<Index>(index);
      }
    });
    return;
  }
  // An inner axis: the bests of a whole row of `inner` move together, reading the input in order.
  backend::cpu::parallel_for(outer, grain, [=](std::int64_t begin, std::int64_t end) {
    std::vector<T> best(static_cast<std::size_t>(inner));
    for (std::int64_t o = begin; o < end; ++o) {
      std::fill(best.begin(), best.end(), start);
      Index* index = out + o * inner;
      std::fill(index, index + inner, Index{0});
      for (std::int64_t k = 0; k < length; ++k) {
        const T* x = in + (o * length + k) * inner;
        for (std::int64_t i = 0; i < inner; ++i)
          if (better(x[i], best[static_cast<std::size_t>(i)])) {
            best[static_cast<std::size_t>(i)] = x[i];
            index[i] = static_cast<Index>(k);
          }
      }
    }
  });
}

/// out[b, d, a] = on if indices[b, a] == d else off, for `before` x `depth` x `after` outputs.
template <class I, class T>
void one_hot(const I* indices, std::int64_t before, std::int64_t depth, std::int64_t after, T on, T off, T* out) {
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(1, depth * after));
  backend::cpu::parallel_for(before, grain, [=](std::int64_t begin, std::int64_t end) {
    std::fill(out + begin * depth * after, out + end * depth * after, off);
    for (std::int64_t b = begin; b < end; ++b)
      for (std::int64_t a = 0; a < after; ++a) {
        const auto d = static_cast<std::int64_t>(indices[b * after + a]);
        if (d >= 0 && d < depth) out[(b * depth + d) * after + a] = on;
      }
  });
}

/// out = condition ? x : y elementwise (nonzero is true), NumPy broadcasting over the three.
template <class T>
void select(const T* condition, const Shape& c_shape, const T* x, const Shape& x_shape, const T* y,
            const Shape& y_shape, T* out, const Shape& out_shape) {
  const std::int64_t n = out_shape.num_elements();
  if (n == 0) return;
  if (c_shape.num_elements() == n && x_shape.num_elements() == n && y_shape.num_elements() == n) {
    backend::cpu::parallel_for(n, kParallelGrain, [=](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) out[i] = condition[i] != T{0} ? x[i] : y[i];
    });
    return;
  }
  // An odometer over the outer dimensions, a strided loop over the last one (as cpu::binary).
  const std::size_t rank = out_shape.rank();
  const std::array<std::vector<std::int64_t>, 3> strides{detail::broadcast_strides(c_shape, rank),
                                                         detail::broadcast_strides(x_shape, rank),
                                                         detail::broadcast_strides(y_shape, rank)};
  const std::int64_t inner = out_shape[rank - 1];
  const std::int64_t rows = n / inner;
  backend::cpu::parallel_for(
      rows, std::max<std::int64_t>(1, kParallelGrain / inner), [&](std::int64_t row_begin, std::int64_t row_end) {
        std::vector<std::int64_t> index(rank, 0);
        std::array<std::int64_t, 3> offset{0, 0, 0};
        std::int64_t r = row_begin;
        for (std::size_t d = rank - 1; d-- > 0;) {
          index[d] = r % out_shape[d];
          r /= out_shape[d];
          for (std::size_t k = 0; k < 3; ++k) offset[k] += index[d] * strides[k][d];
        }
        const std::int64_t sc = strides[0][rank - 1], sx = strides[1][rank - 1], sy = strides[2][rank - 1];
        for (std::int64_t row = row_begin; row < row_end; ++row) {
          T* o = out + row * inner;
          for (std::int64_t j = 0; j < inner; ++j)
            o[j] = condition[offset[0] + j * sc] != T{0} ? x[offset[1] + j * sx] : y[offset[2] + j * sy];
          for (std::size_t d = rank - 1; d-- > 0;) {  // advance the odometer
            ++index[d];
            for (std::size_t k = 0; k < 3; ++k) offset[k] += strides[k][d];
            if (index[d] < out_shape[d]) break;
            for (std::size_t k = 0; k < 3; ++k) offset[k] -= strides[k][d] * index[d];
            index[d] = 0;
          }
        }
      });
}

}  // namespace devtensor::ops::cpu
