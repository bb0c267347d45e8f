# package.default_optimised: a consumer configured without CMAKE_BUILD_TYPE compiles devtensor's own
# source (src/devtensor.cpp) with -O2, says so at configure time, and leaves its own files alone.
# Configure only: the compile commands are what the build would run.
#
# Usage: cmake -DPREFIX=<installed devtensor> -DSOURCE=<consumer> -DBINARY=<dir> -DGENERATOR=<g>
#              -DCXX=<compiler> -P default_optimised.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE "${BINARY}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -S "${SOURCE}" -B "${BINARY}" -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${PREFIX}"
          "-DCMAKE_CXX_COMPILER=${CXX}" -DCMAKE_BUILD_TYPE= -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
          -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON
  OUTPUT_VARIABLE _out ERROR_VARIABLE _err RESULT_VARIABLE _status)
if(NOT _status EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed:\n${_out}\n${_err}")
endif()
if(NOT _out MATCHES "no CMAKE_BUILD_TYPE: devtensor's sources are compiled with -O2")
  message(FATAL_ERROR "the configure log does not say that devtensor's sources get -O2:\n${_out}")
endif()
file(READ "${BINARY}/compile_commands.json" _commands)
string(REGEX MATCH "\"command\": \"[^\"]*devtensor\\.cpp\"" _library "${_commands}")
string(REGEX MATCH "\"command\": \"[^\"]*main\\.cpp\"" _consumer "${_commands}")
if(NOT _library MATCHES " -O2 ")
  message(FATAL_ERROR "src/devtensor.cpp is not compiled with -O2: ${_library}")
endif()
if(_consumer MATCHES " -O2 ")
  message(FATAL_ERROR "the consumer's own file got -O2 too: ${_consumer}")
endif()
message(STATUS "default_optimised: ${_library}")
