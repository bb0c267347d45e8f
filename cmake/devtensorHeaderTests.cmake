# Every public header compiles on its own (Thrust's header testing): one generated TU per header
# under include/devtensor/ (detail/ excluded), compiled with the host compiler in compiled mode
# (declarations: Note [Compiled mode]), and every header together header-only (every definition
# compiled, once). With each header alone header-only, the definitions instantiating most of the
# library 212 times, the header checks took 704 CPU-seconds of CI; 457 since. Headers under
# backend/cuda/ and ops/cuda/ need the CUDA toolkit on the include path and are compiled against it
# when the CUDA component exists. With DEVTENSOR_ENABLE_CUDA, nvcc also compiles every header in
# one TU (each included twice): what only nvcc can check, that each header compiles as CUDA, one TU
# checks (~7 s per nvcc TU made a per-header nvcc pass 8 CPU-minutes of CI).
function(devtensor_add_header_tests)
  file(GLOB_RECURSE _headers RELATIVE "${PROJECT_SOURCE_DIR}/include"
       CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/devtensor/*.hpp")
  list(FILTER _headers EXCLUDE REGEX "/detail/")
  set(_host_sources)
  set(_cuda_host_sources)
  set(_multi_worker_sources)
  set(_hdf5_sources)
  set(_keras_archive_sources)
  set(_all_headers "")
  foreach(_header IN LISTS _headers)
    string(MAKE_C_IDENTIFIER "${_header}" _id)
    set(_content "// Generated: ${_header} must compile on its own.\n#include <${_header}>\n#include <${_header}>  // and twice\n")
    if(_header MATCHES "^devtensor/(distribute/multi_worker|coordinator)/" OR _header STREQUAL "devtensor/coordinator.hpp")
      # Compiled against the component that provides its dependencies (JSON, MPI), when found.
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _multi_worker_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
      continue()
    elseif(_header MATCHES "^devtensor/saving/" OR _header MATCHES "^devtensor/nn/(layer|model)_config[.]hpp$")
      # Against libzip, nlohmann_json and HDF5 (the keras_archive component), when found.
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _keras_archive_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
      continue()
    elseif(_header MATCHES "^devtensor/hdf5/")
      # Against the HDF5 C library (the hdf5 component), when found.
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _hdf5_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
      continue()
    elseif(_header MATCHES "^devtensor/(backend|ops)/cuda/")
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _cuda_host_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
    else()
      file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp" CONTENT "${_content}")
      list(APPEND _host_sources "${CMAKE_CURRENT_BINARY_DIR}/headers/${_id}.cpp")
    endif()
    string(APPEND _all_headers "${_content}")
  endforeach()

  if(TARGET devtensor::mpi AND _multi_worker_sources)
    add_library(devtensor_header_tests_mpi OBJECT ${_multi_worker_sources})
    target_link_libraries(devtensor_header_tests_mpi PRIVATE devtensor::mpi devtensor_warnings)
  endif()
  if(TARGET devtensor::hdf5 AND _hdf5_sources)
    add_library(devtensor_header_tests_hdf5 OBJECT ${_hdf5_sources})
    target_link_libraries(devtensor_header_tests_hdf5 PRIVATE devtensor::hdf5 devtensor_warnings)
  endif()
  if(TARGET devtensor::keras_archive AND _keras_archive_sources)
    add_library(devtensor_header_tests_keras_archive OBJECT ${_keras_archive_sources})
    target_link_libraries(devtensor_header_tests_keras_archive PRIVATE devtensor_keras_archive_deps devtensor_warnings)
  endif()
  # Compiled mode (declarations only, Note [Compiled mode]), each header alone; header-only (every
  # definition compiled), every header in one TU.
  add_library(devtensor_header_tests_declarations INTERFACE)  # compiled mode, whatever DEVTENSOR_COMPILED says
  target_link_libraries(devtensor_header_tests_declarations INTERFACE devtensor::header_only)
  target_compile_definitions(devtensor_header_tests_declarations INTERFACE DEVTENSOR_COMPILED)
  add_library(devtensor_header_tests OBJECT ${_host_sources})
  target_link_libraries(devtensor_header_tests PRIVATE devtensor_header_tests_declarations devtensor_warnings)
  file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers_header_only.cpp" CONTENT "${_all_headers}")
  add_library(devtensor_header_tests_header_only OBJECT
              "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers_header_only.cpp")
  target_link_libraries(devtensor_header_tests_header_only PRIVATE devtensor::header_only devtensor_warnings)
  if(TARGET devtensor_cuda_toolkit AND _cuda_host_sources)
    add_library(devtensor_header_tests_cuda OBJECT ${_cuda_host_sources})
    target_link_libraries(devtensor_header_tests_cuda PRIVATE devtensor_cuda_toolkit devtensor_warnings)
  endif()
  # The host-compiler checks need no code: -fsyntax-only (cmake/syntax_only.sh) takes a third of
  # an -O2 -g compile's time (nn/sequential.hpp: 12 s instead of 44 s).
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND NOT CMAKE_HOST_WIN32)
    foreach(_target devtensor_header_tests devtensor_header_tests_header_only devtensor_header_tests_cuda
                    devtensor_header_tests_mpi devtensor_header_tests_hdf5
                    devtensor_header_tests_keras_archive)
      if(TARGET ${_target})
        set_target_properties(${_target} PROPERTIES CXX_COMPILER_LAUNCHER "${PROJECT_SOURCE_DIR}/cmake/syntax_only.sh")
      endif()
    endforeach()
  endif()
  if(DEVTENSOR_ENABLE_CUDA)
    # Every header as CUDA, in one nvcc TU.
    file(CONFIGURE OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers.cu" CONTENT "${_all_headers}")
    add_library(devtensor_header_tests_nvcc OBJECT "${CMAKE_CURRENT_BINARY_DIR}/headers/all_headers.cu")
    target_link_libraries(devtensor_header_tests_nvcc PRIVATE devtensor_cuda_toolkit)
  endif()
endfunction()
