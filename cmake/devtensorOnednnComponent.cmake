# The onednn component, for our build tree and for the installed package alike: float32 Conv2D and
# its two backprops on CPUs through oneDNN's JIT convolutions (TensorFlow's own CPU kernels for
# them), beside devtensor's im2col + CBLAS bodies, which run when it is not linked or switched off
# (TF_ENABLE_ONEDNN_OPTS=0, config::experimental::enable_onednn_opts(false)). Its code
# (src/devtensor_onednn.cpp) is compiled once per build tree into an object every program linking
# devtensor::onednn gets; it installs itself before main. A program's own files include nothing of
# oneDNN. Defined when oneDNN 2.x (Debian: libdnnl-dev) and OpenMP are found; DEVTENSOR_WITH_ONEDNN
# (default ON) turns it off. Inputs: _devtensor_source_dir, _devtensor_header_target.
include("${CMAKE_CURRENT_LIST_DIR}/devtensorOptimizeWithoutBuildType.cmake")
option(DEVTENSOR_WITH_ONEDNN "Define devtensor::onednn when oneDNN 2.x is found" ON)
if(NOT TARGET devtensor_onednn AND DEVTENSOR_WITH_ONEDNN)
  # By header and library, not oneDNN's CMake package: Debian's (libdnnl-dev 2.6) demands OpenCL's
  # development files for its GPU runtime, which devtensor does not use.
  find_path(DEVTENSOR_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
  find_library(DEVTENSOR_DNNL_LIBRARY dnnl)
  find_package(OpenMP QUIET COMPONENTS CXX)
  set(_devtensor_dnnl_major "")
  if(DEVTENSOR_DNNL_INCLUDE_DIR AND EXISTS "${DEVTENSOR_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h")
    file(STRINGS "${DEVTENSOR_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" _devtensor_dnnl_line
         REGEX "#define DNNL_VERSION_MAJOR ")
    string(REGEX MATCH "[0-9]+" _devtensor_dnnl_major "${_devtensor_dnnl_line}")
  endif()
  # oneDNN 3 removed the operation descriptors the code is written against (v2's API).
  if(DEVTENSOR_DNNL_LIBRARY AND _devtensor_dnnl_major STREQUAL "2" AND TARGET OpenMP::OpenMP_CXX)
    add_library(devtensor_onednn_code OBJECT EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor_onednn.cpp")
    # The code compiles in header-only mode (it uses inline parts only), so that any core target,
    # compiled or header-only, can link the component.
    target_link_libraries(devtensor_onednn_code PRIVATE ${_devtensor_header_target})
    target_include_directories(devtensor_onednn_code SYSTEM PRIVATE "${DEVTENSOR_DNNL_INCLUDE_DIR}")
    target_link_libraries(devtensor_onednn_code PRIVATE OpenMP::OpenMP_CXX)
    target_compile_features(devtensor_onednn_code PRIVATE cxx_std_20)
    set_target_properties(devtensor_onednn_code PROPERTIES POSITION_INDEPENDENT_CODE ON)
    devtensor_optimize_without_build_type(devtensor_onednn_code)  # as src/devtensor.cpp
    # The object, oneDNN, and OpenMP's run-time library (not its -fopenmp: a program's own files
    # are compiled as they were).
    add_library(devtensor_onednn INTERFACE)
    target_link_libraries(devtensor_onednn INTERFACE $<TARGET_OBJECTS:devtensor_onednn_code>
                          "${DEVTENSOR_DNNL_LIBRARY}" ${OpenMP_CXX_LIBRARIES})
    target_compile_definitions(devtensor_onednn INTERFACE DEVTENSOR_WITH_ONEDNN=1)
    add_library(devtensor::onednn ALIAS devtensor_onednn)
  endif()
endif()
