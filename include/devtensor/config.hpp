#pragma once
/// @file config.hpp
/// @brief Macros that describe how this translation unit is compiled.
///
/// Note [One program, one registry]
/// A program mixes .cpp files compiled by the host compiler and .cu files compiled by nvcc. Every
/// function has one body whatever compiles it: GPU kernels are not compiled into the files that
/// call them but into one translation unit per program (src/devtensor_cuda.cu, which the
/// devtensor::cuda component adds to the build), and reached through the kernel registry
/// (ops/registry.hpp). So no inline ABI namespace is needed: the one-definition rule holds as it
/// does for any header-only library.

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

#define DEVTENSOR_INLINE inline

/// Whether this translation unit compiles the CPU bodies of devtensor's ops (the loops, the CBLAS
/// calls). Header-only, every translation unit does, for the ops it runs.
#define DEVTENSOR_CPU_KERNEL_BODIES 1
/// The CUDA bodies are compiled by src/devtensor_cuda.cu alone, which defines
/// DEVTENSOR_CUDA_KERNEL_BODIES before including anything.

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
