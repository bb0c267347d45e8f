# Every public header compiles on its own (Thrust's header testing): one generated TU per header
# under include/devtensor/ (detail/ excluded), compiled with the host compiler. Headers under
# backend/cuda/ and ops/cuda/ need the CUDA toolkit and are compiled against devtensor::cuda when it
# exists (the cudart flavour, one TU per header as well). With DEVTENSOR_ENABLE_CUDA, nvcc compiles
# every header as device code in one TU (each included twice): nvcc takes ~7 s per TU, and 64 of
# them were 8 CPU-minutes of CI for what the per-header host and cudart TUs already check
# (self-containment); what only nvcc can check, that each header compiles as CUDA, one TU checks.
# In that configuration the plain host flavour is left to the cudart flavour (the same sources)
# and to the CPU presets, which build it too.
function(devtensor_add_header_tests)
  file(GLOB_RECURSE _headers RELATIVE "${PROJECT_SOURCE_DIR}/include"
       CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/devtensor/*.hpp")
  list(FILTER _headers EXCLUDE REGEX "/detail/")
  set(_host_sources)
  set(_cuda_host_sources)
  set(_all_headers "")
  foreach(_header IN LISTS _headers)
    string(MAKE_C_IDENTIFIER "${_header}" _id)
    set(_content "// Generated: ${_header} must compile on its own.\n#include <${_header}>\n#include <${_header}>  // and twice\n")
    if(_header MATCHES "^devtensor/(backend|ops)/cuda/")
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _cuda_host_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
    else()
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _host_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
    endif()
    string(APPEND _all_headers "${_content}")
  endforeach()

  # Host flavour: plain g++, no CUDA anywhere on the include path.
  if(NOT DEVTENSOR_ENABLE_CUDA OR NOT TARGET devtensor_cuda)
    add_library(devtensor_header_tests OBJECT ${_host_sources})
    target_link_libraries(devtensor_header_tests PRIVATE devtensor::devtensor devtensor_warnings)
  endif()
  if(TARGET devtensor_cuda AND _cuda_host_sources)
    # cudart flavour: host compiler with the CUDA component.
    add_library(devtensor_header_tests_cudart OBJECT ${_host_sources} ${_cuda_host_sources})
    target_link_libraries(devtensor_header_tests_cudart PRIVATE devtensor::cuda devtensor_warnings)
  endif()
  if(DEVTENSOR_ENABLE_CUDA)
    # nvcc flavour: every header as device code, in one TU.
    file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers.cu" CONTENT "${_all_headers}")
    add_library(devtensor_header_tests_nvcc OBJECT "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers.cu")
    target_link_libraries(devtensor_header_tests_nvcc PRIVATE devtensor::cuda)
  endif()
endfunction()
