#pragma once
/// @file window_elements.hpp
/// @brief The windowed ops element by element: each element of a patch matrix, of an input's
/// gradient, of a pool or of a pool's gradient as a function of its index. The GPU bodies
/// (ops/cuda/conv.cuh) run one thread per element of these; the host compiles the same functions,
/// so tests check them against the CPU bodies without a GPU (Note [Windows element by element]).

#include <array>
#include <cstdint>
#include <type_traits>

#include "devtensor/config.hpp"
#include "devtensor/core/half.hpp"
#include "devtensor/ops/conv_ops.hpp"

namespace devtensor::ops::window {

// Note [Windows element by element]
// The CPU bodies walk windows and scatter (col2im adds each patch back into its window; a pool's
// gradient adds into its window's maximum). On a GPU a scatter needs atomics, whose order changes
// from run to run. Here every element gathers instead: an input position finds the windows that
// read it (the taps kr with (r + pad − kr·dilation) a multiple of the stride) and adds what each
// sends it, windows in the output's row-major order — the order the CPU bodies add in, so sums
// round alike. Deterministic, no atomics, no zeroing pass.

/// What a window's sum accumulates in: float for the 16-bit floats (rounded once at the end, as
/// the CPU bodies' float run: Note [Sixteen-bit bodies in float] in ops/cpu/in_float.hpp), else T.
template <class T>
using WindowSum = std::conditional_t<is_sixteen_bit_float_v<T>, float, T>;

/// An element's position in an NHWC tensor of `rows` x `cols` x `depth` per image.
struct Position {
  std::int64_t n, r, c, d;
};
DEVTENSOR_HOST_DEVICE inline Position position_of(std::int64_t e, std::int64_t rows, std::int64_t cols,
                                                  std::int64_t depth) {
  Position p{};
  p.d = e % depth;
  e /= depth;
  p.c = e % cols;
  e /= cols;
  p.r = e % rows;
  p.n = e / rows;
  return p;
}

/// The windows along one axis that read input coordinate `x`: output coordinates `first`, `first +
/// 1`, … `last` − 1 hold it at taps `tap_of(o)`; empty when none.
struct AxisReaders {
  std::int64_t x, pad, stride, dilation, window, out;
  /// The tap of output coordinate o's window that reads x, or -1.
  [[nodiscard]] DEVTENSOR_HOST_DEVICE std::int64_t tap_of(std::int64_t o) const {
    const std::int64_t offset = x + pad - o * stride;  // = tap · dilation when o's window reads x
    if (offset < 0 || offset % dilation != 0) return -1;
    const std::int64_t tap = offset / dilation;
    return tap < window ? tap : -1;
  }
  /// The output coordinates whose windows may read x: [first, last).
  [[nodiscard]] DEVTENSOR_HOST_DEVICE std::int64_t first() const {
    const std::int64_t reach = x + pad - (window - 1) * dilation;  // the last tap at x
    const std::int64_t o = reach <= 0 ? 0 : (reach + stride - 1) / stride;
    return o;
  }
  [[nodiscard]] DEVTENSOR_HOST_DEVICE std::int64_t last() const {
    const std::int64_t o = (x + pad) / stride + 1;  // the first tap at x
    return o < out ? o : out;
  }
};
DEVTENSOR_HOST_DEVICE inline AxisReaders row_readers(const WindowGeometry& g, std::int64_t r) {
  return {r, g.pad_top, g.stride_rows, g.dil_rows, g.k_rows, g.out_rows};
}
DEVTENSOR_HOST_DEVICE inline AxisReaders col_readers(const WindowGeometry& g, std::int64_t c) {
  return {c, g.pad_left, g.stride_cols, g.dil_cols, g.k_cols, g.out_cols};
}

/// Calls f(orow, ocol, kr, kc) for every window tap (kr, kc) that reads input position (r, c), the
/// windows (orow, ocol) in the output's row-major order: the order the CPU bodies add in.
template <class F>
DEVTENSOR_HOST_DEVICE void for_each_reader(const WindowGeometry& g, std::int64_t r, std::int64_t c, F&& f) {
  const AxisReaders rows = row_readers(g, r);
  const AxisReaders cols = col_readers(g, c);
  const std::int64_t row_first = rows.first(), row_last = rows.last();
  const std::int64_t col_first = cols.first(), col_last = cols.last();
  for (std::int64_t orow = row_first; orow < row_last; ++orow) {
    const std::int64_t kr = rows.tap_of(orow);
    if (kr < 0) continue;
    for (std::int64_t ocol = col_first; ocol < col_last; ++ocol) {
      const std::int64_t kc = cols.tap_of(ocol);
      if (kc >= 0) f(orow, ocol, kr, kc);
    }
  }
}

/// True when the window is the identity on positions (1x1, stride 1, no padding): the input is the
/// patch matrix.
DEVTENSOR_HOST_DEVICE inline bool is_pointwise(const WindowGeometry& g) {
  return g.k_rows == 1 && g.k_cols == 1 && g.stride_rows == 1 && g.stride_cols == 1 && g.pad_top == 0 &&
         g.pad_left == 0 && g.out_rows == g.in_rows && g.out_cols == g.in_cols;
}

/// The patch length of a convolution: k_rows · k_cols · channels (a patch matrix's row).
DEVTENSOR_HOST_DEVICE inline std::int64_t patch_size(const WindowGeometry& g) {
  return g.k_rows * g.k_cols * g.channels;
}

/// Element e of the patch matrix [images · out_rows · out_cols, patch_size] of `input` (the first
/// of those images): the input value under tap (kr, kc) of the window, channel d; 0 in padding.
template <class T>
DEVTENSOR_HOST_DEVICE T patch_value(const WindowGeometry& g, const T* input, std::int64_t e) {
  const std::int64_t k = e % patch_size(g);
  const std::int64_t position = e / patch_size(g);
  const std::int64_t d = k % g.channels;
  const std::int64_t kc = (k / g.channels) % g.k_cols;
  const std::int64_t kr = k / (g.channels * g.k_cols);
  const std::int64_t c = position % g.out_cols;
  const std::int64_t r = (position / g.out_cols) % g.out_rows;
  const std::int64_t n = position / (g.out_cols * g.out_rows);
  const std::int64_t ir = r * g.stride_rows - g.pad_top + kr * g.dil_rows;
  const std::int64_t ic = c * g.stride_cols - g.pad_left + kc * g.dil_cols;
  if (ir < 0 || ir >= g.in_rows || ic < 0 || ic >= g.in_cols) return T{0};
  return input[((n * g.in_rows + ir) * g.in_cols + ic) * g.channels + d];
}

/// Element e of an input's gradient (NHWC, images from the first of `dpatches`): the sum of the
/// patch-matrix gradients of every window tap that read it (col2im as a gather).
template <class T>
DEVTENSOR_HOST_DEVICE T gathered_patch_gradient(const WindowGeometry& g, const T* dpatches, std::int64_t e) {
  const Position p = position_of(e, g.in_rows, g.in_cols, g.channels);
  WindowSum<T> sum{0};
  for_each_reader(g, p.r, p.c, [&](std::int64_t orow, std::int64_t ocol, std::int64_t kr, std::int64_t kc) {
    const std::int64_t position = (p.n * g.out_rows + orow) * g.out_cols + ocol;
    sum += static_cast<WindowSum<T>>(dpatches[position * patch_size(g) + (kr * g.k_cols + kc) * g.channels + p.d]);
  });
  return static_cast<T>(sum);
}

/// The taps of output position (orow, ocol)'s window inside the input, per axis: [begin, end).
struct InsideTaps {
  std::int64_t row_begin, row_end, col_begin, col_end, r0, c0;
};
DEVTENSOR_HOST_DEVICE inline std::int64_t first_inside_tap(std::int64_t start, std::int64_t dilation) {
  return start >= 0 ? 0 : (-start + dilation - 1) / dilation;
}
DEVTENSOR_HOST_DEVICE inline std::int64_t end_inside_tap(std::int64_t start, std::int64_t window, std::int64_t dilation,
                                                         std::int64_t size) {
  if (start >= size) return 0;
  const std::int64_t end = (size - 1 - start) / dilation + 1;
  return end < window ? end : window;
}
DEVTENSOR_HOST_DEVICE inline InsideTaps inside_taps(const WindowGeometry& g, std::int64_t orow, std::int64_t ocol) {
  InsideTaps t{};
  t.r0 = orow * g.stride_rows - g.pad_top;
  t.c0 = ocol * g.stride_cols - g.pad_left;
  t.row_begin = first_inside_tap(t.r0, g.dil_rows);
  t.row_end = end_inside_tap(t.r0, g.k_rows, g.dil_rows, g.in_rows);
  t.col_begin = first_inside_tap(t.c0, g.dil_cols);
  t.col_end = end_inside_tap(t.c0, g.k_cols, g.dil_cols, g.in_cols);
  return t;
}

/// The input offset (NHWC, channel d) of the first maximum of output position (n, orow, ocol)'s
/// window in row-major order (a NaN never replaces a number held), or -1 for a window wholly in
/// padding.
template <class T>
DEVTENSOR_HOST_DEVICE std::int64_t window_argmax(const WindowGeometry& g, const T* input, std::int64_t n,
                                                 std::int64_t orow, std::int64_t ocol, std::int64_t d) {
  const InsideTaps t = inside_taps(g, orow, ocol);
  std::int64_t where = -1;
  T best{0};
  for (std::int64_t kr = t.row_begin; kr < t.row_end; ++kr)
    for (std::int64_t kc = t.col_begin; kc < t.col_end; ++kc) {
      const std::int64_t at =
          ((n * g.in_rows + t.r0 + kr * g.dil_rows) * g.in_cols + t.c0 + kc * g.dil_cols) * g.channels + d;
      if (where < 0 || best < input[at]) {
        best = input[at];
        where = at;
      }
    }
  return where;
}

/// Element e of MaxPool's output (NHWC over the pooled sizes): its window's maximum; 0 for a
/// window wholly in padding, as the CPU body.
template <class T>
DEVTENSOR_HOST_DEVICE T pooled_max(const WindowGeometry& g, const T* input, std::int64_t e) {
  const Position p = position_of(e, g.out_rows, g.out_cols, g.channels);
  const std::int64_t at = window_argmax(g, input, p.n, p.r, p.c, p.d);
  return at < 0 ? T{0} : input[at];
}

/// The number of input positions in output position (orow, ocol)'s window.
DEVTENSOR_HOST_DEVICE inline std::int64_t inside_count(const WindowGeometry& g, std::int64_t orow, std::int64_t ocol) {
  const InsideTaps t = inside_taps(g, orow, ocol);
  const std::int64_t rows = t.row_end > t.row_begin ? t.row_end - t.row_begin : 0;
  const std::int64_t cols = t.col_end > t.col_begin ? t.col_end - t.col_begin : 0;
  return rows * cols;
}

/// Element e of AvgPool's output: its window's mean over the positions inside the input, summed
/// in row-major order as the CPU body.
template <class T>
DEVTENSOR_HOST_DEVICE T pooled_mean(const WindowGeometry& g, const T* input, std::int64_t e) {
  const Position p = position_of(e, g.out_rows, g.out_cols, g.channels);
  const InsideTaps t = inside_taps(g, p.r, p.c);
  using S = WindowSum<T>;
  S sum{0};
  for (std::int64_t kr = t.row_begin; kr < t.row_end; ++kr)
    for (std::int64_t kc = t.col_begin; kc < t.col_end; ++kc)
      sum += static_cast<S>(
          input[((p.n * g.in_rows + t.r0 + kr * g.dil_rows) * g.in_cols + t.c0 + kc * g.dil_cols) * g.channels + p.d]);
  const std::int64_t count = inside_count(g, p.r, p.c);
  return static_cast<T>(sum / static_cast<S>(count > 0 ? count : 1));
}

/// Element e of MaxPoolGrad's output (the input's shape): the gradients of the windows whose first
/// maximum it is, summed in the windows' row-major order.
template <class T>
DEVTENSOR_HOST_DEVICE T gathered_max_gradient(const WindowGeometry& g, const T* input, const T* dy, std::int64_t e) {
  const Position p = position_of(e, g.in_rows, g.in_cols, g.channels);
  WindowSum<T> sum{0};
  for_each_reader(g, p.r, p.c, [&](std::int64_t orow, std::int64_t ocol, std::int64_t, std::int64_t) {
    if (window_argmax(g, input, p.n, orow, ocol, p.d) == e)
      sum += static_cast<WindowSum<T>>(dy[((p.n * g.out_rows + orow) * g.out_cols + ocol) * g.channels + p.d]);
  });
  return static_cast<T>(sum);
}

/// Element e of AvgPoolGrad's output: each window's gradient divided among its inside positions,
/// summed in the windows' row-major order.
template <class T>
DEVTENSOR_HOST_DEVICE T gathered_mean_gradient(const WindowGeometry& g, const T* dy, std::int64_t e) {
  const Position p = position_of(e, g.in_rows, g.in_cols, g.channels);
  using S = WindowSum<T>;
  S sum{0};
  for_each_reader(g, p.r, p.c, [&](std::int64_t orow, std::int64_t ocol, std::int64_t, std::int64_t) {
    const std::int64_t count = inside_count(g, orow, ocol);
    sum += static_cast<S>(dy[((p.n * g.out_rows + orow) * g.out_cols + ocol) * g.channels + p.d]) /
           static_cast<S>(count > 0 ? count : 1);
  });
  return static_cast<T>(sum);
}

/// A value's (outer, channels, inner) around its channel axis (the last, or 1): BiasAdd's view.
inline std::array<std::int64_t, 3> around_channels(const Shape& s, bool channels_first) {
  const std::size_t axis = channels_first ? 1 : s.rank() - 1;
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < axis; ++d) outer *= s[d];
  for (std::size_t d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  return {outer, s[axis], inner};
}

/// Element e of BiasAdd's output over [outer, channels, inner].
template <class T>
DEVTENSOR_HOST_DEVICE T biased(const T* value, const T* bias, std::int64_t channels, std::int64_t inner,
                               std::int64_t e) {
  return value[e] + bias[(e / inner) % channels];
}

}  // namespace devtensor::ops::window
