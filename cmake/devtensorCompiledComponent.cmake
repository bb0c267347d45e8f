# devtensor's compiled mode (Note [Compiled mode] in include/devtensor/config.hpp), defined in the
# project that uses devtensor: by devtensor's own CMakeLists and by the installed package config.
# src/devtensor.cpp (the CPU kernel bodies, the gradient table, the Context's discovery and
# allocators, the Keras training loop) is compiled here, once per build tree, into a static library
# that devtensor::devtensor links, and devtensor::devtensor's users get DEVTENSOR_COMPILED: their
# translation units see declarations only. Nothing prebuilt is installed. devtensor::header_only
# is the same library without it (every translation unit compiles what it uses).
#
# Inputs: _devtensor_source_dir (where devtensor.cpp is), _devtensor_header_target (the
# header-only target, devtensor_header_only or devtensor::header_only) and _devtensor_core_target
# (the target that becomes compiled: devtensor or devtensor::devtensor).
include("${CMAKE_CURRENT_LIST_DIR}/devtensorOptimizeWithoutBuildType.cmake")
if(NOT TARGET devtensor_compiled)
  # EXCLUDE_FROM_ALL, as every component's code: compiled for the targets that link it, so a project
  # that uses one component (add_subdirectory, find_package) does not compile the others' code.
  add_library(devtensor_compiled STATIC EXCLUDE_FROM_ALL "${_devtensor_source_dir}/devtensor.cpp")
  target_link_libraries(devtensor_compiled PUBLIC ${_devtensor_header_target})
  target_compile_features(devtensor_compiled PUBLIC cxx_std_20)
  set_target_properties(devtensor_compiled PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # Without a build type (CMake's -O0, training ~6x slower), devtensor's own sources get -O2
  # (devtensorOptimizeWithoutBuildType.cmake), and the configure log says so.
  option(DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE
         "With no CMAKE_BUILD_TYPE, compile devtensor's own sources at -O2 (the project's files are not changed)" ON)
  devtensor_optimize_without_build_type(devtensor_compiled)
  get_property(_devtensor_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT _devtensor_multi_config AND NOT CMAKE_BUILD_TYPE AND DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE
     AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(STATUS "devtensor: no CMAKE_BUILD_TYPE: devtensor's sources are compiled with -O2 (your own files get "
                   "CMake's default, -O0: set CMAKE_BUILD_TYPE=Release or RelWithDebInfo for them too)")
  endif()
  target_link_libraries(${_devtensor_core_target} INTERFACE $<BUILD_INTERFACE:devtensor_compiled>)
  target_compile_definitions(${_devtensor_core_target} INTERFACE $<BUILD_INTERFACE:DEVTENSOR_COMPILED>)
endif()
