# No global device look-ups below the placer, checked by `cmake -P` (test headers.global_lookups).
#
# Devices are values: the placer (ops/placer.hpp) chooses a Device from the Context's DeviceSet,
# and tensors, kernels, variables, datasets, strategies and layers hold that Device. None of the
# headers in the folders below the placer may look the Context up again (Context::global(), the
# public config:: listings, device_lib). A few entry points turn the user's device *names* into
# Devices once, through device_set(); they are listed here, and no other header may call it.
#
# Usage: cmake -DINCLUDE_DIR=<repo>/include -P global_lookups.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "global_lookups.cmake: pass -DINCLUDE_DIR=<repository>/include")
endif()
set(_below_the_placer ops tensor variables autodiff data distribute nn)
set(_the_placer "ops/placer.hpp")
set(_name_entry_points
    "ops/placer.hpp"                                              # the placer itself
    "data/dataset.hpp"                                            # input pipelines run on the host CPU
    "distribute/cross_device_utils.hpp"                           # Destinations from device names
    "distribute/mirrored_strategy.hpp"                            # a strategy's device names
    "distribute/multi_worker/multi_worker_mirrored_strategy.hpp"  # its local devices
    "distribute/multi_worker/cluster_resolver.hpp")               # num_accelerators()

set(_violations "")
foreach(_folder IN LISTS _below_the_placer)
  file(GLOB_RECURSE _headers "${INCLUDE_DIR}/devtensor/${_folder}/*.hpp" "${INCLUDE_DIR}/devtensor/${_folder}/*.cuh")
  foreach(_header IN LISTS _headers)
    file(RELATIVE_PATH _relative "${INCLUDE_DIR}/devtensor" "${_header}")
    file(STRINGS "${_header}" _lines)
    set(_number 0)
    foreach(_line IN LISTS _lines)
      math(EXPR _number "${_number} + 1")
      if(_line MATCHES "^ *//")
        continue()  # comments may name what they do not do
      endif()
      if(NOT _relative STREQUAL _the_placer AND
         _line MATCHES "Context::global|config::list_(physical|logical)_devices|device_lib::")
        string(STRIP "${_line}" _code)
        string(APPEND _violations "  devtensor/${_relative}:${_number}: ${_code}\n")
      elseif(_line MATCHES "[^_a-z]device_set\\(" AND NOT _relative IN_LIST _name_entry_points)
        string(STRIP "${_line}" _code)
        string(APPEND _violations "  devtensor/${_relative}:${_number}: ${_code} (not an entry point)\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(_violations)
  message(FATAL_ERROR "Global device look-ups below the placer:\n${_violations}"
                      "Pass the Device down instead (a tensor's device_info(), the placer's choice, a "
                      "strategy's replica devices); only the entry points in global_lookups.cmake turn names into Devices.")
endif()
message(STATUS "global lookups: none below the placer")
