#pragma once
/// @file functors.hpp
/// @brief Range's values, one definition for the CPU loop and the CUDA kernel. (The elementwise
/// ops' scalar functions are the op structs themselves: ops/elementwise.hpp.)

#include <cmath>
#include <cstdint>

#include "devtensor/config.hpp"
#include "devtensor/core/arith.hpp"
#include "devtensor/ops/op_def.hpp"

namespace devtensor::ops {

/// Range's values: start + i * delta; integers step in wrapping arithmetic (i and i * delta may
/// leave the type), exact because every value of the range lies between start and limit.
template <class T>
DEVTENSOR_HOST_DEVICE constexpr T range_value(T start, T delta, std::int64_t i) {
  return arith::add(start, arith::mul(static_cast<T>(i), delta));
}

}  // namespace devtensor::ops
