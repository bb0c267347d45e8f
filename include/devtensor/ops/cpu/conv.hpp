#pragma once
/// @file conv.hpp
/// @brief CPU convolution and pooling over NHWC buffers: im2col + GEMM for Conv2D and its two
/// backprops (Note [im2col in slices]), direct loops for the pools and the bias.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "devtensor/backend/cpu/parallel.hpp"
#include "devtensor/ops/conv_ops.hpp"
#include "devtensor/ops/cpu/convolution_engine.hpp"
#include "devtensor/ops/cpu/matmul.hpp"
#include "devtensor/ops/window_elements.hpp"
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

/// A work buffer of n elements, left uninitialised (every element is written before it is read;
/// a zero-filled vector's memset was 8 % of a small convolutional network's training step).
template <class T>
std::unique_ptr<T[]> scratch(std::int64_t n) {
  return std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(n));
}

/// Rows of the patch matrix per slice: about 1 MiB of patches, at least one row.
template <class T>
std::int64_t im2col_slice_rows(std::int64_t patch_size) {
  return std::max<std::int64_t>(
      1, (std::int64_t{1} << 20) / static_cast<std::int64_t>(sizeof(T)) / std::max<std::int64_t>(1, patch_size));
}

using window::is_pointwise;  // the input is the patch matrix

// The inner loops over a position's channels, vectorised (DEVTENSOR_VECTORIZE: GCC at -O2 does
// not vectorise loops of a runtime length otherwise; each ran 3-5x slower).
/// out[d] += in[d].
template <class T>
DEVTENSOR_VECTORIZE void add_into(T* __restrict out, const T* __restrict in, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) out[d] += in[d];
}
/// out[d] = max(out[d], in[d]), keeping out[d] unless in[d] is larger (a NaN never replaces).
template <class T>
DEVTENSOR_VECTORIZE void max_into(T* __restrict out, const T* __restrict in, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) out[d] = out[d] < in[d] ? in[d] : out[d];
}
/// out[d] += in[d] / divisor.
template <class T>
DEVTENSOR_VECTORIZE void add_divided_into(T* __restrict out, const T* __restrict in, T divisor, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) out[d] += in[d] / divisor;
}
/// out[d] = a[d] + b[d].
template <class T>
DEVTENSOR_VECTORIZE void add_rows(T* __restrict out, const T* __restrict a, const T* __restrict b, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) out[d] = a[d] + b[d];
}
/// sum[d] += in[d], in double.
template <class T>
DEVTENSOR_VECTORIZE void accumulate_into(double* __restrict sum, const T* __restrict in, std::int64_t n) {
  for (std::int64_t d = 0; d < n; ++d) sum[d] += static_cast<double>(in[d]);
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

/// dst[0, n) = src[0, n): a plain loop for the few channels of a first layer (a memmove call per
/// tap cost more than the copy), memmove beyond.
template <class T>
inline void copy_channels(T* __restrict dst, const T* __restrict src, std::int64_t n) {
  if (n < 16)
    for (std::int64_t d = 0; d < n; ++d) dst[d] = src[d];
  else
    std::copy(src, src + n, dst);
}

/// patches[i] = the window of output position first + i, for `rows` positions: a window row at a
/// time, one copy when it lies wholly inside the input with undilated columns.
template <class T>
void im2col(const WindowGeometry& g, const T* input, std::int64_t first, std::int64_t rows, T* patches) {
  const std::int64_t depth = g.channels;
  const std::int64_t row_span = g.k_cols * depth;  // one window row in the patch
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t position = first + i;
    const std::int64_t c = position % g.out_cols;
    const std::int64_t r = (position / g.out_cols) % g.out_rows;
    const std::int64_t n = position / (g.out_cols * g.out_rows);
    const std::int64_t c0 = c * g.stride_cols - g.pad_left;
    const bool columns_inside = c0 >= 0 && c0 + (g.k_cols - 1) * g.dil_cols < g.in_cols;
    T* out = patches + i * g.k_rows * row_span;
    for (std::int64_t kr = 0; kr < g.k_rows; ++kr, out += row_span) {
      const std::int64_t ir = r * g.stride_rows - g.pad_top + kr * g.dil_rows;
      if (ir < 0 || ir >= g.in_rows) {
        std::fill(out, out + row_span, T{0});
        continue;
      }
      const T* in_row = input + (n * g.in_rows + ir) * g.in_cols * depth;
      if (columns_inside && g.dil_cols == 1) {
        copy_channels(out, in_row + c0 * depth, row_span);
        continue;
      }
      for (std::int64_t kc = 0; kc < g.k_cols; ++kc) {
        const std::int64_t ic = c0 + kc * g.dil_cols;
        T* dst = out + kc * depth;
        if (ic < 0 || ic >= g.in_cols)
          std::fill(dst, dst + depth, T{0});
        else
          copy_channels(dst, in_row + ic * depth, depth);
      }
    }
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
      add_into(input_grad + at, in + (kr * g.k_cols + kc) * depth, depth);
    });
  }
}

