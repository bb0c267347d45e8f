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
if(NOT TARGET devtensor_compiled)
  add_library(devtensor_compiled STATIC "${_devtensor_source_dir}/devtensor.cpp")
  target_link_libraries(devtensor_compiled PUBLIC ${_devtensor_header_target})
  target_compile_features(devtensor_compiled PUBLIC cxx_std_20)
  set_target_properties(devtensor_compiled PROPERTIES POSITION_INDEPENDENT_CODE ON)
  # A project with no build type compiles at -O0 (CMake's default), and training in devtensor's
  # kernels then runs ~6x slower than at -O2. devtensor's own source is compiled optimised in that
  # case, whatever the project's own files get (DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE=OFF: as the
  # project). Multi-config generators always have a configuration.
  option(DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE
         "With no CMAKE_BUILD_TYPE, compile devtensor's own sources at -O2 (the project's files are not changed)" ON)
  get_property(_devtensor_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT _devtensor_multi_config AND NOT CMAKE_BUILD_TYPE AND DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE
     AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(devtensor_compiled PRIVATE -O2)
    message(STATUS "devtensor: no CMAKE_BUILD_TYPE: devtensor's sources are compiled with -O2 (your own files get "
                   "CMake's default, -O0: set CMAKE_BUILD_TYPE=Release or RelWithDebInfo for them too)")
  endif()
  target_link_libraries(${_devtensor_core_target} INTERFACE $<BUILD_INTERFACE:devtensor_compiled>)
  target_compile_definitions(${_devtensor_core_target} INTERFACE $<BUILD_INTERFACE:DEVTENSOR_COMPILED>)
endif()
