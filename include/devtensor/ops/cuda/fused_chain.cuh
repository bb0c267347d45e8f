#pragma once
/// @file fused_chain.cuh
/// @brief The GPU kernel of fused elementwise chains (Note [Fused chains on a GPU] in
/// ops/fused_chain.hpp), registered by src/devtensor_cuda.cu: each thread evaluates the chain's
/// program over kLanes elements a block apart, and the grid strides over tiles of the input; a
/// chain that ends in a row reduction adds its results per block, as the GPU reduction does; a
/// MatMul whose chain is a bias and a Relu is one cuBLASLt call (ops/cuda/gemm_epilogue.hpp).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/cuda/gemm_epilogue.hpp"
#include "devtensor/ops/cuda/kernels.cuh"
#include "devtensor/ops/cuda/reduce.cuh"
#include "devtensor/ops/fused_chain.hpp"

namespace devtensor::ops::cuda {

template <class T>
__global__ void fused_chain_kernel(const FusedChainProgram program) {
  fused_chain::run_thread<T>(program, blockIdx.x, threadIdx.x, blockDim.x, gridDim.x);
}

template <class T>
void launch_fused_chain(const FusedChainProgram& program, cudaStream_t stream) {
  const auto blocks = fused_chain::blocks_for<T>(program.n, kThreads, 65535 * 4);
  fused_chain_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(program);
}

/// A chain reduction's first (or only) pass: block b reduces chunk b % chunks of row b / chunks,
/// as reduce_rows_kernel does for a materialised input.
template <class T>
__global__ void __launch_bounds__(kThreads) fused_reduction_kernel(const FusedChainProgram program) {
  using BlockReduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  double sum = fused_chain::reduce_thread<T>(program, blockIdx.x, threadIdx.x, kThreads);
  sum = BlockReduce(temp).Reduce(sum, SumOp{});
  if (threadIdx.x != 0) return;
  if (program.chunks > 1)
    static_cast<double*>(program.partials)[blockIdx.x] = sum;
  else
    static_cast<T*>(program.output)[blockIdx.x] = fused_chain::finish_row<T>(program, sum);
}

template <class T>
void launch_fused_reduction(const FusedChainProgram& program, cudaStream_t stream) {
  const std::int64_t rows = program.n / program.row;
  if (rows == 0) return;
  fused_reduction_kernel<T><<<static_cast<unsigned>(rows * program.chunks), kThreads, 0, stream>>>(program);
  if (program.chunks > 1)  // each row's partials added as the GPU reduction's second pass adds them
    reduce_rows_kernel<double, double, T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        static_cast<const double*>(program.partials), static_cast<T*>(program.output), program.chunks, program.chunks,
        1, 0.0, program.mean ? program.row : -1, SumOp{});
}

inline void run_fused_chain(const FusedChainProgram& program, int ordinal, void* stream) {
  const backend::cuda::DeviceGuard guard(ordinal);
  const auto on = static_cast<cudaStream_t>(stream);
  const bool reduces = program.row > 0;
  if (program.dtype == DType::DT_FLOAT && reduces)
    launch_fused_reduction<float>(program, on);
  else if (program.dtype == DType::DT_FLOAT)
    launch_fused_chain<float>(program, on);
  else if (program.dtype == DType::DT_DOUBLE && reduces)
    launch_fused_reduction<double>(program, on);
  else if (program.dtype == DType::DT_DOUBLE)
    launch_fused_chain<double>(program, on);
  else
    throw InternalError("A fused chain of " + std::string(dtype_string(program.dtype)) + " has no GPU kernel");
  if (cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    throw InternalError("CUDA kernel fused_chain failed to launch on GPU " + std::to_string(ordinal) + ": " +
                        backend::cuda::describe(status));
}

inline constexpr GpuFusedChain chain_kernel{"CUDA (src/devtensor_cuda.cu)", &run_fused_chain, &run_gemm_epilogue};

}  // namespace devtensor::ops::cuda