/// The threads a convolution engine runs on: the intra-op setting (as the kernels' pool).
inline int engine_threads() { return static_cast<int>(backend::cpu::ThreadPool::configured_threads()); }

/// Conv2D's own body: im2col and CBLAS.
template <class T>
void conv2d_im2col(const WindowGeometry& g, const T* input, const T* filter, std::int64_t out_depth, T* out) {
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(false, false, positions, out_depth, patch, input, filter, out);
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  const auto patches = scratch<T>(std::min(slice, positions) * patch);
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    im2col(g, input, first, rows, patches.get());
    gemm(false, false, rows, out_depth, patch, patches.get(), filter, out + first * out_depth);
  }
}

/// Conv2D: out [positions, out_depth] = patches · filter, a slice at a time (float32 through the
/// convolution engine when one is linked and takes it: Note [A convolution engine]).
template <class T>
void conv2d(const WindowGeometry& g, const T* input, const T* filter, std::int64_t out_depth, T* out) {
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine && engine->forward(g, input, filter, out_depth, out, engine_threads()))
      return;
  conv2d_im2col(g, input, filter, out_depth, out);
}

/// Conv2DBackpropInput. With strides of 1 it is the turned forward convolution (Note [The turned
/// convolution] in ops/cpu/convolution_engine.hpp): batch 32 of 32x32x64, 3x3 to 64, 27.7 ms
/// against 33 ms. Otherwise, and for inputs of few channels, whose turned product has a column or
/// so (a first layer's 1 channel: 2.4 ms against 2.1 ms; the crossing between 1 and 64 channels was
/// not measured), dpatches = dy · filterᵀ (inner dimension out_depth), added back into the windows.
template <class T>
void conv2d_backprop_input(const WindowGeometry& g, const T* filter, const T* dy, std::int64_t out_depth, T* dx) {
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine && engine->backprop_input(g, filter, dy, out_depth, dx, engine_threads()))
      return;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(false, true, positions, patch, out_depth, dy, filter, dx);
  if (g.stride_rows == 1 && g.stride_cols == 1 && g.channels >= 16) {
    const auto turned = scratch<T>(patch * out_depth);
    turn_filter(g, filter, out_depth, turned.get());
    return conv2d_im2col(turned_geometry(g, out_depth), dy, turned.get(), g.channels, dx);
  }
  std::fill(dx, dx + g.batch * g.in_rows * g.in_cols * g.channels, T{0});
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  const auto dpatches = scratch<T>(std::min(slice, positions) * patch);
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    gemm(false, true, rows, patch, out_depth, dy + first * out_depth, filter, dpatches.get());
    col2im_add(g, dpatches.get(), first, rows, dx);
  }
}

