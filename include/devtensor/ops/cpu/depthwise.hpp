#pragma once
/// @file depthwise.hpp
/// @brief CPU depthwise convolution and its two backprops over NHWC buffers: direct loops over
/// each output position's taps (a depthwise filter has few taps and no reduction over channels,
/// so there is no product to hand to a GEMM). Channel k of the input meets filter columns
/// k·m … k·m + m − 1 (m the depth multiplier); with m = 1 each tap is one vectorised pass.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/cpu/conv.hpp"

namespace devtensor::ops::cpu {

/// out[d] += x[d] · f[d].
template <class T>
DEVTENSOR_VECTORIZE void multiply_add_into(T* __restrict out, const T* __restrict x, const T* __restrict f,
                                           std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) out[d] += x[d] * f[d];
}

/// out[n, r, c, k·m + q] = Σ_taps in[n, r', c', k] · filter[kr, kc, k, q].
template <class T>
void depthwise_conv(const WindowGeometry& g, std::int64_t multiplier, const T* input, const T* filter, T* out) {
  const std::int64_t depth = g.channels, out_depth = depth * multiplier;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  if (out_depth == 0) return;  // an empty output: its windows need no visit
  const std::int64_t taps = std::max<std::int64_t>(1, g.k_rows * g.k_cols * out_depth);
  backend::cpu::parallel_for(positions, std::max<std::int64_t>(1, 8192 / taps),
                             [&](std::int64_t begin, std::int64_t end) {
                               for (std::int64_t row = begin; row < end; ++row) {
                                 T* o = out + row * out_depth;
                                 std::fill(o, o + out_depth, T{0});
                                 for_each_tap(g, row, [&](std::int64_t kr, std::int64_t kc, std::int64_t at) {
                                   if (at < 0) return;
                                   const T* x = input + at;
                                   const T* f = filter + (kr * g.k_cols + kc) * out_depth;
                                   if (multiplier == 1) {
                                     multiply_add_into(o, x, f, depth);
                                     return;
                                   }
                                   for (std::int64_t k = 0; k < depth; ++k)
                                     for (std::int64_t q = 0; q < multiplier; ++q)
                                       o[k * multiplier + q] += x[k] * f[k * multiplier + q];
                                 });
                               }
                             });
}

/// The input's gradient: each output position's dy sent back through its taps (images apart, in
/// parallel, as the pools' gradients).
template <class T>
void depthwise_backprop_input(const WindowGeometry& g, std::int64_t multiplier, const T* filter, const T* dy, T* dx) {
  const std::int64_t depth = g.channels, out_depth = depth * multiplier;
  if (out_depth == 0) {  // no gradient flows back (and the windows need no visit)
    std::fill(dx, dx + g.batch * g.in_rows * g.in_cols * depth, T{0});
    return;
  }
  for_each_image_range(g, dx, [&](std::int64_t first_row, std::int64_t last_row) {
    for (std::int64_t row = first_row; row < last_row; ++row) {
      const T* d_out = dy + row * out_depth;
      for_each_tap(g, row, [&](std::int64_t kr, std::int64_t kc, std::int64_t at) {
        if (at < 0) return;
        T* d_in = dx + at;
        const T* f = filter + (kr * g.k_cols + kc) * out_depth;
        if (multiplier == 1) {
          multiply_add_into(d_in, d_out, f, depth);
          return;
        }
        for (std::int64_t k = 0; k < depth; ++k) {
          T sum{0};
          for (std::int64_t q = 0; q < multiplier; ++q) sum += d_out[k * multiplier + q] * f[k * multiplier + q];
          d_in[k] += sum;
        }
      });
    }
  });
}

/// The filter's gradient: for each tap, Σ over output positions of in · dy. The taps run in
/// parallel; each adds an image's products in the element type (a vectorised pass per position
/// when the multiplier is 1) and the images' sums in double, so the error does not grow with the
/// batch.
template <class T>
void depthwise_backprop_filter(const WindowGeometry& g, std::int64_t multiplier, const T* input, const T* dy, T* df) {
  const std::int64_t depth = g.channels, out_depth = depth * multiplier;
  if (out_depth == 0) return;  // an empty filter
  backend::cpu::parallel_for(g.k_rows * g.k_cols, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<double> total(static_cast<std::size_t>(out_depth));
    std::vector<T> image(static_cast<std::size_t>(out_depth));
    for (std::int64_t tap = begin; tap < end; ++tap) {
      std::fill(total.begin(), total.end(), 0.0);
      const std::int64_t kr = tap / g.k_cols, kc = tap % g.k_cols;
      for (std::int64_t n = 0; n < g.batch; ++n) {
        std::fill(image.begin(), image.end(), T{0});
        for (std::int64_t r = 0; r < g.out_rows; ++r) {
          const std::int64_t ir = r * g.stride_rows - g.pad_top + kr * g.dil_rows;
          if (ir < 0 || ir >= g.in_rows) continue;
          for (std::int64_t c = 0; c < g.out_cols; ++c) {
            const std::int64_t ic = c * g.stride_cols - g.pad_left + kc * g.dil_cols;
            if (ic < 0 || ic >= g.in_cols) continue;
            const T* x = input + ((n * g.in_rows + ir) * g.in_cols + ic) * depth;
            const T* d_out = dy + ((n * g.out_rows + r) * g.out_cols + c) * out_depth;
            if (multiplier == 1) {
              multiply_add_into(image.data(), x, d_out, depth);
              continue;
            }
            for (std::int64_t k = 0; k < depth; ++k)
              for (std::int64_t q = 0; q < multiplier; ++q)
                image[static_cast<std::size_t>(k * multiplier + q)] += x[k] * d_out[k * multiplier + q];
          }
        }
        accumulate_into(total.data(), image.data(), out_depth);
      }
      T* out = df + tap * out_depth;
      for (std::int64_t d = 0; d < out_depth; ++d) out[d] = static_cast<T>(total[static_cast<std::size_t>(d)]);
    }
  });
}

}  // namespace devtensor::ops::cpu
