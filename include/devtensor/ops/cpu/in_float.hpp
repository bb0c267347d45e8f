#pragma once
/// @file in_float.hpp
/// @brief A CPU body over float16/bfloat16 tensors run as its float body: the inputs widened, the
/// float body, the outputs rounded once (Note [Sixteen-bit bodies in float]).

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "devtensor/core/half.hpp"
#include "devtensor/ops/kernel_context.hpp"
#include "devtensor/tensor/shape.hpp"

namespace devtensor::ops::cpu {

// Note [Sixteen-bit bodies in float]
// The convolutions, pools and the bias have no 16-bit CPU code of their own: a float16 or
// bfloat16 kernel widens its inputs, runs the float body (the convolution engine and CBLAS
// included) and rounds each output once. That is TensorFlow's 16-bit CPU MatMul (float products
// summed in float, rounded once) and cuDNN's float accumulation, not a sum rounded at every add;
// "correct, not necessarily fast" on CPUs: the copies cost two passes over the data.

/// Runs `body(input, output)` with `input(i)` the i-th input and `output(j)` the j-th output as
/// `const T*` and `T*`, or, for the 16-bit floats, as float copies (the outputs rounded back after).
template <class T, class Body>
void in_float(const KernelContext& ctx, std::size_t outputs, Body&& body) {
  if constexpr (!is_sixteen_bit_float_v<T>) {
    body([&](std::size_t i) { return ctx.input<T>(i); }, [&](std::size_t j) { return ctx.output<T>(j); });
  } else {
    std::vector<std::vector<float>> wide_in(ctx.inputs.size()), wide_out(outputs);
    for (std::size_t i = 0; i < wide_in.size(); ++i) {
      const T* in = ctx.input<T>(i);
      wide_in[i].resize(static_cast<std::size_t>(ctx.input_shape(i).num_elements()));
      std::transform(in, in + wide_in[i].size(), wide_in[i].begin(), [](T v) { return static_cast<float>(v); });
    }
    for (std::size_t j = 0; j < outputs; ++j)
      wide_out[j].resize(static_cast<std::size_t>(ctx.output_shape(j).num_elements()));
    body([&](std::size_t i) -> const float* { return wide_in[i].data(); },
         [&](std::size_t j) -> float* { return wide_out[j].data(); });
    for (std::size_t j = 0; j < outputs; ++j)
      std::transform(wide_out[j].begin(), wide_out[j].end(), ctx.output<T>(j), [](float v) { return T(v); });
  }
}

}  // namespace devtensor::ops::cpu
