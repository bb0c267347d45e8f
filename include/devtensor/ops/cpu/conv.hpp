#pragma once
/// @file conv.hpp
/// @brief CPU convolution and pooling over NHWC buffers: im2col + GEMM for Conv2D and its two
/// backprops (Note [im2col in slices]), direct loops for the pools and the bias.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/cpu/matmul.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cpu {

// Note [im2col in slices]
// A convolution is a matrix product once each output position's window is laid out as a row
// (im2col): patches [positions, k_rows·k_cols·depth] · filter [k_rows·k_cols·depth, out_depth],
// the HWIO filter being that matrix already. The patch matrix of a whole batch is large (batch 32
// of 32x32x64 under a 3x3 window: 75 MB), so it is built and multiplied a slice of rows at a
// time, small enough to stay in the cache between the copy and the product. A 1x1 window with
// stride 1 and no padding needs no patches: the input is the matrix. The input's gradient is the
// reverse (dpatches = dy · filterᵀ, added back into their windows: col2im); the filter's gradient
// is Σ patchesᵀ · dy over the slices.

/// Rows of the patch matrix per slice: about 1 MiB of patches, at least one row.
template <class T>
std::int64_t im2col_slice_rows(std::int64_t patch_size) {
  return std::max<std::int64_t>(1, (std::int64_t{1} << 20) / static_cast<std::int64_t>(sizeof(T)) /
                                       std::max<std::int64_t>(1, patch_size));
}

/// True when the window is the identity on positions: the input is the patch matrix.
inline bool is_pointwise(const WindowGeometry& g) {
  return g.k_rows == 1 && g.k_cols == 1 && g.stride_rows == 1 && g.stride_cols == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_rows == g.in_rows && g.out_cols == g.in_cols;
}

/// Calls f(row, kr, kc, input offset or -1 for padding) for the window of output position `row`
/// (n, r, c flattened), kr and kc in row-major order.
template <class F>
inline void for_each_tap(const WindowGeometry& g, std::int64_t row, F&& f) {
  const std::int64_t c = row % g.out_cols;
  const std::int64_t r = (row / g.out_cols) % g.out_rows;
  const std::int64_t n = row / (g.out_cols * g.out_rows);
  for (std::int64_t kr = 0; kr < g.k_rows; ++kr) {
    const std::int64_t ir = r * g.stride_rows - g.pad_top + kr * g.dil_rows;
    for (std::int64_t kc = 0; kc < g.k_cols; ++kc) {
      const std::int64_t ic = c * g.stride_cols - g.pad_left + kc * g.dil_cols;
      const bool inside = ir >= 0 && ir < g.in_rows && ic >= 0 && ic < g.in_cols;
      f(kr, kc, inside ? ((n * g.in_rows + ir) * g.in_cols + ic) * g.channels : std::int64_t{-1});
    }
  }
}

/// The taps of a window that fall inside the input along one axis: [begin, end) of the window's
/// indices, for the window starting at `start` (its first tap's coordinate, negative in padding).
struct TapRange {
  std::int64_t begin, end;
};
inline TapRange inside_taps(std::int64_t start, std::int64_t window, std::int64_t dilation, std::int64_t size) {
  const std::int64_t begin = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  const std::int64_t end = start >= size ? 0 : std::min(window, (size - 1 - start) / dilation + 1);
  return {begin, std::max(begin, end)};
}

/// Calls f(input offset) for the taps of output position `row`'s window that are inside the
/// input, in row-major order: a pool's window may be far larger than its input (SAME padding
/// with any ksize), so the taps in padding are never visited.
template <class F>
inline void for_each_inside_tap(const WindowGeometry& g, std::int64_t row, F&& f) {
  const std::int64_t c = row % g.out_cols;
  const std::int64_t r = (row / g.out_cols) % g.out_rows;
  const std::int64_t n = row / (g.out_cols * g.out_rows);
  const std::int64_t r0 = r * g.stride_rows - g.pad_top, c0 = c * g.stride_cols - g.pad_left;
  const TapRange rows = inside_taps(r0, g.k_rows, g.dil_rows, g.in_rows);
  const TapRange cols = inside_taps(c0, g.k_cols, g.dil_cols, g.in_cols);
  for (std::int64_t kr = rows.begin; kr < rows.end; ++kr)
    for (std::int64_t kc = cols.begin; kc < cols.end; ++kc)
      f(((n * g.in_rows + r0 + kr * g.dil_rows) * g.in_cols + c0 + kc * g.dil_cols) * g.channels);
}

/// The number of input positions in the window of output position `row`.
inline std::int64_t window_count(const WindowGeometry& g, std::int64_t row) {
  const std::int64_t c = row % g.out_cols;
  const std::int64_t r = (row / g.out_cols) % g.out_rows;
  const TapRange rows = inside_taps(r * g.stride_rows - g.pad_top, g.k_rows, g.dil_rows, g.in_rows);
  const TapRange cols = inside_taps(c * g.stride_cols - g.pad_left, g.k_cols, g.dil_cols, g.in_cols);
  return (rows.end - rows.begin) * (cols.end - cols.begin);
}

