# The devtensor::cuda and devtensor::nccl components. Nothing here runs for a consumer of the core
# target alone, and the core target never learns about CUDA.

# The component is defined whenever the toolkit is found, so that a host-only project (g++ + cudart)
# can use it; the .cu tests need nvcc on top (DEVTENSOR_ENABLE_CUDA).
if(DEVTENSOR_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # H100; override with -DCMAKE_CUDA_ARCHITECTURES or CUDAARCHS
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # else CUDA::cudart and -lcudart_static both get linked
  enable_language(CUDA)
  if(CMAKE_VERSION VERSION_LESS 3.25.2)
    # CMake 3.25.1 does not know how to ask nvcc for C++20 (fixed in 3.25.2).
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
endif()

find_package(CUDAToolkit QUIET)
set(DEVTENSOR_HAS_CUDA_COMPONENT OFF)
if(CUDAToolkit_FOUND)
  set(DEVTENSOR_HAS_CUDA_COMPONENT ON)
  find_package(CCCL CONFIG QUIET HINTS "${CUDAToolkit_LIBRARY_DIR}/cmake")
  add_library(devtensor_cuda INTERFACE)
  add_library(devtensor::cuda ALIAS devtensor_cuda)
  set_target_properties(devtensor_cuda PROPERTIES EXPORT_NAME cuda)
  target_link_libraries(devtensor_cuda INTERFACE devtensor CUDA::cudart CUDA::cublas)
  if(TARGET CCCL::CCCL)
    target_link_libraries(devtensor_cuda INTERFACE CCCL::CCCL)
  else()
    target_include_directories(devtensor_cuda SYSTEM INTERFACE "${CUDAToolkit_INCLUDE_DIRS}/cccl")
  endif()
  target_compile_definitions(devtensor_cuda INTERFACE DEVTENSOR_WITH_CUDA=1)
  target_compile_options(devtensor_cuda INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 --expt-relaxed-constexpr --extended-lambda>)

  find_package(NCCL QUIET)
  if(NCCL_FOUND)
    add_library(devtensor_nccl INTERFACE)
    add_library(devtensor::nccl ALIAS devtensor_nccl)
    set_target_properties(devtensor_nccl PROPERTIES EXPORT_NAME nccl)
    target_link_libraries(devtensor_nccl INTERFACE devtensor_cuda NCCL::NCCL)
    target_compile_definitions(devtensor_nccl INTERFACE DEVTENSOR_WITH_NCCL=1)
  endif()
endif()
message(STATUS "devtensor: CUDA component ${DEVTENSOR_HAS_CUDA_COMPONENT}, nvcc tests ${DEVTENSOR_ENABLE_CUDA}, NCCL ${NCCL_FOUND}")
