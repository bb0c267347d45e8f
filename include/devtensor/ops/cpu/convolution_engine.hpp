#pragma once
/// @file convolution_engine.hpp
/// @brief Where a faster body for float32 convolutions on CPUs plugs in: the onednn component
/// (src/devtensor_onednn.cpp) installs one when a program links it (Note [A convolution engine]).

#include <atomic>
#include <cstdint>
#include <string_view>

#include "devtensor/config.hpp"
#include "devtensor/core/onednn_options.hpp"
#include "devtensor/ops/conv_ops.hpp"

namespace devtensor::ops::cpu {

// Note [A convolution engine]
// Conv2D and its two backprops have one CPU body in the header-only library, im2col + CBLAS
// (ops/cpu/conv.hpp). oneDNN's JIT convolutions read NHWC in place and beat it (the case:
// 67 against 83 ms, benchmarks/RESULTS.md), but oneDNN is a compiled library with its own
// headers: it must not reach a program that did not ask for it. So the faster body is a table of
// three functions the onednn component's object fills at static initialisation, which the CPU
// bodies look up at each call (one acquire load) and fall back from: a null table (the component
// not linked, or config::experimental::enable_onednn_opts(false) / TF_ENABLE_ONEDNN_OPTS=0), or a
// function that returns false (a geometry or element type the engine does not take).

/// Float32 NHWC convolutions over HWIO filters; the arguments are the CPU bodies', and `threads`
/// the intra-op setting the engine runs on. Each returns true when it wrote its output, false when
/// it declined (nothing written that matters: the caller's body writes the whole output).
struct ConvolutionEngine {
  std::string_view name;
  bool (*forward)(const WindowGeometry& g, const float* input, const float* filter, std::int64_t out_depth, float* out,
                  int threads);
  bool (*backprop_input)(const WindowGeometry& g, const float* filter, const float* dy, std::int64_t out_depth,
                         float* dx, int threads);
  bool (*backprop_filter)(const WindowGeometry& g, const float* input, const float* dy, std::int64_t out_depth,
                          float* dfilter, int threads);
  /// How many convolutions the engine has run (not declined) in this process: for tests and logs.
  std::int64_t (*runs)();
};

// Note [The turned convolution]
// With strides of 1, Conv2DBackpropInput is a forward convolution of dy with the filter turned by
// 180° and its depths swapped: dx[y] = Σ dy[y + pad' − k·d] · W[K−1−k], pad' = (K−1)·d − pad. A
// product of the forward's shape, whose inner dimension is the long patch; both the im2col body
// and the oneDNN engine run it so.

/// The turned convolution's geometry: over dy (out_depth channels), making dx.
inline WindowGeometry turned_geometry(const WindowGeometry& g, std::int64_t out_depth) {
  WindowGeometry t = g;
  t.in_rows = g.out_rows;
  t.in_cols = g.out_cols;
  t.channels = out_depth;
  t.out_rows = g.in_rows;
  t.out_cols = g.in_cols;
  t.pad_top = (g.k_rows - 1) * g.dil_rows - g.pad_top;
  t.pad_left = (g.k_cols - 1) * g.dil_cols - g.pad_left;
  return t;
}

/// The turned filter (HWIO of the turned convolution): turned[kr][kc][o][i] =
/// filter[K−1−kr][K−1−kc][i][o], k_rows · k_cols · channels · out_depth elements.
template <class T>
void turn_filter(const WindowGeometry& g, const T* filter, std::int64_t out_depth, T* turned) {
  for (std::int64_t kr = 0; kr < g.k_rows; ++kr)
    for (std::int64_t kc = 0; kc < g.k_cols; ++kc)
      for (std::int64_t i = 0; i < g.channels; ++i)
        for (std::int64_t o = 0; o < out_depth; ++o)
          turned[((kr * g.k_cols + kc) * out_depth + o) * g.channels + i] =
              filter[(((g.k_rows - 1 - kr) * g.k_cols + (g.k_cols - 1 - kc)) * g.channels + i) * out_depth + o];
}

namespace engine_detail {
DEVTENSOR_EXPORT inline std::atomic<const ConvolutionEngine*>& slot() noexcept {
  static std::atomic<const ConvolutionEngine*> installed{nullptr};
  return installed;
}
}  // namespace engine_detail

/// Installs `engine` (a table that lives as long as the program; null uninstalls): the onednn
/// component's object calls it once, before main.
inline void install_convolution_engine(const ConvolutionEngine* engine) noexcept {
  engine_detail::slot().store(engine, std::memory_order_release);
}

/// The engine linked into this program, whether or not the switch lets it run (null: none).
[[nodiscard]] inline const ConvolutionEngine* linked_convolution_engine() noexcept {
  return engine_detail::slot().load(std::memory_order_acquire);
}

/// The engine the next float32 convolution runs through: the linked one when the oneDNN switch is
/// on, else null (the im2col bodies).
[[nodiscard]] inline const ConvolutionEngine* convolution_engine() noexcept {
  const ConvolutionEngine* engine = linked_convolution_engine();
  return engine != nullptr && config::experimental::onednn_opts_enabled() ? engine : nullptr;
}

}  // namespace devtensor::ops::cpu