/// Conv2DBackpropFilter: dfilter = Σ patchesᵀ · dy over the slices.
template <class T>
void conv2d_backprop_filter(const WindowGeometry& g, const T* input, const T* dy, std::int64_t out_depth, T* dfilter) {
  if constexpr (std::is_same_v<T, float>)
    if (const ConvolutionEngine* engine = convolution_engine();
        engine && engine->backprop_filter(g, input, dy, out_depth, dfilter, engine_threads()))
      return;
  const std::int64_t positions = g.batch * g.out_rows * g.out_cols;
  const std::int64_t patch = g.k_rows * g.k_cols * g.channels;
  if (is_pointwise(g)) return gemm(true, false, patch, out_depth, positions, input, dy, dfilter);
  const std::int64_t slice = im2col_slice_rows<T>(patch);
  const auto patches = scratch<T>(std::min(slice, positions) * patch);
  const auto partial = scratch<T>(patch * out_depth);
  std::fill(dfilter, dfilter + patch * out_depth, T{0});
  for (std::int64_t first = 0; first < positions; first += slice) {
    const std::int64_t rows = std::min(slice, positions - first);
    im2col(g, input, first, rows, patches.get());
    gemm(true, false, patch, out_depth, rows, patches.get(), dy + first * out_depth, partial.get());
    add_into(dfilter, partial.get(), patch * out_depth);
  }
}

using window::around_channels;

/// out[outer, channel, inner] = value + bias[channel].
template <class T>
void bias_add(const T* value, const T* bias, std::int64_t outer, std::int64_t channels, std::int64_t inner, T* out) {
  if (inner == 1) {  // channels last: each row adds the bias vector
    for (std::int64_t o = 0; o < outer; ++o) {
      add_rows(out + o * channels, value + o * channels, bias, channels);
    }
    return;
  }
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
  double* __restrict sum = sums.data();
  if (inner == 1) {  // channels last: rows added into the sums
    for (std::int64_t o = 0; o < outer; ++o) accumulate_into(sum, dy + o * channels, channels);
  } else {
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t c = 0; c < channels; ++c) {
        const T* row = dy + (o * channels + c) * inner;
        double s = 0;
        for (std::int64_t i = 0; i < inner; ++i) s += static_cast<double>(row[i]);
        sum[c] += s;
      }
  }
  for (std::int64_t c = 0; c < channels; ++c) grad[c] = static_cast<T>(sum[c]);
}

/// Calls f(row, out + row·depth) for every output position of the pool, in parallel.
template <class T, class F>
void for_each_output(const WindowGeometry& g, T* out, F&& f) {
  const std::int64_t depth = g.channels;
  backend::cpu::parallel_for(g.batch * g.out_rows * g.out_cols,
                             std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(1, depth)),
                             [&](std::int64_t begin, std::int64_t end) {
                               for (std::int64_t row = begin; row < end; ++row) f(row, out + row * depth);
                             });
}

/// A pool's gradient: f(first, last) for ranges of whole images' output positions, each range's
/// dx zeroed first unless `zero_first` is false (f then writes every input position); f adds each
/// position's gradient into the input positions of its window. Windows of different images never
/// overlap, so the ranges run in parallel.
template <class T, class F>
void for_each_image_range(const WindowGeometry& g, T* dx, F&& f, bool zero_first = true) {
  const std::int64_t per_image = g.out_rows * g.out_cols;
  const std::int64_t image_size = g.in_rows * g.in_cols * g.channels;
  backend::cpu::parallel_for(g.batch, 1, [&](std::int64_t begin, std::int64_t end) {
    if (zero_first) std::fill(dx + begin * image_size, dx + end * image_size, T{0});
    f(begin * per_image, end * per_image);
  });
}

/// True when no input position is in two windows (a stride at least the window, undilated): each
/// position's gradient then comes from one window, written rather than added.
inline bool windows_are_disjoint(const WindowGeometry& g) {
  return g.dil_rows == 1 && g.dil_cols == 1 && g.stride_rows >= g.k_rows && g.stride_cols >= g.k_cols;
}

