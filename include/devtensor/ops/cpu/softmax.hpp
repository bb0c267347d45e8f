#pragma once
/// @file softmax.hpp
/// @brief CPU softmax and log-softmax over the rows of an [rows, classes] buffer: shifted by the
/// row's maximum, the exponentials summed in double, in parallel over rows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/cpu/reduce.hpp"

namespace devtensor::ops::cpu {

/// out[r] = softmax(in[r]) (or log-softmax when `log`) for each of `rows` rows of `classes`.
template <class T>
void softmax_rows(const T* in, std::int64_t rows, std::int64_t classes, bool log, T* out) {
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 15) / std::max<std::int64_t>(1, classes));
  backend::cpu::parallel_for(rows, grain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const T* x = in + r * classes;
      T* y = out + r * classes;
      // The maximum ignores NaN here; a NaN still makes its row NaN through the sum.
      T shift = -std::numeric_limits<T>::infinity();
      for (std::int64_t i = 0; i < classes; ++i) shift = x[i] > shift ? x[i] : shift;
      accumulator_t<T> sum = 0;
      for (std::int64_t i = 0; i < classes; ++i) {
        const T e = std::exp(x[i] - shift);
        if (!log) y[i] = e;
        sum += e;
      }
      if (log) {
        const T log_sum = static_cast<T>(std::log(sum));
        for (std::int64_t i = 0; i < classes; ++i) y[i] = (x[i] - shift) - log_sum;
      } else {
        const T total = static_cast<T>(sum);
        for (std::int64_t i = 0; i < classes; ++i) y[i] /= total;
      }
    }
  });
}

}  // namespace devtensor::ops::cpu
