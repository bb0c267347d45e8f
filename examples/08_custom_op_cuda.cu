// Walkthrough 8: the CUDA body of Scale, registered for the GPU. Compiled by nvcc when the
// program links devtensor::cuda; every translation unit then finds it through the registry.
#include <cuda_runtime_api.h>

#include <string>

#include "08_custom_op.hpp"

namespace {

__global__ void scale_kernel(const float* in, float* out, std::int64_t n, float factor) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = factor * in[i];
}

}  // namespace

template <class T>
void Scale::cuda(const devtensor::ops::KernelContext& ctx) {
  const std::int64_t n = ctx.output_shape().num_elements();
  cudaSetDevice(ctx.device.platform_ordinal);
  const auto blocks = static_cast<unsigned>(n < 65536 * 256 ? (n + 255) / 256 : 65536);
  scale_kernel<<<blocks, 256, 0, static_cast<cudaStream_t>(ctx.device.stream)>>>(ctx.input<T>(0), ctx.output<T>(), n,
                                                                                 ctx.attr<Attrs>().factor);
  if (cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    throw devtensor::InternalError(std::string("scale_kernel failed to launch: ") + cudaGetErrorString(status));
}

DEVTENSOR_REGISTER_KERNEL(Scale, devtensor::gpu_t, float, &Scale::cuda<float>);