/// The most taps of a window inside the input.
inline std::int64_t max_inside_taps(const WindowGeometry& g) {
  return std::min(g.k_rows, g.in_rows) * std::min(g.k_cols, g.in_cols);
}

/// True when the windows are disjoint and cover every input position (a 2x2 pool with stride 2
/// over an even input, VALID): nothing of dx is left to zero.
inline bool windows_tile_the_input(const WindowGeometry& g) {
  return windows_are_disjoint(g) && g.stride_rows == g.k_rows && g.stride_cols == g.k_cols && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_rows * g.k_rows == g.in_rows && g.out_cols * g.k_cols == g.in_cols;
}

/// MaxPool: each window's maximum over its positions inside the input (a NaN is never taken over
/// a number already held, as TensorFlow's CPU kernel).
template <class T>
void max_pool(const WindowGeometry& g, const T* input, T* out) {
  const std::int64_t depth = g.channels;
  for_each_output(g, out, [&](std::int64_t row, T* o) {
    bool first = true;
    for_each_inside_tap(g, row, [&](std::int64_t at) {
      const T* in = input + at;
      if (first) {
        std::copy(in, in + depth, o);
        first = false;
        return;
      }
      max_into(o, in, depth);
    });
    if (first) std::fill(o, o + depth, T{0});  // a window wholly in padding (never with TensorFlow's sizes)
  });
}

/// best[d] = in[d] and where[d] = at + d where in[d] is larger: branch-free over restrict
/// pointers, so that it vectorises.
template <class T>
DEVTENSOR_VECTORIZE inline void take_larger(const T* __restrict in, std::int64_t at, T* __restrict best,
                                            std::int64_t* __restrict where, std::int64_t depth) {
  for (std::int64_t d = 0; d < depth; ++d) {
    const bool better = best[d] < in[d];
    best[d] = better ? in[d] : best[d];
    where[d] = better ? at + d : where[d];
  }
}

/// best[d] = in[d] and winner[d] = tap where in[d] is larger: the window's tap number instead of an
/// input offset, 32 bits wide as the values are, so that it vectorises as one mask.
template <class T>
DEVTENSOR_VECTORIZE inline void take_larger_tap(const T* __restrict in, std::int32_t tap, T* __restrict best,
                                                std::int32_t* __restrict winner, std::int64_t depth) {
  for (std::int64_t d = 0; d < depth; ++d) {
    const bool better = best[d] < in[d];
    best[d] = better ? in[d] : best[d];
    winner[d] = better ? tap : winner[d];
  }
}

/// dx[d] = dy[d] where tap won channel d, else 0.
template <class T>
DEVTENSOR_VECTORIZE inline void route_to_tap(T* __restrict dx, const T* __restrict dy,
                                             const std::int32_t* __restrict winner, std::int32_t tap,
                                             std::int64_t depth) {
  for (std::int64_t d = 0; d < depth; ++d) dx[d] = winner[d] == tap ? dy[d] : T{0};
}

/// MaxPoolGrad over disjoint windows (Note [MaxPoolGrad over disjoint windows]).
template <class T>
void max_pool_grad_disjoint(const WindowGeometry& g, const T* input, const T* dy, T* dx) {
  const std::int64_t depth = g.channels;
  for_each_image_range(
      g, dx,
      [&](std::int64_t first_row, std::int64_t last_row) {
        std::vector<T> best_values(static_cast<std::size_t>(depth));
        std::vector<std::int32_t> winner_values(static_cast<std::size_t>(depth));
        std::vector<std::int64_t> taps(static_cast<std::size_t>(max_inside_taps(g)));
        T* best = best_values.data();
        std::int32_t* winner = winner_values.data();
        for (std::int64_t row = first_row; row < last_row; ++row) {
          std::int32_t count = 0;
          for_each_inside_tap(g, row, [&](std::int64_t at) { taps[static_cast<std::size_t>(count++)] = at; });
          if (count == 0) continue;
          std::copy(input + taps[0], input + taps[0] + depth, best);
          std::fill(winner, winner + depth, 0);
          for (std::int32_t t = 1; t < count; ++t)
            take_larger_tap(input + taps[static_cast<std::size_t>(t)], t, best, winner, depth);
          for (std::int32_t t = 0; t < count; ++t)
            route_to_tap(dx + taps[static_cast<std::size_t>(t)], dy + row * depth, winner, t, depth);
        }
      },
      !windows_tile_the_input(g));
}

