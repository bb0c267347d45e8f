#pragma once
/// @file softmax.hpp
/// @brief CPU softmax and log-softmax over the rows of an [rows, classes] buffer: shifted by the
/// row's maximum, the exponentials summed in double, in parallel over rows.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/backend/cpu/simd.hpp"
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
      // The maximum ignores NaN here; a NaN still makes its row NaN through the sum. Four partial
      // maxima and four partial sums: one chain of dependent compares or double adds would bound
      // each loop at an instruction's latency per element.
      T partial_max[4] = {-std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity()};
      std::int64_t c = 0;
      for (; c + 4 <= classes; c += 4)
        for (std::int64_t k = 0; k < 4; ++k) partial_max[k] = x[c + k] > partial_max[k] ? x[c + k] : partial_max[k];
      for (; c < classes; ++c) partial_max[0] = x[c] > partial_max[0] ? x[c] : partial_max[0];
      const T shift = std::max(std::max(partial_max[0], partial_max[1]), std::max(partial_max[2], partial_max[3]));
      accumulator_t<T> partial[4] = {0, 0, 0, 0};
      c = 0;
      for (; c + 4 <= classes; c += 4)
        for (std::int64_t k = 0; k < 4; ++k) {
          const T e = std::exp(x[c + k] - shift);
          if (!log) y[c + k] = e;
          partial[k] += e;
        }
      for (; c < classes; ++c) {
        const T e = std::exp(x[c] - shift);
        if (!log) y[c] = e;
        partial[0] += e;
      }
      const accumulator_t<T> sum = (partial[0] + partial[1]) + (partial[2] + partial[3]);
      if (log) {
        const T log_sum = static_cast<T>(std::log(sum));
        for (std::int64_t i = 0; i < classes; ++i) y[i] = (x[i] - shift) - log_sum;
      } else {
        const T total = static_cast<T>(sum);
        namespace simd = backend::cpu::simd;
        constexpr std::int64_t lanes = simd::lanes<T>;
        c = 0;
        for (; c + lanes <= classes; c += lanes) simd::store(y + c, simd::load(y + c) / total);
        for (; c < classes; ++c) y[c] /= total;
      }
    }
  });
}

}  // namespace devtensor::ops::cpu
