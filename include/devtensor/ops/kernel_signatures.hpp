#pragma once
/// @file kernel_signatures.hpp
/// @brief The function types of the built-in ops' device bodies, as the registry stores them.
///
/// A body gets the logical device it runs on (its CUDA ordinal and stream) and raw buffers already
/// on that device; the op's entry point has done placement, shape checks, input copies and the
/// output's allocation. Bodies report failures by throwing devtensor errors.

#include <cstdint>
#include <span>
#include <vector>

#include "devtensor/tensor/dtype.hpp"

namespace devtensor {

struct LogicalDeviceInfo;
class Shape;

namespace ops {
template <class T>
struct GradientDescentUpdate;
template <class T>
struct KerasMomentumUpdate;
template <class T>
struct AdamUpdate;
template <class T>
struct WeightedAccumulateUpdate;
}  // namespace ops

namespace kernels {

/// The device handle a body runs on.
using Device = LogicalDeviceInfo;
using Dims = std::span<const std::int64_t>;

/// out[i] = f(in[i]).
template <class T>
using Unary = void(const Device&, const T* in, T* out, std::int64_t n);
/// out = f(a, b) with NumPy broadcasting to out_shape.
template <class T>
using Binary = void(const Device&, const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* out,
                    const Shape& out_shape);
/// Binary, and `*device_flag` (device memory, zeroed by the caller) set to 1 on a division by zero.
template <class T>
using FloorDiv = void(const Device&, const T* a, const Shape& a_shape, const T* b, const Shape& b_shape, T* out,
                      const Shape& out_shape, int* device_flag);
template <class T>
using Fill = void(const Device&, T* out, std::int64_t n, T value);
/// out[i] = start + i * delta.
template <class T>
using Range = void(const Device&, T* out, std::int64_t n, T start, T delta);
/// Counter-based random values (ops/random.hpp): uniform in [p0, p1), or normal (mean p0, stddev p1).
template <class T>
using Random = void(const Device&, T* out, std::int64_t n, std::uint64_t seed, double p0, double p1);
/// out = Σ inputs[k], each of n elements.
template <class T>
using AddN = void(const Device&, T* out, const T* const* inputs, std::size_t count, std::int64_t n);
/// c[batch] = op(a[batch]) · op(b[batch]), row-major.
template <class T>
using MatMul = void(const Device&, bool transpose_a, bool transpose_b, std::int64_t batches, std::int64_t m,
                    std::int64_t n, std::int64_t k, const T* a, const T* b, T* c);
/// Reduces `in` (of `shape`) over the flagged axes (Sum, Mean or Max by the op).
template <class T>
using Reduce = void(const Device&, const T* in, const Shape& shape, const std::vector<bool>& axes, T* out);
/// Copies the box `dims` from src (its strides, from src_offset) to dst (its strides, from
/// dst_offset): transpose, concat, split, slice, broadcast_to.
template <class T>
using StridedCopy = void(const Device&, const T* src, Dims src_strides, std::int64_t src_offset, T* dst,
                         Dims dst_strides, std::int64_t dst_offset, Dims dims);
/// Zeroes dst (dst_size elements), then copies src's box into it at dst_offset.
template <class T>
using Pad = void(const Device&, const T* src, Dims src_strides, T* dst, std::int64_t dst_size, Dims dst_strides,
                 std::int64_t dst_offset, Dims dims);
/// out[i] = convert<to>(in[i]), `out` of element type `to`.
template <class T>
using Cast = void(const Device&, const T* in, void* out, DType to, std::int64_t n);
/// dst = src, n elements (a variable's initial value and assignments).
template <class T>
using Assign = void(const Device&, T* dst, const T* src, std::int64_t n);
/// The fused optimizer updates: `update(i)` for i in [0, n) (ops/training_functors.hpp).
template <class T>
using ApplyGradientDescent = void(const Device&, const ops::GradientDescentUpdate<T>& update, std::int64_t n);
template <class T>
using ApplyKerasMomentum = void(const Device&, const ops::KerasMomentumUpdate<T>& update, std::int64_t n);
template <class T>
using ApplyAdam = void(const Device&, const ops::AdamUpdate<T>& update, std::int64_t n);
template <class T>
using AccumulateWeighted = void(const Device&, const ops::WeightedAccumulateUpdate<T>& update, std::int64_t n);

}  // namespace kernels
}  // namespace devtensor
