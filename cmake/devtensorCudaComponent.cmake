# The devtensor::cuda, devtensor::nccl and devtensor::cudnn components, defined in the project that uses them: by
# devtensor's own CMakeLists (add_subdirectory, FetchContent) and by the installed package config
# (find_package). Nothing prebuilt is installed: the kernel translation units ship as sources and
# are compiled here, once per build tree, into object libraries whose objects the components'
# link interface carries ($<TARGET_OBJECTS:...>) to every executable and shared library linking
# them, also through a consumer's static library (an object on the link line is never dropped,
# unlike an archive member that only registers kernels).
#
# Inputs: _devtensor_source_dir (where devtensor_cuda.cu, devtensor_nccl.cpp and
# devtensor_cudnn.cpp are) and
# _devtensor_core_target (devtensor or devtensor::devtensor). Include at file scope:
# enable_language() refuses to run inside a function.
include("${CMAKE_CURRENT_LIST_DIR}/devtensorOptimizeWithoutBuildType.cmake")
if(NOT TARGET devtensor_cuda)
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    if(CMAKE_VERSION VERSION_LESS 3.25.2)
      # CMake 3.25.1 does not know how to ask nvcc for C++20 (fixed in 3.25.2).
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    enable_language(CUDA)
    find_package(CCCL CONFIG QUIET HINTS "${CUDAToolkit_LIBRARY_DIR}/cmake")

    # What devtensor's CUDA sources need to compile: the toolkit, cuBLAS and cuBLASLt, CCCL (CUB).
    add_library(devtensor_cuda_toolkit INTERFACE)
    target_link_libraries(devtensor_cuda_toolkit INTERFACE ${_devtensor_core_target} CUDA::cudart CUDA::cublas CUDA::cublasLt)
    if(TARGET CCCL::CCCL)
      target_link_libraries(devtensor_cuda_toolkit INTERFACE CCCL::CCCL)
    else()
      target_include_directories(devtensor_cuda_toolkit SYSTEM INTERFACE "${CUDAToolkit_INCLUDE_DIRS}/cccl")
    endif()
    target_compile_options(devtensor_cuda_toolkit INTERFACE
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)

    # The kernel translation unit: every GPU body, the CUDA platform. Compiled once here.
    add_library(devtensor_cuda_kernels OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_cuda.cu")
    target_link_libraries(devtensor_cuda_kernels PRIVATE devtensor_cuda_toolkit)
    target_compile_features(devtensor_cuda_kernels PRIVATE cuda_std_20)
    set_target_properties(devtensor_cuda_kernels PROPERTIES
      POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Shared)
    devtensor_optimize_without_build_type(devtensor_cuda_kernels)  # optimised host code, as src/devtensor.cpp

    add_library(devtensor_cuda INTERFACE)
    add_library(devtensor::cuda ALIAS devtensor_cuda)
    target_link_libraries(devtensor_cuda INTERFACE devtensor_cuda_toolkit
                          $<TARGET_OBJECTS:devtensor_cuda_kernels>)
    target_compile_definitions(devtensor_cuda INTERFACE DEVTENSOR_WITH_CUDA=1)

    find_package(NCCL QUIET)
    if(NCCL_FOUND)
      # The NCCL engine: host code, compiled once by the host compiler.
      add_library(devtensor_nccl_engine OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_nccl.cpp")
      target_link_libraries(devtensor_nccl_engine PRIVATE devtensor_cuda_toolkit NCCL::NCCL)
      target_compile_features(devtensor_nccl_engine PRIVATE cxx_std_20)
      set_target_properties(devtensor_nccl_engine PROPERTIES POSITION_INDEPENDENT_CODE ON)
      add_library(devtensor_nccl INTERFACE)
      add_library(devtensor::nccl ALIAS devtensor_nccl)
      target_link_libraries(devtensor_nccl INTERFACE devtensor_cuda NCCL::NCCL
                            $<TARGET_OBJECTS:devtensor_nccl_engine>)
      target_compile_definitions(devtensor_nccl INTERFACE DEVTENSOR_WITH_NCCL=1)
    endif()

    # cuDNN's convolutions (ops/cuda/convolution_engine.hpp): host code, compiled once by the host
    # compiler; without it the CUDA bodies convolve with patches and cuBLAS. cuDNN 9's API.
    find_package(CUDNN 9 QUIET)
    if(CUDNN_FOUND)
      add_library(devtensor_cudnn_engine OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_cudnn.cpp")
      target_link_libraries(devtensor_cudnn_engine PRIVATE devtensor_cuda_toolkit CUDNN::cudnn)
      target_compile_features(devtensor_cudnn_engine PRIVATE cxx_std_20)
      set_target_properties(devtensor_cudnn_engine PROPERTIES POSITION_INDEPENDENT_CODE ON)
      add_library(devtensor_cudnn INTERFACE)
      add_library(devtensor::cudnn ALIAS devtensor_cudnn)
      target_link_libraries(devtensor_cudnn INTERFACE devtensor_cuda CUDNN::cudnn
                            $<TARGET_OBJECTS:devtensor_cudnn_engine>)
      target_compile_definitions(devtensor_cudnn INTERFACE DEVTENSOR_WITH_CUDNN=1)
    endif()
  endif()
endif()
