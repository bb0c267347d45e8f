#pragma once
/// @file config.hpp
/// @brief Macros that describe how this translation unit is compiled.
///
/// Note [Three flavours of translation unit]
/// A program mixes .cpp files compiled by the host compiler and .cu files compiled by nvcc, and may
/// link the devtensor::cuda component or not. Three flavours follow (DESIGN.md §2):
///   host   plain C++ compiler, no CUDA: no GPU kernels (GPUs may still be simulated);
///   cudart host compiler + devtensor::cuda (DEVTENSOR_WITH_CUDA=1): library-call GPU kernels;
///   nvcc   __CUDACC__: every op with a CUDA kernel runs on the GPU.
/// Types and process-wide state are the same in every flavour. Functions whose bodies depend on the
/// flavour live in `inline namespace DEVTENSOR_ABI_NS`, so a host body and an nvcc body of the same
/// function have different mangled names and the linker can never mix them up (json's abi_macros).

#include "devtensor/version.hpp"

#if defined(__CUDACC__)
#define DEVTENSOR_HOST_DEVICE __host__ __device__
#define DEVTENSOR_DEVICE __device__
#define DEVTENSOR_DEVICE_CODE 1
#else
#define DEVTENSOR_HOST_DEVICE
#define DEVTENSOR_DEVICE
#define DEVTENSOR_DEVICE_CODE 0
#endif

#if defined(DEVTENSOR_WITH_CUDA) && DEVTENSOR_WITH_CUDA
#define DEVTENSOR_CUDA_RUNTIME 1
#else
#define DEVTENSOR_CUDA_RUNTIME 0
#endif

#if DEVTENSOR_DEVICE_CODE
#define DEVTENSOR_ABI_NS v0_nvcc
#define DEVTENSOR_FLAVOUR_NAME "nvcc"
#elif DEVTENSOR_CUDA_RUNTIME
#define DEVTENSOR_ABI_NS v0_cudart
#define DEVTENSOR_FLAVOUR_NAME "cudart"
#else
#define DEVTENSOR_ABI_NS v0_host
#define DEVTENSOR_FLAVOUR_NAME "host"
#endif

/// Hand-written CUDA kernels: an nvcc TU with the devtensor::cuda component, whose compile options
/// include --extended-lambda (op bodies pass `[] DEVTENSOR_HD_LAMBDA (T x) {...}` to both the CPU
/// loops and the CUDA kernels). An nvcc TU without them gets the cudart flavour's kernels only.
#if DEVTENSOR_DEVICE_CODE && DEVTENSOR_CUDA_RUNTIME && defined(__CUDACC_EXTENDED_LAMBDA__)
#define DEVTENSOR_CUDA_KERNELS 1
#define DEVTENSOR_HD_LAMBDA __host__ __device__
#else
#define DEVTENSOR_CUDA_KERNELS 0
#define DEVTENSOR_HD_LAMBDA
#endif

#define DEVTENSOR_INLINE inline

/// Process-wide singletons are function-local statics in inline functions. With default visibility
/// the dynamic linker unifies them across shared libraries (rapidsai/rmm#826 is what happens when
/// it does not); devtensor assumes one copy of its state per process and says so in the README.
#if defined(__GNUC__) || defined(__clang__)
#define DEVTENSOR_EXPORT __attribute__((visibility("default")))
#else
#define DEVTENSOR_EXPORT
#endif

#define DEVTENSOR_STRINGIFY_IMPL(x) #x
#define DEVTENSOR_STRINGIFY(x) DEVTENSOR_STRINGIFY_IMPL(x)
