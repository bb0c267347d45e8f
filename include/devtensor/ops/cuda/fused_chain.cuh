#pragma once
/// @file fused_chain.cuh
/// @brief The GPU kernel of fused elementwise chains (Note [Fused chains on a GPU] in
/// ops/fused_chain.hpp), registered by src/devtensor_cuda.cu: one thread per element of a
/// grid-stride loop evaluates the chain's program.

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
  T* out = static_cast<T*>(program.output);
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < program.n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = fused_chain::evaluate<T>(program, i);
}

inline void run_fused_chain(const FusedChainProgram& program, int ordinal, void* stream) {
  const backend::cuda::DeviceGuard guard(ordinal);
  const auto on = static_cast<cudaStream_t>(stream);
  if (program.dtype == DType::DT_FLOAT)
    fused_chain_kernel<float><<<blocks_for(program.n), kThreads, 0, on>>>(program);
  else if (program.dtype == DType::DT_DOUBLE)
    fused_chain_kernel<double><<<blocks_for(program.n), kThreads, 0, on>>>(program);
  else
    throw InternalError("A fused chain of " + std::string(dtype_string(program.dtype)) + " has no GPU kernel");
  if (cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    throw InternalError("CUDA kernel fused_chain failed to launch on GPU " + std::to_string(ordinal) + ": " +
                        backend::cuda::describe(status));
}

inline constexpr GpuFusedChain chain_kernel{"CUDA (src/devtensor_cuda.cu)", &run_fused_chain};

}  // namespace devtensor::ops::cuda