/// patches[i] = the window of output position first + i, for `rows` positions.
template <class T>
void im2col(const WindowGeometry& g, const T* input, std::int64_t first, std::int64_t rows, T* patches) {
  const std::int64_t depth = g.channels;
  const std::int64_t patch = g.k_rows * g.k_cols * depth;
  for (std::int64_t i = 0; i < rows; ++i) {
    T* out = patches + i * patch;
    for_each_tap(g, first + i, [&](std::int64_t kr, std::int64_t kc, std::int64_t at) {
      T* dst = out + (kr * g.k_cols + kc) * depth;
      if (at < 0) std::fill(dst, dst + depth, T{0});
      else std::copy(input + at, input + at + depth, dst);
    });
  }
}

/// input_grad[window of position first + i] += dpatches[i], for `rows` positions.
template <class T>
void col2im_add(const WindowGeometry& g, const T* dpatches, std::int64_t first, std::int64_t rows, T* input_grad) {
  const std::int64_t depth = g.channels;
  const std::int64_t patch = g.k_rows * g.k_cols * depth;
  for (std::int64_t i = 0; i < rows; ++i) {
    const T* in = dpatches + i * patch;
    for_each_tap(g, first + i, [&](std::int64_t kr, std::int64_t kc, std::int64_t at) {
      if (at < 0) return;
      const T* src = in + (kr * g.k_cols + kc) * depth;
      T* dst = input_grad + at;
      for (std::int64_t d = 0; d < depth; ++d) dst[d] += src[d];
    });
  }
}

/// Conv2D: out [positions, out_depth] = patches · filter, a slice at a time.
template <class T>
void conv2d(const WindowGeometry& g, const T* input, const T* filter, std::int64_t out_depth, T* out) {
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(false, false, positions, out_depth, patch, input, filter, out);
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  std::vector<T> patches(static_cast<std::size_t>(std::min(slice, positions) * patch));
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    im2col(g, input, first, rows, patches.data());
    gemm(false, false, rows, out_depth, patch, patches.data(), filter, out + first * out_depth);
  }
}

/// Conv2DBackpropInput. With strides of 1 it is a convolution of dy with the filter turned by
/// 180° and its depths swapped (dx[y] = Σ dy[y + pad' − k·d] · W[K−1−k], pad' = (K−1)·d − pad):
/// a product of the forward's shape, whose inner dimension is the long patch. Otherwise
/// dpatches = dy · filterᵀ (inner dimension out_depth), added back into the windows.
template <class T>
void conv2d_backprop_input(const WindowGeometry& g, const T* filter, const T* dy, std::int64_t out_depth, T* dx) {
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(false, true, positions, patch, out_depth, dy, filter, dx);
  if (g.stride_rows == 1 && g.stride_cols == 1) {
    std::vector<T> turned(static_cast<std::size_t>(patch * out_depth));
    for (std::int64_t kr = 0; kr < g.k_rows; ++kr)
      for (std::int64_t kc = 0; kc < g.k_cols; ++kc)
        for (std::int64_t i = 0; i < g.channels; ++i)
          for (std::int64_t o = 0; o < out_depth; ++o)
            turned[static_cast<std::size_t>(((kr * g.k_cols + kc) * out_depth + o) * g.channels + i)] =
                filter[((((g.k_rows - 1 - kr) * g.k_cols) + (g.k_cols - 1 - kc)) * g.channels + i) * out_depth + o];
    WindowGeometry t = g;  // over dy, making dx
    t.in_rows = g.out_rows;
    t.in_cols = g.out_cols;
    t.channels = out_depth;
    t.out_rows = g.in_rows;
    t.out_cols = g.in_cols;
    t.pad_top = (g.k_rows - 1) * g.dil_rows - g.pad_top;
    t.pad_left = (g.k_cols - 1) * g.dil_cols - g.pad_left;
    return conv2d(t, dy, turned.data(), g.channels, dx);
  }
  std::fill(dx, dx + g.batch * g.in_rows * g.in_cols * g.channels, T{0});
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  std::vector<T> dpatches(static_cast<std::size_t>(std::min(slice, positions) * patch));
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    gemm(false, true, rows, patch, out_depth, dy + first * out_depth, filter, dpatches.data());
    col2im_add(g, dpatches.data(), first, rows, dx);
  }
}

/// Conv2DBackpropFilter: dfilter = Σ patchesᵀ · dy over the slices.
template <class T>
void conv2d_backprop_filter(const WindowGeometry& g, const T* input, const T* dy, std::int64_t out_depth, T* dfilter) {
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(true, false, patch, out_depth, positions, input, dy, dfilter);
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  std::vector<T> patches(static_cast<std::size_t>(std::min(slice, positions) * patch));
  std::vector<T> partial(static_cast<std::size_t>(patch * out_depth));
  std::fill(dfilter, dfilter + patch * out_depth, T{0});
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    im2col(g, input, first, rows, patches.data());
    gemm(true, false, patch, out_depth, rows, patches.data(), dy + first * out_depth, partial.data());
    for (std::size_t i = 0; i < partial.size(); ++i) dfilter[i] += partial[i];
  }
}

