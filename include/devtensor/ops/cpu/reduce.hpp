#pragma once
/// @file reduce.hpp
/// @brief CPU reductions over any set of axes: the input is viewed as [outer, reduced, inner]
/// after moving the reduced axes together (a copy only when they are not already adjacent).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/ops/kernel_context.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cpu {

using ReduceKind = ops::Reduction;

/// The accumulator: double for float and double (accuracy), float for float16 and bfloat16 (as
/// TensorFlow's GPU kernels and cuBLAS accumulate them; its CPU kernels add in the 16-bit type,
/// where 2048 + 1 + 1 stays 2048), the type itself for integers (sums wrap modulo 2^N,
/// core/arith.hpp).
template <class T>
using accumulator_t =
    std::conditional_t<std::is_floating_point_v<T>, double, std::conditional_t<is_sixteen_bit_float_v<T>, float, T>>;

/// A reduction seen as rows: kept axes first (in order), reduced axes last, so the input is
/// [outer, inner] after moving its axes by `perm` (CPU and GPU kernels share this).
struct ReduceLayout {
  std::vector<std::size_t> perm;
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  bool needs_move = false;  // the reduced axes are not already last and contiguous

  ReduceLayout(const Shape& shape, const std::vector<bool>& reduce_axis) {
    const std::size_t rank = shape.rank();
    for (std::size_t d = 0; d < rank; ++d)
      if (!reduce_axis[d]) perm.push_back(d);
    const std::size_t kept = perm.size();
    for (std::size_t d = 0; d < rank; ++d)
      if (reduce_axis[d]) perm.push_back(d);
    for (std::size_t i = 0; i < kept; ++i) outer *= shape[perm[i]];
    for (std::size_t i = kept; i < rank; ++i) inner *= shape[perm[i]];
    bool identity = true;
    for (std::size_t i = 0; i < rank; ++i) identity = identity && perm[i] == i;
    needs_move = !identity && outer > 1 && inner > 1;
  }
};

namespace reduce_detail {
/// Adds rows [0, rows) of columns col[0..K) (rows `after` apart) into acc[0..K): the K running
/// values live in registers for the whole panel (K independent dependency chains), and go back to
/// memory once per panel, not once per element.
template <class Acc, class T, class Combine, std::size_t... K>
void column_group(const T* col, std::int64_t rows, std::int64_t after, Acc* acc, Combine combine,
                  std::index_sequence<K...>) {
  Acc a[sizeof...(K)] = {acc[K]...};
  for (std::int64_t r = 0; r < rows; ++r, col += after) ((a[K] = combine(a[K], col[K])), ...);
  ((acc[K] = a[K]), ...);
}
/// acc[b] = combine over rows of in[r * after + b] for b in [0, width): panels of kPanelRows rows
/// (in cache while their columns are swept), columns 8 at a time, then one at a time. Each
/// column still combines its rows in order, so results do not depend on the blocking.
template <class Acc, class T, class Combine>
void columns(const T* in, std::int64_t reduced, std::int64_t after, std::int64_t width, Acc* acc, Combine combine) {
  constexpr std::int64_t kPanelRows = 64;
  constexpr std::int64_t kGroup = 8;
  for (std::int64_t r0 = 0; r0 < reduced; r0 += kPanelRows) {
    const std::int64_t rows = std::min(kPanelRows, reduced - r0);
    const T* panel = in + r0 * after;
    std::int64_t b = 0;
    for (; b + kGroup <= width; b += kGroup)
      column_group(panel + b, rows, after, acc + b, combine, std::make_index_sequence<kGroup>{});
    for (; b < width; ++b) column_group(panel + b, rows, after, acc + b, combine, std::make_index_sequence<1>{});
  }
}
}  // namespace reduce_detail

/// Reduced axes that form one block with kept axes after it: the input is [before, reduced,
/// after] and out[a, b] = reduce over r of in[a, r, b], without a transposing copy; this is the
/// bias gradient's reduction over the batch axis. Columns are reduced a few at a time with their
/// accumulators in registers (reduce_detail::columns): an accumulator array updated in memory for
/// every element was 2x slower, and its speed varied with the stack's address.
template <class T>
void reduce_columns(const T* in, std::int64_t before, std::int64_t reduced, std::int64_t after, ReduceKind kind,
                    T* out) {
  constexpr std::int64_t kBlock = 512;  // columns per task: 4 KiB of double accumulators, on the stack
  const std::int64_t blocks = (after + kBlock - 1) / kBlock;
  const std::int64_t grain =
      std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(1, reduced * kBlock));
  backend::cpu::parallel_for(before * blocks, grain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t a = task / blocks;
      const std::int64_t b0 = (task % blocks) * kBlock;
      const std::int64_t width = std::min(kBlock, after - b0);
      const T* base = in + a * reduced * after + b0;
      T* o = out + a * after + b0;
      if (kind == ReduceKind::max) {
        T best[kBlock];
        for (std::int64_t b = 0; b < width; ++b)
          best[b] = is_floating_element_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
        reduce_detail::columns(base, reduced, after, width, best, [](T m, T x) { return std::max(m, x); });
        for (std::int64_t b = 0; b < width; ++b) o[b] = best[b];
      } else {
        using Acc = accumulator_t<T>;
        Acc acc[kBlock] = {};
        reduce_detail::columns(base, reduced, after, width, acc,
                               [](Acc sum, T x) { return arith::add(sum, static_cast<Acc>(x)); });
        if (kind == ReduceKind::mean)
          for (std::int64_t b = 0; b < width; ++b) acc[b] = arith::divide_by_count(acc[b], reduced);
        for (std::int64_t b = 0; b < width; ++b) o[b] = static_cast<T>(acc[b]);
      }
    }
  });
}

