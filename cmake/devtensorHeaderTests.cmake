# Every public header compiles on its own (Thrust's header testing): one generated TU per header
# under include/devtensor/ (detail/ excluded), compiled with the host compiler. Headers under
# backend/cuda/ and ops/cuda/ need the CUDA toolkit and are compiled against devtensor::cuda when it exists, and
# with nvcc as well when DEVTENSOR_ENABLE_CUDA is on.
function(devtensor_add_header_tests)
  file(GLOB_RECURSE _headers RELATIVE "${PROJECT_SOURCE_DIR}/include"
       CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/devtensor/*.hpp")
  list(FILTER _headers EXCLUDE REGEX "/detail/")
  set(_host_sources)
  set(_cuda_host_sources)
  set(_nvcc_sources)
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
    file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cu" CONTENT "${_content}")
    list(APPEND _nvcc_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cu")
  endforeach()

  # Host flavour: plain g++, no CUDA anywhere on the include path.
  add_library(devtensor_header_tests OBJECT ${_host_sources})
  target_link_libraries(devtensor_header_tests PRIVATE devtensor::devtensor devtensor_warnings)
  if(TARGET devtensor_cuda AND _cuda_host_sources)
    # cudart flavour: host compiler with the CUDA component.
    add_library(devtensor_header_tests_cudart OBJECT ${_host_sources} ${_cuda_host_sources})
    target_link_libraries(devtensor_header_tests_cudart PRIVATE devtensor::cuda devtensor_warnings)
  endif()
  if(DEVTENSOR_ENABLE_CUDA)
    # nvcc flavour: the same headers as device code.
    add_library(devtensor_header_tests_nvcc OBJECT ${_nvcc_sources})
    target_link_libraries(devtensor_header_tests_nvcc PRIVATE devtensor::cuda)
  endif()
endfunction()
