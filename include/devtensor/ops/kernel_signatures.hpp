#pragma once
/// @file kernel_signatures.hpp
/// @brief The function types of the bodies that are not ops run by run_op (those all take a
/// KernelContext): a variable's assignment and the fused optimizer updates, which work in place on
/// a variable's buffers. A body gets the logical device it runs on (its CUDA ordinal and stream)
/// and raw buffers already on that device. Bodies report failures by throwing devtensor errors.

#include <cstdint>

#include "devtensor/tensor/dtype.hpp"

namespace devtensor {

struct Device;

namespace kernels {

/// The device handle a body runs on.
using Device = devtensor::Device;

/// dst = src, n elements (a variable's initial value and assignments).
template <class T>
using Assign = void(const Device&, T* dst, const T* src, std::int64_t n);

}  // namespace kernels
}  // namespace devtensor
