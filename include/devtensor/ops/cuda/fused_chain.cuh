#pragma once
/// @file fused_chain.cuh
/// @brief The GPU kernel of fused elementwise chains (Note [Fused chains on a GPU] in
/// ops/fused_chain.hpp), registered by src/devtensor_cuda.cu: each thread evaluates the chain's
/// program over kLanes elements a block apart, and the grid strides over tiles of the input.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "devtensor/backend/cuda/device_guard.hpp"
#include "devtensor/backend/cuda/error.hpp"
#include "devtensor/core/error.hpp"
#include "devtensor/ops/fused_chain.hpp"
#include "devtensor/ops/cuda/kernels.cuh"

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

inline void run_fused_chain(const FusedChainProgram& program, int ordinal, void* stream) {
  const backend::cuda::DeviceGuard guard(ordinal);
  const auto on = static_cast<cudaStream_t>(stream);
  if (program.dtype == DType::DT_FLOAT)
    launch_fused_chain<float>(program, on);
  else if (program.dtype == DType::DT_DOUBLE)
    launch_fused_chain<double>(program, on);
  else
    throw InternalError("A fused chain of " + std::string(dtype_string(program.dtype)) + " has no GPU kernel");
  if (cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    throw InternalError("CUDA kernel fused_chain failed to launch on GPU " + std::to_string(ordinal) + ": " +
                        backend::cuda::describe(status));
}

inline constexpr GpuFusedChain chain_kernel{"CUDA (src/devtensor_cuda.cu)", &run_fused_chain};

}  // namespace devtensor::ops::cuda
