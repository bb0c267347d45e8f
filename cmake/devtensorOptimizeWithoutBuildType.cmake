# devtensor_optimize_without_build_type(<target>): a project with no build type compiles at -O0
# (CMake's default), and devtensor's kernels and runtimes then run ~6x slower than at -O2. The
# sources devtensor compiles in the consumer's tree (src/devtensor.cpp, the components' objects)
# get -O2 in that case, whatever the project's own files get; DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE
# set to OFF keeps the project's flags. Multi-config generators always have a configuration.
include_guard(GLOBAL)
function(devtensor_optimize_without_build_type target)
  get_property(_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT _multi_config AND NOT CMAKE_BUILD_TYPE
     AND (NOT DEFINED DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE OR DEVTENSOR_OPTIMIZE_WITHOUT_BUILD_TYPE)
     AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,CUDA>:-O2>)
  endif()
endfunction()
