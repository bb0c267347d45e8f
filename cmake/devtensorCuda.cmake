# devtensor's own build: the CUDA components when DEVTENSOR_ENABLE_CUDA (nvcc found, by default).
# cmake/devtensorCudaComponent.cmake defines them, the same file the installed package uses.
if(DEVTENSOR_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # H100; override with -DCMAKE_CUDA_ARCHITECTURES or CUDAARCHS
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # else CUDA::cudart and -lcudart_static both get linked
  set(_devtensor_source_dir "${CMAKE_CURRENT_SOURCE_DIR}/src")
  set(_devtensor_core_target devtensor::devtensor)
  include(devtensorCudaComponent)
  if(NOT TARGET devtensor_cuda)
    message(FATAL_ERROR "DEVTENSOR_ENABLE_CUDA=ON but nvcc or the CUDA toolkit was not found: set "
                        "CMAKE_CUDA_COMPILER, or configure with -DDEVTENSOR_ENABLE_CUDA=OFF")
  endif()
endif()
set(DEVTENSOR_HAS_CUDA_COMPONENT OFF)
if(TARGET devtensor_cuda)
  set(DEVTENSOR_HAS_CUDA_COMPONENT ON)
endif()
if(TARGET devtensor_cudnn)
  set(_devtensor_cudnn_status "ON (cuDNN ${CUDNN_VERSION}: ${CUDNN_LIBRARY})")
else()
  set(_devtensor_cudnn_status "OFF")
endif()
message(STATUS "devtensor: CUDA component ${DEVTENSOR_HAS_CUDA_COMPONENT}, NCCL component ${NCCL_FOUND}, "
               "cudnn component ${_devtensor_cudnn_status}")
