#pragma once
/// @file reduce.cuh
/// @brief GPU reductions over any set of axes (compiled in src/devtensor_cuda.cu): the reduced axes are moved last (a
/// strided copy, only when they are not already), then each row of the [outer, inner] view is
/// reduced by blocks of 256 threads with cub::BlockReduce.
///
/// Note [Two passes for long rows]
/// One block per row leaves most of the GPU idle when there are few long rows (a full reduction is
/// one row). Then each row is cut into up to 1024 chunks: a first pass writes one partial per chunk
/// (in the accumulator type), a second reduces each row's partials and finishes (mean divides by
/// the row length). Accumulators match the CPU's: double for floating types, the type itself for
/// integers (wrapping sums), so GPU and CPU agree to rounding.

#include <cub/block/block_reduce.cuh>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "devtensor/ops/cpu/reduce.hpp"
#include "devtensor/ops/cuda/kernels.cuh"
#include "devtensor/ops/row_chunks.hpp"
#include "devtensor/tensor/tensor.hpp"

namespace devtensor::ops::cuda {

struct SumOp {  // integer sums wrap, as on the CPU (core/arith.hpp)
  template <class A>
  __device__ A operator()(A x, A y) const {
    return arith::add(x, y);
  }
};
struct MaxOp {
  template <class A>
  __device__ A operator()(A x, A y) const {
    return x > y ? x : y;
  }
};

/// Block b reduces chunk (b % chunks) of row (b / chunks) and writes out[b]; `divisor` >= 0 divides
/// the result (mean's finish; 0 for an empty row gives NaN, or 0 for integers, as on the CPU).
template <class In, class Acc, class Out, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_rows_kernel(const In* __restrict__ in, Out* __restrict__ out, std::int64_t row_length, std::int64_t chunk,
                       std::int64_t chunks, Acc identity, std::int64_t divisor, Op op) {
  using BlockReduce = cub::BlockReduce<Acc, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  const std::int64_t row = blockIdx.x / chunks;
  const std::int64_t begin = (blockIdx.x % chunks) * chunk;
  const std::int64_t end = begin + chunk < row_length ? begin + chunk : row_length;
  const In* base = in + row * row_length;
  Acc acc = identity;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kThreads) acc = op(acc, static_cast<Acc>(base[i]));
  acc = BlockReduce(temp).Reduce(acc, op);
  if (threadIdx.x == 0) {
    if (divisor >= 0) acc = arith::divide_by_count(acc, divisor);
    out[blockIdx.x] = static_cast<Out>(acc);
  }
}

/// Reduces `in` (shape `shape`, on real GPU `device`) over the flagged axes into `out`.
template <class T>
void reduce(const Device& device, const T* in, const Shape& shape, const std::vector<bool>& reduce_axis,
            cpu::ReduceKind kind, T* out, std::string_view op) {
  using Acc = cpu::accumulator_t<T>;
  const std::size_t rank = shape.rank();
  require_rank(rank, op);
  const cpu::ReduceLayout layout(shape, reduce_axis);
  const auto& perm = layout.perm;
  const std::int64_t outer = layout.outer;
  const std::int64_t inner = layout.inner;
  if (outer == 0) return;

  // Move the reduced axes last when they are not already (a strided copy on the device).
  std::shared_ptr<TensorStorage> moved;
  const T* src = in;
  if (layout.needs_move) {
    moved = allocate_storage(device, checked_byte_count(outer * inner, sizeof(T), op), shape, dtype_string<T>(), op);
    const auto strides = shape.strides();
    std::vector<std::int64_t> dims(rank);
    std::vector<std::int64_t> src_strides(rank);
    for (std::size_t i = 0; i < rank; ++i) {
      dims[i] = shape[perm[i]];
      src_strides[i] = strides[perm[i]];
    }
    const auto dst_strides = Shape(dims).strides();
    strided_copy(device, in, src_strides, 0, static_cast<T*>(moved->data), dst_strides, 0, dims, op);
    src = static_cast<const T*>(moved->data);
  }

  Acc identity{0};
  if (kind == cpu::ReduceKind::max)
    identity = is_floating_element_v<T> ? static_cast<Acc>(-std::numeric_limits<T>::infinity())
                                        : static_cast<Acc>(std::numeric_limits<T>::lowest());
  const std::int64_t divisor = kind == cpu::ReduceKind::mean ? inner : -1;  // -1: no finish

  // One block per row when there are enough rows to fill the GPU; else two passes. The one cut,
  // which fused chains ending in a reduction repeat.
  static_assert(kReduceThreads == kThreads);
  const std::int64_t chunks = reduction_chunks(outer, inner);
  if (outer * chunks > std::int64_t{INT32_MAX})  // one block per (row, chunk): gridDim.x's limit
    throw UnimplementedError(std::string(op) + " on a GPU handles up to 2^31 - 1 output rows, got " +
                             std::to_string(outer) + "; reduce on the CPU or in steps");
  Launch launch(device);
  const auto run = [&](auto reduce_op) {
    if (chunks == 1) {
      reduce_rows_kernel<T, Acc, T><<<static_cast<unsigned>(outer), kThreads, 0, launch.stream>>>(
          src, out, inner, inner > 0 ? inner : 1, 1, identity, divisor, reduce_op);
      launch.check("reduce_rows");
      return;
    }
    const std::int64_t chunk = (inner + chunks - 1) / chunks;
    auto partials = allocate_storage(device, checked_byte_count(outer * chunks, sizeof(Acc), op), Shape{outer, chunks},
                                     dtype_string<T>(), op);
    auto* partial = static_cast<Acc*>(partials->data);
    reduce_rows_kernel<T, Acc, Acc><<<static_cast<unsigned>(outer * chunks), kThreads, 0, launch.stream>>>(
        src, partial, inner, chunk, chunks, identity, -1, reduce_op);
    launch.check("reduce_rows (partials)");
    reduce_rows_kernel<Acc, Acc, T><<<static_cast<unsigned>(outer), kThreads, 0, launch.stream>>>(
        partial, out, chunks, chunks, 1, identity, divisor, reduce_op);
    launch.check("reduce_rows (finish)");
  };
  if (kind == cpu::ReduceKind::max)
    run(MaxOp{});
  else
    run(SumOp{});
}

}  // namespace devtensor::ops::cuda