// Note [MaxPoolGrad over disjoint windows]
// The general body finds each window's maximum as an input offset per channel (64-bit, two
// vectors per vector of values) and adds the gradient there one channel at a time: 18 % of the
// tutorial model's training step for its 2x2 pool. Where no input position is in two windows —
// every pool whose stride is its window, Keras's MaxPooling2D default — each window's taps are
// numbered, the winning tap per channel is found as a 32-bit mask-friendly number, and each tap's
// gradient row is written whole (the winner's dy, else 0), vectorised; dx is not zeroed first when
// the windows tile the input. The first maximum in row-major order among equals wins in both.

/// MaxPoolGrad: each window's gradient goes to its maximum, the first in the window's row-major
/// order among equals (TensorFlow's CPU kernel).
template <class T>
void max_pool_grad(const WindowGeometry& g, const T* input, const T* dy, T* dx) {
  if (windows_are_disjoint(g) && max_inside_taps(g) <= std::numeric_limits<std::int32_t>::max())
    return max_pool_grad_disjoint(g, input, dy, dx);
  const std::int64_t depth = g.channels;
  for_each_image_range(g, dx, [&](std::int64_t first_row, std::int64_t last_row) {
    std::vector<T> best_values(static_cast<std::size_t>(depth));
    std::vector<std::int64_t> where_values(static_cast<std::size_t>(depth));
    T* best = best_values.data();
    std::int64_t* where = where_values.data();
    for (std::int64_t row = first_row; row < last_row; ++row) {
      bool first = true;
      for_each_inside_tap(g, row, [&](std::int64_t at) {
        const T* in = input + at;
        if (first) {
          for (std::int64_t d = 0; d < depth; ++d) best[d] = in[d], where[d] = at + d;
          first = false;
          return;
        }
        take_larger(in, at, best, where, depth);
      });
      if (first) continue;
      const T* d_out = dy + row * depth;
      for (std::int64_t d = 0; d < depth; ++d) dx[where[d]] += d_out[d];
    }
  });
}

/// AvgPool: each window's mean over its positions inside the input.
template <class T>
void avg_pool(const WindowGeometry& g, const T* input, T* out) {
  const std::int64_t depth = g.channels;
  for_each_output(g, out, [&](std::int64_t row, T* o) {
    std::fill(o, o + depth, T{0});
    for_each_inside_tap(g, row, [&](std::int64_t at) { add_into(o, input + at, depth); });
    const T count = static_cast<T>(std::max<std::int64_t>(1, window_count(g, row)));
    for (std::int64_t d = 0; d < depth; ++d) o[d] /= count;
  });
}

/// AvgPoolGrad: each window's gradient shared equally among its positions.
template <class T>
void avg_pool_grad(const WindowGeometry& g, const T* dy, T* dx) {
  const std::int64_t depth = g.channels;
  for_each_image_range(g, dx, [&](std::int64_t first_row, std::int64_t last_row) {
    for (std::int64_t row = first_row; row < last_row; ++row) {
      const T count = static_cast<T>(std::max<std::int64_t>(1, window_count(g, row)));
      const T* d_out = dy + row * depth;
      for_each_inside_tap(g, row, [&](std::int64_t at) { add_divided_into(dx + at, d_out, count, depth); });
    }
  });
}

}  // namespace devtensor::ops::cpu
