#pragma once
/// @file softmax.cuh
/// @brief GPU softmax and log-softmax over rows (compiled in src/devtensor_cuda.cu): one block of
/// 256 threads per row, the maximum and the sum of exponentials by cub::BlockReduce, the sum in
/// double for float as on the CPU (ops/cpu/softmax.hpp), so both agree to rounding; float16 and
/// bfloat16 computed in float, rounded once.

#include <cub/block/block_reduce.cuh>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "devtensor/core/half.hpp"
#include "devtensor/ops/cpu/reduce.hpp"
#include "devtensor/ops/cuda/kernels.cuh"

namespace devtensor::ops::cuda {

struct SoftmaxMax {
  template <class A>
  __device__ A operator()(A x, A y) const {
    return x > y ? x : y;
  }
};

template <class T, class Acc>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t classes, bool log) {
  // W: what each element is computed in (float for the 16-bit floats, rounded once on the way out)
  using W = std::conditional_t<is_sixteen_bit_float_v<T>, float, T>;
  using MaxReduce = cub::BlockReduce<W, kThreads>;
  using SumReduce = cub::BlockReduce<Acc, kThreads>;
  __shared__ union {
    typename MaxReduce::TempStorage max;
    typename SumReduce::TempStorage sum;
  } temp;
  __shared__ W row_max;
  __shared__ Acc row_sum;
  const T* x = in + static_cast<std::int64_t>(blockIdx.x) * classes;
  T* y = out + static_cast<std::int64_t>(blockIdx.x) * classes;

  W shift = -std::numeric_limits<W>::infinity();
  for (std::int64_t i = threadIdx.x; i < classes; i += kThreads) {
    const W v = static_cast<W>(x[i]);
    shift = v > shift ? v : shift;
  }
  shift = MaxReduce(temp.max).Reduce(shift, SoftmaxMax{});
  if (threadIdx.x == 0) row_max = shift;
  __syncthreads();
  shift = row_max;

  Acc sum = 0;
  for (std::int64_t i = threadIdx.x; i < classes; i += kThreads)
    sum += static_cast<Acc>(std::exp(static_cast<W>(x[i]) - shift));
  sum = SumReduce(temp.sum).Sum(sum);
  if (threadIdx.x == 0) row_sum = sum;
  __syncthreads();

  if (log) {
    const W log_sum = static_cast<W>(std::log(row_sum));
    for (std::int64_t i = threadIdx.x; i < classes; i += kThreads)
      y[i] = static_cast<T>((static_cast<W>(x[i]) - shift) - log_sum);
  } else {
    const W total = static_cast<W>(row_sum);
    for (std::int64_t i = threadIdx.x; i < classes; i += kThreads)
      y[i] = static_cast<T>(std::exp(static_cast<W>(x[i]) - shift) / total);
  }
}

/// out[r] = softmax(in[r]) (log-softmax when `log`) for `rows` rows of `classes` on a real GPU.
template <class T>
void softmax_rows(const Device& device, const T* in, std::int64_t rows, std::int64_t classes, bool log, T* out,
                  std::string_view op) {
  if (rows == 0 || classes == 0) return;
  if (rows > std::int64_t{INT32_MAX})  // one block per row: gridDim.x's limit
    throw UnimplementedError(std::string(op) + " on a GPU handles up to 2^31 - 1 rows, got " + std::to_string(rows) +
                             "; run it on the CPU or in slices");
  Launch launch(device);
  softmax_rows_kernel<T, cpu::accumulator_t<T>>
      <<<static_cast<unsigned>(rows), kThreads, 0, launch.stream>>>(in, out, classes, log);
  launch.check("softmax_rows");
}

}  // namespace devtensor::ops::cuda
