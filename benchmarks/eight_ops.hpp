// Issue 30's chain of 8 elementwise ops (one input, scalars only): fused into one pass over memory
// when traced. Shared by ops_bench.cpp (CPU, beside a STREAM triad) and gpu_bench.cu (GPU, beside
// a device-to-device copy).
#pragma once

#include <devtensor/devtensor.hpp>

namespace devtensor::bench {

inline Tensor<float> eight_ops(const Tensor<float>& x) {
  auto y = x * 1.5f;
  y = y + 0.5f;
  y = abs(y);
  y = maximum(y, x);
  y = y - 0.25f;
  y = square(y);
  y = neg(y);
  return relu(y);
}

}  // namespace devtensor::bench