/// A value's (outer, channels, inner) around its channel axis (the last, or 1).
inline std::array<std::int64_t, 3> around_channels(const Shape& s, bool channels_first) {
  const std::size_t axis = channels_first ? 1 : s.rank() - 1;
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= s[d];
  for (std::size_t d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  return {outer, s[axis], inner};
}

/// out[outer, channel, inner] = value + bias[channel].
template <class T>
void bias_add(const T* value, const T* bias, std::int64_t outer, std::int64_t channels, std::int64_t inner, T* out) {
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c) {
      const std::int64_t at = (o * channels + c) * inner;
      const T b = bias[c];
      for (std::int64_t i = 0; i < inner; ++i) out[at + i] = value[at + i] + b;
    }
}

/// grad[channel] = Σ dy[outer, channel, inner], accumulated in double as the reductions are.
template <class T>
void bias_add_grad(const T* dy, std::int64_t outer, std::int64_t channels, std::int64_t inner, T* grad) {
  std::vector<double> sums(static_cast<std::size_t>(channels), 0.0);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < channels; ++c) {
      const T* row = dy + (o * channels + c) * inner;
      double s = 0;
      for (std::int64_t i = 0; i < inner; ++i) s += static_cast<double>(row[i]);
      sums[static_cast<std::size_t>(c)] += s;
    }
  for (std::int64_t c = 0; c < channels; ++c) grad[c] = static_cast<T>(sums[static_cast<std::size_t>(c)]);
}

/// MaxPool, and with `argmax` (an input offset per output element) the position each maximum
/// came from: the first in the window's row-major order among equals, as TensorFlow's CPU kernel
/// (a NaN is never taken over a number already held).
template <class T>
void max_pool(const WindowGeometry& g, const T* input, T* out, std::int64_t* argmax = nullptr) {
  const std::int64_t depth = g.channels;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  backend::cpu::parallel_for(positions, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, depth)),
                             [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      T* o = out + row * depth;
      std::int64_t* a = argmax ? argmax + row * depth : nullptr;
      bool first = true;
      for_each_inside_tap(g, row, [&](std::int64_t at) {
        const T* in = input + at;
        for (std::int64_t d = 0; d < depth; ++d)
          if (first || o[d] < in[d]) {
            o[d] = in[d];
            if (a) a[d] = at + d;
          }
        first = false;
      });
      if (first) std::fill(o, o + depth, T{0});  // a window wholly in padding (never with TensorFlow's sizes)
    }
  });
}

/// MaxPoolGrad: dx[argmax of each window] += dy.
template <class T>
void max_pool_grad(const WindowGeometry& g, const T* input, const T* dy, T* dx) {
  const std::int64_t outputs = g.batch * g.out_rows * g.out_cols * g.channels;
  std::vector<T> pooled(static_cast<std::size_t>(outputs));
  std::vector<std::int64_t> argmax(static_cast<std::size_t>(outputs));
  max_pool(g, input, pooled.data(), argmax.data());
  std::fill(dx, dx + g.batch * g.in_rows * g.in_cols * g.channels, T{0});
  for (std::int64_t i = 0; i < outputs; ++i) dx[argmax[static_cast<std::size_t>(i)]] += dy[i];
}

/// AvgPool: each window's mean over its positions inside the input.
template <class T>
void avg_pool(const WindowGeometry& g, const T* input, T* out) {
  const std::int64_t depth = g.channels;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  backend::cpu::parallel_for(positions, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, depth)),
                             [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      T* o = out + row * depth;
      std::fill(o, o + depth, T{0});
      for_each_inside_tap(g, row, [&](std::int64_t at) {
        for (std::int64_t d = 0; d < depth; ++d) o[d] += input[at + d];
      });
      const T count = static_cast<T>(std::max<std::int64_t>(1, window_count(g, row)));
      for (std::int64_t d = 0; d < depth; ++d) o[d] /= count;
    }
  });
}

/// AvgPoolGrad: each window's gradient shared equally among its positions.
template <class T>
void avg_pool_grad(const WindowGeometry& g, const T* dy, T* dx) {
  const std::int64_t depth = g.channels;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  std::fill(dx, dx + g.batch * g.in_rows * g.in_cols * depth, T{0});
  for (std::int64_t row = 0; row < positions; ++row) {
    const T count = static_cast<T>(window_count(g, row));
    const T* d_out = dy + row * depth;
    for_each_inside_tap(g, row, [&](std::int64_t at) {
      for (std::int64_t d = 0; d < depth; ++d) dx[at + d] += d_out[d] / count;
    });
  }
}

}  // namespace devtensor::ops::cpu