/// Reduces `in` (shape `shape`) over the axes flagged in `reduce` into `out`, whose elements are
/// in the order of the kept axes.
template <class T>
void reduce(const T* in, const Shape& shape, const std::vector<bool>& reduce_axis, ReduceKind kind, T* out) {
  const std::size_t rank = shape.rank();
  if (shape.num_elements() == 0) {
    // No input (and `in` may be null: no pointer arithmetic on it): every output is the empty
    // reduction, 0 for sum, the lowest value for max (found by the op fuzzer), and for mean 0 / 0:
    // NaN for floating types, 0 for integers (TensorFlow's results).
    T empty{0};
    if (kind == ReduceKind::max)
      empty = is_floating_element_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    if (kind == ReduceKind::mean) empty = static_cast<T>(arith::divide_by_count(accumulator_t<T>{0}, 0));
    std::fill(out, out + ReduceLayout(shape, reduce_axis).outer, empty);
    return;
  }
  {
    // One block of reduced axes followed by kept ones: accumulate rows, no transposing copy.
    const auto dims = shape.dims_vector();
    std::size_t first = rank, last = 0;
    for (std::size_t d = 0; d < rank; ++d)
      if (reduce_axis[d]) {
        first = std::min(first, d);
        last = d;
      }
    bool block = first < rank;
    for (std::size_t d = first; block && d <= last; ++d) block = reduce_axis[d];
    if (block && last + 1 < rank) {
      std::int64_t before = 1, reduced = 1, after = 1;
      for (std::size_t d = 0; d < rank; ++d) (d < first ? before : d <= last ? reduced : after) *= dims[d];
      if (after > 1 && before * after > 0) {
        reduce_columns(in, before, reduced, after, kind, out);
        return;
      }
    }
  }
  const ReduceLayout layout(shape, reduce_axis);
  const auto& perm = layout.perm;
  const std::int64_t outer = layout.outer;
  const std::int64_t inner = layout.inner;
  std::vector<T> moved;
  const T* src = in;
  if (layout.needs_move) {
    moved.resize(static_cast<std::size_t>(outer * inner));  // the input's count: Shape keeps it in int64
    const auto strides = shape.strides();
    std::vector<std::int64_t> moved_dims(rank), moved_strides(rank);
    for (std::size_t i = 0; i < rank; ++i) {
      moved_dims[i] = shape[perm[i]];
      moved_strides[i] = strides[perm[i]];
    }
    std::vector<std::int64_t> index(rank, 0);
    for (std::int64_t o = 0; o < outer * inner; ++o) {
      std::int64_t offset = 0;
      for (std::size_t i = 0; i < rank; ++i) offset += index[i] * moved_strides[i];
      moved[static_cast<std::size_t>(o)] = in[offset];
      for (std::size_t i = rank; i-- > 0;) {
        if (++index[i] < moved_dims[i]) break;
        index[i] = 0;
      }
    }
    src = moved.data();
  }

  backend::cpu::parallel_for(outer,
                             std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(1, inner)),
                             [&](std::int64_t begin, std::int64_t end) {
                               for (std::int64_t o = begin; o < end; ++o) {
                                 const T* row = src + o * inner;
                                 if (kind == ReduceKind::max) {
                                   T best = std::numeric_limits<T>::lowest();
                                   if constexpr (is_floating_element_v<T>) best = -std::numeric_limits<T>::infinity();
                                   for (std::int64_t i = 0; i < inner; ++i) best = std::max(best, row[i]);
                                   out[o] = best;
                                 } else {
                                   accumulator_t<T> acc{0};
                                   for (std::int64_t i = 0; i < inner; ++i)
                                     acc = arith::add(acc, static_cast<accumulator_t<T>>(row[i]));
                                   if (kind == ReduceKind::mean) acc = arith::divide_by_count(acc, inner);
                                   out[o] = static_cast<T>(acc);
                                 }
                               }
                             });
}

/// Σ x² over n elements, accumulated in double in four partial sums (one chain of dependent adds
/// would bound the loop at an add's latency per element).
template <class T>
double sum_of_squares(const T* x, std::int64_t n) {
  double partial[4] = {0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (std::int64_t k = 0; k < 4; ++k) partial[k] += static_cast<double>(x[i + k]) * static_cast<double>(x[i + k]);
  for (; i < n; ++i) partial[0] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

}  // namespace devtensor::ops::cpu
